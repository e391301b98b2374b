//! Credentials a sandboxed command never sees unless the caller unhides them with
//! `--allow-read`: they appear empty inside the sandbox. Agents' own logins are credentials
//! too: each is hidden from every run but one under the profile that declares it as its own.

use std::path::{Path, PathBuf};

/// The hidden paths, relative to the home directory.
pub const DEFAULT_HIDDEN: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker/config.json",
    ".git-credentials",
    ".netrc",
    ".config/gh",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/git/credentials",
];

/// Agents' logins, relative to the home directory: hidden like [`DEFAULT_HIDDEN`], except
/// from a run under the profile that declares the file as its own credential. A profile may
/// keep the directory that holds one (`~/.claude/`); it never sees another agent's.
pub const AGENT_CREDENTIALS: &[&str] = &[
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".aider/oauth-keys.env",
];

/// The secrets to hide for a user whose home is `home`: those of the default list and the
/// agents' logins that exist, except the running profile's `own` logins (relative to the
/// home directory) and what an `--allow-read` path covers (an allowed directory unhides what
/// is inside it; an allowed path inside a hidden directory unhides that directory).
pub fn to_hide(home: &Path, allowed: &[PathBuf], own: &[PathBuf]) -> Vec<PathBuf> {
    DEFAULT_HIDDEN
        .iter()
        .chain(AGENT_CREDENTIALS)
        .filter(|rel| !own.iter().any(|o| o == Path::new(rel)))
        .map(|rel| home.join(rel))
        .filter(|path| std::fs::symlink_metadata(path).is_ok())
        .filter(|path| !allowed_to_read(path, allowed))
        .collect()
}

/// Whether an `--allow-read` path unhides `path`.
pub fn allowed_to_read(path: &Path, allowed: &[PathBuf]) -> bool {
    allowed
        .iter()
        .any(|allowed| path.starts_with(allowed) || allowed.starts_with(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn existing_secrets_are_hidden_unless_allowed() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
        std::fs::write(home.path().join(".netrc"), "machine x").unwrap();
        let hidden = to_hide(home.path(), &[], &[]);
        assert_eq!(
            hidden,
            vec![home.path().join(".ssh"), home.path().join(".netrc")]
        );
        let allowed = [home.path().join(".ssh/id_ed25519")];
        assert_eq!(
            to_hide(home.path(), &allowed, &[]),
            vec![home.path().join(".netrc")]
        );
    }

    #[test]
    fn an_agents_login_is_hidden_except_from_its_own_profile() {
        let home = tempfile::tempdir().unwrap();
        for rel in AGENT_CREDENTIALS {
            let path = home.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "token").unwrap();
        }
        let all: Vec<PathBuf> = AGENT_CREDENTIALS
            .iter()
            .map(|r| home.path().join(r))
            .collect();
        assert_eq!(to_hide(home.path(), &[], &[]), all);
        let own = [PathBuf::from(".codex/auth.json")];
        let hidden = to_hide(home.path(), &[], &own);
        assert_eq!(hidden, [all[0].clone(), all[2].clone()]);
    }
}
