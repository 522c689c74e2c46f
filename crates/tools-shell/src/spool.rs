//! Command output the host keeps without trusting the file system a sandbox can write: the
//! command writes into a pipe, and a thread of ours moves what arrives into a file we created
//! ourselves, capped at [`OUTPUT_CAP`] with its head and its tail kept.
//!
//! - [`OutputDir`] is a directory held open by descriptor. Each level below the configured
//!   state directory is created mode 0700 and opened without following links, and refused
//!   unless it is a directory of ours; files in it are created with `O_EXCL | O_NOFOLLOW`
//!   (a name planted in the meantime is skipped, never opened). The host never opens one of
//!   these files by its path again: it reads and truncates through the descriptor it
//!   created.
//! - [`Spool`] is the capped copy. The first [`Caps::head`] bytes go to the output file as
//!   they come; after them the stream goes round a ring of [`Caps::tail`] bytes in an
//!   unnamed temporary file. When the stream ends, the ring is appended in order, after a
//!   `… [N bytes dropped] …` line when it went round. On Linux the bytes move with
//!   `splice(2)` and `copy_file_range(2)`, never through our memory.
//! - [`CwdPipe`] is the channel on which a command reports the directory it ended in.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use tokio::sync::watch;
use tool_core::ToolError;

/// The most a command's output takes on disk: its first half and its last half are kept.
pub const OUTPUT_CAP: u64 = 64 << 20;

/// Bytes moved per system call.
const CHUNK: usize = 1 << 20;

/// How much of a stream is kept: the first `head` bytes and the last `tail` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Bytes kept from the start
    pub head: u64,
    /// Bytes kept from the end
    pub tail: u64,
}

impl Caps {
    /// The caps of every command: [`OUTPUT_CAP`], half head, half tail.
    pub const OUTPUT: Caps = Caps {
        head: OUTPUT_CAP / 2,
        tail: OUTPUT_CAP - OUTPUT_CAP / 2,
    };
}

