//! Where a write goes, reached without following a symbolic link.
//!
//! The file tools resolve the target once (its canonical path, symbolic links followed) and
//! the permission check judges that path. From then on nothing is looked up by path: the
//! target's parent directory is opened from `/` with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)` — or, where that call is missing, one `openat(O_NOFOLLOW)` per
//! component, each relative to the handle of the one before — and missing directories are
//! made with `mkdirat` on those handles. Every later step (stat, open, temporary file,
//! rename, stray-temp cleanup, directory fsync) is relative to the held handle. A canonical
//! path has no symbolic links, so one that appears on it after the check (a concurrent swap
//! of a directory for a link) fails the call with a retryable error instead of redirecting
//! it.

use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use tool_core::ToolError;

/// How a directory on the way is held: a path handle where the system has them (enough to
/// look names up in, no read permission needed), else a read-only directory handle.
#[cfg(target_os = "linux")]
const DIR_HANDLE: OFlags = OFlags::PATH.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);
#[cfg(not(target_os = "linux"))]
const DIR_HANDLE: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);

/// `openat2` is missing (an old kernel, or a seccomp filter refuses it): walk per component.
#[cfg(target_os = "linux")]
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// How often `openat2` is retried when the kernel saw a concurrent rename (`EAGAIN`) before
/// the walk per component takes over.
#[cfg(target_os = "linux")]
const OPENAT2_TRIES: usize = 4;

/// What to do about parent directories that do not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parents {
    /// Make them (`mkdir -p`, with `mkdirat` on the held handles)
    Create,
    /// Report the target as missing
    Require,
}

/// The identity and version of a file: device, inode, size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Version {
    dev: i128,
    ino: i128,
    size: i128,
    mtime: (i128, i128),
}

impl Version {
    fn of_stat(st: &Stat) -> Version {
        Version {
            dev: i128::from(st.st_dev),
            ino: i128::from(st.st_ino),
            size: i128::from(st.st_size),
            mtime: (i128::from(st.st_mtime), i128::from(st.st_mtime_nsec)),
        }
    }

    /// The version `meta` describes.
    pub(crate) fn of(meta: &Metadata) -> Version {
        Version {
            dev: i128::from(meta.dev()),
            ino: i128::from(meta.ino()),
            size: i128::from(meta.size()),
            mtime: (i128::from(meta.mtime()), i128::from(meta.mtime_nsec())),
        }
    }
}

/// An existing target opened for reading.
#[derive(Debug)]
pub(crate) struct Existing {
    /// The open file (its unchanged ranges may be copied from it)
    pub file: File,
    /// Its metadata when opened
    pub meta: Metadata,
}

/// The target of a write: its held parent directory and its name there.
#[derive(Debug)]
pub(crate) struct WriteTarget {
    dir: OwnedFd,
    dir_path: PathBuf,
    name: OsString,
    path: PathBuf,
}

/// The retryable error for a path that changed under the call.
fn changed(path: &Path, at: &Path, what: &str) -> ToolError {
    ToolError::respond(format!(
        "Cannot write {}: {} changed after the permission check ({what}; a concurrent change, such as a directory swapped for a symbolic link); nothing was written. Check the path and try again.",
        path.display(),
        at.display()
    ))
}

