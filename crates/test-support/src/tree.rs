//! Temporary directories for tests: [`tempdir`] (a directory and its canonical path) and
//! [`Tree`], a directory written from a compact list of entries whose files all get
//! [`FIXED_MTIME`].

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tempfile::TempDir;

/// The modification time every file of a [`Tree`] gets unless a test sets another, so that
/// a newest-first order (Glob's, Grep's) falls back to the path order and results are
/// deterministic.
pub const FIXED_MTIME: Duration = Duration::from_secs(1_600_000_000);

/// A new temporary directory and its canonical path (what the tools report: on some systems
/// the temporary folder is reached through a symbolic link). The directory is removed when
/// the `TempDir` is dropped.
pub fn tempdir() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir
        .path()
        .canonicalize()
        .expect("the temporary directory's canonical path");
    (dir, root)
}

/// A temporary directory tree, removed when dropped.
pub struct Tree {
    _dir: TempDir,
    root: PathBuf,
}

impl Tree {
    /// A tree with `entries` created in it (see [`Tree::add`]).
    pub fn new(entries: &[&str]) -> Self {
        let (dir, root) = tempdir();
        let tree = Tree { _dir: dir, root };
        for entry in entries {
            tree.add(entry);
        }
        tree
    }

    /// Adds one entry: `"a/b.rs"` is an empty file, `"a/"` a directory, `"f = text"` a file
    /// with that content (`\n` written as `\\n` is a newline), `"l -> target"` a symbolic
    /// link. Parents are created; files get [`FIXED_MTIME`].
    pub fn add(&self, entry: &str) {
        if let Some((link, target)) = entry.split_once(" -> ") {
            self.symlink(link, target);
        } else if let Some(dir) = entry.strip_suffix('/') {
            std::fs::create_dir_all(self.root.join(dir)).expect("mkdir");
        } else {
            let (name, content) = entry.split_once(" = ").unwrap_or((entry, ""));
            self.write(name, content.replace("\\n", "\n"));
            self.set_mtime(name, FIXED_MTIME);
        }
    }

    /// Makes `link` (relative to the root, parents created) a symbolic link to `target`,
    /// written as given.
    pub fn symlink(&self, link: &str, target: impl AsRef<Path>) {
        let link = self.root.join(link);
        std::fs::create_dir_all(link.parent().expect("a parent")).expect("mkdir");
        std::os::unix::fs::symlink(target, link).expect("symlink");
    }

    /// Writes `bytes` to `rel` (creating parents), leaving its modification time as the
    /// write made it.
    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, bytes).expect("write");
    }

    /// Sets the modification time of the file `rel` to `since_epoch` after the epoch.
    pub fn set_mtime(&self, rel: &str, since_epoch: Duration) {
        std::fs::File::options()
            .write(true)
            .open(self.root.join(rel))
            .and_then(|f| f.set_modified(SystemTime::UNIX_EPOCH + since_epoch))
            .expect("set mtime");
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path of `rel` under the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

/// Every entry under `dir`, relative and sorted, with what it holds: `name/` for a
/// directory, `name -> target` for a symbolic link, `name = content` for a file — what a
/// race test compares before and after to see that nothing was written through a link.
pub fn listing(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("a readable directory")
            .flatten()
            .collect();
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for e in entries {
            let path = e.path();
            let rel = path
                .strip_prefix(root)
                .expect("an entry below the root")
                .display()
                .to_string();
            let ft = e.file_type().expect("a file type");
            if ft.is_symlink() {
                let target = std::fs::read_link(&path).expect("a link target");
                out.push(format!("{rel} -> {}", target.display()));
            } else if ft.is_dir() {
                out.push(format!("{rel}/"));
                walk(root, &path, out);
            } else {
                let content = std::fs::read_to_string(&path).expect("a text file");
                out.push(format!("{rel} = {content}"));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out
}
