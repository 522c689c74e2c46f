//! What bubblewrap's probe learned, kept across processes: starting bubblewrap to learn which
//! isolation flags work here costs as much as the command a one-shot call runs, so the
//! answer is written to a small file in the state directory and reused while nothing it
//! depends on changed.
//!
//! The file is trusted only when it is this user's (owned by the real uid, writable by no
//! one else) and its key matches: the bubblewrap binary (path, device, inode, size,
//! modification time), the kernel release, the boot id, the uid, and the settings that
//! decide whether user namespaces can be made (`user.max_user_namespaces`,
//! `kernel.unprivileged_userns_clone`, `kernel.apparmor_restrict_unprivileged_userns`).
//! Anything else — a missing, unreadable, foreign or unparsable file, another key — means
//! probing again. The state directory is hidden or read-only in every sandbox, so a
//! sandboxed command cannot plant an answer. Only working answers are kept; a launch
//! that fails with a kept answer drops the file and probes again (see the `launch` module).

use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The flags the probe found to work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flags {
    /// `--unshare-user` works
    pub userns: bool,
    /// `--disable-userns` works
    pub disable_userns: bool,
}

/// The file's first line: names the format, so another one is not misread.
const HEADER: &str = "agent-tools bubblewrap probe 1";

/// The cache file in the state directory `state_dir`.
pub(crate) fn file(state_dir: &Path) -> PathBuf {
    state_dir.join("bwrap-probe")
}

/// What the probe's answer depends on, for the bubblewrap at `bwrap`; `None` when the binary
/// cannot be looked at (then nothing is cached).
pub(crate) fn key(bwrap: &Path) -> Option<String> {
    let meta = std::fs::metadata(bwrap).ok()?;
    let read = |p: &str| {
        std::fs::read_to_string(p).map_or_else(|_| "-".to_owned(), |s| s.trim().to_owned())
    };
    Some(format!(
        "{:?}",
        (
            bwrap,
            (meta.dev(), meta.ino(), meta.size()),
            (meta.mtime(), meta.mtime_nsec()),
            read("/proc/sys/kernel/osrelease"),
            read("/proc/sys/kernel/random/boot_id"),
            rustix::process::getuid().as_raw(),
            read("/proc/sys/user/max_user_namespaces"),
            read("/proc/sys/kernel/unprivileged_userns_clone"),
            read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
        )
    ))
}

/// The answer kept at `path` for `key`, if the file is this user's, well formed, and its key
/// is `key`.
pub(crate) fn read(path: &Path, key: &str) -> Option<Flags> {
    let file = std::fs::File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file()
        || meta.uid() != rustix::process::getuid().as_raw()
        || meta.mode() & 0o022 != 0
        || meta.len() > 4096
    {
        return None;
    }
    let text = std::io::read_to_string(file).ok()?;
    let mut lines = text.lines();
    if lines.next()? != HEADER || lines.next()?.strip_prefix("key ")? != key {
        return None;
    }
    let flags = match lines.next()? {
        "userns disable-userns" => Flags {
            userns: true,
            disable_userns: true,
        },
        "userns" => Flags {
            userns: true,
            disable_userns: false,
        },
        "no-userns" => Flags {
            userns: false,
            disable_userns: false,
        },
        _ => return None,
    };
    lines.next().is_none().then_some(flags)
}

/// Keeps `flags` for `key` at `path`: written to a private temporary file beside it, then
/// renamed over it, so a reader sees the old file or the new one. Failures are ignored (the
/// next process probes again).
pub(crate) fn write(path: &Path, key: &str, flags: Flags) {
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let answer = match (flags.userns, flags.disable_userns) {
        (true, true) => "userns disable-userns",
        (true, false) => "userns",
        (false, _) => "no-userns",
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = dir.join(format!(".bwrap-probe.{}.{stamp}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            use std::io::Write as _;
            f.write_all(format!("{HEADER}\nkey {key}\n{answer}\n").as_bytes())
        });
    if written.is_err() || std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Drops the answer kept at `path` (it led to a launch that failed).
pub(crate) fn forget(path: &Path) {
    let _ = std::fs::remove_file(path);
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: Flags = Flags {
        userns: true,
        disable_userns: true,
    };

    #[test]
    fn an_answer_is_kept_for_its_key_only() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = file(&dir.path().join("state"));
        assert_eq!(read(&path, "k"), None, "nothing kept yet: probe");
        write(&path, "k", FULL);
        assert_eq!(read(&path, "k"), Some(FULL));
        assert_eq!(
            std::fs::metadata(&path)?.mode() & 0o777,
            0o600,
            "private to the user"
        );
        // A stale key (another kernel, binary, boot...) is a miss: probe again.
        assert_eq!(read(&path, "other"), None);
        let none = Flags {
            userns: false,
            disable_userns: false,
        };
        write(&path, "other", none);
        assert_eq!(read(&path, "other"), Some(none));
        assert_eq!(read(&path, "k"), None);
        forget(&path);
        assert_eq!(read(&path, "other"), None);
        // No temporary file is left beside it.
        let left: Vec<_> = std::fs::read_dir(dir.path().join("state"))?.collect();
        assert!(left.is_empty(), "{left:?}");
        Ok(())
    }

    #[test]
    fn a_damaged_file_is_a_miss() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = file(dir.path());
        let key = "key-1";
        for garbage in [
            "".to_owned(),
            "garbage".to_owned(),
            format!("{HEADER}\nkey {key}\n"),
            format!("{HEADER}\nkey {key}\nuserns maybe\n"),
            format!("{HEADER}\nkey {key}\nuserns\nextra\n"),
            format!("agent-tools bubblewrap probe 0\nkey {key}\nuserns\n"),
            format!("{HEADER}\n{key}\nuserns\n"),
        ] {
            std::fs::write(&path, &garbage)?;
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
            assert_eq!(read(&path, key), None, "{garbage:?}");
        }
        std::fs::write(&path, format!("{HEADER}\nkey {key}\nuserns\n"))?;
        assert!(read(&path, key).is_some_and(|f| f.userns && !f.disable_userns));
        // Writable by others: not trusted.
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666))?;
        assert_eq!(read(&path, key), None);
        Ok(())
    }

    #[test]
    fn another_users_file_is_ignored() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = file(dir.path());
        write(&path, "k", FULL);
        let uid = rustix::process::getuid();
        if uid.is_root() {
            // Root can give the file away.
            std::os::unix::fs::chown(&path, Some(65534), None)?;
            assert_eq!(read(&path, "k"), None);
        } else {
            // Anyone else finds a file of root's: a well-formed one would still be ignored.
            assert_eq!(read(Path::new("/etc/passwd"), "k"), None);
        }
        Ok(())
    }

    #[test]
    fn the_key_names_the_binary_and_changes_with_it() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let bin = dir.path().join("bwrap");
        std::fs::write(&bin, "one")?;
        let first = key(&bin);
        assert!(first.as_deref().is_some_and(|k| k.contains("bwrap")));
        std::fs::write(&bin, "a longer binary")?;
        assert_ne!(key(&bin), first);
        assert_eq!(key(&dir.path().join("missing")), None);
        Ok(())
    }
}