fn errno_io(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

/// A directory of ours, held open; files are created in it without following links.
#[derive(Debug)]
pub struct OutputDir {
    fd: OwnedFd,
    path: PathBuf,
}

static TEMP_NAMES: AtomicU64 = AtomicU64::new(0);

impl OutputDir {
    /// Opens `base/components…`, creating what is missing. `base` is the configured state
    /// directory and is taken as it is; each component below it is created mode 0700,
    /// opened without following a link, and must be a directory owned by this user.
    pub fn open(base: &Path, components: &[&str]) -> Result<OutputDir, ToolError> {
        std::fs::create_dir_all(base).map_err(|e| ToolError::io(base, e))?;
        let mut fd = rustix::fs::open(
            base,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| ToolError::io(base, errno_io(e)))?;
        let mut path = base.to_path_buf();
        for c in components {
            path.push(c);
            match rustix::fs::mkdirat(&fd, *c, Mode::RWXU) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(ToolError::io(&path, errno_io(e))),
            }
            let next = rustix::fs::openat(
                &fd,
                *c,
                OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| match e {
                Errno::LOOP | Errno::NOTDIR => ToolError::fatal(format!(
                    "{} is not a directory (a symbolic link or a file); agent-tools keeps command output there and does not follow links in it: remove it and retry",
                    path.display()
                )),
                e => ToolError::io(&path, errno_io(e)),
            })?;
            let st = rustix::fs::fstat(&next).map_err(|e| ToolError::io(&path, errno_io(e)))?;
            if st.st_uid != rustix::process::geteuid().as_raw() {
                return Err(ToolError::fatal(format!(
                    "{} belongs to another user (uid {}); agent-tools keeps command output there: remove it or choose another state directory",
                    path.display(),
                    st.st_uid
                )));
            }
            fd = next;
        }
        Ok(OutputDir { fd, path })
    }

    /// The directory's path (for messages and the paths the model is given).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates `name`, which must not exist (not even as a link), readable and writable by
    /// this user only.
    pub fn create(&self, name: &str) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::RDWR | OFlags::CLOEXEC,
            Mode::RUSR | Mode::WUSR,
        )
        .map_err(errno_io)?;
        Ok(File::from(fd))
    }

    /// Creates `STEM.EXT`, or `STEM-1.EXT`, `STEM-2.EXT`… when the name is taken (by a file
    /// or a link planted there): the file and its path.
    pub fn create_unique(&self, stem: &str, ext: &str) -> Result<(File, PathBuf), ToolError> {
        for i in 0..64 {
            let name = match i {
                0 => format!("{stem}.{ext}"),
                i => format!("{stem}-{i}.{ext}"),
            };
            match self.create(&name) {
                Ok(f) => return Ok((f, self.path.join(name))),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(ToolError::io(self.path.join(name), e)),
            }
        }
        Err(ToolError::fatal(format!(
            "cannot create an output file in {}: every name tried for {stem}.{ext} is taken",
            self.path.display()
        )))
    }

    /// An unnamed file in this directory (`O_TMPFILE`; elsewhere a file created and
    /// unlinked at once).
    pub fn temporary(&self) -> io::Result<File> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            if let Ok(fd) = rustix::fs::openat(
                &self.fd,
                ".",
                OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
                Mode::RUSR | Mode::WUSR,
            ) {
                return Ok(File::from(fd));
            }
        }
        for _ in 0..64 {
            let name = format!(
                ".agent-tools-{}-{}.tmp",
                std::process::id(),
                TEMP_NAMES.fetch_add(1, Ordering::Relaxed)
            );
            match self.create(&name) {
                Ok(f) => {
                    let _ = rustix::fs::unlinkat(&self.fd, name.as_str(), AtFlags::empty());
                    return Ok(f);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other("every temporary name tried is taken"))
    }

    /// Whether `name` still is `file` (not a link or another file put in its place).
    fn holds(&self, name: &str, file: &File) -> bool {
        let (Ok(ours), Ok(there)) = (
            rustix::fs::fstat(file),
            rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW),
        ) else {
            return false;
        };
        ours.st_dev == there.st_dev && ours.st_ino == there.st_ino
    }

    /// Removes `name` if it still is `file`.
    pub fn remove(&self, name: &str, file: &File) {
        if self.holds(name, file) {
            let _ = rustix::fs::unlinkat(&self.fd, name, AtFlags::empty());
        }
    }

    /// A path at which `file` (named `name` here) can be read: `name` while it still is
    /// `file`, else a new file of this directory with a copy of it (something was put in
    /// its place, which the path given to the model must not lead to), with that copy.
    pub fn claim(&self, name: &str, file: &File) -> Result<(PathBuf, Option<File>), ToolError> {
        if self.holds(name, file) {
            return Ok((self.path.join(name), None));
        }
        let stem = name.strip_suffix(".output").unwrap_or(name);
        let (copy, path) = self.create_unique(&format!("{stem}-saved"), "output")?;
        let len = file.metadata().map_err(|e| ToolError::io(&path, e))?.len();
        copy_range(file, 0, &copy, 0, len).map_err(|e| ToolError::io(&path, e))?;
        Ok((path, Some(copy)))
    }

    /// Opens `name` again for reading, without following a link; it must still be the
    /// file `id` names (device and inode), else the error says it was replaced. A name
    /// that is gone gives `NotFound`.
    pub fn reopen(&self, name: &str, id: FileId) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno_io)?;
        let st = rustix::fs::fstat(&fd).map_err(errno_io)?;
        if FileId::of(&st) != id {
            return Err(io::Error::other(format!(
                "{} was replaced by another file",
                self.path.join(name).display()
            )));
        }
        Ok(File::from(fd))
    }
}

/// The pipe a command reports its final working directory on (the read end stays here, the
/// write end goes to the command, as its standard input until its start-up code moves it).
#[derive(Debug)]
pub struct CwdPipe {
    reader: OwnedFd,
}

impl CwdPipe {
    /// The channel whose read end is `reader`.
    pub fn new(reader: OwnedFd) -> Result<CwdPipe, ToolError> {
        rustix::fs::fcntl_setfl(&reader, OFlags::NONBLOCK)
            .map_err(|e| ToolError::fatal(format!("cannot create a pipe: {e}")))?;
        Ok(CwdPipe { reader })
    }

    /// The directory the command reported, if any; never waits (anything the command
    /// left running may still hold the other end).
    pub fn read(&self) -> Option<PathBuf> {
        use std::os::unix::ffi::OsStrExt;
        let mut buf = [0_u8; 4096];
        let n = rustix::io::read(&self.reader, &mut buf).ok()?;
        let text = &buf[..n];
        let line = text.split(|b| *b == b'\n').next().unwrap_or_default();
        if line.is_empty() {
            return None;
        }
        let p = PathBuf::from(std::ffi::OsStr::from_bytes(line));
        (p.is_absolute() && p.is_dir()).then_some(p)
    }
}

/// Where a byte of the stream is kept, and how many bytes from there on are contiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// In the output file at this offset
    File(u64, u64),
    /// In the ring at this offset
    Ring(u64, u64),
    /// Dropped; the next kept byte is at this stream offset
    Dropped(u64),
    /// Not written yet
    Beyond,
}

