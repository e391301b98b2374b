use clap::Args;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::ops::enter::isolation_path;

use super::{Output, SessionArg};

/// `a3s-iso path`'s arguments.
#[derive(Debug, Args)]
pub struct PathArgs {
    #[command(flatten)]
    pub session: SessionArg,
}

/// Prints the isolation's path alone (for `cd "$(a3s-iso path -s ID)"`), or its document.
pub fn run(ctx: &Context, args: &PathArgs, out: &Output) -> Result<i32> {
    let outcome = isolation_path(ctx, args.session.session.as_deref())?;
    if out.json {
        out.document("a3s-iso.path.v1", &outcome);
    } else {
        use std::io::Write;
        use std::os::unix::ffi::OsStrExt;
        // The path's exact bytes: a name that is not UTF-8 still leads to the directory.
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(outcome.worktree.as_os_str().as_bytes());
        let _ = stdout.write_all(b"\n");
    }
    Ok(0)
}
