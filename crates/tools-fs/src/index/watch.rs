//! File-system notifications for the search index: one inotify instance, a watch per
//! directory the index walked (added on the directory's open handle before it is listed, so
//! nothing created after the listing is missed), read without blocking when a query starts.
//! Events are queued by the kernel during the system call that changes the file, so
//! draining the queue at the start of a query sees every change made before it.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

use crate::walk::CUSTOM_IGNORE;

/// What changed since the index was last brought up to date, as paths relative to the root.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// Files whose content or metadata changed.
    pub(crate) files: BTreeSet<Vec<u8>>,
    /// Directories whose entries changed (created, deleted, renamed).
    pub(crate) dirs: BTreeSet<Vec<u8>>,
    /// Directories whose ignore rules changed: walked again whole.
    pub(crate) subtrees: BTreeSet<Vec<u8>>,
    /// Changes may have been missed (the queue overflowed): everything is checked again.
    pub(crate) everything: bool,
    /// The root itself was deleted or moved.
    pub(crate) root_gone: bool,
}

impl Pending {
    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty()
            && self.dirs.is_empty()
            && self.subtrees.is_empty()
            && !self.everything
            && !self.root_gone
    }

    pub(crate) fn len(&self) -> usize {
        self.files.len() + self.dirs.len() + self.subtrees.len()
    }
}

/// One inotify instance and the directories it watches.
#[derive(Debug)]
pub(crate) struct Watch {
    fd: OwnedFd,
    dirs: Mutex<HashMap<i32, Box<[u8]>>>,
    /// A watch could not be added (the per-user limit): changes may go unseen.
    incomplete: AtomicBool,
}

/// Names whose change alters which files the walk keeps in their directory and below.
fn changes_rules(name: &[u8]) -> bool {
    matches!(name, b".gitignore" | b".ignore" | b".git" | b".jj")
        || name == CUSTOM_IGNORE.as_bytes()
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(dir.len() + 1 + name.len());
    if !dir.is_empty() {
        out.extend_from_slice(dir);
        out.push(b'/');
    }
    out.extend_from_slice(name);
    out
}

impl Watch {
    /// A new inotify instance.
    pub(crate) fn new() -> Result<Watch, Errno> {
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
        Ok(Watch {
            fd,
            dirs: Mutex::new(HashMap::new()),
            incomplete: AtomicBool::new(false),
        })
    }

    /// Whether a watch could not be added.
    pub(crate) fn incomplete(&self) -> bool {
        self.incomplete.load(Ordering::Relaxed)
    }

    /// Directories watched.
    pub(crate) fn len(&self) -> usize {
        self.dirs.lock().map_or(0, |d| d.len())
    }

    /// Watches the open directory `dir`, `rel` under the root (`full` its path, used where
    /// `/proc` is missing).
    pub(crate) fn add(&self, dir: BorrowedFd<'_>, rel: &[u8], full: &Path) {
        let mask = WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MODIFY
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::ATTRIB
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR
            | WatchFlags::EXCL_UNLINK;
        // The handle's own directory, whatever happened to its path since it was opened.
        let by_handle = format!("/proc/self/fd/{}", dir.as_raw_fd());
        let added = match inotify::add_watch(&self.fd, by_handle.as_str(), mask) {
            Err(Errno::NOENT) => inotify::add_watch(&self.fd, full, mask | WatchFlags::DONT_FOLLOW),
            other => other,
        };
        match added {
            Ok(wd) => {
                if let Ok(mut dirs) = self.dirs.lock() {
                    dirs.insert(wd, rel.into());
                }
            }
            Err(_) => self.incomplete.store(true, Ordering::Relaxed),
        }
    }

    /// Reads every queued event into `pending`, without waiting.
    pub(crate) fn drain(&self, pending: &mut Pending) {
        let mut buf = [MaybeUninit::<u8>::uninit(); 64 * 1024];
        let mut reader = inotify::Reader::new(&self.fd, &mut buf);
        let Ok(mut dirs) = self.dirs.lock() else {
            pending.everything = true;
            return;
        };
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                Err(Errno::INTR) => continue,
                Err(Errno::WOULDBLOCK) => return,
                Err(_) => {
                    pending.everything = true;
                    return;
                }
            };
            let flags = event.events();
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) || flags.contains(ReadFlags::UNMOUNT) {
                pending.everything = true;
                continue;
            }
            let wd = event.wd();
            if flags.contains(ReadFlags::IGNORED) {
                if dirs.get(&wd).is_some_and(|rel| rel.is_empty()) {
                    pending.root_gone = true;
                }
                dirs.remove(&wd);
                continue;
            }
            let Some(dir) = dirs.get(&wd) else { continue };
            let name = event
                .file_name()
                .map(|n| n.to_bytes())
                .filter(|n| !n.is_empty());
            let Some(name) = name else {
                // The watched directory itself.
                if flags.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF) {
                    if dir.is_empty() {
                        pending.root_gone = true;
                    } else if let Some(parent) = dir.iter().rposition(|&b| b == b'/') {
                        pending.dirs.insert(dir[..parent].to_vec());
                    } else {
                        pending.dirs.insert(Vec::new());
                    }
                }
                continue;
            };
            let path = join(dir, name);
            if changes_rules(name) {
                pending.subtrees.insert(dir.to_vec());
                continue;
            }
            if flags.intersects(
                ReadFlags::CREATE | ReadFlags::DELETE | ReadFlags::MOVED_FROM | ReadFlags::MOVED_TO,
            ) {
                pending.dirs.insert(dir.to_vec());
                continue;
            }
            if flags.contains(ReadFlags::ISDIR) {
                // A directory's permissions changed: what can be read below it may have.
                if flags.contains(ReadFlags::ATTRIB) {
                    pending.subtrees.insert(path);
                }
                continue;
            }
            pending.files.insert(path);
        }
    }
}

/// The path of `rel` under `root` (for messages and the fallback without `/proc`).
pub(crate) fn full_path(root: &Path, rel: &[u8]) -> std::path::PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(OsStr::from_bytes(rel))
    }
}
