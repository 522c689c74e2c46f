//! What the search index reads of a tree: one walk under the scan's own ignore policy
//! (the same walker, so the same files) that records each kept file's metadata and each
//! directory's skipped entries, and adds a watch on every directory before listing it;
//! and the content of one file as the index reads it.

use std::collections::BTreeMap;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use rustix::fs::{AtFlags, FileType, StatxFlags};
use search_index::{Content, DocKind, DocMeta};

use super::watch::{Watch, full_path};
use crate::ignore_policy::{IgnorePolicy, WalkDeadline};
use crate::walk::{FileEntry, Kind, Visitor, walk};

/// Files above this size are not read for trigrams: they are searched by every query.
pub(crate) const MAX_INDEXED_FILE: u64 = 64 * 1024 * 1024;

/// One walk's findings, paths relative to the index root.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Files and symbolic links, by path.
    pub(crate) docs: BTreeMap<Vec<u8>, DocMeta>,
    /// Directories walked, with the entries their ignore rules skipped.
    pub(crate) dirs: BTreeMap<Vec<u8>, u64>,
    /// Subdirectories seen (kept), entered or not.
    pub(crate) subdirs: Vec<Vec<u8>>,
    /// Bytes of the files.
    pub(crate) bytes: u64,
}

/// One thread's part of a walk.
struct Collector<'a> {
    /// Prefix of every path (the walk's root relative to the index root), with a trailing
    /// slash unless empty.
    prefix: &'a [u8],
    root: &'a Path,
    watch: Option<&'a Watch>,
    found: Found,
}

impl Collector<'_> {
    fn rel(&self, rel: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.prefix.len() + rel.len());
        out.extend_from_slice(self.prefix);
        out.extend_from_slice(rel);
        if rel.is_empty() && out.last() == Some(&b'/') {
            out.pop();
        }
        out
    }
}

/// The metadata of `name` in `dir` (not following a symbolic link), or of the link's
/// target when `follow`.
pub(crate) fn stat_at(
    dir: BorrowedFd<'_>,
    name: &Path,
    follow: bool,
) -> Option<(DocMeta, FileType)> {
    let flags = if follow {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    let st = rustix::fs::statx(
        dir,
        name,
        flags,
        StatxFlags::TYPE | StatxFlags::MTIME | StatxFlags::SIZE | StatxFlags::INO,
    )
    .ok()?;
    let t = st.stx_mtime;
    let mtime = u64::try_from(t.tv_sec).map_or(SystemTime::UNIX_EPOCH, |secs| {
        SystemTime::UNIX_EPOCH + Duration::new(secs, t.tv_nsec)
    });
    let ty = FileType::from_raw_mode(st.stx_mode.into());
    let kind = if ty == FileType::Symlink {
        DocKind::Symlink
    } else {
        DocKind::File
    };
    Some((
        DocMeta {
            mtime,
            size: st.stx_size,
            ino: st.stx_ino,
            kind,
        },
        ty,
    ))
}

impl Visitor for Collector<'_> {
    fn visit(&mut self, entry: &mut FileEntry<'_>) {
        let kind = entry.kind();
        if kind == Kind::Other {
            return;
        }
        let Some((meta, ty)) = stat_at(entry.dir(), entry.name(), false) else {
            return;
        };
        // The listing and the file agree on its type (it may have been replaced since).
        let expected = if kind == Kind::File {
            FileType::RegularFile
        } else {
            FileType::Symlink
        };
        if ty != expected {
            return;
        }
        if kind == Kind::File {
            self.found.bytes += meta.size;
        }
        let rel = self.rel(entry.rel_path().as_os_str().as_bytes());
        self.found.docs.insert(rel, meta);
    }

    fn directory(&mut self, dir: BorrowedFd<'_>, rel: &[u8]) {
        let rel = self.rel(rel);
        if let Some(watch) = self.watch {
            watch.add(dir, &rel, &full_path(self.root, &rel));
        }
        self.found.dirs.entry(rel).or_insert(0);
    }

    fn skipped(&mut self, rel: &[u8], n: u64) {
        let rel = self.rel(rel);
        *self.found.dirs.entry(rel).or_insert(0) += n;
    }

    fn subdir(&mut self, rel: &[u8]) {
        let rel = self.rel(rel);
        self.found.subdirs.push(rel);
    }
}

/// Walks `sub` (relative to `root`, "" for the root itself) under the default ignore
/// policy — as Grep and Glob would with `sub` as their path — recursively or not, watching
/// each directory with `watch`. Paths come back relative to `root`.
pub(crate) fn collect(
    root: &Path,
    sub: &[u8],
    recurse: bool,
    watch: Option<&Watch>,
    deadline: &WalkDeadline,
) -> Found {
    let walk_root = full_path(root, sub);
    let mut prefix = sub.to_vec();
    if !prefix.is_empty() {
        prefix.push(b'/');
    }
    let mut options = IgnorePolicy::default().walk_options();
    options.recurse = recurse;
    let (threads, _) = walk(&walk_root, options, deadline, 256, || Collector {
        prefix: &prefix,
        root,
        watch,
        found: Found::default(),
    });
    let mut found = Found::default();
    for mut t in threads {
        // Moved whole, or merged in one linear pass: not one insertion per file.
        if found.docs.is_empty() {
            found.docs = t.found.docs;
        } else {
            found.docs.append(&mut t.found.docs);
        }
        for (rel, n) in t.found.dirs {
            *found.dirs.entry(rel).or_insert(0) += n;
        }
        found.subdirs.extend(t.found.subdirs);
        found.bytes += t.found.bytes;
    }
    found
}

/// Reads the file `rel` (opened beneath `dir`, the root's handle, without following links)
/// for its trigrams: its bytes up to the first NUL (the scan stops at binary data), or
/// [`Content::Always`] when the matcher would see other bytes (a UTF-16 byte order mark: it
/// transcodes) or it cannot be read now.
///
/// As cheap as the scan's own read: one status call, then reads straight into `buf`'s
/// spare room (sized to the file, so one read and the one that sees the end).
pub(crate) fn read_content(dir: &OwnedFd, rel: &[u8], buf: &mut Vec<u8>) -> Content {
    let Some(fd) = crate::beneath::open_beneath(dir, rel) else {
        return Content::Always;
    };
    match rustix::fs::fstat(&fd) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile => {
            return Content::Skip;
        }
        Ok(st) if u64::try_from(st.st_size).unwrap_or(u64::MAX) > MAX_INDEXED_FILE => {
            return Content::Always;
        }
        // Room for the file and a byte more, so that the read after it sees the end
        // without growing the buffer; a buffer too small is replaced, not grown (growing
        // copies its old contents, which are of no use).
        Ok(st) => {
            let room = usize::try_from(st.st_size).unwrap_or(0).saturating_add(1);
            if buf.is_empty() && buf.capacity() < room {
                *buf = Vec::with_capacity(room);
            } else {
                buf.reserve(room);
            }
        }
        Err(_) => return Content::Always,
    }
    loop {
        if buf.len() == buf.capacity() {
            buf.reserve(64 * 1024);
        }
        match rustix::io::read(&fd, rustix::buffer::spare_capacity(buf)) {
            Ok(0) => break,
            Ok(_) if buf.len() as u64 > MAX_INDEXED_FILE => return Content::Always,
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return Content::Always,
        }
    }
    if buf.starts_with(&[0xFF, 0xFE]) || buf.starts_with(&[0xFE, 0xFF]) {
        return Content::Always;
    }
    if let Some(nul) = memchr::memchr(0, buf) {
        buf.truncate(nul);
    }
    Content::Text
}
