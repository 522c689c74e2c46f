//! Retention of what sessions leave in the state directory: command output kept for the
//! model (`tool-results/<session>/`: spilled results, large command output) and background
//! tasks' output (`tasks/<manager>/`). A long-running host (a server) prunes them with
//! [`prune_outputs`]: files older than the retention time go, then the oldest until what
//! is left fits the budget. A file this process holds open (a task still writing its
//! output, a result being spilled) is never removed, and counts towards the budget.
//! Sessions that end delete their own files at once ([`crate::ToolContext::close`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long output files are kept, unless the host sets another time.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// How much of the state directory output files may take, unless the host sets another
/// budget.
pub const DEFAULT_OUTPUT_BUDGET: u64 = 1 << 30;

/// The folders of the state directory whose files [`prune_outputs`] prunes.
pub const OUTPUT_DIRS: &[&str] = &["tool-results", "tasks"];

/// How long output files are kept and how much they may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Files not modified for this long are deleted
    pub max_age: Duration,
    /// Beyond this many bytes, the oldest files are deleted
    pub budget: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            max_age: DEFAULT_RETENTION,
            budget: DEFAULT_OUTPUT_BUDGET,
        }
    }
}

/// What one pruning did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Files deleted
    pub removed: usize,
    /// Their bytes
    pub freed: u64,
    /// Files left
    pub kept: usize,
    /// Their bytes
    pub kept_bytes: u64,
}

/// One output file.
struct Found {
    path: PathBuf,
    modified: SystemTime,
    len: u64,
    open: bool,
}

/// The files (device, inode) this process holds open, as far as the system tells.
fn open_files() -> HashSet<(u64, u64)> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
            return HashSet::new();
        };
        fds.flatten()
            .filter_map(|fd| std::fs::metadata(fd.path()).ok())
            .map(|m| (m.dev(), m.ino()))
            .collect()
    }
    #[cfg(not(target_os = "linux"))]
    HashSet::new()
}

/// Prunes the output files under `state_dir` and each principal's subtree of it (see the module documentation): first every
/// file not modified within `retention.max_age`, then the least recently modified until
/// the rest fits `retention.budget`. Files this process holds open stay; so do folders
/// that are open or were changed within the last minute, and every symbolic link (never
/// followed). Emptied folders are removed.
pub fn prune_outputs(state_dir: &Path, retention: &Retention) -> Pruned {
    use std::os::unix::fs::MetadataExt;
    let open = open_files();
    let now = SystemTime::now();
    let mut found: Vec<Found> = Vec::new();
    let mut folders: Vec<(PathBuf, SystemTime, (u64, u64))> = Vec::new();
    // The state directory's own output folders and those of each principal's subtree.
    let mut roots = vec![state_dir.to_path_buf()];
    if let Ok(principals) = std::fs::read_dir(state_dir.join(crate::PRINCIPALS_DIR)) {
        roots.extend(
            principals
                .flatten()
                .filter(|p| p.path().symlink_metadata().is_ok_and(|m| m.is_dir()))
                .map(|p| p.path()),
        );
    }
    for top in roots
        .iter()
        .flat_map(|root| OUTPUT_DIRS.iter().map(move |top| root.join(top)))
    {
        let Ok(sessions) = std::fs::read_dir(&top) else {
            continue;
        };
        for session in sessions.flatten() {
            let Ok(meta) = session.path().symlink_metadata() else {
                continue;
            };
            if !meta.is_dir() {
                continue;
            }
            folders.push((
                session.path(),
                meta.modified().unwrap_or(now),
                (meta.dev(), meta.ino()),
            ));
            let Ok(files) = std::fs::read_dir(session.path()) else {
                continue;
            };
            for file in files.flatten() {
                let Ok(meta) = file.path().symlink_metadata() else {
                    continue;
                };
                if !meta.is_file() {
                    continue;
                }
                found.push(Found {
                    path: file.path(),
                    modified: meta.modified().unwrap_or(now),
                    len: meta.len(),
                    open: open.contains(&(meta.dev(), meta.ino())),
                });
            }
        }
    }
    found.sort_by_key(|f| f.modified);
    let mut total: u64 = found.iter().map(|f| f.len).sum();
    let mut pruned = Pruned::default();
    for f in &found {
        let too_old = now
            .duration_since(f.modified)
            .is_ok_and(|age| age >= retention.max_age);
        let over = total > retention.budget;
        if f.open || !(too_old || over) {
            continue;
        }
        if std::fs::remove_file(&f.path).is_ok() {
            total -= f.len;
            pruned.removed += 1;
            pruned.freed += f.len;
        }
    }
    pruned.kept = found.len() - pruned.removed;
    pruned.kept_bytes = total;
    // Folders left empty, unless in use: open (a session's output directory) or recent.
    for (folder, modified, id) in folders {
        let recent = now
            .duration_since(modified)
            .map_or(true, |age| age < Duration::from_secs(60));
        if !recent && !open.contains(&id) {
            // Fails, as it should, when the folder is not empty.
            let _ = std::fs::remove_dir(&folder);
        }
    }
    pruned
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, len: usize, age: Duration) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, vec![b'x'; len]).unwrap_or_else(|e| panic!("{e}"));
        let when = SystemTime::now() - age;
        let f = std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{e}"));
        f.set_modified(when).unwrap_or_else(|e| panic!("{e}"));
        path
    }

    #[test]
    fn old_files_go_then_the_oldest_beyond_the_budget() {
        let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let results = state.path().join("tool-results/s1");
        // A principal's own subtree is pruned alike.
        let tasks = state.path().join("principals/token-1/tasks/m1");
        std::fs::create_dir_all(&results).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(&tasks).unwrap_or_else(|e| panic!("{e}"));
        let hour = Duration::from_secs(3600);
        let ancient = file(&results, "a.txt", 10, 30 * hour);
        let older = file(&tasks, "b1.output", 100, 3 * hour);
        let old = file(&results, "c.txt", 100, 2 * hour);
        let new = file(&tasks, "b2.output", 100, Duration::ZERO);
        // Held open by this process: stays whatever its age.
        let held_path = file(&tasks, "b3.output", 100, 40 * hour);
        let held = std::fs::File::open(&held_path).unwrap_or_else(|e| panic!("{e}"));
        // Not an output folder: untouched.
        let other = state.path().join("trust.json");
        std::fs::write(&other, "{}").unwrap_or_else(|e| panic!("{e}"));
        let pruned = prune_outputs(
            state.path(),
            &Retention {
                max_age: 24 * hour,
                budget: 300,
            },
        );
        assert!(!ancient.exists(), "older than the retention time");
        assert!(!older.exists(), "the oldest beyond the budget");
        assert!(old.exists() && new.exists() && held_path.exists() && other.exists());
        assert_eq!(pruned.removed, 2);
        assert_eq!(pruned.freed, 110);
        assert_eq!(pruned.kept_bytes, 300);
        drop(held);
    }

    #[test]
    fn links_are_never_followed() {
        let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let victim = file(outside.path(), "keep.txt", 10, Duration::from_secs(99_999));
        std::fs::create_dir_all(state.path().join("tasks")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(outside.path(), state.path().join("tasks/link"))
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(state.path().join("tool-results/s"))
            .unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&victim, state.path().join("tool-results/s/l.txt"))
            .unwrap_or_else(|e| panic!("{e}"));
        let pruned = prune_outputs(
            state.path(),
            &Retention {
                max_age: Duration::ZERO,
                budget: 0,
            },
        );
        assert_eq!(pruned.removed, 0);
        assert!(victim.exists());
    }
}