/// The copy's bookkeeping.
#[derive(Debug, Default)]
struct State {
    /// Bytes received
    total: u64,
    /// Bytes being moved beyond `total`: ring bytes older than `reserved - tail` may be
    /// overwritten right now
    reserved: u64,
    /// The ring, once the head is full
    ring: Option<Arc<File>>,
    /// The dropped-bytes line's length, once the ring is appended after one
    marker: Option<u64>,
    /// Whether the stream ended and the file holds its final form
    done: bool,
    /// Why the file stopped growing, if writing it failed
    failure: Option<String>,
    /// Bytes read but not kept because writing failed
    lost: u64,
}

impl State {
    fn locate(&self, caps: Caps, off: u64) -> At {
        let Caps { head, tail } = caps;
        if off >= self.total {
            return At::Beyond;
        }
        if off < head {
            let end = if self.marker.is_some() {
                head
            } else {
                self.total.min(if self.done { u64::MAX } else { head })
            };
            return At::File(off, end - off);
        }
        if self.done {
            return match self.marker {
                None => At::File(off, self.total - off),
                Some(m) => {
                    let start = self.total - tail;
                    if off < start {
                        At::Dropped(start)
                    } else {
                        At::File(head + m + (off - start), self.total - off)
                    }
                }
            };
        }
        let oldest = head.max(self.reserved.saturating_sub(tail));
        if off < oldest {
            return At::Dropped(oldest);
        }
        let pos = (off - head) % tail;
        At::Ring(pos, (self.total - off).min(tail - pos))
    }
}

#[derive(Debug)]
struct SpoolCore {
    file: File,
    caps: Caps,
    state: Mutex<State>,
    done: watch::Sender<bool>,
    /// Dropped to tell the copy that the command is over (wakes it when it waits)
    stop: Mutex<Option<OwnedFd>>,
    /// Set with the above (seen when data keeps coming)
    stopping: std::sync::atomic::AtomicBool,
}

impl SpoolCore {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn close(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        if let Ok(mut s) = self.stop.lock() {
            s.take();
        }
    }
}

/// A slice of the stream read back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chunk {
    /// The bytes
    pub data: Vec<u8>,
    /// The stream offset after them
    pub next: u64,
    /// Bytes skipped before them because they were dropped
    pub skipped: u64,
}

/// The capped copy of one command's output. When the last clone is dropped (a call
/// abandoned), the copy is closed as by [`Spool::close`].
#[derive(Debug, Clone)]
pub struct Spool {
    shared: Arc<SpoolCore>,
    _owner: Arc<Owner>,
}

/// The threads that copy outputs, kept for the next command: starting and ending a thread
/// per command was about a tenth of a millisecond of every call in a batch. A thread left
/// idle for [`copiers::IDLE_FOR`] ends.
mod copiers {
    use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
    use std::sync::{Mutex, PoisonError};
    use std::time::Duration;

    /// A copy to run.
    pub(super) type Job = Box<dyn FnOnce() + Send>;

    /// How long a thread waits for the next copy before it ends.
    pub(super) const IDLE_FOR: Duration = Duration::from_secs(30);

    /// The number of the next thread.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    /// The idle threads, by a number of their own, each with the way to hand it a job.
    static IDLE: Mutex<Vec<(u64, Sender<Job>)>> = Mutex::new(Vec::new());

