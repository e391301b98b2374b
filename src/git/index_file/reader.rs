//! The one walk over git's index file format (`gitformat-index`) that every reader here
//! shares: a 12-byte header (`DIRC`, version 2 to 4, entry count), the entries, the extensions
//! (a 4-byte signature and a 4-byte big-endian size each), and a trailing hash of the object
//! format's length. The hash length is not recorded in the file: a layout that ends exactly at
//! the trailer is what tells it.

/// An entry's stat data: ctime, mtime (seconds and nanoseconds each), dev, ino, mode, uid,
/// gid, size, 32 bits each.
pub(crate) const ENTRY_STAT: usize = 40;

/// Where an entry's size is, in its stat data.
pub(crate) const SIZE_AT: usize = 36;

/// The extended bit of an entry's flags: 16 more bits of flags follow (version 3 and later).
const EXTENDED: u16 = 0x4000;

/// The skip-worktree bit of an entry's extended flags (`CE_SKIP_WORKTREE >> 16`).
pub(crate) const SKIP_WORKTREE: u16 = 0x4000;

/// One entry as the walk meets it: where it starts, its fixed part and its whole path (index
/// version 4's prefix compression undone).
pub(crate) struct EntryView<'a> {
    /// Its offset in the file.
    pub start: usize,
    /// Its stat data, object id and flags, as stored.
    fixed: &'a [u8],
    extended: u16,
    /// Its path, as the index spells it.
    pub path: &'a [u8],
}

impl EntryView<'_> {
    /// The 32-bit stat field number `n` (0: ctime seconds … 9: size).
    pub(crate) fn stat(&self, n: usize) -> u32 {
        be32(self.fixed, n * 4).unwrap_or(0)
    }

    /// `0o100644`, `0o100755`, `0o120000` (a link), `0o160000` (a gitlink) or `0o040000` (a
    /// sparse index's directory).
    pub(crate) fn mode(&self) -> u32 {
        self.stat(6)
    }

    /// Its stat data, as stored ([`ENTRY_STAT`] bytes).
    pub(crate) fn stat_data(&self) -> &[u8] {
        &self.fixed[..ENTRY_STAT]
    }

    /// Its object id, as stored.
    pub(crate) fn id(&self) -> &[u8] {
        &self.fixed[ENTRY_STAT..self.fixed.len() - 2]
    }

    /// Its merge stage (0: merged).
    pub(crate) fn stage(&self) -> u16 {
        (self.flags() >> 12) & 3
    }

    /// Whether it is marked skip-worktree (a sparse checkout's path outside its patterns).
    pub(crate) fn skip_worktree(&self) -> bool {
        self.extended & SKIP_WORKTREE != 0
    }

    /// Its extended flags (version 3's second flags word; 0 without one).
    pub(crate) fn extended_flags(&self) -> u16 {
        self.extended
    }

    /// Whether it is a gitlink.
    pub(crate) fn gitlink(&self) -> bool {
        self.mode() & 0o170000 == 0o160000
    }

    fn flags(&self) -> u16 {
        let at = self.fixed.len() - 2;
        u16::from_be_bytes([self.fixed[at], self.fixed[at + 1]])
    }
}

/// One extension: its signature, where it starts (its header) and its data.
pub(crate) struct Extension<'a> {
    pub start: usize,
    pub signature: [u8; 4],
    pub data: &'a [u8],
}

impl Extension<'_> {
    /// Where it ends in the file.
    pub(crate) fn end(&self) -> usize {
        self.start + 8 + self.data.len()
    }
}

/// An index file read whole.
pub(crate) struct IndexFile<'a> {
    bytes: &'a [u8],
    pub version: u32,
    pub hash_len: usize,
}

