//! Atomic file replacement: a temporary file in the target's held directory, written, given
//! the original's mode (and owner, when we may), fsynced, then renamed over the target; the
//! directory is fsynced after. Every step is relative to the directory handle of
//! [`WriteTarget`], so a symbolic link swapped onto the path meanwhile cannot redirect the
//! temporary file or the rename (tool-core's `write_atomic` takes the same steps by path).
//! Temporary files are named as every atomic write names them (tool-core's
//! `temp_file_name`); those a crash left behind are removed by the next write of the same
//! file (without following links).

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use tool_core::{ToolError, temp_file_name, temp_file_owner, temp_file_prefix};

use crate::diff::Span;
use crate::target::WriteTarget;

/// The refusal when the file changes between our own read and the rename.
pub(crate) const UNEXPECTEDLY_MODIFIED: &str =
    "File has been unexpectedly modified. Read it again before attempting to write it.";

/// Temporary files being written by this process, never cleaned up by a concurrent write.
static IN_FLIGHT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// A stray temporary file of another live process is removed only once it is this old.
const STALE_AFTER: Duration = Duration::from_secs(3600);

fn temp_name(target: &WriteTarget) -> OsString {
    temp_file_name(target.name())
}

fn in_flight(path: &Path, add: bool) {
    if let Ok(mut set) = IN_FLIGHT.lock() {
        let set = set.get_or_insert_with(HashSet::new);
        if add {
            set.insert(path.to_path_buf());
        } else {
            set.remove(path);
        }
    }
}

fn is_in_flight(path: &Path) -> bool {
    IN_FLIGHT
        .lock()
        .is_ok_and(|set| set.as_ref().is_some_and(|s| s.contains(path)))
}

/// Removes temporary files an interrupted write of `target` left behind in its directory:
/// those of processes that no longer run, this process's own that no write is using, and
/// any older than an hour. Only regular files are removed, by name in the held directory.
pub(crate) fn clean_stray_temps(target: &WriteTarget) {
    use std::os::unix::ffi::OsStrExt;
    let prefix = temp_file_prefix(target.name());
    let me = std::process::id();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i128::from(d.as_secs()));
    for name in target.names_starting_with(prefix.as_bytes()) {
        let Some(pid) = temp_file_owner(target.name(), &name) else {
            continue;
        };
        let Some(mtime) = target.regular_mtime(&name) else {
            continue;
        };
        let stale = now - mtime > i128::from(STALE_AFTER.as_secs());
        let dead = pid != me && !Path::new(&format!("/proc/{pid}")).exists();
        let ours_unused = pid == me && !is_in_flight(&target.dir_path().join(&name));
        if dead || ours_unused || stale {
            let _ = target.remove(&name);
        }
    }
}

/// The original of a file a multi-file change replaces or removes, kept under a temporary
/// name in the same directory until the whole change is done (so it can be put back), and
/// cleaned up like a stray temporary file if the process dies meanwhile.
#[derive(Debug)]
pub(crate) struct Backup {
    name: OsString,
    path: PathBuf,
}

impl Backup {
    /// Keeps the current target under a second name (a hard link): the target stays in
    /// place until a rename replaces it.
    pub(crate) fn link(target: &WriteTarget) -> Result<Backup, ToolError> {
        Self::make(target, |name| target.link_as(name))
    }

    /// Moves the current target away under a temporary name (the target disappears).
    pub(crate) fn take(target: &WriteTarget) -> Result<Backup, ToolError> {
        Self::make(target, |name| target.rename_away(name))
    }

    fn make(
        target: &WriteTarget,
        how: impl FnOnce(&OsStr) -> std::io::Result<()>,
    ) -> Result<Backup, ToolError> {
        let name = temp_name(target);
        let path = target.dir_path().join(&name);
        in_flight(&path, true);
        if let Err(e) = how(&name) {
            in_flight(&path, false);
            return Err(ToolError::io(target.path(), e));
        }
        Ok(Backup { name, path })
    }

    /// Puts the original back over (or in place of) the target.
    pub(crate) fn restore(self, target: &WriteTarget) -> std::io::Result<()> {
        let done = target.rename_over(&self.name, true);
        in_flight(&self.path, false);
        target.sync_dir();
        done
    }

    /// Drops the original: the change is complete.
    pub(crate) fn discard(self, target: &WriteTarget) {
        let _ = target.remove(&self.name);
        in_flight(&self.path, false);
    }
}

/// What happens between writing the temporary file and renaming it (tests inject faults).
pub(crate) enum BeforeRename {
    /// Go on and rename
    Proceed,
    /// Stop as a crash would: leave the temporary file, keep the target
    #[cfg_attr(not(test), allow(dead_code))]
    Crash,
}

