//! Opening a file beneath a directory handle without following a symbolic link anywhere
//! on the way: how Grep opens the files it searches and the search index the files it reads.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// `openat2` is missing (an old kernel, or a seccomp filter refuses it).
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Opens the regular file `rel` beneath `dir` without following a symbolic link anywhere on
/// the way (a directory swapped for a link since the listing cannot lead out of the tree),
/// non-blocking (a FIFO put in a file's place must not hold the open).
pub(crate) fn open_beneath(dir: &OwnedFd, rel: &[u8]) -> Option<OwnedFd> {
    let flags =
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::NONBLOCK;
    let path = OsStr::from_bytes(rel);
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        for _ in 0..4 {
            match rustix::fs::openat2(dir, path, flags, Mode::empty(), resolve) {
                Ok(fd) => return Some(fd),
                // A rename somewhere on the system raced the lookup.
                Err(Errno::AGAIN) => {}
                Err(Errno::NOSYS | Errno::PERM | Errno::INVAL | Errno::TOOBIG) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                    break;
                }
                Err(_) => return None,
            }
        }
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            return None;
        }
    }
    rustix::fs::openat(dir, path, flags, Mode::empty()).ok()
}
