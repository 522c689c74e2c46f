//! Placeholders: empty entries made on the host for protected names that do not exist yet,
//! so that bubblewrap can bind them read-only. Bound, a placeholder is a mount point inside
//! the sandbox: it cannot be written, removed, renamed or replaced there, so the name cannot
//! be created by a sandboxed command.
//!
//! They are kept harmless while they exist and leave no trace:
//! - Directories are empty (git ignores an empty `.git` directory and keeps looking in the
//!   parent; nothing reads an empty `.vscode/`). Files are empty, except a git directory's
//!   `commondir`, which holds `.`, naming the directory itself, so git reads it as if it
//!   were absent (an empty one stops git), and the JSON files, which hold an empty
//!   configuration (`.mcp.json` has no servers), so every loader reads them as valid.
//! - Each is marked with the extended attribute [`XATTR`] (where the file system has user
//!   attributes), so another process, or a later one after a crash, recognises it.
//! - It is removed when the last sandbox of this process that binds it ends, only if it is
//!   still the entry that was made (same device, inode and change time) and no other mount
//!   namespace still has it mounted (another process's sandbox). A sandbox just killed
//!   takes a moment to die: its placeholders are waited for, up to [`WAIT_HERE`], where it
//!   ends (so a process that exits next leaves none), then by a janitor thread. Anything the
//!   host wrote into it, or put in its place, is the user's and stays.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tool_core::ToolError;
use tool_core::path::EntryKind;

use crate::placeholder_shape::Shape;

/// The extended attribute that marks a placeholder.
pub const XATTR: &str = "user.agent-tools.placeholder";

/// A placeholder this process uses.
struct Entry {
    /// Device, inode and change time when it was made or adopted: any write into it, an
    /// entry added to it, or another entry in its place (even one that reuses the inode
    /// number) changes one of them
    id: (u64, u64, i64, i64),
    shape: Shape,
    users: usize,
}

fn identity(meta: &std::fs::Metadata) -> (u64, u64, i64, i64) {
    (meta.dev(), meta.ino(), meta.ctime(), meta.ctime_nsec())
}

/// Held while a policy decides which protected names are placeholders and takes them, and
/// while a placeholder is removed: a policy never binds a placeholder that is being removed.
/// Taken before the table.
pub fn gate() -> std::sync::MutexGuard<'static, ()> {
    static GATE: Mutex<()> = Mutex::new(());
    GATE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn table() -> &'static Mutex<HashMap<PathBuf, Entry>> {
    static TABLE: OnceLock<Mutex<HashMap<PathBuf, Entry>>> = OnceLock::new();
    TABLE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The placeholders a policy holds; when the last clone of the last policy holding one is
/// dropped, the placeholder is removed (see the module documentation). Policies compare
/// equal whatever their leases: what they bind is in their paths.
#[derive(Clone, Default)]
pub struct Leases(Option<Arc<Held>>);

struct Held(Vec<PathBuf>);

impl Drop for Held {
    fn drop(&mut self) {
        release_all(&self.0);
    }
}

impl PartialEq for Leases {
    fn eq(&self, _: &Leases) -> bool {
        true
    }
}

impl Eq for Leases {}

impl std::fmt::Debug for Leases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.as_ref().map_or(0, |h| h.0.len());
        write!(f, "Leases({n})")
    }
}

impl Leases {
    /// Whether any placeholder is held.
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|h| h.0.is_empty())
    }

    /// Makes again each held placeholder that is gone: one shared with another process,
    /// which removed it when its own sandbox ended while none of ours had it mounted.
    /// Bubblewrap binds placeholders by path, so each launch calls this first.
    pub(crate) fn restore(&self) {
        let Some(held) = &self.0 else { return };
        let _gate = gate();
        let Ok(mut t) = table().lock() else { return };
        for p in &held.0 {
            if std::fs::symlink_metadata(p).is_ok() {
                continue;
            }
            let Some(e) = t.get_mut(p) else { continue };
            if let Ok(meta) = make(p, e.shape) {
                e.id = identity(&meta);
            }
        }
    }

    /// Whether the placeholder at `path` is held.
    pub fn holds(&self, path: &Path) -> bool {
        self.0
            .as_ref()
            .is_some_and(|h| h.0.iter().any(|p| p == path))
    }
}