/// Replaces `target` with `bytes` atomically; `existing` is the target's metadata when it
/// exists (its mode and owner are kept; when it is `None` the target must still be missing
/// at the rename). `check` runs after the temporary file is complete and before the rename:
/// it re-checks that the target did not change meanwhile. Returns the new file's metadata.
pub(crate) fn write_atomic(
    target: &WriteTarget,
    bytes: &[u8],
    existing: Option<&Metadata>,
    check: impl FnOnce() -> Result<BeforeRename, ToolError>,
) -> Result<Metadata, ToolError> {
    write_atomic_content(target, Content::Bytes(bytes), existing, check)
}

/// What the temporary file receives.
pub(crate) enum Content<'a> {
    /// These bytes
    Bytes(&'a [u8]),
    /// The first `len` bytes of `source` with `spans` (sorted, disjoint byte ranges of it)
    /// replaced: the unchanged ranges are copied file to file by the kernel
    /// (`copy_file_range`), so a one-line edit of a large file never holds its new text.
    Spliced {
        source: &'a File,
        len: u64,
        spans: &'a [Span],
    },
}

/// Like [`write_atomic`], for any [`Content`].
pub(crate) fn write_atomic_content(
    target: &WriteTarget,
    content: Content<'_>,
    existing: Option<&Metadata>,
    check: impl FnOnce() -> Result<BeforeRename, ToolError>,
) -> Result<Metadata, ToolError> {
    clean_stray_temps(target);
    let temp = temp_name(target);
    let temp_path = target.dir_path().join(&temp);
    in_flight(&temp_path, true);
    let result = write_temp_and_rename(target, &temp, &temp_path, content, existing, check);
    in_flight(&temp_path, false);
    if result.is_err() {
        let _ = target.remove(&temp);
    }
    result
}

fn write_temp_and_rename(
    target: &WriteTarget,
    temp: &OsStr,
    temp_path: &Path,
    content: Content<'_>,
    existing: Option<&Metadata>,
    check: impl FnOnce() -> Result<BeforeRename, ToolError>,
) -> Result<Metadata, ToolError> {
    let mode = existing.map_or(0o666, |m| m.mode() & 0o7777);
    let mut file = target
        .create_new(temp, mode)
        .map_err(|e| ToolError::io(temp_path, e))?;
    match content {
        Content::Bytes(bytes) => file.write_all(bytes),
        Content::Spliced { source, len, spans } => write_spliced(&mut file, source, len, spans),
    }
    .map_err(|e| ToolError::io(temp_path, e))?;
    if let Some(meta) = existing {
        // The open applied the umask; set the exact bits (setuid, sticky, group write).
        file.set_permissions(meta.permissions())
            .map_err(|e| ToolError::io(temp_path, e))?;
        keep_owner(&file, meta);
    }
    file.sync_data().map_err(|e| ToolError::io(temp_path, e))?;
    match check()? {
        BeforeRename::Proceed => {}
        BeforeRename::Crash => return file.metadata().map_err(|e| ToolError::io(temp_path, e)),
    }
    match target.rename_over(temp, existing.is_some()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(ToolError::respond(UNEXPECTEDLY_MODIFIED));
        }
        Err(e) => return Err(ToolError::io(target.path(), e)),
    }
    target.sync_dir();
    file.metadata().map_err(|e| ToolError::io(target.path(), e))
}

/// Writes `source[..len]` with `spans` replaced into `out`.
fn write_spliced(out: &mut File, source: &File, len: u64, spans: &[Span]) -> std::io::Result<()> {
    let mut at = 0_u64;
    for span in spans {
        copy_range(source, at, span.start as u64, out)?;
        out.write_all(span.replacement.as_bytes())?;
        at = span.end as u64;
    }
    copy_range(source, at, len, out)
}

/// Copies `source[from..to]` to the end of `out` (std uses `copy_file_range` for files).
fn copy_range(source: &File, from: u64, to: u64, out: &mut File) -> std::io::Result<()> {
    let want = to.saturating_sub(from);
    let mut reader = source;
    reader.seek(SeekFrom::Start(from))?;
    let got = std::io::copy(&mut reader.take(want), out)?;
    if got == want {
        Ok(())
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the file shrank while it was being edited",
        ))
    }
}