impl WriteTarget {
    /// Opens the parent directory of `path` — absolute and canonical: the path the
    /// permission check judged — without following any symbolic link. `Ok(None)` when a
    /// parent is missing and `parents` is [`Parents::Require`].
    pub(crate) fn open(path: &Path, parents: Parents) -> Result<Option<WriteTarget>, ToolError> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(ToolError::respond(format!(
                "Cannot write {}: it has no file name",
                path.display()
            )));
        };
        let mut names: Vec<&OsStr> = Vec::new();
        for component in parent.components() {
            match component {
                Component::RootDir => {}
                Component::Normal(n) => names.push(n),
                // The caller resolved the path: it is absolute and normalised.
                _ => {
                    return Err(ToolError::fatal(format!(
                        "internal error: the write target {} is not canonical",
                        path.display()
                    )));
                }
            }
        }
        if !path.is_absolute() {
            return Err(ToolError::fatal(format!(
                "internal error: the write target {} is not absolute",
                path.display()
            )));
        }
        let dir = match open_beneath(&names) {
            Some(dir) => Some(dir),
            None => walk(path, &names, parents)?,
        };
        Ok(dir.map(|dir| WriteTarget {
            dir,
            dir_path: parent.to_path_buf(),
            name: name.to_os_string(),
            path: path.to_path_buf(),
        }))
    }

    /// The target's path (the canonical path the check judged).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The held parent directory's path.
    pub(crate) fn dir_path(&self) -> &Path {
        &self.dir_path
    }

    /// The target's name in its directory.
    pub(crate) fn name(&self) -> &OsStr {
        &self.name
    }

    /// What is at `name` in the held directory now, without following a link.
    fn stat(&self, name: &OsStr) -> Result<Option<Stat>, Errno> {
        match rustix::fs::statat(&self.dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The target's version now; `None` when it does not exist.
    pub(crate) fn version(&self) -> Result<Option<Version>, ToolError> {
        self.stat(&self.name)
            .map(|st| st.as_ref().map(Version::of_stat))
            .map_err(|e| ToolError::io(&self.path, e.into()))
    }

    /// Opens the existing target for reading: `Ok(None)` when it does not exist. Refuses
    /// directories, special files (without opening them) and a symbolic link (a canonical
    /// target has none: it appeared after the check).
    pub(crate) fn open_existing(&self) -> Result<Option<Existing>, ToolError> {
        let Some(st) = self
            .stat(&self.name)
            .map_err(|e| ToolError::io(&self.path, e.into()))?
        else {
            return Ok(None);
        };
        let shown = self.path.display();
        let kind = match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => None,
            FileType::Directory => {
                return Err(ToolError::respond(format!(
                    "{shown} is a directory, not a file."
                )));
            }
            FileType::Symlink => {
                return Err(changed(&self.path, &self.path, "it is now a symbolic link"));
            }
            FileType::Fifo => Some("a FIFO (named pipe)"),
            FileType::CharacterDevice | FileType::BlockDevice => Some("a device file"),
            FileType::Socket => Some("a socket"),
            FileType::Unknown => Some("not a regular file"),
        };
        if let Some(kind) = kind {
            return Err(ToolError::respond(format!(
                "Cannot use '{shown}': it is {kind}, not a regular file; reading or writing it could block."
            )));
        }
        let flags =
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.dir, &self.name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::LOOP) => {
                return Err(changed(&self.path, &self.path, "it was replaced"));
            }
            Err(e) => return Err(ToolError::io(&self.path, e.into())),
        };
        let file = File::from(fd);
        let meta = file.metadata().map_err(|e| ToolError::io(&self.path, e))?;
        let same = (i128::from(meta.dev()), i128::from(meta.ino()))
            == (i128::from(st.st_dev), i128::from(st.st_ino));
        if !same || !meta.is_file() {
            return Err(changed(&self.path, &self.path, "it was replaced"));
        }
        Ok(Some(Existing { file, meta }))
    }

    /// Creates `name` in the held directory, exclusively (never through a link), with
    /// `mode` (before the umask).
    pub(crate) fn create_new(&self, name: &OsStr, mode: u32) -> std::io::Result<File> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.dir, name, flags, Mode::from_raw_mode(mode))?;
        Ok(File::from(fd))
    }

    /// Renames `from` (in the held directory) over the target. `replace` false: the target
    /// must still not exist (`RENAME_NOREPLACE` where the file system has it).
    pub(crate) fn rename_over(&self, from: &OsStr, replace: bool) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        if !replace {
            use rustix::fs::RenameFlags;
            match rustix::fs::renameat_with(
                &self.dir,
                from,
                &self.dir,
                &self.name,
                RenameFlags::NOREPLACE,
            ) {
                Err(Errno::INVAL | Errno::NOSYS) => {}
                other => return other.map_err(Into::into),
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = replace;
        rustix::fs::renameat(&self.dir, from, &self.dir, &self.name).map_err(Into::into)
    }

    /// Gives the target a second name `to` in the held directory (a hard link).
    pub(crate) fn link_as(&self, to: &OsStr) -> std::io::Result<()> {
        rustix::fs::linkat(&self.dir, &self.name, &self.dir, to, AtFlags::empty())
            .map_err(Into::into)
    }

    /// Renames the target to `to` in the held directory, which must not exist.
    pub(crate) fn rename_away(&self, to: &OsStr) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::RenameFlags;
            match rustix::fs::renameat_with(
                &self.dir,
                &self.name,
                &self.dir,
                to,
                RenameFlags::NOREPLACE,
            ) {
                Err(Errno::INVAL | Errno::NOSYS) => {}
                other => return other.map_err(Into::into),
            }
        }
        rustix::fs::renameat(&self.dir, &self.name, &self.dir, to).map_err(Into::into)
    }

    /// Removes `name` from the held directory (a link itself, never what it points to).
    pub(crate) fn remove(&self, name: &OsStr) -> std::io::Result<()> {
        rustix::fs::unlinkat(&self.dir, name, AtFlags::empty()).map_err(Into::into)
    }

    /// A regular file `name` of the held directory: its modification time in seconds since
    /// the epoch, or `None` when it is missing or not a regular file.
    pub(crate) fn regular_mtime(&self, name: &OsStr) -> Option<i128> {
        let st = self.stat(name).ok()??;
        (FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
            .then(|| i128::from(st.st_mtime))
    }

    /// The names in the held directory that start with `prefix` (none when it cannot be
    /// listed).
    pub(crate) fn names_starting_with(&self, prefix: &[u8]) -> Vec<OsString> {
        let Ok(fd) = rustix::fs::openat(
            &self.dir,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            return Vec::new();
        };
        let Ok(dir) = Dir::new(fd) else {
            return Vec::new();
        };
        use std::os::unix::ffi::OsStrExt;
        dir.filter_map(Result::ok)
            .filter(|e| e.file_name().to_bytes().starts_with(prefix))
            .map(|e| OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())
            .collect()
    }

    /// Flushes the held directory (a rename in it); best effort.
    pub(crate) fn sync_dir(&self) {
        if let Ok(fd) = rustix::fs::openat(
            &self.dir,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            let _ = rustix::fs::fsync(&fd);
        }
    }
}