    fn idle() -> std::sync::MutexGuard<'static, Vec<(u64, Sender<Job>)>> {
        IDLE.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `job` on an idle copy thread, or on a new one.
    pub(super) fn run(mut job: Job) -> std::io::Result<()> {
        loop {
            let Some((_, tx)) = idle().pop() else { break };
            match tx.send(job) {
                Ok(()) => return Ok(()),
                // That thread is gone (a copy panicked): try the next.
                Err(e) => job = e.0,
            }
        }
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (tx, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name("agent-tools-output".into())
            .spawn(move || serve(id, &tx, &rx, job))
            .map(drop)
    }

    /// A copy thread: runs its job, offers itself again, and ends when none comes in time.
    fn serve(id: u64, tx: &Sender<Job>, rx: &Receiver<Job>, first: Job) {
        let mut job = first;
        loop {
            job();
            idle().push((id, tx.clone()));
            job = match rx.recv_timeout(IDLE_FOR) {
                Ok(next) => next,
                Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {
                    let mut list = idle();
                    match list.iter().position(|(i, _)| *i == id) {
                        Some(at) => {
                            list.swap_remove(at);
                            return;
                        }
                        // Taken off the list in the meantime: its job is on the way.
                        None => {
                            drop(list);
                            match rx.recv() {
                                Ok(next) => next,
                                Err(_) => return,
                            }
                        }
                    }
                }
            };
        }
    }

    /// How many copy threads were started.
    #[cfg(test)]
    pub(super) fn started() -> u64 {
        NEXT.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many copy threads are idle.
    #[cfg(test)]
    pub(super) fn idle_count() -> usize {
        idle().len()
    }
}

/// Closes the copy once no [`Spool`] is left (the copying thread holds only [`SpoolCore`]).
#[derive(Debug)]
struct Owner(Arc<SpoolCore>);

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// What a finished copy holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Bytes the command wrote
    pub total: u64,
    /// Bytes dropped from the middle
    pub dropped: u64,
    /// Bytes lost because the file could not be written
    pub lost: u64,
}

impl Spool {
    /// Starts copying into `file` (empty, ours); returns the spool and the pipe end the
    /// command writes to.
    pub fn start(
        file: File,
        dir: Arc<OutputDir>,
        caps: Caps,
    ) -> Result<(Spool, OwnedFd), ToolError> {
        use rustix::pipe::{PipeFlags, pipe_with};
        let (reader, writer) = pipe_with(PipeFlags::CLOEXEC)
            .map_err(|e| ToolError::fatal(format!("cannot set up the command's output: {e}")))?;
        Ok((Spool::start_from(file, dir, caps, reader)?, writer))
    }

    /// Starts copying from the pipe whose read end is `reader` (close-on-exec, nothing
    /// written yet) into `file` (empty, ours).
    pub fn start_from(
        file: File,
        dir: Arc<OutputDir>,
        caps: Caps,
        reader: OwnedFd,
    ) -> Result<Spool, ToolError> {
        use rustix::pipe::{PipeFlags, pipe_with};
        let fail = |e: &dyn std::fmt::Display| {
            ToolError::fatal(format!("cannot set up the command's output: {e}"))
        };
        rustix::fs::fcntl_setfl(&reader, OFlags::NONBLOCK).map_err(|e| fail(&e))?;
        // A larger pipe means fewer switches between the command and the copy; the limit
        // for unprivileged users is 1 MiB by default, and failing is harmless.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let _ = rustix::pipe::fcntl_setpipe_size(&reader, CHUNK);
        let (stop_r, stop_w) = pipe_with(PipeFlags::CLOEXEC).map_err(|e| fail(&e))?;
        let (done, _) = watch::channel(false);
        let shared = Arc::new(SpoolCore {
            file,
            caps,
            state: Mutex::new(State::default()),
            done,
            stop: Mutex::new(Some(stop_w)),
            stopping: std::sync::atomic::AtomicBool::new(false),
        });
        let copier = Arc::clone(&shared);
        copiers::run(Box::new(move || copy(&copier, &dir, &reader, &stop_r)))
            .map_err(|e| fail(&e))?;
        let owner = Arc::new(Owner(Arc::clone(&shared)));
        Ok(Spool {
            shared,
            _owner: owner,
        })
    }

    /// Tells the copy the command is over: it takes what is still in the pipe and stops,
    /// even if something the command left behind still holds the pipe open.
    pub fn close(&self) {
        self.shared.close();
    }

    /// [`Spool::close`], then waits until the file holds its final form.
    pub async fn finish(&self) -> Summary {
        self.close();
        let mut done = self.shared.done.subscribe();
        let _ = done.wait_for(|d| *d).await;
        self.summary()
    }

    /// What the copy holds so far.
    pub fn summary(&self) -> Summary {
        let st = self.shared.state();
        let Caps { head, tail } = self.shared.caps;
        Summary {
            total: st.total,
            dropped: st.total.saturating_sub(head + tail),
            lost: st.lost,
        }
    }

    /// Why writing the output file failed, if it did.
    pub fn failure(&self) -> Option<String> {
        self.shared.state().failure.clone()
    }

    /// The output file (final once [`Spool::finish`] returned).
    pub fn file(&self) -> &File {
        &self.shared.file
    }

    /// Up to `max` bytes of the stream from `offset`, skipping what was dropped before
    /// them (the chunk stops at the next gap).
    pub fn read_from(&self, offset: u64, max: usize) -> io::Result<Chunk> {
        let st = self.shared.state();
        read_stream(&st, self.shared.caps, &self.shared.file, offset, max)
    }