/// Gives the temporary file the original's owner and group; only root may, so a failure is
/// expected and ignored otherwise.
fn keep_owner(file: &File, meta: &Metadata) {
    let Ok(current) = file.metadata() else {
        return;
    };
    if current.uid() != meta.uid() || current.gid() != meta.gid() {
        let _ = std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid()));
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::target::Parents;

    /// The marker in temporary file names: `.<name>.agent-tools-<pid>-<n>.tmp`.
    const MARKER: &str = ".agent-tools-";

    fn open(path: &Path) -> WriteTarget {
        WriteTarget::open(path, Parents::Require).unwrap().unwrap()
    }

    fn temps(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(MARKER))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replaces_and_keeps_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("run.sh");
        fs::write(&target, "old").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o755)).unwrap();
        let meta = fs::metadata(&target).unwrap();
        write_atomic(&open(&target), b"new", Some(&meta), || {
            Ok(BeforeRename::Proceed)
        })
        .unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
        let after = fs::metadata(&target).unwrap();
        assert_eq!(after.permissions().mode() & 0o7777, 0o755);
        assert_eq!((after.uid(), after.gid()), (meta.uid(), meta.gid()));
        assert!(temps(dir.path()).is_empty());
    }

    #[test]
    fn a_crash_before_the_rename_keeps_the_old_content_and_the_next_write_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.txt");
        fs::write(&target, "old content").unwrap();
        let meta = fs::metadata(&target).unwrap();
        write_atomic(&open(&target), b"half", Some(&meta), || {
            Ok(BeforeRename::Crash)
        })
        .unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "old content");
        assert_eq!(temps(dir.path()).len(), 1, "the crash left its temp file");
        // A temp file of a process that no longer exists is stray too.
        fs::write(dir.path().join(".f.txt.agent-tools-4194303999-0.tmp"), "x").unwrap();
        // Unrelated files are left alone.
        fs::write(dir.path().join(".other.agent-tools-1-0.tmp"), "x").unwrap();
        write_atomic(&open(&target), b"new content", Some(&meta), || {
            Ok(BeforeRename::Proceed)
        })
        .unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "new content");
        assert_eq!(temps(dir.path()), vec![".other.agent-tools-1-0.tmp"]);
    }

    #[test]
    fn a_spliced_write_copies_the_unchanged_ranges() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("big.txt");
        let original = "alpha\nbeta\ngamma\ndelta\n";
        fs::write(&target, original).unwrap();
        let meta = fs::metadata(&target).unwrap();
        let source = File::open(&target).unwrap();
        let span = |start: usize, end: usize, with: &str| Span {
            start,
            end,
            replacement: with.to_owned(),
        };
        let spans = [span(0, 5, "ALPHA"), span(11, 16, "G"), span(23, 23, "!")];
        let content = Content::Spliced {
            source: &source,
            len: original.len() as u64,
            spans: &spans,
        };
        write_atomic_content(&open(&target), content, Some(&meta), || {
            Ok(BeforeRename::Proceed)
        })
        .unwrap();
        assert_eq!(
            fs::read_to_string(&target).unwrap(),
            "ALPHA\nbeta\nG\ndelta\n!"
        );
        // A source shorter than promised fails and keeps the file.
        let before = fs::read_to_string(&target).unwrap();
        let source = File::open(&target).unwrap();
        let content = Content::Spliced {
            source: &source,
            len: 1000,
            spans: &[],
        };
        let err = write_atomic_content(&open(&target), content, None, || Ok(BeforeRename::Proceed))
            .unwrap_err();
        assert!(err.to_string().contains("shrank"), "{err}");
        assert_eq!(fs::read_to_string(&target).unwrap(), before);
        assert!(temps(dir.path()).is_empty());
    }

    #[test]
    fn the_cleanup_removes_only_regular_files_and_never_follows_links() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        fs::write(&victim, "keep").unwrap();
        let target = dir.path().join("f.txt");
        fs::write(&target, "old").unwrap();
        // Named like stray temporary files of a process that no longer runs.
        let link = dir.path().join(".f.txt.agent-tools-4194303999-0.tmp");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let subdir = dir.path().join(".f.txt.agent-tools-4194303999-1.tmp");
        fs::create_dir(&subdir).unwrap();
        let meta = fs::metadata(&target).unwrap();
        write_atomic(&open(&target), b"new", Some(&meta), || {
            Ok(BeforeRename::Proceed)
        })
        .unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
        assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
        assert!(subdir.is_dir());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn a_new_file_never_replaces_one_made_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("new.txt");
        let t = open(&target);
        let err = write_atomic(&t, b"ours", None, || {
            fs::write(&target, "theirs").unwrap();
            Ok(BeforeRename::Proceed)
        })
        .unwrap_err();
        assert!(err.to_string().contains("unexpectedly modified"), "{err}");
        assert_eq!(fs::read_to_string(&target).unwrap(), "theirs");
        assert!(temps(dir.path()).is_empty());
    }

    #[test]
    fn a_failed_check_removes_the_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.txt");
        fs::write(&target, "old").unwrap();
        let err = write_atomic(&open(&target), b"new", None, || {
            Err(ToolError::respond("changed"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "changed");
        assert_eq!(fs::read_to_string(&target).unwrap(), "old");
        assert!(temps(dir.path()).is_empty());
    }
}