/// Whether the entry at `path` (whose metadata is `meta`) is a placeholder of `shape`, as it
/// was made: one this process holds (recognised by its identity, without reading it), or
/// one marked by another process and still empty.
pub fn is_placeholder(path: &Path, meta: &std::fs::Metadata, shape: Shape) -> bool {
    let known = table()
        .lock()
        .ok()
        .and_then(|t| t.get(path).map(|e| e.id == identity(meta)));
    match known {
        Some(same) => same,
        None => marked(path) && unchanged(path, meta, shape),
    }
}

/// Whether `path` carries the placeholder mark (of this process or another): an entry that
/// goes away when the sandbox that made it ends.
pub(crate) fn marked(path: &Path) -> bool {
    let mut buf = [0_u8; 8];
    rustix::fs::lgetxattr(path, XATTR, &mut buf[..]).is_ok()
}

/// Whether `path` still has `shape`'s type and content.
fn unchanged(path: &Path, meta: &std::fs::Metadata, shape: Shape) -> bool {
    match shape.kind {
        EntryKind::Dir => {
            meta.is_dir()
                && std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
        }
        EntryKind::File => {
            meta.is_file()
                && meta.len() == shape.content.len() as u64
                && (shape.content.is_empty()
                    || std::fs::read(path).is_ok_and(|c| c == shape.content))
        }
    }
}

/// Holds a placeholder at each of `wanted`, making those that do not exist. A name the host
/// cannot create (no permission, a read-only file system) is skipped: no sandboxed command
/// could create it either. An entry that exists and is not a placeholder is left alone
/// (the caller binds it as it is). Any other failure comes back beside what was taken
/// (dropping leases may remove placeholders, which needs the [`gate`] the caller holds).
pub fn acquire(wanted: &[(PathBuf, Shape)]) -> (Leases, Option<ToolError>) {
    if wanted.is_empty() {
        return (Leases(None), None);
    }
    let mut failure = None;
    let mut held = Vec::new();
    let Ok(mut t) = table().lock() else {
        return (
            Leases(None),
            Some(ToolError::fatal(
                "internal error: the placeholder table is poisoned",
            )),
        );
    };
    for (path, shape) in wanted {
        match std::fs::symlink_metadata(path) {
            Ok(meta) => {
                let id = identity(&meta);
                match t.get_mut(path) {
                    Some(e) if e.id == id => e.users += 1,
                    Some(_) => {
                        // The host wrote into it or replaced it: it is the user's now.
                        t.remove(path);
                        continue;
                    }
                    None if marked(path) && unchanged(path, &meta, *shape) => {
                        // Another process's (or a crashed one's): share it.
                        t.insert(
                            path.clone(),
                            Entry {
                                id,
                                shape: *shape,
                                users: 1,
                            },
                        );
                    }
                    None => continue,
                }
                held.push(path.clone());
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let meta = match make(path, *shape) {
                    Ok(meta) => meta,
                    Err(e) if skippable(&e) => continue,
                    Err(e) => {
                        failure = Some(ToolError::fatal(format!(
                            "cannot create a placeholder for the protected path {}: {e}",
                            path.display()
                        )));
                        break;
                    }
                };
                t.insert(
                    path.clone(),
                    Entry {
                        id: identity(&meta),
                        shape: *shape,
                        users: 1,
                    },
                );
                held.push(path.clone());
            }
            Err(_) => {}
        }
    }
    (Leases(Some(Arc::new(Held(held)))), failure)
}

fn skippable(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::PermissionDenied
            | ErrorKind::ReadOnlyFilesystem
            | ErrorKind::AlreadyExists
            | ErrorKind::NotADirectory
    )
}