    /// The last bytes of the stream kept, at most `max`.
    pub fn tail(&self, max: usize) -> io::Result<Vec<u8>> {
        let total = self.shared.state().total;
        let off = total.saturating_sub(max as u64);
        Ok(self.read_from(off, max)?.data)
    }

    /// Once the copy is finished ([`Spool::finish`]): what is needed to read its output
    /// again later without holding the file open — `name`, the file's name in its
    /// directory, and `file`, the file it names (the output file, or the copy
    /// [`OutputDir::claim`] made).
    pub fn park(&self, name: &str, file: &File) -> io::Result<Parked> {
        let st = self.shared.state();
        if !st.done {
            return Err(io::Error::other("the output is still being written"));
        }
        let meta = rustix::fs::fstat(file).map_err(errno_io)?;
        Ok(Parked {
            name: name.to_owned(),
            id: FileId::of(&meta),
            caps: self.shared.caps,
            total: st.total,
            marker: st.marker,
            lost: st.lost,
        })
    }
}

/// What tells a parked file from one put in its place: its device and inode (a number a
/// deletion frees for the next file made), with its length and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
    len: i64,
    mtime: (i64, u64),
}

impl FileId {
    fn of(st: &rustix::fs::Stat) -> Self {
        FileId {
            dev: st.st_dev,
            ino: st.st_ino,
            len: st.st_size,
            #[allow(
                clippy::useless_conversion,
                reason = "the fields' types differ between architectures"
            )]
            mtime: (
                i64::from(st.st_mtime),
                u64::try_from(st.st_mtime_nsec).unwrap_or(0),
            ),
        }
    }
}

/// A finished copy whose file is closed: the file's name and identity in its directory
/// (it is opened again without following a link, and must still be the same file) and
/// where each byte of the stream lies in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parked {
    name: String,
    id: FileId,
    caps: Caps,
    total: u64,
    marker: Option<u64>,
    lost: u64,
}

impl Parked {
    fn state(&self) -> State {
        State {
            total: self.total,
            reserved: self.total,
            marker: self.marker,
            done: true,
            lost: self.lost,
            ..State::default()
        }
    }

    /// What the copy held.
    pub fn summary(&self) -> Summary {
        Summary {
            total: self.total,
            dropped: self.total.saturating_sub(self.caps.head + self.caps.tail),
            lost: self.lost,
        }
    }

    /// [`Spool::read_from`], through the file opened again in `dir` (`NotFound` once it
    /// was deleted).
    pub fn read_from(&self, dir: &OutputDir, offset: u64, max: usize) -> io::Result<Chunk> {
        let file = dir.reopen(&self.name, self.id)?;
        read_stream(&self.state(), self.caps, &file, offset, max)
    }

    /// [`Spool::tail`], through the file opened again in `dir`.
    pub fn tail(&self, dir: &OutputDir, max: usize) -> io::Result<Vec<u8>> {
        let off = self.total.saturating_sub(max as u64);
        Ok(self.read_from(dir, off, max)?.data)
    }
}

/// Up to `max` bytes of the stream from `offset` as `st` places them in `file` (and the
/// ring), skipping what was dropped before them (the chunk stops at the next gap).
fn read_stream(st: &State, caps: Caps, file: &File, offset: u64, max: usize) -> io::Result<Chunk> {
    let mut off = offset;
    let mut skipped = 0;
    let mut data = Vec::new();
    while data.len() < max {
        let (pos, len, ring) = match st.locate(caps, off) {
            At::Beyond => break,
            At::Dropped(next) if data.is_empty() => {
                skipped += next - off;
                off = next;
                continue;
            }
            At::Dropped(_) => break,
            At::File(pos, len) => (pos, len, None),
            At::Ring(pos, len) => (pos, len, st.ring.clone()),
        };
        let want = usize::try_from(len)
            .unwrap_or(usize::MAX)
            .min(max - data.len());
        let start = data.len();
        data.resize(start + want, 0);
        let source = ring.as_deref().unwrap_or(file);
        let mut got = 0;
        while got < want {
            match source.read_at(&mut data[start + got..], pos + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        data.truncate(start + got);
        off += got as u64;
        if got < want {
            break;
        }
    }
    Ok(Chunk {
        data,
        next: off,
        skipped,
    })
}

/// Moves up to `len` bytes from the pipe to `target` at `*off`.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn transfer(input: &OwnedFd, target: &File, off: &mut u64, len: usize) -> Result<usize, Errno> {
    use rustix::pipe::{SpliceFlags, splice};
    splice(
        input,
        None,
        target,
        Some(off),
        len,
        SpliceFlags::NONBLOCK | SpliceFlags::MOVE,
    )
}

/// Moves up to `len` bytes from the pipe to `target` at `*off`.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn transfer(input: &OwnedFd, target: &File, off: &mut u64, len: usize) -> Result<usize, Errno> {
    let mut buf = vec![0_u8; len.min(64 * 1024)];
    let n = rustix::io::read(input, &mut buf)?;
    target
        .write_all_at(&buf[..n], *off)
        .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))?;
    *off += n as u64;
    Ok(n)
}

