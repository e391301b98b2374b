//! Copying every object of one store into a repository or another store (a run's new
//! objects out of quarantine), packed and indexed as they go.

use std::path::Path;

use crate::base::error::Result;
use crate::git::hermetic::ObjectView;
use crate::git::ops::pipe_into;
use crate::git::runner::Git;

/// Where [`Git::copy_objects`] indexes the objects it packs.
pub(crate) enum Receiver<'a> {
    /// The repository git runs in, its objects free to name those of the stores `alternates`
    /// (a list joined as `GIT_ALTERNATE_OBJECT_DIRECTORIES` wants it), if any.
    Repository {
        alternates: Option<std::ffi::OsString>,
    },
    /// The object store `objects`, written through `view`, with `alternate`'s objects there
    /// to complete it.
    Store {
        view: &'a ObjectView,
        objects: &'a Path,
        alternate: &'a Path,
    },
}

impl Git {
    /// Copies every object in the object directory `from` into the store `receiver` names,
    /// checked as a push would be (`index-pack --strict`); returns how many there were. `dir` is where the
    /// listing and packing git runs (its configuration applies).
    pub(crate) fn copy_objects(
        &self,
        dir: &Path,
        from: &Path,
        receiver: Receiver<'_>,
    ) -> Result<usize> {
        let receiver = match receiver {
            Receiver::Repository { alternates: None } => self.at(dir),
            Receiver::Repository {
                alternates: Some(joined),
            } => self.at(dir).env("GIT_ALTERNATE_OBJECT_DIRECTORIES", joined),
            Receiver::Store {
                view,
                objects,
                alternate,
            } => view
                .cmd()
                .env("GIT_OBJECT_DIRECTORY", objects)
                .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", alternate),
        };
        let listed = self
            .at(dir)
            .env("GIT_OBJECT_DIRECTORY", from)
            .args(["cat-file", "--batch-all-objects"])
            .args(["--batch-check=%(objectname)"])
            .run()?;
        let count = listed
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count();
        if count == 0 {
            return Ok(0);
        }
        let pack = self
            .at(dir)
            .env("GIT_OBJECT_DIRECTORY", from)
            .args(["pack-objects", "--stdout", "-q"])
            .stdin(listed);
        pipe_into(pack, receiver).map(|()| count)
    }
}
