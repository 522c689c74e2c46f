//! What changed on disk in a server's workspace since the last look, for servers that
//! learn about files only from their client (`workspace/didChangeWatchedFiles`): pyright
//! lists the workspace once at start and, without a client that reports changes, never
//! sees a file a shell command created later, nor a closed file's new content.
//!
//! A scan lists the files with the server's extensions under its root, with their size and
//! modification time; hidden folders, `node_modules`, `__pycache__`, `target`,
//! `site-packages` and virtual environments (a folder holding `pyvenv.cfg`) are skipped,
//! symbolic links are not followed, and the walk stops after [`MAX_SCAN_ENTRIES`] directory
//! entries (a snapshot cut short never reports deletions). Comparing two snapshots gives
//! the files created, changed and deleted in between.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A scan reads at most this many directory entries (files and folders).
pub(crate) const MAX_SCAN_ENTRIES: usize = 50_000;

/// Folders never entered (besides hidden ones and virtual environments).
const SKIP_DIRS: &[&str] = &["node_modules", "__pycache__", "target", "site-packages"];

/// A file as a scan saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
}

/// The files of a workspace at one moment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    files: HashMap<PathBuf, Stamp>,
    /// Whether the walk saw the whole tree (it stops at [`MAX_SCAN_ENTRIES`])
    complete: bool,
}

/// How a file changed between two snapshots (LSP's `FileChangeType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Change {
    /// A new file
    Created = 1,
    /// Its size or modification time changed
    Changed = 2,
    /// It is gone
    Deleted = 3,
}

impl Snapshot {
    /// How many files it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.files.len()
    }
}

fn wanted(path: &Path, extensions: &[String]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| extensions.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

fn skipped_dir(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    name.starts_with('.') || SKIP_DIRS.contains(&name.as_ref()) || path.join("pyvenv.cfg").exists()
}

/// The files with one of `extensions` (lower case, no dot) under `root`, reading at most
/// `cap` directory entries.
pub(crate) fn scan(root: &Path, extensions: &[String], cap: usize) -> Snapshot {
    let mut files = HashMap::new();
    let mut entries = 0usize;
    let mut stack = vec![root.to_path_buf()];
    let mut complete = true;
    'walk: while let Some(dir) = stack.pop() {
        let Ok(list) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in list.flatten() {
            entries += 1;
            if entries > cap {
                complete = false;
                break 'walk;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                if !skipped_dir(&path) {
                    stack.push(path);
                }
            } else if kind.is_file()
                && wanted(&path, extensions)
                && let Ok(meta) = entry.metadata()
            {
                files.insert(
                    path,
                    Stamp {
                        modified: meta.modified().ok(),
                        len: meta.len(),
                    },
                );
            }
        }
    }
    Snapshot { files, complete }
}

/// What changed from `old` to `new`, sorted by path. Deletions only when `new` is complete.
pub(crate) fn changes(old: &Snapshot, new: &Snapshot) -> Vec<(PathBuf, Change)> {
    let mut out: Vec<(PathBuf, Change)> = new
        .files
        .iter()
        .filter_map(|(path, stamp)| match old.files.get(path) {
            None => Some((path.clone(), Change::Created)),
            Some(before) if before != stamp => Some((path.clone(), Change::Changed)),
            Some(_) => None,
        })
        .collect();
    if new.complete {
        out.extend(
            old.files
                .keys()
                .filter(|p| !new.files.contains_key(*p))
                .map(|p| (p.clone(), Change::Deleted)),
        );
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exts() -> Vec<String> {
        vec!["py".to_owned(), "pyi".to_owned()]
    }

    #[test]
    fn scans_see_created_changed_and_deleted_files_and_skip_what_they_should() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        let write = |p: &str, text: &str| {
            let path = root.join(p);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
            }
            std::fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
        };
        write("a.py", "a = 1\n");
        write("pkg/b.PY", "b = 1\n");
        write("notes.txt", "x\n");
        for skipped in [
            ".venv2/c.py",
            "node_modules/d.py",
            "__pycache__/e.py",
            "target/f.py",
            "env/lib/site-packages/g.py",
            "venv/h.py",
        ] {
            write(skipped, "x = 1\n");
        }
        write("venv/pyvenv.cfg", "home = /usr\n");
        let first = scan(root, &exts(), MAX_SCAN_ENTRIES);
        assert_eq!(first.len(), 2, "{first:?}");
        assert!(changes(&first, &first).is_empty());
        write("pkg/new.pyi", "n = 1\n");
        write("a.py", "a = 22\n");
        std::fs::remove_file(root.join("pkg/b.PY")).unwrap_or_else(|e| panic!("{e}"));
        let second = scan(root, &exts(), MAX_SCAN_ENTRIES);
        let got: Vec<(String, Change)> = changes(&first, &second)
            .into_iter()
            .map(|(p, c)| (p.strip_prefix(root).unwrap_or(&p).display().to_string(), c))
            .collect();
        assert_eq!(
            got,
            [
                ("a.py".to_owned(), Change::Changed),
                ("pkg/b.PY".to_owned(), Change::Deleted),
                ("pkg/new.pyi".to_owned(), Change::Created),
            ]
        );
        // A scan cut short reports no deletions.
        let short = scan(root, &exts(), 1);
        assert!(!short.complete);
        assert!(
            changes(&second, &short)
                .iter()
                .all(|(_, c)| *c != Change::Deleted)
        );
    }
}