fn open_root() -> Result<OwnedFd, Errno> {
    rustix::fs::open("/", DIR_HANDLE, Mode::empty())
}

/// The directory `/names…` in one `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`;
/// `None` when that fails for any reason (the walk per component decides, and reports
/// precisely, or makes what is missing).
#[cfg(target_os = "linux")]
fn open_beneath(names: &[&OsStr]) -> Option<OwnedFd> {
    use rustix::fs::ResolveFlags;
    if NO_OPENAT2.load(Ordering::Relaxed) || forced_walk() {
        return None;
    }
    let root = open_root().ok()?;
    if names.is_empty() {
        return Some(root);
    }
    let rel: PathBuf = names.iter().collect();
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    for _ in 0..OPENAT2_TRIES {
        match rustix::fs::openat2(&root, &rel, DIR_HANDLE, Mode::empty(), resolve) {
            Ok(fd) => return Some(fd),
            // A rename somewhere on the system raced the lookup.
            Err(Errno::AGAIN) => {}
            Err(Errno::NOSYS | Errno::PERM | Errno::INVAL | Errno::TOOBIG) => {
                NO_OPENAT2.store(true, Ordering::Relaxed);
                return None;
            }
            Err(_) => return None,
        }
    }
    None
}

#[cfg(not(target_os = "linux"))]
fn open_beneath(_names: &[&OsStr]) -> Option<OwnedFd> {
    None
}

/// Opens `name` in `dir` as a directory, refusing a symbolic link.
fn open_dir(dir: &OwnedFd, name: &OsStr) -> Result<OwnedFd, Errno> {
    let flags = DIR_HANDLE | OFlags::NOFOLLOW;
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => {
            // A path handle of a link is possible on some systems: look at what was opened.
            let st = rustix::fs::fstat(&fd)?;
            match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => Ok(fd),
                FileType::Symlink => Err(Errno::LOOP),
                _ => Err(Errno::NOTDIR),
            }
        }
        Err(Errno::NOTDIR | Errno::LOOP) => {
            // Say which: a link, something else that is not a directory, or (a directory
            // now) something that changed since the open (`ESTALE` here).
            match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                    FileType::Symlink => Err(Errno::LOOP),
                    FileType::Directory => Err(Errno::STALE),
                    _ => Err(Errno::NOTDIR),
                },
                Err(Errno::NOENT) => Err(Errno::STALE),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Walks from `/` through `names`, one handle per component, never following a link;
