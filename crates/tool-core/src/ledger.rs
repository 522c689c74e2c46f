//! The read-file ledger: what the model has read, so Edit and Write can insist on a read
//! first and refuse to overwrite changes made since.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// Which tool recorded an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadSource {
    /// The Read tool
    Read,
    /// A write by Edit, MultiEdit, Write or NotebookEdit
    Write,
}

/// What the ledger knows about one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRecord {
    /// Hash of the whole file's bytes when recorded, if the whole file was seen
    pub content_hash: Option<u64>,
    /// Modification time when recorded
    pub mtime: Option<SystemTime>,
    /// Size in bytes when recorded
    pub len: u64,
    /// The `offset` of the read (1-based line), if any
    pub offset: Option<u64>,
    /// The `limit` of the read, if any
    pub limit: Option<u64>,
    /// Whether the model saw only part of the file (a preview, not a real read)
    pub partial_view: bool,
    /// Who recorded it
    pub source: ReadSource,
}

/// The verdict on a file the model wants to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Read, and unchanged since (by content)
    Fresh,
    /// Never read in this session
    NotRead,
    /// Only partly viewed
    PartialView,
    /// Changed on disk since it was read
    Modified,
}

/// A fast hash of file content; staleness compares these.
pub fn content_hash(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    h.write(bytes);
    h.write_u64(bytes.len() as u64);
    h.finish()
}

/// Per-session record of reads, keyed by absolute path.
#[derive(Debug, Default)]
pub struct ReadLedger {
    entries: Mutex<HashMap<PathBuf, ReadRecord>>,
}

impl ReadLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a read or a write of `path`.
    pub fn record(&self, path: &Path, record: ReadRecord) {
        if let Ok(mut map) = self.entries.lock() {
            map.insert(path.to_path_buf(), record);
        }
    }

    /// What is recorded for `path`.
    pub fn get(&self, path: &Path) -> Option<ReadRecord> {
        self.entries
            .lock()
            .ok()
            .and_then(|map| map.get(path).cloned())
    }

    /// Forgets `path`.
    pub fn forget(&self, path: &Path) {
        if let Ok(mut map) = self.entries.lock() {
            map.remove(path);
        }
    }

    /// Decides whether `path` may be changed, given its current metadata and content.
    ///
    /// Decided by content, not by mtime alone: when the mtime or size moved but the content
    /// hash is unchanged (a `touch`, a checkout of the same bytes, an editor's save without
    /// changes), the file is still fresh. The reference trusted mtime for partial reads and
    /// looped on "modified since read" (its issue tracker's most common complaint).
    pub fn freshness(&self, path: &Path, mtime: Option<SystemTime>, current: &[u8]) -> Freshness {
        let Some(record) = self.get(path) else {
            return Freshness::NotRead;
        };
        if record.partial_view {
            return Freshness::PartialView;
        }
        if record.mtime == mtime && mtime.is_some() && record.len == current.len() as u64 {
            return Freshness::Fresh;
        }
        match record.content_hash {
            Some(hash) if hash == content_hash(current) => Freshness::Fresh,
            _ => Freshness::Modified,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn record(bytes: &[u8], mtime: SystemTime) -> ReadRecord {
        ReadRecord {
            content_hash: Some(content_hash(bytes)),
            mtime: Some(mtime),
            len: bytes.len() as u64,
            offset: None,
            limit: None,
            partial_view: false,
            source: ReadSource::Read,
        }
    }

    #[test]
    fn freshness_by_content() {
        let ledger = ReadLedger::new();
        let p = Path::new("/f");
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let t1 = t0 + Duration::from_secs(5);
        assert_eq!(ledger.freshness(p, Some(t0), b"a"), Freshness::NotRead);
        ledger.record(p, record(b"hello", t0));
        assert_eq!(ledger.freshness(p, Some(t0), b"hello"), Freshness::Fresh);
        // Touched: mtime moved, content the same.
        assert_eq!(ledger.freshness(p, Some(t1), b"hello"), Freshness::Fresh);
        assert_eq!(ledger.freshness(p, Some(t1), b"hellO"), Freshness::Modified);
        let mut partial = record(b"hello", t0);
        partial.partial_view = true;
        ledger.record(p, partial);
        assert_eq!(
            ledger.freshness(p, Some(t0), b"hello"),
            Freshness::PartialView
        );
        ledger.forget(p);
        assert_eq!(ledger.freshness(p, Some(t0), b"hello"), Freshness::NotRead);
    }
}