/// Makes a placeholder and marks it; its metadata once marked.
fn make(path: &Path, shape: Shape) -> std::io::Result<std::fs::Metadata> {
    match shape.kind {
        EntryKind::Dir => std::fs::create_dir(path)?,
        EntryKind::File => {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .open(path)?;
            f.write_all(shape.content)?;
        }
    }
    // Not every file system has user attributes; the process's own table still knows it.
    let _ = rustix::fs::lsetxattr(path, XATTR, b"1", rustix::fs::XattrFlags::empty());
    std::fs::symlink_metadata(path)
}

/// One user of `path` fewer; what the last one must remove.
fn unuse(path: &Path) -> Option<Pending> {
    let mut t = table().lock().ok()?;
    let e = t.get_mut(path)?;
    e.users = e.users.saturating_sub(1);
    if e.users > 0 {
        return None;
    }
    let entry = t.remove(path)?;
    Some(Pending {
        path: path.to_path_buf(),
        entry,
        since: Instant::now(),
    })
}

/// One user fewer of each of `paths`; the last one removes them. The mounts of the other
/// namespaces are read once per round for all of them (a sandbox binds dozens), and a round
/// is repeated while a sandbox just ended still mounts some, up to [`WAIT_HERE`].
fn release_all(paths: &[PathBuf]) {
    let mut pending: Vec<Pending> = paths.iter().filter_map(|p| unuse(p)).collect();
    let started = Instant::now();
    loop {
        let mut foreign = None;
        pending.retain(|p| !p.try_remove(&mut foreign));
        if pending.is_empty() {
            return;
        }
        if started.elapsed() >= WAIT_HERE {
            for p in pending {
                janitor(p);
            }
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// How long the end of a sandbox waits for its placeholders to be unmounted.
pub const WAIT_HERE: Duration = Duration::from_secs(1);

/// How long a placeholder still mounted elsewhere is waited for, in all.
const WAIT_FOR_UNMOUNT: Duration = Duration::from_secs(5);

/// A placeholder to remove once nothing mounts it.
struct Pending {
    path: PathBuf,
    entry: Entry,
    since: Instant,
}

impl Pending {
    /// Removes the placeholder if it is still ours, unused and unmounted; true when there is
    /// nothing left to do. `foreign` holds the mount points of the other mount namespaces,
    /// read on first need and shared by the removals of one round.
    fn try_remove(&self, foreign: &mut Option<HashSet<String>>) -> bool {
        let _gate = gate();
        let Ok(t) = table().lock() else { return true };
        if t.contains_key(&self.path) {
            // Held again.
            return true;
        }
        let Ok(meta) = std::fs::symlink_metadata(&self.path) else {
            return true;
        };
        if identity(&meta) != self.entry.id {
            return true;
        }
        if foreign
            .get_or_insert_with(foreign_mount_points)
            .contains(&escape(&self.path))
        {
            return false;
        }
        let _ = match self.entry.shape.kind {
            EntryKind::Dir => std::fs::remove_dir(&self.path),
            EntryKind::File => std::fs::remove_file(&self.path),
        };
        true
    }
}

/// Retries removals in the background until the sandboxes still mounting them are gone
/// (bubblewrap's namespace dies just after its process is reaped).
fn janitor(pending: Pending) {
    static QUEUE: OnceLock<Option<Mutex<mpsc::Sender<Pending>>>> = OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Pending>();
        std::thread::Builder::new()
            .name("agent-tools-placeholders".into())
            .spawn(move || {
                let mut waiting: Vec<Pending> = Vec::new();
                loop {
                    let next = if waiting.is_empty() {
                        rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected)
                    } else {
                        rx.recv_timeout(Duration::from_millis(25))
                    };
                    match next {
                        Ok(p) => waiting.push(p),
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                    let mut foreign = None;
                    waiting.retain(|p| {
                        !p.try_remove(&mut foreign) && p.since.elapsed() < WAIT_FOR_UNMOUNT
                    });
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    if let Some(q) = queue
        && let Ok(q) = q.lock()
    {
        let _ = q.send(pending);
    }
}

/// The mount points (as `/proc/PID/mountinfo` writes them) of every mount namespace other
/// than this process's, each namespace read once.
fn foreign_mount_points() -> HashSet<String> {
    let own = std::fs::read_link("/proc/self/ns/mnt").ok();
    let mut seen = HashSet::new();
    let mut points = HashSet::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return points;
    };
    for e in procs.flatten() {
        let name = e.file_name();
        if !name
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let Ok(ns) = std::fs::read_link(e.path().join("ns/mnt")) else {
            continue;
        };
        if Some(&ns) == own.as_ref() || !seen.insert(ns) {
            continue;
        }
        let Ok(info) = std::fs::read_to_string(e.path().join("mountinfo")) else {
            continue;
        };
        points.extend(
            info.lines()
                .filter_map(|line| line.split(' ').nth(4))
                .map(str::to_owned),
        );
    }
    points
}

/// A path as `/proc/PID/mountinfo` writes it (space, tab, newline and backslash escaped in
/// octal).
fn escape(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            ' ' => out.push_str("\\040"),
            '\t' => out.push_str("\\011"),
            '\n' => out.push_str("\\012"),
            '\\' => out.push_str("\\134"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_made_shared_and_removed() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().canonicalize()?;
        let file = (root.join(".mcp.json"), Shape::empty(EntryKind::File));
        let folder = (root.join(".vscode"), Shape::empty(EntryKind::Dir));
        let commondir = (
            root.join("commondir"),
            Shape::git_entry("commondir", EntryKind::File),
        );
        let wanted = vec![file.clone(), folder.clone(), commondir.clone()];
        let (first, e1) = acquire(&wanted);
        let (second, e2) = acquire(&wanted);
        assert!(e1.is_none() && e2.is_none());
        for (p, shape) in &wanted {
            let meta = std::fs::symlink_metadata(p)?;
            assert!(is_placeholder(p, &meta, *shape), "{}", p.display());
        }
        assert_eq!(std::fs::read(&commondir.0)?, b".\n");
        drop(first);
        assert!(file.0.exists() && folder.0.exists(), "still held");
        drop(second);
        for (p, _) in &wanted {
            assert!(!p.exists(), "{} left behind", p.display());
        }
        Ok(())
    }

    #[test]
    fn what_the_host_wrote_stays() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().canonicalize()?;
        let file = root.join(".gitmodules");
        let folder = root.join(".claude");
        let replaced = root.join(".idea");
        let wanted = vec![
            (file.clone(), Shape::empty(EntryKind::File)),
            (folder.clone(), Shape::empty(EntryKind::Dir)),
            (replaced.clone(), Shape::empty(EntryKind::Dir)),
        ];
        let (leases, _) = acquire(&wanted);
        std::fs::write(&file, "[submodule]\n")?;
        std::fs::write(folder.join("settings.json"), "{}")?;
        std::fs::remove_dir(&replaced)?;
        std::fs::create_dir(&replaced)?;
        let meta = std::fs::symlink_metadata(&file)?;
        assert!(!is_placeholder(&file, &meta, Shape::empty(EntryKind::File)));
        drop(leases);
        assert_eq!(std::fs::read_to_string(&file)?, "[submodule]\n");
        assert!(folder.join("settings.json").exists());
        assert!(replaced.is_dir(), "a directory made in its place stays");
        // An existing entry that is not a placeholder is not taken over.
        let existing = root.join(".zshrc");
        std::fs::write(&existing, "")?;
        let (leases, _) = acquire(&[(existing.clone(), Shape::empty(EntryKind::File))]);
        assert!(leases.is_empty());
        drop(leases);
        assert!(existing.exists());
        Ok(())
    }

    #[test]
    fn mountinfo_paths_are_escaped() {
        assert_eq!(escape(Path::new("/a b/c\\d")), "/a\\040b/c\\134d");
        assert!(!foreign_mount_points().contains(&escape(Path::new("/definitely/not/mounted"))));
    }
}