/// makes missing directories when `parents` says so.
fn walk(path: &Path, names: &[&OsStr], parents: Parents) -> Result<Option<OwnedFd>, ToolError> {
    let mut at = PathBuf::from("/");
    let mut dir = open_root().map_err(|e| ToolError::io(&at, e.into()))?;
    for name in names {
        at.push(name);
        let next = match open_dir(&dir, name) {
            Err(Errno::NOENT) if parents == Parents::Require => return Ok(None),
            Err(Errno::NOENT) => {
                match rustix::fs::mkdirat(&dir, *name, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(ToolError::io(&at, e.into())),
                }
                open_dir(&dir, name)
            }
            other => other,
        };
        dir = match next {
            Ok(fd) => fd,
            Err(Errno::LOOP) => return Err(changed(path, &at, "it is now a symbolic link")),
            Err(Errno::NOENT) => return Err(changed(path, &at, "it disappeared")),
            Err(Errno::STALE) => return Err(changed(path, &at, "it was replaced")),
            Err(Errno::NOTDIR) => {
                return Err(ToolError::respond(format!(
                    "Cannot write {}: {} is not a directory.",
                    path.display(),
                    at.display()
                )));
            }
            Err(e) => return Err(ToolError::io(&at, e.into())),
        };
    }
    Ok(Some(dir))
}

#[cfg(all(test, target_os = "linux"))]
thread_local! {
    static FORCE_WALK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(target_os = "linux")]
fn forced_walk() -> bool {
    #[cfg(test)]
    return FORCE_WALK.with(std::cell::Cell::get);
    #[cfg(not(test))]
    false
}

