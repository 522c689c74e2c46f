//! Atomic file replacement: a temporary file in the same directory, written, given the
//! original's mode (and owner, when we may), fsynced, then renamed over the target; the
//! directory is fsynced after. Temporary files that a crash left behind are removed by the
//! next write of the same file.

use std::collections::HashSet;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use tool_core::ToolError;

use crate::diff::Span;

/// The marker in temporary file names: `.<name>.agent-tools-<pid>-<n>.tmp`.
const MARKER: &str = ".agent-tools-";

/// Temporary files being written by this process, never cleaned up by a concurrent write.
static IN_FLIGHT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A stray temporary file of another live process is removed only once it is this old.
const STALE_AFTER: Duration = Duration::from_secs(3600);

fn temp_name(target: &Path) -> Option<PathBuf> {
    let name = target.file_name()?.to_str()?;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    Some(target.with_file_name(format!(".{name}{MARKER}{}-{n}.tmp", std::process::id())))
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

/// Removes temporary files an interrupted write of `target` left behind: those of processes
/// that no longer run, this process's own that no write is using, and any older than an
/// hour.
pub(crate) fn clean_stray_temps(target: &Path) {
    let (Some(dir), Some(name)) = (target.parent(), target.file_name().and_then(|n| n.to_str()))
    else {
        return;
    };
    let prefix = format!(".{name}{MARKER}");
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(rest) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|n| n.strip_suffix(".tmp"))
        else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let path = entry.path();
        let stale = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age > STALE_AFTER);
        let dead = pid != me && !Path::new(&format!("/proc/{pid}")).exists();
        let ours_unused = pid == me && !is_in_flight(&path);
        if dead || ours_unused || stale {
            let _ = fs::remove_file(&path);
        }
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
/// exists (its mode and owner are kept). `check` runs after the temporary file is complete
/// and before the rename: it re-checks that the target did not change meanwhile.
pub(crate) fn write_atomic(
    target: &Path,
    bytes: &[u8],
    existing: Option<&Metadata>,
    check: impl FnOnce() -> Result<BeforeRename, ToolError>,
) -> Result<(), ToolError> {
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
    target: &Path,
    content: Content<'_>,
    existing: Option<&Metadata>,
    check: impl FnOnce() -> Result<BeforeRename, ToolError>,
) -> Result<(), ToolError> {
    clean_stray_temps(target);
    let temp = temp_name(target).ok_or_else(|| {
        ToolError::respond(format!(
            "Cannot write {}: it has no file name",
            target.display()
        ))
    })?;
    in_flight(&temp, true);
    let result = write_temp_and_rename(target, &temp, content, existing, check);
    in_flight(&temp, false);
    match result {
        Ok(true) => Ok(()),
        Ok(false) => Ok(()),
        Err(e) => {
            let _ = fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// Returns `Ok(false)` when a simulated crash stopped before the rename.
fn write_temp_and_rename(
    target: &Path,
    temp: &Path,
    content: Content<'_>,
    existing: Option<&Metadata>,
    check: impl FnOnce() -> Result<BeforeRename, ToolError>,
) -> Result<bool, ToolError> {
    let mode = existing.map_or(0o666, |m| m.mode() & 0o7777);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(temp)
        .map_err(|e| ToolError::io(temp, e))?;
    match content {
        Content::Bytes(bytes) => file.write_all(bytes),
        Content::Spliced { source, len, spans } => write_spliced(&mut file, source, len, spans),
    }
    .map_err(|e| ToolError::io(temp, e))?;
    if let Some(meta) = existing {
        // The open applied the umask; set the exact bits (setuid, sticky, group write).
        file.set_permissions(meta.permissions())
            .map_err(|e| ToolError::io(temp, e))?;
        keep_owner(&file, meta);
    }
    file.sync_data().map_err(|e| ToolError::io(temp, e))?;
    drop(file);
    match check()? {
        BeforeRename::Proceed => {}
        BeforeRename::Crash => return Ok(false),
    }
    fs::rename(temp, target).map_err(|e| ToolError::io(target, e))?;
    if let Some(dir) = target.parent()
        && let Ok(dir) = File::open(dir)
    {
        let _ = dir.sync_all();
    }
    Ok(true)
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
    use std::os::unix::fs::PermissionsExt;

    use super::*;

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
        write_atomic(&target, b"new", Some(&meta), || Ok(BeforeRename::Proceed)).unwrap();
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
        write_atomic(&target, b"half", Some(&meta), || Ok(BeforeRename::Crash)).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "old content");
        assert_eq!(temps(dir.path()).len(), 1, "the crash left its temp file");
        // A temp file of a process that no longer exists is stray too.
        fs::write(dir.path().join(".f.txt.agent-tools-4194303999-0.tmp"), "x").unwrap();
        // Unrelated files are left alone.
        fs::write(dir.path().join(".other.agent-tools-1-0.tmp"), "x").unwrap();
        write_atomic(&target, b"new content", Some(&meta), || {
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
        write_atomic_content(&target, content, Some(&meta), || Ok(BeforeRename::Proceed)).unwrap();
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
        let err =
            write_atomic_content(&target, content, None, || Ok(BeforeRename::Proceed)).unwrap_err();
        assert!(err.to_string().contains("shrank"), "{err}");
        assert_eq!(fs::read_to_string(&target).unwrap(), before);
        assert!(temps(dir.path()).is_empty());
    }

    #[test]
    fn a_failed_check_removes_the_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.txt");
        fs::write(&target, "old").unwrap();
        let err =
            write_atomic(&target, b"new", None, || Err(ToolError::respond("changed"))).unwrap_err();
        assert_eq!(err.to_string(), "changed");
        assert_eq!(fs::read_to_string(&target).unwrap(), "old");
        assert!(temps(dir.path()).is_empty());
    }
}