impl<'a> IndexFile<'a> {
    /// `bytes` as an index of version 2 to 4 with `hash_len`-byte object ids; `None` for
    /// anything else. The layout is checked as it is walked.
    pub(crate) fn new(bytes: &'a [u8], hash_len: usize) -> Option<IndexFile<'a>> {
        let version = be32(bytes, 4)?;
        (bytes.get(..4)? == b"DIRC" && (2..=4).contains(&version)).then_some(IndexFile {
            bytes,
            version,
            hash_len,
        })
    }

    /// `bytes` read with the object id length whose layout ends exactly at the trailer (SHA-1's
    /// tried first, then SHA-256's), walked with `visit` for each entry; `None` when neither fits.
    pub(crate) fn detect(
        bytes: &'a [u8],
        mut visit: impl FnMut(&EntryView<'_>),
    ) -> Option<(IndexFile<'a>, Vec<Extension<'a>>)> {
        [20, 32].into_iter().find_map(|hash_len| {
            let file = IndexFile::new(bytes, hash_len)?;
            // Nothing is visited before the layout is known to fit.
            file.walk(|_| true)?;
            let extensions = file.walk(|e| {
                visit(e);
                true
            })?;
            Some((file, extensions))
        })
    }

    /// Walks every entry in order with `visit` (which stops the walk by returning `false`),
    /// then lists the extensions; `None` when the layout does not end exactly at the trailer,
    /// or the walk was stopped.
    pub(crate) fn walk(
        &self,
        mut visit: impl FnMut(&EntryView<'_>) -> bool,
    ) -> Option<Vec<Extension<'a>>> {
        let bytes = self.bytes;
        let count = be32(bytes, 8)?;
        let mut at = 12;
        let mut path: Vec<u8> = Vec::new();
        for _ in 0..count {
            let start = at;
            let fixed = bytes.get(at..at + ENTRY_STAT + self.hash_len + 2)?;
            at += fixed.len();
            let flags = u16::from_be_bytes([fixed[fixed.len() - 2], fixed[fixed.len() - 1]]);
            let mut extended = 0;
            if self.version >= 3 && flags & EXTENDED != 0 {
                extended = u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?);
                at += 2;
            }
            if self.version == 4 {
                let (strip, used) = decode_varint(bytes.get(at..)?)?;
                at += used;
                let kept = path.len().checked_sub(usize::try_from(strip).ok()?)?;
                path.truncate(kept);
            } else {
                path.clear();
            }
            let nul = bytes.get(at..)?.iter().position(|b| *b == 0)?;
            path.extend_from_slice(&bytes[at..at + nul]);
            at = match self.version {
                4 => at + nul + 1,
                // The name and 1 to 8 NULs, padding the entry to a multiple of eight bytes.
                _ => start + ((at + nul - start + 8) & !7),
            };
            let entry = EntryView {
                start,
                fixed,
                extended,
                path: &path,
            };
            if !visit(&entry) {
                return None;
            }
        }
        self.extensions(at)
    }

    /// Where the entries end: at the first of `extensions`, else at the trailer.
    pub(crate) fn entries_end(&self, extensions: &[Extension<'_>]) -> usize {
        extensions
            .first()
            .map_or(self.bytes.len() - self.hash_len, |e| e.start)
    }

    /// The extensions from `at` up to the trailer.
    fn extensions(&self, mut at: usize) -> Option<Vec<Extension<'a>>> {
        let end = self.bytes.len().checked_sub(self.hash_len)?;
        let mut found = Vec::new();
        while at < end {
            let signature: [u8; 4] = self.bytes.get(at..at + 4)?.try_into().ok()?;
            let size = be32(self.bytes, at + 4)? as usize;
            let data = self.bytes.get(at + 8..(at + 8).checked_add(size)?)?;
            found.push(Extension {
                start: at,
                signature,
                data,
            });
            at += 8 + size;
        }
        (at == end).then_some(found)
    }
}

/// The trailer of an index whose object ids are `hash_len` bytes long and whose content is
/// `bytes`: their hash, in the object format's algorithm.
pub(crate) fn trailer(bytes: &[u8], hash_len: usize) -> Vec<u8> {
    use sha2::Digest;
    match hash_len {
        32 => sha2::Sha256::digest(bytes).to_vec(),
        _ => sha1::Sha1::digest(bytes).to_vec(),
    }
}

/// The raw id git gives an object of `kind` holding `content`, hashed as [`trailer`] hashes
/// (the header then the content, never copied together: a blob may be a large file).
pub(crate) fn object_id(kind: &str, content: &[u8], hash_len: usize) -> Vec<u8> {
    use sha2::Digest;
    let header = format!("{kind} {}\0", content.len());
    match hash_len {
        32 => sha2::Sha256::new()
            .chain_update(header)
            .chain_update(content)
            .finalize()
            .to_vec(),
        _ => sha1::Sha1::new()
            .chain_update(header)
            .chain_update(content)
            .finalize()
            .to_vec(),
    }
}

/// The path of `name` in the directory `dir` (`""`: the root).
pub(crate) fn join_path(dir: &[u8], name: &[u8]) -> Vec<u8> {
    match dir.is_empty() {
        true => name.to_vec(),
        false => [dir, b"/", name].concat(),
    }
}

/// The big-endian 32-bit number at `at` of `bytes`.
pub(crate) fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(
        bytes.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// Git's variable-length integer of index version 4 and of the untracked cache (each
/// continuation adds one before the shift); the value and how many bytes it took.
pub(crate) fn decode_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut used = 0;
    let mut byte = *bytes.get(used)?;
    used += 1;
    let mut value = u64::from(byte & 127);
    while byte & 128 != 0 {
        value = value.checked_add(1)?.checked_mul(128)?;
        byte = *bytes.get(used)?;
        used += 1;
        value = value.checked_add(u64::from(byte & 127))?;
    }
    Some((value, used))
}