/// Reads and forgets up to a chunk from the pipe (once the file cannot be written).
fn discard(input: &OwnedFd) -> Result<usize, Errno> {
    let mut buf = [0_u8; 64 * 1024];
    rustix::io::read(input, &mut buf)
}

/// Copies `len` bytes of `src` at `from` to `dst` at `to`, in the kernel when it can.
fn copy_range(src: &File, mut from: u64, dst: &File, mut to: u64, len: u64) -> io::Result<()> {
    let end = from + len;
    let mut buf: Vec<u8> = Vec::new();
    while from < end {
        let want = usize::try_from(end - from).unwrap_or(CHUNK).min(CHUNK);
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if buf.is_empty() {
            match rustix::fs::copy_file_range(src, Some(&mut from), dst, Some(&mut to), want) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(_) => continue,
                Err(Errno::INTR) => continue,
                // Across file systems on old kernels, or a file system without it.
                Err(Errno::XDEV | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {}
                Err(e) => return Err(errno_io(e)),
            }
        }
        buf.resize(want, 0);
        let n = src.read_at(&mut buf[..want], from)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        dst.write_all_at(&buf[..n], to)?;
        from += n as u64;
        to += n as u64;
    }
    Ok(())
}

/// The ring file past the head, made on first need; `None` (the failure noted) when it
/// cannot be made.
fn new_ring(shared: &SpoolCore, dir: &OutputDir) -> Option<Arc<File>> {
    match dir.temporary() {
        Ok(f) => {
            let f = Arc::new(f);
            shared.state().ring = Some(Arc::clone(&f));
            Some(f)
        }
        Err(e) => {
            shared.state().failure = Some(format!("cannot create a temporary file: {e}"));
            None
        }
    }
}

/// The copy: runs until the pipe's end (every writer gone), or until [`Spool::close`] and
/// then what the pipe holds; then puts the file in its final form.
fn copy(shared: &SpoolCore, dir: &OutputDir, input: &OwnedFd, stop: &OwnedFd) {
    use rustix::event::{PollFd, PollFlags, poll};
    let Caps { head, tail } = shared.caps;
    // After the stop, at most this much more is taken: what the command wrote before it
    // ended is in the pipe, whose buffer is at most this large.
    let mut budget_after_stop: Option<u64> = None;
    loop {
        if budget_after_stop.is_none() && shared.stopping.load(Ordering::Relaxed) {
            budget_after_stop = Some(2 * CHUNK as u64);
        }
        let (total, ring) = {
            let st = shared.state();
            (st.total, st.ring.clone())
        };
        let failed = shared.state().failure.is_some();
        let step = if failed {
            discard(input).map(|n| (n, false))
        } else {
            let (target, mut off, len): (&File, u64, usize);
            let ring_file;
            if total < head {
                target = &shared.file;
                off = total;
                len = usize::try_from(head - total).unwrap_or(CHUNK).min(CHUNK);
            } else {
                ring_file = match ring.or_else(|| new_ring(shared, dir)) {
                    Some(r) => r,
                    None => continue,
                };
                target = &ring_file;
                let pos = (total - head) % tail;
                off = pos;
                len = usize::try_from(tail - pos).unwrap_or(CHUNK).min(CHUNK);
            }
            shared.state().reserved = total + len as u64;
            transfer(input, target, &mut off, len).map(|n| (n, true))
        };
        match step {
            Ok((0, _)) => break,
            Ok((n, kept)) => {
                let mut st = shared.state();
                if kept {
                    st.total += n as u64;
                    st.reserved = st.total;
                } else {
                    st.lost += n as u64;
                }
                drop(st);
                if let Some(b) = budget_after_stop.as_mut() {
                    *b = b.saturating_sub(n as u64);
                    if *b == 0 {
                        break;
                    }
                }
            }
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) => {
                {
                    let mut st = shared.state();
                    st.reserved = st.total;
                }
                if budget_after_stop.is_some() {
                    break;
                }
                let mut fds = [
                    PollFd::new(input, PollFlags::IN),
                    PollFd::new(stop, PollFlags::IN),
                ];
                match poll(&mut fds, None) {
                    Ok(_) | Err(Errno::INTR) => {}
                    Err(_) => break,
                }
                if !fds[1].revents().is_empty() {
                    budget_after_stop = Some(2 * CHUNK as u64);
                }
            }
            Err(e) => {
                // The file cannot be written (disk full, a file-size limit): keep draining
                // the pipe so the command does not block, and say what was lost.
                let mut st = shared.state();
                st.reserved = st.total;
                if st.failure.is_none() {
                    st.failure = Some(format!("cannot write the output file: {e}"));
                } else {
                    break;
                }
            }
        }
    }
    assemble(shared, head, tail);
}

