//! The saved index: one file, versioned and checksummed, written to a temporary file and
//! renamed into place, read with positioned reads (posting lists are read when a query
//! needs them; nothing is mapped, so a file truncated under a session gives an error, never
//! a fault).
//!
//! Layout (little-endian): a 96-byte header — magic, [`FORMAT_VERSION`], counts, the time
//! of the build, the length of each section, the CRC-32 of the body and of the header —
//! then the sections: the project root, the documents (path relative to the root,
//! modification time, size, inode, kind), the directories (path and entries the ignore
//! rules skipped there), the ids that every query must search, the trigram directory
//! (trigram, offset, length, count; sorted) and the posting lists.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::IndexError;
use crate::grams::Gram;
use crate::postings::{Postings, decode_list, push_varint, read_varint};

/// The format written and the only one read; any other is rebuilt.
pub const FORMAT_VERSION: u32 = 3;
const MAGIC: [u8; 8] = *b"ATSIDX\0\x01";
const HEADER_LEN: usize = 96;
const SECTIONS: usize = 6;
const GRAM_ENTRY: usize = 20;

/// What kind of entry a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    /// A regular file: its content is indexed.
    File,
    /// A symbolic link (listed by Glob when it leads to a file; never searched).
    Symlink,
}

/// What is kept of one document besides its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocMeta {
    /// Modification time
    pub mtime: SystemTime,
    /// Size in bytes
    pub size: u64,
    /// Inode number
    pub ino: u64,
    /// File or symbolic link
    pub kind: DocKind,
}

/// One document of a saved index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    /// Path relative to the project root (bytes, `/`-separated)
    pub rel: Box<[u8]>,
    /// Its metadata when indexed
    pub meta: DocMeta,
}

/// One directory the index walked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Path relative to the project root ("" for the root)
    pub rel: Box<[u8]>,
    /// Entries in it that the ignore rules skipped
    pub skipped: u64,
}

/// What a saved index holds besides its posting lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// The canonical project root
    pub root: PathBuf,
    /// When the build started: files changed after it are read again when validated
    pub built: SystemTime,
    /// The documents; a document's id is its position
    pub docs: Vec<Doc>,
    /// The directories walked
    pub dirs: Vec<DirEntry>,
}

fn time_parts(t: SystemTime) -> (i64, u32) {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => (
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_nanos(),
        ),
        Err(e) => {
            let d = e.duration();
            (
                -i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                d.subsec_nanos(),
            )
        }
    }
}

/// The time `secs` and `nanos` after the epoch; `None` for one the system cannot hold (a
/// damaged file that still passed its checksum).
fn time_from(secs: i64, nanos: u32) -> Option<SystemTime> {
    let nanos = Duration::from_nanos(u64::from(nanos.min(999_999_999)));
    let whole = Duration::from_secs(secs.unsigned_abs());
    if secs >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(whole)
    } else {
        SystemTime::UNIX_EPOCH.checked_sub(whole)
    }?
    .checked_add(nanos)
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Writes `bytes` to the file and the body checksum.
struct Body<W: Write> {
    out: W,
    crc: crc32fast::Hasher,
    len: u64,
    pause: Option<Duration>,
}

impl<W: Write> Body<W> {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.crc.update(bytes);
        self.len += bytes.len() as u64;
        self.out.write_all(bytes)
    }
}

