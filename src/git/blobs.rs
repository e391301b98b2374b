//! Blobs of a checkout: hashing files and bytes into object ids (optionally writing them to the
//! object store), and streaming blob contents out of it, one git process for many paths.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::base::error::{Error, IoContext, Result};
use crate::git::runner::{Git, failure_of};

impl Git {
    /// The blob ids of the files at `paths` (relative to `dir`, the checkout's top level), with
    /// the checkout's clean filters applied as `git add` would; `write` stores them.
    pub(crate) fn hash_paths(
        &self,
        dir: &Path,
        paths: &[&[u8]],
        write: bool,
    ) -> Result<Vec<String>> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut input = Vec::new();
        for path in paths {
            input.extend_from_slice(&quote_line(path));
            input.push(b'\n');
        }
        let out = self
            .at(dir)
            .args(["hash-object", "--stdin-paths"])
            .args(write.then_some("-w"))
            .stdin(input)
            .run_text()?;
        let oids: Vec<String> = out.lines().map(str::to_string).collect();
        if oids.len() != paths.len() {
            return Err(Error::internal(format!(
                "git hash-object answered {} ids for {} paths",
                oids.len(),
                paths.len()
            )));
        }
        Ok(oids)
    }

    /// Streams the content of each blob of `oids`, in order, to `sink(i, content)`, with one
    /// `cat-file --batch` process: nothing is held in memory whole.
    pub(crate) fn each_blob(
        &self,
        dir: &Path,
        oids: &[String],
        mut sink: impl FnMut(usize, &mut dyn Read) -> Result<()>,
    ) -> Result<()> {
        if oids.is_empty() {
            return Ok(());
        }
        let mut batch = self.start_batch(dir, oids)?;
        let streamed = stream_batch(BufReader::new(&mut batch.stdout), oids.len(), &mut sink);
        let status = batch.finish(streamed.is_err())?;
        streamed?;
        if !status.success() {
            return Err(failure_of(
                vec!["cat-file".into(), "--batch".into()],
                status.code(),
                String::new(),
            ));
        }
        Ok(())
    }
}

/// Reads `count` answers of `cat-file --batch`, handing each blob's content to `sink`.
fn stream_batch(
    mut reader: impl BufRead,
    count: usize,
    sink: &mut impl FnMut(usize, &mut dyn Read) -> Result<()>,
) -> Result<()> {
    let mut header = String::new();
    for i in 0..count {
        header.clear();
        reader
            .read_line(&mut header)
            .ctx(|| "cannot read git cat-file's answer".to_string())?;
        let fields: Vec<&str> = header.trim_end().split(' ').collect();
        let [oid, "blob", size] = fields.as_slice() else {
            return Err(Error::internal(format!(
                "not a blob: {}",
                header.trim_end()
            )));
        };
        let size: u64 = size
            .parse()
            .map_err(|_| Error::internal(format!("bad size for {oid}: {size}")))?;
        let mut content = (&mut reader).take(size);
        sink(i, &mut content)?;
        // Whatever the sink left unread, and the newline after the content.
        std::io::copy(&mut content, &mut std::io::sink())
            .ctx(|| "cannot read git cat-file's answer".to_string())?;
        let mut newline = [0u8; 1];
        reader
            .read_exact(&mut newline)
            .ctx(|| "cannot read git cat-file's answer".to_string())?;
    }
    Ok(())
}

/// One line of `--stdin-paths` input: the path as it is, or C-quoted when it starts with a
/// quote or holds a line break (git unquotes a line that starts with `"`).
fn quote_line(path: &[u8]) -> Vec<u8> {
    let plain = !path.starts_with(b"\"") && !path.iter().any(|b| *b == b'\n' || *b == b'\r');
    if plain {
        return path.to_vec();
    }
    let mut out = vec![b'"'];
    for byte in path {
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x20..=0x7e => out.push(*byte),
            _ => out.extend_from_slice(format!("\\{byte:03o}").as_bytes()),
        }
    }
    out.push(b'"');
    out
}

#[cfg(test)]
mod tests {
    use crate::git::blobs::quote_line;

    #[test]
    fn quotes_only_what_git_would_misread() {
        assert_eq!(quote_line(b"a b/c.txt"), b"a b/c.txt");
        assert_eq!(quote_line(b"\"q"), b"\"\\\"q\"");
        assert_eq!(quote_line(b"l\nf\\"), b"\"l\\012f\\\\\"");
        assert_eq!(quote_line(b"caf\xc3\xa9\r"), b"\"caf\\303\\251\\015\"");
    }
}
