//! Patches between two trees, computed in an [`ObjectView`] with every option of `git diff`'s
//! output pinned.

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::ffi::OsStringExt;

use crate::base::error::Result;
use crate::git::hermetic::ObjectView;

/// Options that pin every aspect of `git diff` output that user configuration could change.
/// (Attributes and the repository's own configuration do not reach the diff at all: it runs in
/// an [`ObjectView`].) Git judges files over `core.bigFileThreshold` binary without reading
/// them on some diff paths, so its default is pinned as well.
pub(crate) const PATCH_CONFIG: &[&str] = &[
    "-c",
    "core.quotePath=true",
    "-c",
    "diff.suppressBlankEmpty=false",
    "-c",
    "core.bigFileThreshold=512m",
];
pub(crate) const PATCH_FLAGS: &[&str] = &[
    "--binary",
    "--full-index",
    "--no-renames",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--diff-algorithm=myers",
    "--indent-heuristic",
    "-U3",
    "--inter-hunk-context=0",
    "--no-relative",
    "--ignore-submodules=none",
    "--submodule=short",
    "-O/dev/null",
];

impl ObjectView {
    /// Writes the patch from tree or commit `base` to `result` into `out`, its paths under
    /// `prefix/` on both sides when a prefix is given (a nested repository's patch).
    pub(crate) fn write_patch(
        &self,
        (base, result): (&str, &str),
        prefix: Option<&[u8]>,
        out: File,
    ) -> Result<()> {
        let side = |letter: &str, option: &str, prefix: &[u8]| {
            let mut arg = format!("--{option}={letter}/").into_bytes();
            arg.extend_from_slice(prefix);
            arg.push(b'/');
            OsString::from_vec(arg)
        };
        let sides = prefix
            .into_iter()
            .flat_map(|p| [side("a", "src-prefix", p), side("b", "dst-prefix", p)]);
        self.cmd()
            .args(PATCH_CONFIG)
            .arg("diff")
            .args(PATCH_FLAGS)
            .args(sides)
            .arg(base)
            .arg(result)
            .arg("--")
            .run_to_file(out)
    }
}