/// A pause in the middle of every save, for the test that kills a session while it saves:
/// `AGENT_TOOLS_INDEX_SAVE_PAUSE_MS`.
fn save_pause() -> Option<Duration> {
    std::env::var("AGENT_TOOLS_INDEX_SAVE_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis)
}

/// Saves an index at `path`: written to a temporary file beside it (named
/// `.<name>.tmp-<pid>`), synced, then renamed over `path`, so a reader sees the old file
/// or the new one, never a part. Returns the bytes written.
pub fn save(path: &Path, contents: &Contents, postings: &Postings) -> Result<u64, IndexError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Two saves of one process (two services of one project) never share a temporary file.
    static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
    let io = |e: std::io::Error| IndexError::Io {
        path: tmp.clone(),
        source: e,
    };
    let result = (|| {
        let file = File::create(&tmp).map_err(io)?;
        let mut body = Body {
            out: BufWriter::with_capacity(1 << 20, file),
            crc: crc32fast::Hasher::new(),
            len: 0,
            pause: save_pause(),
        };
        body.put(&[0u8; HEADER_LEN]).map_err(io)?;
        body.crc = crc32fast::Hasher::new();
        body.len = 0;
        let (lens, grams, listed) = write_sections(&mut body, contents, postings).map_err(io)?;
        if lens[5] != listed {
            return Err(IndexError::Corrupt {
                path: tmp.clone(),
                reason: "the lists written differ from their directory".to_owned(),
            });
        }
        let header = header(
            contents,
            postings,
            &lens,
            grams,
            body.crc.clone().finalize(),
        );
        let file = body.out.into_inner().map_err(|e| io(e.into_error()))?;
        file.write_all_at(&header, 0).map_err(io)?;
        file.sync_all().map_err(io)?;
        drop(file);
        std::fs::rename(&tmp, path).map_err(|e| IndexError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(HEADER_LEN as u64 + lens.iter().sum::<u64>())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    remove_stale(dir, &name);
    result
}

/// Writes the sections after the header; gives their lengths, the number of trigrams and
/// the length of the lists their directory gives.
fn write_sections<W: Write>(
    body: &mut Body<W>,
    contents: &Contents,
    postings: &Postings,
) -> std::io::Result<([u64; SECTIONS], usize, u64)> {
    let mut lens = [0u64; SECTIONS];
    let mut buf = Vec::new();

    let root = contents.root.as_os_str().as_encoded_bytes();
    body.put(root)?;
    lens[0] = root.len() as u64;

    let start = body.len;
    for doc in &contents.docs {
        buf.clear();
        push_varint(&mut buf, doc.rel.len() as u64);
        buf.extend_from_slice(&doc.rel);
        let (secs, nanos) = time_parts(doc.meta.mtime);
        push_varint(&mut buf, zigzag(secs));
        push_varint(&mut buf, u64::from(nanos));
        push_varint(&mut buf, doc.meta.size);
        push_varint(&mut buf, doc.meta.ino);
        buf.push(match doc.meta.kind {
            DocKind::File => 0,
            DocKind::Symlink => 1,
        });
        body.put(&buf)?;
    }
    lens[1] = body.len - start;

    let start = body.len;
    for dir in &contents.dirs {
        buf.clear();
        push_varint(&mut buf, dir.rel.len() as u64);
        buf.extend_from_slice(&dir.rel);
        push_varint(&mut buf, dir.skipped);
        body.put(&buf)?;
    }
    lens[2] = body.len - start;

    let start = body.len;
    for id in postings.always() {
        body.put(&id.to_le_bytes())?;
    }
    lens[3] = body.len - start;
    let (grams, listed) = write_lists(body, postings, &mut lens)?;
    Ok((lens, grams, listed))
}

/// Writes the trigram directory and the posting lists, and their lengths in `lens`; gives
/// the number of trigrams and the lists' length by the directory.
fn write_lists<W: Write>(
    body: &mut Body<W>,
    postings: &Postings,
    lens: &mut [u64; SECTIONS],
) -> std::io::Result<(usize, u64)> {
    // The directory needs the lists' offsets, which their sizes give.
    let directory = postings.directory();
    let start = body.len;
    let mut offset = 0u64;
    for &(gram, count, size) in &directory {
        let mut entry = [0u8; GRAM_ENTRY];
        entry[0..4].copy_from_slice(&gram.to_le_bytes());
        entry[4..12].copy_from_slice(&offset.to_le_bytes());
        entry[12..16].copy_from_slice(&u32::try_from(size).unwrap_or(u32::MAX).to_le_bytes());
        entry[16..20].copy_from_slice(&count.to_le_bytes());
        body.put(&entry)?;
        offset += size as u64;
    }
    lens[4] = body.len - start;

    let start = body.len;
    let half = directory.len() / 2;
    let mut n = 0;
    postings.for_each_stored(|list| {
        if n == half
            && let Some(pause) = body.pause
        {
            body.out.flush()?;
            std::thread::sleep(pause);
        }
        n += 1;
        body.put(list)
    })?;
    lens[5] = body.len - start;
    Ok((directory.len(), offset))
}

/// The header of a file whose sections have lengths `lens` and checksum `body_crc`.
fn header(
    contents: &Contents,
    postings: &Postings,
    lens: &[u64; SECTIONS],
    grams: usize,
    body_crc: u32,
) -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[0..8].copy_from_slice(&MAGIC);
    header[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
    header[12..16].copy_from_slice(&count(contents.docs.len()));
    header[16..20].copy_from_slice(&count(contents.dirs.len()));
    header[20..24].copy_from_slice(&count(grams));
    header[24..28].copy_from_slice(&count(postings.always().len()));
    let (secs, _) = time_parts(contents.built);
    header[32..40].copy_from_slice(&secs.to_le_bytes());
    for (i, len) in lens.iter().enumerate() {
        header[40 + 8 * i..48 + 8 * i].copy_from_slice(&len.to_le_bytes());
    }
    header[88..92].copy_from_slice(&body_crc.to_le_bytes());
    let header_crc = crc32fast::hash(&header[..92]);
    header[92..96].copy_from_slice(&header_crc.to_le_bytes());
    header
}

/// Removes the temporary files of saves whose process is gone (killed in the middle).
fn remove_stale(dir: &Path, name: &str) {
    let prefix = format!(".{name}.tmp-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(pid) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        let alive = pid.parse::<u32>().is_ok_and(|pid| {
            pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists()
        });
        if !alive {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// A saved index opened for queries: everything but the posting lists is in memory.
#[derive(Debug)]
pub struct IndexFile {
    file: File,
    path: PathBuf,
    /// What the file describes
    pub contents: Contents,
    /// Ids every query searches
    pub always: Vec<u32>,
    /// Documents the file describes (kept apart from `contents`, which a session takes)
    docs: usize,
    /// The trigram directory as it is on disk: sorted entries of [`GRAM_ENTRY`] bytes
    /// (gram, offset, length, count), checked when opened and searched in place.
    grams: Vec<u8>,
    post_off: u64,
    post_len: u64,
    /// Bytes on disk
    pub bytes: u64,
}

fn corrupt(path: &Path, what: impl Into<String>) -> IndexError {
    IndexError::Corrupt {
        path: path.to_path_buf(),
        reason: what.into(),
    }
}

/// The little-endian `u32` at `at`.
fn word(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    if let Some(s) = bytes.get(at..at + 4) {
        b.copy_from_slice(s);
    }
    u32::from_le_bytes(b)
}

/// The little-endian `u64` at `at`.
fn long(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    if let Some(s) = bytes.get(at..at + 8) {
        b.copy_from_slice(s);
    }
    u64::from_le_bytes(b)
}

/// Reads and checks the header of a file of `size` bytes; gives it and the sections'
/// lengths.
fn read_header(
    file: &mut File,
    path: &Path,
    size: u64,
) -> Result<([u8; HEADER_LEN], [u64; SECTIONS]), IndexError> {
    let mut header = [0u8; HEADER_LEN];
    file.read_exact(&mut header)
        .map_err(|_| corrupt(path, "shorter than its header"))?;
    if header[0..7] != MAGIC[..7] {
        return Err(corrupt(path, "not an index file"));
    }
    let version = word(&header, 8);
    if version != FORMAT_VERSION || header[7] != MAGIC[7] {
        return Err(IndexError::Version {
            path: path.to_path_buf(),
            found: version,
        });
    }
    if crc32fast::hash(&header[..92]) != word(&header, 92) {
        return Err(corrupt(path, "header checksum mismatch"));
    }
    let lens: [u64; SECTIONS] = std::array::from_fn(|i| long(&header, 40 + 8 * i));
    let body_len = lens.iter().try_fold(0u64, |a, &l| a.checked_add(l));
    if body_len.and_then(|b| b.checked_add(HEADER_LEN as u64)) != Some(size) {
        return Err(corrupt(path, "truncated or extended"));
    }
    Ok((header, lens))
}

/// Reads the body after the header and checks its checksum; gives its first `split` bytes
/// and the `meta_len - split` after them (the sections before the posting lists, which are
/// not kept, in two buffers: the first is parsed and dropped, the second kept).
fn read_meta(
    file: &mut File,
    path: &Path,
    size: u64,
    (split, meta_len): (u64, u64),
    expected_crc: u32,
) -> Result<(Vec<u8>, Vec<u8>), IndexError> {
    let mut crc = crc32fast::Hasher::new();
    let room = |n: u64| Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    let (mut head, mut tail) = (room(split), room(meta_len.saturating_sub(split)));
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0u64;
    let mut left = size - HEADER_LEN as u64;
    while left > 0 {
        let want = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
        let chunk = &mut buf[..want];
        file.read_exact(chunk).map_err(|e| IndexError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        crc.update(chunk);
        // The part of this chunk that lies in [from, to) of the body.
        let part = |from: u64, to: u64| {
            let start = usize::try_from(from.max(at) - at).unwrap_or(want).min(want);
            let end = usize::try_from(to.min(at + want as u64).saturating_sub(at))
                .unwrap_or(want)
                .min(want);
            &chunk[start..end.max(start)]
        };
        head.extend_from_slice(part(0, split));
        tail.extend_from_slice(part(split, meta_len));
        at += want as u64;
        left -= want as u64;
    }
    if crc.finalize() != expected_crc {
        return Err(corrupt(path, "body checksum mismatch"));
    }
    Ok((head, tail))
}

/// A varint that fits a `usize`.
fn read_len(bytes: &[u8], at: &mut usize) -> Option<usize> {
    usize::try_from(read_varint(bytes, at)?).ok()
}

/// The `len` bytes at `*at`, moving past them.
fn take<'a>(bytes: &'a [u8], at: &mut usize, len: usize) -> Option<&'a [u8]> {
    let out = bytes.get(*at..at.checked_add(len)?)?;
    *at += len;
    Some(out)
}

/// The documents section: `count` documents, exactly.
fn parse_docs(bytes: &[u8], count: usize) -> Option<Vec<Doc>> {
    let mut at = 0;
    let mut docs = Vec::with_capacity(count.min(bytes.len()));
    for _ in 0..count {
        let len = read_len(bytes, &mut at)?;
        let rel: Box<[u8]> = take(bytes, &mut at, len)?.into();
        let secs = unzigzag(read_varint(bytes, &mut at)?);
        let nanos = u32::try_from(read_varint(bytes, &mut at)?).ok()?;
        let size = read_varint(bytes, &mut at)?;
        let ino = read_varint(bytes, &mut at)?;
        let kind = match take(bytes, &mut at, 1)? {
            [0] => DocKind::File,
            [1] => DocKind::Symlink,
            _ => return None,
        };
        docs.push(Doc {
            rel,
            meta: DocMeta {
                mtime: time_from(secs, nanos)?,
                size,
                ino,
                kind,
            },
        });
    }
    (at == bytes.len()).then_some(docs)
}

/// The directories section: `count` directories, exactly.
fn parse_dirs(bytes: &[u8], count: usize) -> Option<Vec<DirEntry>> {
    let mut at = 0;
    let mut dirs = Vec::with_capacity(count.min(bytes.len()));
    for _ in 0..count {
        let len = read_len(bytes, &mut at)?;
        let rel: Box<[u8]> = take(bytes, &mut at, len)?.into();
        let skipped = read_varint(bytes, &mut at)?;
        dirs.push(DirEntry { rel, skipped });
    }
    (at == bytes.len()).then_some(dirs)
}

/// The ids every query searches: `count` of them, each below `docs`.
fn parse_always(bytes: &[u8], count: usize, docs: usize) -> Option<Vec<u32>> {
    if Some(bytes.len()) != count.checked_mul(4) {
        return None;
    }
    let always: Vec<u32> = bytes.chunks_exact(4).map(|c| word(c, 0)).collect();
    // An id past the documents would be looked up later.
    always
        .iter()
        .all(|&id| (id as usize) < docs)
        .then_some(always)
}

/// Whether `bytes` is a trigram directory of `count` entries, sorted, each list within the
/// `post_len` bytes of lists.
fn grams_ok(bytes: &[u8], count: usize, post_len: u64) -> bool {
    if Some(bytes.len()) != count.checked_mul(GRAM_ENTRY) {
        return false;
    }
    let mut previous: Option<Gram> = None;
    for e in bytes.chunks_exact(GRAM_ENTRY) {
        let gram = word(e, 0);
        let end = long(e, 4).checked_add(u64::from(word(e, 12)));
        if previous.is_some_and(|p| p >= gram) || end.is_none_or(|end| end > post_len) {
            return false;
        }
        previous = Some(gram);
    }
    true
}

impl IndexFile {
    /// Opens and checks a saved index: magic, version, lengths, both checksums (the whole
    /// file is read once), the structure of every section. Any failure is an error that says
    /// why; nothing of a failed file is used.
    pub fn open(path: &Path) -> Result<IndexFile, IndexError> {
        let io = |e: std::io::Error| IndexError::Io {
            path: path.to_path_buf(),
            source: e,
        };
        let mut file = File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        let (header, lens) = read_header(&mut file, path, size)?;
        let meta_len = lens[..5].iter().sum::<u64>();
        // The trigram directory, the last section before the lists, is read into a buffer
        // of its own and kept; the rest is parsed and dropped.
        let before = lens[..4].iter().sum::<u64>();
        let (meta, grams) =
            read_meta(&mut file, path, size, (before, meta_len), word(&header, 88))?;
        let section = |i: usize| -> &[u8] {
            let start = usize::try_from(lens[..i].iter().sum::<u64>()).unwrap_or(0);
            let len = usize::try_from(lens[i]).unwrap_or(0);
            meta.get(start..start + len).unwrap_or_default()
        };
        let bad = || corrupt(path, "malformed section");
        let built = time_from(long(&header, 32) as i64, 0).ok_or_else(bad)?;
        let docs = parse_docs(section(1), word(&header, 12) as usize).ok_or_else(bad)?;
        let dirs = parse_dirs(section(2), word(&header, 16) as usize).ok_or_else(bad)?;
        let always =
            parse_always(section(3), word(&header, 24) as usize, docs.len()).ok_or_else(bad)?;
        let post_len = lens[5];
        if !grams_ok(&grams, word(&header, 20) as usize, post_len) {
            return Err(bad());
        }
        let root = PathBuf::from(std::ffi::OsStr::from_bytes(section(0)));
        Ok(IndexFile {
            file,
            path: path.to_path_buf(),
            docs: docs.len(),
            contents: Contents {
                root,
                built,
                docs,
                dirs,
            },
            always,
            grams,
            post_off: HEADER_LEN as u64 + meta_len,
            post_len,
            bytes: size,
        })
    }

    /// The directory's entry of `gram`: offset, length and count of its list.
    fn entry(&self, gram: Gram) -> Option<(u64, u32, u32)> {
        let (mut lo, mut hi) = (0, self.grams.len() / GRAM_ENTRY);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let e = self.grams.get(mid * GRAM_ENTRY..(mid + 1) * GRAM_ENTRY)?;
            match word(e, 0).cmp(&gram) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some((long(e, 4), word(e, 12), word(e, 16))),
            }
        }
        None
    }

    /// Documents whose content holds `gram`.
    pub fn count(&self, gram: Gram) -> u32 {
        self.entry(gram).map_or(0, |e| e.2)
    }

    /// The sorted ids of the documents whose content holds `gram`, read from the file.
    pub fn ids(&self, gram: Gram) -> Result<Vec<u32>, IndexError> {
        let Some((off, len, count)) = self.entry(gram) else {
            return Ok(Vec::new());
        };
        let mut buf = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut buf, self.post_off + off)
            .map_err(|e| IndexError::Io {
                path: self.path.clone(),
                source: e,
            })?;
        let ids = decode_list(&buf, count)
            .ok_or_else(|| corrupt(&self.path, "malformed posting list"))?;
        if ids.last().is_some_and(|&last| last as usize >= self.docs) {
            return Err(corrupt(&self.path, "posting list names a missing document"));
        }
        Ok(ids)
    }

    /// Distinct trigrams.
    pub fn gram_count(&self) -> usize {
        self.grams.len() / GRAM_ENTRY
    }

    /// Bytes of posting lists.
    pub fn postings_bytes(&self) -> u64 {
        self.post_len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extreme_times_never_panic() {
        assert_eq!(
            time_from(0, 5),
            Some(SystemTime::UNIX_EPOCH + Duration::from_nanos(5))
        );
        assert!(time_from(-1, 0).is_some());
        // Whether the system holds them depends on its time type; they never panic.
        for secs in [i64::MAX, i64::MIN, i64::MAX - 1, i64::MIN + 1] {
            let _ = time_from(secs, u32::MAX);
        }
    }
}