/// Runs `f` with the walk per component forced on this thread (tests of the path taken
/// where `openat2` is missing).
#[cfg(test)]
pub(crate) fn without_openat2<T>(f: impl FnOnce() -> T) -> T {
    #[cfg(target_os = "linux")]
    FORCE_WALK.with(|c| c.set(true));
    let out = f();
    #[cfg(target_os = "linux")]
    FORCE_WALK.with(|c| c.set(false));
    out
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;
    use std::sync::atomic::Ordering;

    use super::*;

    /// What [`WriteTarget::open`] makes of `rel` under a tree with a link `out` to a
    /// directory outside, a link `in` to `real/`, and a file `file`: `Ok(dir)` the held
    /// directory's path relative to the root (and that it is the real directory), or the
    /// error text.
    fn check(rel: &str, parents: Parents, expected: Result<Option<&str>, &str>) {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.join("real/sub")).unwrap();
        std::fs::write(root.join("file"), "x").unwrap();
        symlink(outside.path(), root.join("out")).unwrap();
        symlink(root.join("real"), root.join("in")).unwrap();
        let path = root.join(rel);
        for forced_walk in [false, true] {
            let got = if forced_walk {
                without_openat2(|| WriteTarget::open(&path, parents))
            } else {
                WriteTarget::open(&path, parents)
            };
            match (&got, &expected) {
                (Ok(Some(t)), Ok(Some(dir))) => {
                    assert_eq!(t.dir_path(), root.join(dir), "{rel}");
                    let held = rustix::fs::fstat(&t.dir).unwrap();
                    let real = std::fs::metadata(root.join(dir)).unwrap();
                    assert_eq!(i128::from(held.st_ino), i128::from(real.ino()), "{rel}");
                }
                (Ok(None), Ok(None)) => {}
                (Err(e), Err(text)) => assert!(e.to_string().contains(text), "{rel}: {e}"),
                _ => {
                    panic!("{rel} (walk forced: {forced_walk}): got {got:?}, expected {expected:?}")
                }
            }
            assert_eq!(
                std::fs::read_dir(outside.path()).unwrap().count(),
                0,
                "{rel}: something was made outside"
            );
        }
    }

    #[test]
    fn opens_real_directories_and_refuses_links_on_the_way() {
        use Parents::{Create, Require};
        check("a.txt", Require, Ok(Some("")));
        check("real/a.txt", Require, Ok(Some("real")));
        check("real/sub/a.txt", Require, Ok(Some("real/sub")));
        check("real/new/deeper/a.txt", Require, Ok(None));
        check("real/new/deeper/a.txt", Create, Ok(Some("real/new/deeper")));
        let link = "out changed after the permission check (it is now a symbolic link";
        check("out/a.txt", Require, Err(link));
        check("out/a.txt", Create, Err(link));
        check("out/new/a.txt", Create, Err(link));
        let link = "in changed after the permission check (it is now a symbolic link";
        check("in/a.txt", Require, Err(link));
        check("in/sub/a.txt", Create, Err(link));
        check("file/a.txt", Require, Err("file is not a directory"));
        check("file/new/a.txt", Create, Err("file is not a directory"));
    }

    #[test]
    fn a_racing_swap_never_yields_a_handle_outside() {
        use std::sync::Arc;
        use std::sync::atomic::AtomicBool;
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        symlink(outside.path(), root.join("d.alt")).unwrap();
        // Before the swapper starts: afterwards `d` may be the link to `outside`.
        let real_ino = std::fs::metadata(root.join("d")).unwrap().ino();
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stop, a, b) = (Arc::clone(&stop), root.join("d"), root.join("d.alt"));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    rustix::fs::renameat_with(
                        rustix::fs::CWD,
                        &a,
                        rustix::fs::CWD,
                        &b,
                        rustix::fs::RenameFlags::EXCHANGE,
                    )
                    .unwrap();
                }
            })
        };
        let mut opened = 0;
        for i in 0..600 {
            // Both ways of opening, and directories made on the way.
            let path = root.join(format!("d/n{i}/f.txt"));
            let got = if i % 2 == 0 {
                without_openat2(|| WriteTarget::open(&path, Parents::Create))
            } else {
                WriteTarget::open(&path, Parents::Create)
            };
            match got {
                Ok(Some(t)) => {
                    opened += 1;
                    // The held directory is n{i} in the real d, wherever d is now.
                    let held = rustix::fs::fstat(&t.dir).unwrap();
                    let parent = rustix::fs::statat(&t.dir, "..", AtFlags::empty()).unwrap();
                    assert_eq!(i128::from(parent.st_ino), i128::from(real_ino));
                    assert_eq!(FileType::from_raw_mode(held.st_mode), FileType::Directory);
                }
                Ok(None) => panic!("parents are made"),
                Err(e) => assert!(
                    e.to_string().contains("changed after the permission check"),
                    "{e}"
                ),
            }
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        eprintln!("{opened} of 600 opened");
    }

    #[test]
    fn the_root_and_odd_paths() {
        assert!(WriteTarget::open(Path::new("/"), Parents::Require).is_err());
        assert!(WriteTarget::open(Path::new("relative/a"), Parents::Require).is_err());
        assert!(WriteTarget::open(Path::new("/a/../b"), Parents::Require).is_err());
        let t = WriteTarget::open(Path::new("/x.txt"), Parents::Require)
            .unwrap()
            .unwrap();
        assert_eq!(t.dir_path(), Path::new("/"));
    }

    #[test]
    fn the_existing_file_is_opened_without_following_links() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        std::fs::write(root.join("f"), "data").unwrap();
        symlink(root.join("f"), root.join("link")).unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        let open = |name: &str| {
            WriteTarget::open(&root.join(name), Parents::Require)
                .unwrap()
                .unwrap()
                .open_existing()
        };
        let existing = open("f").unwrap().unwrap();
        assert_eq!(existing.meta.len(), 4);
        assert!(open("missing").unwrap().is_none());
        let err = open("link").unwrap_err().to_string();
        assert!(err.contains("(it is now a symbolic link;"), "{err}");
        let err = open("d").unwrap_err().to_string();
        assert!(err.contains("is a directory, not a file"), "{err}");
        let status = std::process::Command::new("mkfifo")
            .arg(root.join("pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        let err = open("pipe").unwrap_err().to_string();
        assert!(err.contains("it is a FIFO (named pipe)"), "{err}");
    }
}