/// Puts the file in its final form once the copy ended: the head, then (past the cap, after
/// a marker saying how much was dropped) the tail from the ring; then says it is done.
fn assemble(shared: &SpoolCore, head: u64, tail: u64) {
    let mut st = shared.state();
    if let Some(ring) = st.ring.take() {
        let in_ring = st.total - head;
        let result = if in_ring <= tail {
            copy_range(&ring, 0, &shared.file, head, in_ring)
        } else {
            let dropped = st.total - head - tail;
            let marker = format!("\n… [{dropped} bytes dropped] …\n");
            let pos = in_ring % tail;
            let start = head + marker.len() as u64;
            shared
                .file
                .write_all_at(marker.as_bytes(), head)
                .and_then(|()| copy_range(&ring, pos, &shared.file, start, tail - pos))
                .and_then(|()| copy_range(&ring, 0, &shared.file, start + tail - pos, pos))
                .map(|()| st.marker = Some(marker.len() as u64))
        };
        if let Err(e) = result {
            // The head stays; the rest is lost.
            st.lost += st.total - head;
            st.total = head;
            st.marker = None;
            st.failure = Some(format!("cannot assemble the output file: {e}"));
        }
    }
    let len = match st.marker {
        Some(m) => head + m + tail,
        None => st.total,
    };
    let _ = shared.file.set_len(len);
    st.done = true;
    drop(st);
    shared.done.send_replace(true);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn dir() -> (tempfile::TempDir, Arc<OutputDir>) {
        let t = tempfile::tempdir().unwrap();
        let d = OutputDir::open(t.path(), &["a", "b"]).unwrap();
        (t, Arc::new(d))
    }

    /// Writes `input` through a spool with `caps`; returns the final file's bytes and the
    /// summary.
    fn check_copy(input: &[u8], caps: Caps) -> (Vec<u8>, Summary) {
        let (_t, d) = dir();
        let (file, _) = d.create_unique("out", "output").unwrap();
        let (spool, writer) = Spool::start(file, Arc::clone(&d), caps).unwrap();
        let mut w = File::from(writer);
        // Small writes, so the ring goes round in steps.
        for part in input.chunks(7) {
            w.write_all(part).unwrap();
        }
        drop(w);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let summary = rt.block_on(spool.finish());
        let mut out = Vec::new();
        let len = spool.file().metadata().unwrap().len();
        out.resize(len as usize, 0);
        spool.file().read_exact_at(&mut out, 0).unwrap();
        (out, summary)
    }

    #[test]
    fn one_copy_thread_serves_commands_one_after_another() {
        let caps = Caps { head: 10, tail: 8 };
        let before = copiers::started();
        for _ in 0..20 {
            assert_eq!(check_copy(b"again", caps).0, b"again");
            // The copy is done; its thread offers itself again right after.
            let mut tries = 0;
            while copiers::idle_count() == 0 && tries < 1000 {
                std::thread::sleep(std::time::Duration::from_millis(1));
                tries += 1;
            }
        }
        let started = copiers::started() - before;
        // One thread for all twenty (a few more if other tests of this process copy at the
        // same time).
        assert!(started <= 3, "{started} threads for 20 commands");
    }

    #[test]
    fn outputs_under_the_cap_are_kept_whole() {
        let caps = Caps { head: 10, tail: 8 };
        for n in [0_usize, 1, 9, 10, 11, 17, 18] {
            let input: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            let (out, s) = check_copy(&input, caps);
            assert_eq!(out, input, "{n} bytes");
            assert_eq!(s.total, n as u64);
            assert_eq!(s.dropped, 0);
        }
    }

    #[test]
    fn outputs_over_the_cap_keep_head_and_tail() {
        let caps = Caps { head: 10, tail: 8 };
        for n in [19_usize, 20, 25, 26, 27, 100, 1001] {
            let input: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            let (out, s) = check_copy(&input, caps);
            let dropped = n - 18;
            let expected = [
                &input[..10],
                format!("\n… [{dropped} bytes dropped] …\n").as_bytes(),
                &input[n - 8..],
            ]
            .concat();
            assert_eq!(
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&expected),
                "{n} bytes"
            );
            assert_eq!(s.total, n as u64);
            assert_eq!(s.dropped, dropped as u64);
        }
    }

    #[test]
    fn reading_back_follows_the_stream() {
        let caps = Caps { head: 4, tail: 6 };
        let input: Vec<u8> = (0..40_u8).map(|i| b'A' + i).collect();
        let (_t, d) = dir();
        let (file, _) = d.create_unique("out", "output").unwrap();
        let (spool, writer) = Spool::start(file, Arc::clone(&d), caps).unwrap();
        let mut w = File::from(writer);
        w.write_all(&input[..20]).unwrap();
        // While running: the head, then the ring's window of the last bytes.
        let mut tries = 0;
        while spool.summary().total < 20 && tries < 1000 {
            std::thread::sleep(std::time::Duration::from_millis(2));
            tries += 1;
        }
        let c = spool.read_from(0, 100).unwrap();
        assert_eq!(c.data, &input[..4]);
        assert_eq!(c.next, 4);
        let c = spool.read_from(4, 100).unwrap();
        assert_eq!((c.skipped, c.next), (10, 20));
        assert_eq!(c.data, &input[14..20]);
        assert_eq!(spool.tail(3).unwrap(), &input[17..20]);
        w.write_all(&input[20..]).unwrap();
        drop(w);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(spool.finish());
        // Finished: the same stream offsets map into the assembled file.
        let c = spool.read_from(2, 100).unwrap();
        assert_eq!(c.data, &input[2..4]);
        let c = spool.read_from(c.next, 100).unwrap();
        assert_eq!(c.skipped, 30);
        assert_eq!(c.data, &input[34..]);
        assert_eq!(spool.tail(8).unwrap(), &input[34..]);
        assert_eq!(spool.read_from(40, 10).unwrap().data, b"");
    }

    #[test]
    fn a_closed_spool_stops_although_a_writer_remains() {
        let caps = Caps {
            head: 100,
            tail: 100,
        };
        let (_t, d) = dir();
        let (file, _) = d.create_unique("out", "output").unwrap();
        let (spool, writer) = Spool::start(file, d, caps).unwrap();
        let mut w = File::from(writer);
        w.write_all(b"before\n").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let s = rt.block_on(spool.finish());
        assert_eq!(s.total, 7);
        // The writer is still open; later bytes go nowhere, and nothing blocks.
        let _ = w.write_all(b"after\n");
        assert_eq!(spool.tail(100).unwrap(), b"before\n");
    }

    #[test]
    fn planted_names_are_skipped_and_links_not_followed() {
        let (t, d) = dir();
        let victim = t.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let inner = t.path().join("a/b");
        std::os::unix::fs::symlink(&victim, inner.join("x.output")).unwrap();
        std::os::unix::fs::symlink(&victim, inner.join("x-1.output")).unwrap();
        let (mut f, path) = d.create_unique("x", "output").unwrap();
        assert_eq!(path, inner.join("x-2.output"));
        f.write_all(b"mine").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        // A directory level replaced by a link is refused, not followed.
        let elsewhere = t.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::rename(t.path().join("a"), t.path().join("a.old")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, t.path().join("a")).unwrap();
        let err = OutputDir::open(t.path(), &["a", "b"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not follow links"), "{err}");
        assert!(!elsewhere.join("b").exists());
        // Removing a name that is no longer ours leaves it.
        let (g, _) = d.create_unique("y", "output").unwrap();
        std::fs::remove_file(t.path().join("a.old/b/y.output")).unwrap();
        std::os::unix::fs::symlink(&victim, t.path().join("a.old/b/y.output")).unwrap();
        d.remove("y.output", &g);
        assert!(std::fs::symlink_metadata(t.path().join("a.old/b/y.output")).is_ok());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn the_working_directory_channel() {
        let (r, w) = rustix::pipe::pipe().unwrap();
        let cwd = CwdPipe::new(r).unwrap();
        assert_eq!(cwd.read(), None);
        let mut w = File::from(w);
        w.write_all(b"/tmp\ngarbage").unwrap();
        assert_eq!(cwd.read(), Some(PathBuf::from("/tmp")));
        let (r, w) = rustix::pipe::pipe().unwrap();
        let cwd = CwdPipe::new(r).unwrap();
        File::from(w).write_all(b"relative/dir\n").unwrap();
        assert_eq!(cwd.read(), None);
    }
}
