//! Credentials a sandboxed command never sees unless the caller unhides them with
//! `--allow-read`: they appear empty inside the sandbox.

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

/// The secrets to hide for a user whose home is `home`: those of the default list that exist
/// and that no `--allow-read` path covers (an allowed directory unhides what is inside it; an
/// allowed path inside a hidden directory unhides that directory).
pub fn to_hide(home: &Path, allowed: &[PathBuf]) -> Vec<PathBuf> {
    DEFAULT_HIDDEN
        .iter()
        .map(|rel| home.join(rel))
        .filter(|path| std::fs::symlink_metadata(path).is_ok())
        .filter(|path| {
            !allowed
                .iter()
                .any(|allowed| path.starts_with(allowed) || allowed.starts_with(path))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn existing_secrets_are_hidden_unless_allowed() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
        std::fs::write(home.path().join(".netrc"), "machine x").unwrap();
        let hidden = to_hide(home.path(), &[]);
        assert_eq!(
            hidden,
            vec![home.path().join(".ssh"), home.path().join(".netrc")]
        );
        let allowed = [home.path().join(".ssh/id_ed25519")];
        assert_eq!(
            to_hide(home.path(), &allowed),
            vec![home.path().join(".netrc")]
        );
    }
}
