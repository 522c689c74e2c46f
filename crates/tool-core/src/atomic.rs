//! Replacing a file atomically, and the one naming scheme of the temporary files every
//! atomic write of the workspace uses: `.<name>.agent-tools-<pid>-<n>.tmp`, in the target's
//! directory. The pid says which process a stray temporary file (left by a crash) belongs
//! to, so the writer that cleans up (tools-fs) can tell a dead process's from a live one's.
//!
//! [`write_atomic`] is the small form, by path: a temporary file made afresh, written, given
//! the original's permissions, fsynced, renamed over the target, and the directory fsynced;
//! the temporary file is removed if anything fails. tools-fs's writes, which must not
//! follow a link after a permission check, do the same steps relative to a held directory
//! handle, with these names.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The marker between the target's name and the owner in a temporary name.
const MARKER: &str = ".agent-tools-";

/// Numbers temporary names within this process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The start of every temporary name for a file named `name`: `.<name>.agent-tools-`.
pub fn temp_file_prefix(name: &OsStr) -> OsString {
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(MARKER);
    prefix
}

/// A temporary name for a file named `name` that no other write uses:
/// `.<name>.agent-tools-<pid>-<n>.tmp`.
pub fn temp_file_name(name: &OsStr) -> OsString {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut temp = temp_file_prefix(name);
    temp.push(format!("{}-{n}.tmp", std::process::id()));
    temp
}

/// The process that made `candidate`, when it is a temporary name for a file named `name`.
pub fn temp_file_owner(name: &OsStr, candidate: &OsStr) -> Option<u32> {
    let prefix = temp_file_prefix(name);
    let rest = candidate
        .as_encoded_bytes()
        .strip_prefix(prefix.as_encoded_bytes())?
        .strip_suffix(b".tmp")?;
    std::str::from_utf8(rest)
        .ok()?
        .split('-')
        .next()?
        .parse()
        .ok()
}

/// Replaces the file at `path` with `bytes` atomically: readers see the old content or the
/// new one, never a part. A file that exists keeps its permissions. The directory must
/// exist; a temporary file is never left behind by a write that fails.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let temp = dir.join(temp_file_name(name));
    let written = (|| {
        // A fresh file: never one planted under the name, nor a link's target.
        let mut file = std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(bytes)?;
        if let Ok(meta) = std::fs::metadata(path) {
            file.set_permissions(meta.permissions())?;
        }
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    // The rename is durable once the directory is; where a directory cannot be synced, the
    // file is in place all the same.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temps(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(MARKER))
            .collect()
    }

    #[test]
    fn a_write_replaces_the_file_keeps_its_permissions_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_atomic(&path, b"first").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first");
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        perms.set_readonly(true);
        std::fs::set_permissions(&path, perms.clone()).unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions(), perms);
        assert!(temps(dir.path()).is_empty());
    }

    #[test]
    fn a_failed_write_leaves_no_temp_and_the_target_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should go: the rename fails.
        let path = dir.path().join("taken");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), "kept").unwrap();
        assert!(write_atomic(&path, b"new").is_err());
        assert!(temps(dir.path()).is_empty());
        assert_eq!(
            std::fs::read_to_string(path.join("inside")).unwrap(),
            "kept"
        );
        // A missing directory fails before any file is made.
        let missing = dir.path().join("no").join("file");
        assert!(write_atomic(&missing, b"x").is_err());
        assert!(write_atomic(Path::new("/"), b"x").is_err());
    }

    #[test]
    fn temporary_names_are_unique_and_name_their_owner() {
        let name = OsStr::new("f.txt");
        let (a, b) = (temp_file_name(name), temp_file_name(name));
        assert_ne!(a, b);
        let a = a.to_string_lossy().into_owned();
        assert!(a.starts_with(".f.txt.agent-tools-"), "{a}");
        assert!(a.ends_with(".tmp"), "{a}");
        assert_eq!(
            temp_file_owner(name, OsStr::new(&a)),
            Some(std::process::id())
        );
        let owner = |candidate: &str| temp_file_owner(name, OsStr::new(candidate));
        assert_eq!(owner(".f.txt.agent-tools-12-3.tmp"), Some(12));
        assert_eq!(owner(".other.agent-tools-12-3.tmp"), None);
        assert_eq!(owner(".f.txt.agent-tools-12.tmp"), Some(12));
        assert_eq!(owner(".f.txt.agent-tools-x-3.tmp"), None);
        assert_eq!(owner(".f.txt.agent-tools-12-3"), None);
        assert_eq!(owner("f.txt"), None);
    }
}
