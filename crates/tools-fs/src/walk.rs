//! The parallel directory walker behind Glob and Grep (Linux).
//!
//! Each directory is opened relative to its parent's handle (`openat` with `O_NOFOLLOW`)
//! and listed with `getdents64`; the entry type comes from `d_type` (an `fstatat` only when
//! the file system leaves it unknown). A visitor sees every kept non-directory entry with the
//! open handle of its directory, so Glob reads an mtime with one `statx` of a bare name and
//! Grep opens a file with one `openat`; a full path is built only for the entries kept.
//!
//! The ignore policy is the one `ignore::WalkBuilder` applies under
//! [`IgnorePolicy::configure`](crate::IgnorePolicy::configure): hidden entries skipped (unless
//! an ignore rule whitelists them), `.agent-toolsignore` > `.ignore` > `.gitignore` >
//! `.git/info/exclude` > the global git excludes file, the nearest rule of a kind winning,
//! git rules only inside a repository (a `.git` or `.jj` in the directory or above it, up to
//! the first one), and the ignore files of the root's parent directories too. Matching is
//! `ignore::gitignore::Gitignore`'s; only the walk and the hierarchy are ours. Ignore files
//! and repository markers are found in the listings already read, without probing: most
//! directories have none and share their parent's rules (an `Arc` chain of [`Level`]s).
//! Version-control directories are never entered; symlinks are never followed.
//!
//! Work: `available_parallelism` threads, each with its own stack of directories (last in
//! first out, so the walk goes depth first and a directory's handle lives only while its
//! subdirectories wait, each holding an `Arc` of it); a thread that runs dry waits on a
//! shared queue, and a busy one hands it the older half of its stack (the larger
//! subtrees), or half of the entries of the directory it is going through (a flat
//! directory of many files is not left to one thread). Handles kept for waiting
//! subdirectories are capped; past the cap a subdirectory is opened by its full path
//! instead, so at most the cap plus two per thread are open.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};

use crate::ignore_policy::{VCS_DIRS, WalkDeadline, WalkOptions};

/// The custom ignore file, read like `.ignore` and before it.
pub(crate) const CUSTOM_IGNORE: &str = ".agent-toolsignore";

/// Bytes of one `getdents64` buffer.
const DIRENT_BUF: usize = 32 * 1024;

/// What kind of entry a visitor gets (directories are walked, not visited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A regular file.
    File,
    /// A symbolic link (not followed).
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// A kept entry that is not a directory, seen from its open directory.
pub(crate) struct FileEntry<'a> {
    dir: BorrowedFd<'a>,
    name: &'a [u8],
    kind: Kind,
    root: &'a Path,
    /// The directory's path relative to the root ("" for the root).
    dir_rel: &'a [u8],
    /// The entry's path relative to the root, once built.
    rel: &'a mut Vec<u8>,
    rel_built: bool,
}

impl FileEntry<'_> {
    /// The open directory the entry is in.
    pub(crate) fn dir(&self) -> BorrowedFd<'_> {
        self.dir
    }

    /// The entry's file name.
    pub(crate) fn name(&self) -> &Path {
        Path::new(OsStr::from_bytes(self.name))
    }

    /// The entry's type, from the directory listing.
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// The entry's path relative to the walk's root.
    pub(crate) fn rel_path(&mut self) -> &Path {
        if !self.rel_built {
            join_rel(self.rel, self.dir_rel, self.name);
            self.rel_built = true;
        }
        Path::new(OsStr::from_bytes(self.rel))
    }

    /// The entry's full path (the root joined with its relative path).
    pub(crate) fn path(&mut self) -> PathBuf {
        let root = self.root;
        root.join(self.rel_path())
    }
}

/// The modification time of `name` in the open directory `dir` (of a symbolic link's
/// target when `follow`), in one `statx`; `None` when it cannot be read.
pub(crate) fn mtime_at(
    dir: BorrowedFd<'_>,
    name: &Path,
    follow: bool,
) -> Option<(SystemTime, FileType)> {
    let flags = if follow {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    let st = rustix::fs::statx(
        dir,
        name,
        flags,
        rustix::fs::StatxFlags::TYPE | rustix::fs::StatxFlags::MTIME,
    )
    .ok()?;
    let t = st.stx_mtime;
    let mtime = u64::try_from(t.tv_sec).map_or(SystemTime::UNIX_EPOCH, |secs| {
        SystemTime::UNIX_EPOCH + Duration::new(secs, t.tv_nsec)
    });
    Some((mtime, FileType::from_raw_mode(st.stx_mode.into())))
}

/// Receives the kept non-directory entries of the directories one thread walks.
pub(crate) trait Visitor: Send {
    /// One kept entry.
    fn visit(&mut self, entry: &mut FileEntry<'_>);

    /// A directory was opened (`rel` relative to the root, "" for the root), before it is
    /// listed: a watch added on `dir` now misses nothing the listing does not show.
    fn directory(&mut self, _dir: BorrowedFd<'_>, _rel: &[u8]) {}

    /// The ignore rules skipped `n` entries of the directory `rel` (called once per part of
    /// a directory a thread went through, so the parts add up).
    fn skipped(&mut self, _rel: &[u8], _n: u64) {}

    /// A kept subdirectory, entered only when the walk recurses.
    fn subdir(&mut self, _rel: &[u8]) {}
}

/// What a walk saw.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WalkStats {
    /// Entries listed below the root, version-control names aside.
    pub(crate) seen: u64,
    /// Entries that passed the ignore rules and the hidden-file rule.
    pub(crate) kept: u64,
    /// Directory handles open at once, at most.
    pub(crate) peak_fds: usize,
}

impl WalkStats {
    /// Entries the ignore rules and the hidden-file rule skipped.
    pub(crate) fn skipped(&self) -> u64 {
        self.seen.saturating_sub(self.kept)
    }
}

/// Walks `root` on `available_parallelism` threads (at most 12); each gets a visitor from
/// `make` and they are returned when the walk ends (or stops at the deadline, looked at
/// every `every` entries).
pub(crate) fn walk<V: Visitor>(
    root: &Path,
    options: WalkOptions,
    deadline: &WalkDeadline,
    every: u32,
    make: impl Fn() -> V + Sync,
) -> (Vec<V>, WalkStats) {
    // At most 12, as `ignore` has it: more threads add little to a walk.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(12));
    walk_with(root, options, deadline, every, threads, fd_cap(), make)
}

/// Directory handles kept open for waiting subdirectories, at most: a quarter of the
/// process's file limit, between 16 and 1024.
fn fd_cap() -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(4096);
    usize::try_from(limit / 4).unwrap_or(1024).clamp(16, 1024)
}

/// [`walk`] with the thread count and the handle cap given.
fn walk_with<V: Visitor>(
    root: &Path,
    options: WalkOptions,
    deadline: &WalkDeadline,
    every: u32,
    threads: usize,
    cap: usize,
    make: impl Fn() -> V + Sync,
) -> (Vec<V>, WalkStats) {
    let threads = threads.max(1);
    let fds = FdCount::default();
    let shared = WalkState {
        root,
        options,
        global: if options.ignore_files {
            let global = Gitignore::global().0;
            (!global.is_empty()).then_some(global)
        } else {
            None
        },
        canonical_root: if options.ignore_files {
            root.canonicalize().ok()
        } else {
            None
        },
        queue: Mutex::new(Queue {
            jobs: Vec::new(),
            busy: threads,
            done: false,
        }),
        wake: Condvar::new(),
        quit: AtomicBool::new(false),
        idle: AtomicUsize::new(0),
        queued: AtomicUsize::new(0),
        fds: &fds,
        cap,
    };
    let level = if options.ignore_files {
        parent_levels(&shared)
    } else {
        Arc::new(Level::default())
    };
    if let Ok(mut queue) = shared.queue.lock() {
        queue.jobs.push(Job::Dir(DirJob {
            parent: None,
            rel: Vec::new(),
            level,
        }));
        shared.queued.store(1, Ordering::Relaxed);
    }
    let results: Vec<(V, u64, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads)
            .map(|_| {
                let mut worker = Worker::new(&shared, deadline, every, make());
                scope.spawn(move || {
                    worker.run();
                    worker.finish()
                })
            })
            .collect();
        let mut worker = Worker::new(&shared, deadline, every, make());
        worker.run();
        let mut all = vec![worker.finish()];
        for handle in handles {
            match handle.join() {
                Ok(result) => all.push(result),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    let mut stats = WalkStats {
        peak_fds: fds.peak.load(Ordering::Relaxed),
        ..WalkStats::default()
    };
    let mut visitors = Vec::with_capacity(results.len());
    for (visitor, seen, kept) in results {
        stats.seen += seen;
        stats.kept += kept;
        visitors.push(visitor);
    }
    (visitors, stats)
}

/// What every worker shares.
struct WalkState<'a> {
    root: &'a Path,
    options: WalkOptions,
    /// The global git excludes file, when it has rules.
    global: Option<Gitignore>,
    /// The root with symlinks resolved: matched against the parents' ignore files.
    canonical_root: Option<PathBuf>,
    queue: Mutex<Queue<'a>>,
    wake: Condvar,
    quit: AtomicBool,
    /// Workers waiting for a shared job.
    idle: AtomicUsize,
    /// Jobs in the shared queue (it is worth sharing more while `idle` is larger).
    queued: AtomicUsize,
    fds: &'a FdCount,
    cap: usize,
}

impl WalkState<'_> {
    /// Whether a thread waits for work that the shared queue does not hold yet.
    fn wanted(&self) -> bool {
        self.idle.load(Ordering::Relaxed) > self.queued.load(Ordering::Relaxed)
    }
}

/// Directory handles open now, and at most.
#[derive(Default)]
struct FdCount {
    open: AtomicUsize,
    peak: AtomicUsize,
}

/// Directories waiting to be read.
struct Queue<'a> {
    jobs: Vec<Job<'a>>,
    /// Workers not waiting.
    busy: usize,
    done: bool,
}

/// Work for a thread: a directory to read, or part of a directory's entries.
enum Job<'a> {
    Dir(DirJob<'a>),
    Entries(Box<Entries<'a>>),
}

/// A directory to read.
struct DirJob<'a> {
    /// The parent's handle; `None` for the root and past the handle cap (opened by path).
    parent: Option<Arc<DirFd<'a>>>,
    /// The directory's path relative to the root ("" for the root).
    rel: Vec<u8>,
    /// The ignore rules of its parent (for the root: of the root's parents).
    level: Arc<Level>,
}

/// Listed entries of an open directory, handed to another thread (or kept by the one that
/// listed them).
struct Entries<'a> {
    dir: Arc<DirFd<'a>>,
    /// The directory's path relative to the root.
    rel: Vec<u8>,
    /// The directory's rules.
    level: Arc<Level>,
    /// Subdirectories may share `dir` (the handle cap was not reached).
    share_fd: bool,
    names: Vec<u8>,
    listed: Vec<Listed>,
}

/// An open directory, counted while open.
struct DirFd<'a> {
    fd: OwnedFd,
    count: &'a FdCount,
}

impl<'a> DirFd<'a> {
    fn new(fd: OwnedFd, count: &'a FdCount) -> Self {
        let now = count.open.fetch_add(1, Ordering::Relaxed) + 1;
        count.peak.fetch_max(now, Ordering::Relaxed);
        DirFd { fd, count }
    }
}

impl Drop for DirFd<'_> {
    fn drop(&mut self) {
        self.count.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The ignore rules of one directory, and of its ancestors through `parent`.
#[derive(Default)]
struct Level {
    parent: Option<Arc<Level>>,
    /// Where the path matched against this directory's rules starts in an entry's path
    /// relative to the root; `None` for a directory above the root (matched with the
    /// canonical full path).
    strip: Option<usize>,
    custom: Option<Gitignore>,
    ignore: Option<Gitignore>,
    git: Option<Gitignore>,
    exclude: Option<Gitignore>,
    /// The directory holds a repository (`.git` or `.jj`).
    has_git: bool,
    /// It or an ancestor holds a repository: git rules may apply.
    in_repo: bool,
    /// Some rule of this chain can match.
    active: bool,
    /// Some directory above the root has rules.
    parent_rules: bool,
}

impl Level {
    fn has_rules(&self) -> bool {
        self.custom.is_some()
            || self.ignore.is_some()
            || self.git.is_some()
            || self.exclude.is_some()
    }

    /// Chains `self` under `parent` and fills in the chain's summary flags.
    fn under(mut self, parent: &Arc<Level>, global: bool) -> Arc<Level> {
        self.in_repo = self.has_git || parent.in_repo;
        self.parent_rules = parent.parent_rules || (self.strip.is_none() && self.has_rules());
        self.active = parent.active || self.has_rules() || (self.in_repo && global);
        self.parent = Some(Arc::clone(parent));
        Arc::new(self)
    }

    /// How the rules of this chain judge an entry.
    fn matched(&self, shared: &WalkState<'_>, rel: &[u8], is_dir: bool) -> Match<()> {
        let any_git = self.in_repo;
        let mut custom = Match::None;
        let mut ignore = Match::None;
        let mut git = Match::None;
        let mut exclude = Match::None;
        let mut saw_git = false;
        let mut absolute: Option<PathBuf> = None;
        let mut level = Some(self);
        while let Some(l) = level {
            let path: &Path = match l.strip {
                Some(strip) => Path::new(OsStr::from_bytes(rel.get(strip..).unwrap_or(rel))),
                None => {
                    if !self.parent_rules {
                        break;
                    }
                    let Some(canonical) = &shared.canonical_root else {
                        break;
                    };
                    absolute.get_or_insert_with(|| canonical.join(OsStr::from_bytes(rel)))
                }
            };
            let check = |slot: &mut Match<()>, gi: &Option<Gitignore>| {
                if slot.is_none()
                    && let Some(gi) = gi
                {
                    *slot = gi.matched(path, is_dir).map(|_| ());
                }
            };
            check(&mut custom, &l.custom);
            check(&mut ignore, &l.ignore);
            if any_git && !saw_git {
                check(&mut git, &l.git);
                check(&mut exclude, &l.exclude);
            }
            saw_git = saw_git || l.has_git;
            level = l.parent.as_deref();
        }
        let global = match &shared.global {
            Some(gi) if any_git => gi
                .matched(shared.root.join(OsStr::from_bytes(rel)), is_dir)
                .map(|_| ()),
            _ => Match::None,
        };
        custom.or(ignore).or(git).or(exclude).or(global)
    }
}

/// The rules of the root's parent directories, outermost first in the chain.
fn parent_levels(shared: &WalkState<'_>) -> Arc<Level> {
    let global = shared.global.is_some();
    let mut chain = Arc::new(Level::default());
    let Some(canonical) = &shared.canonical_root else {
        return chain;
    };
    let mut parents: Vec<&Path> = canonical.ancestors().skip(1).collect();
    parents.reverse();
    for dir in parents {
        let present = |name: &str| dir.join(name).exists();
        let found = Found {
            custom: present(CUSTOM_IGNORE),
            ignore: present(".ignore"),
            gitignore: present(".gitignore"),
            git: present(".git"),
            jj: present(".jj"),
        };
        if let Some(level) = dir_level(dir, None, None, &found, &chain, global) {
            chain = level;
        }
    }
    chain
}

/// Ignore files and repository markers a directory listing showed.
#[derive(Debug, Default, Clone, Copy)]
struct Found {
    custom: bool,
    ignore: bool,
    gitignore: bool,
    git: bool,
    jj: bool,
}

impl Found {
    fn any(&self) -> bool {
        self.custom || self.ignore || self.gitignore || self.git || self.jj
    }

    fn note(&mut self, name: &[u8]) {
        match name {
            b".ignore" => self.ignore = true,
            b".gitignore" => self.gitignore = true,
            b".git" => self.git = true,
            b".jj" => self.jj = true,
            n if n == CUSTOM_IGNORE.as_bytes() => self.custom = true,
            _ => {}
        }
    }
}

/// The level of directory `dir` (full path; `fd` its handle when open, `strip` as in
/// [`Level`]), or `None` when it adds no rules and no repository.
fn dir_level(
    dir: &Path,
    fd: Option<BorrowedFd<'_>>,
    strip: Option<usize>,
    found: &Found,
    parent: &Arc<Level>,
    global: bool,
) -> Option<Arc<Level>> {
    if !found.any() {
        return None;
    }
    // `.git` and `.jj` count when they exist once symlinks are followed; a `.git` file is
    // a linked worktree's.
    let stat = |name: &str| -> Option<bool> {
        match fd {
            Some(fd) => rustix::fs::statat(fd, name, AtFlags::empty())
                .ok()
                .map(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile),
            None => std::fs::metadata(dir.join(name)).ok().map(|m| m.is_file()),
        }
    };
    let git_type = if found.git { stat(".git") } else { None };
    let has_git = git_type.is_some() || (found.jj && stat(".jj").is_some());
    let in_repo = has_git || parent.in_repo;
    let load = |file: &Path| -> Option<Gitignore> {
        if !regular_file(file) {
            return None;
        }
        let mut builder = GitignoreBuilder::new(dir);
        // Lines that do not parse are dropped, as ripgrep drops them.
        let _ = builder.add(file);
        builder.build().ok().filter(|gi| !gi.is_empty())
    };
    let level = Level {
        strip,
        custom: found
            .custom
            .then(|| load(&dir.join(CUSTOM_IGNORE)))
            .flatten(),
        ignore: found.ignore.then(|| load(&dir.join(".ignore"))).flatten(),
        // Outside a repository a `.gitignore` can never apply: a repository found deeper
        // stops the git rules at its own directory.
        git: (found.gitignore && in_repo)
            .then(|| load(&dir.join(".gitignore")))
            .flatten(),
        exclude: if found.git {
            git_common_dir(dir, git_type).and_then(|common| load(&common.join("info/exclude")))
        } else {
            None
        },
        has_git,
        ..Level::default()
    };
    if !level.has_git && !level.has_rules() {
        return None;
    }
    Some(level.under(parent, global))
}

/// The directory holding `info/exclude` for the repository at `dir`: `.git` itself, or
/// for a linked worktree (a `.git` file saying `gitdir: …`) the common directory its
/// `commondir` file names.
fn git_common_dir(dir: &Path, git_is_file: Option<bool>) -> Option<PathBuf> {
    let dot_git = dir.join(".git");
    if git_is_file != Some(true) {
        return Some(dot_git);
    }
    let first_line = |path: &Path| -> Option<String> {
        if !regular_file(path) {
            return None;
        }
        let text = std::fs::read_to_string(path).ok()?;
        Some(text.lines().next()?.to_owned())
    };
    let git_dir = PathBuf::from(first_line(&dot_git)?.strip_prefix("gitdir: ")?);
    let common = first_line(&git_dir.join("commondir"))?;
    Some(if common.starts_with('.') {
        git_dir.join(common)
    } else {
        PathBuf::from(common)
    })
}

/// Whether `path` is a regular file once symlinks are followed: only those are read for
/// rules (opening a FIFO would wait for a writer, and the walk with it).
fn regular_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// `dir_rel/name` into `out`.
fn join_rel(out: &mut Vec<u8>, dir_rel: &[u8], name: &[u8]) {
    out.clear();
    if !dir_rel.is_empty() {
        out.extend_from_slice(dir_rel);
        out.push(b'/');
    }
    out.extend_from_slice(name);
}

/// Ends the walk when a worker panics, so that the others do not wait for it forever (the
/// panic then reaches the caller when the threads are joined).
struct StopOthersOnPanic<'s, 'a>(&'s WalkState<'a>);

impl Drop for StopOthersOnPanic<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Under the lock (poisoned or not), so that no worker is between looking at
            // `quit` and waiting.
            let _queue = self.0.queue.lock();
            self.0.quit.store(true, Ordering::Relaxed);
            self.0.wake.notify_all();
        }
    }
}

/// One listed entry: where its name lies in the names buffer, and its type.
#[derive(Clone, Copy)]
struct Listed {
    start: usize,
    end: usize,
    ty: FileType,
}

/// One thread of the walk.
struct Worker<'s, 'a, V> {
    shared: &'s WalkState<'a>,
    check: crate::ignore_policy::WalkCheck,
    visitor: V,
    buf: Vec<std::mem::MaybeUninit<u8>>,
    names: Vec<u8>,
    listed: Vec<Listed>,
    rel: Vec<u8>,
    children: Vec<Job<'a>>,
    /// This worker's own jobs, deepest last.
    local: Vec<Job<'a>>,
    seen: u64,
    kept: u64,
}

impl<'s, 'a, V: Visitor> Worker<'s, 'a, V> {
    fn new(shared: &'s WalkState<'a>, deadline: &WalkDeadline, every: u32, visitor: V) -> Self {
        Worker {
            shared,
            check: deadline.worker(every),
            visitor,
            buf: Vec::new(),
            names: Vec::new(),
            listed: Vec::new(),
            rel: Vec::new(),
            children: Vec::new(),
            local: Vec::new(),
            seen: 0,
            kept: 0,
        }
    }

    fn finish(self) -> (V, u64, u64) {
        (self.visitor, self.seen, self.kept)
    }

    /// Takes jobs until the queue is empty and every worker idle, or the walk quits.
    fn run(&mut self) {
        let _stop = StopOthersOnPanic(self.shared);
        while let Some(job) = self.next_job() {
            match job {
                Job::Dir(job) => self.read(job),
                Job::Entries(mut entries) => {
                    self.visit_entries(&mut entries);
                    // Its names buffers are reused for the next listing.
                    self.names = std::mem::take(&mut entries.names);
                    self.listed = std::mem::take(&mut entries.listed);
                }
            }
            // Deepest last: the stack pops them in listing order.
            self.local.extend(self.children.drain(..).rev());
            if self.shared.quit.load(Ordering::Relaxed) {
                self.local.clear();
            } else if self.local.len() > 1 && self.shared.wanted() {
                self.share();
            }
        }
    }

    /// The next job: this worker's own, else a shared one, waiting while other workers may
    /// still share some.
    fn next_job(&mut self) -> Option<Job<'a>> {
        if let Some(job) = self.local.pop() {
            return Some(job);
        }
        let shared = self.shared;
        let mut queue = shared.queue.lock().ok()?;
        loop {
            if queue.done || shared.quit.load(Ordering::Relaxed) {
                queue.done = true;
                shared.wake.notify_all();
                return None;
            }
            if let Some(job) = queue.jobs.pop() {
                shared.queued.store(queue.jobs.len(), Ordering::Relaxed);
                return Some(job);
            }
            queue.busy -= 1;
            if queue.busy == 0 {
                queue.done = true;
                shared.wake.notify_all();
                return None;
            }
            shared.idle.fetch_add(1, Ordering::Relaxed);
            queue = shared.wake.wait(queue).ok()?;
            shared.idle.fetch_sub(1, Ordering::Relaxed);
            queue.busy += 1;
        }
    }

    /// Hands the older half of this worker's jobs (the larger subtrees) to idle workers.
    fn share(&mut self) {
        let shared = self.shared;
        let Ok(mut queue) = shared.queue.lock() else {
            return;
        };
        let half = self.local.len() / 2;
        queue.jobs.extend(self.local.drain(..half));
        shared.queued.store(queue.jobs.len(), Ordering::Relaxed);
        shared.wake.notify_all();
    }

    /// Opens the job's directory.
    fn open(&self, job: &DirJob<'a>) -> Option<OwnedFd> {
        #[cfg(test)]
        if job.rel.ends_with(b"/unopenable-by-test") {
            return None;
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        match &job.parent {
            Some(parent) => {
                let name = job.rel.rsplit(|&b| b == b'/').next().unwrap_or(&job.rel);
                rustix::fs::openat(
                    &parent.fd,
                    OsStr::from_bytes(name),
                    flags | OFlags::NOFOLLOW,
                    Mode::empty(),
                )
                .ok()
            }
            // The root itself may be a symlink to a directory; nothing below it is followed.
            None if job.rel.is_empty() => {
                rustix::fs::open(self.shared.root, flags, Mode::empty()).ok()
            }
            None => rustix::fs::open(
                self.shared.root.join(OsStr::from_bytes(&job.rel)),
                flags | OFlags::NOFOLLOW,
                Mode::empty(),
            )
            .ok(),
        }
    }

    /// Lists the job's directory into `names` and `listed`; notes ignore files.
    fn list(&mut self, fd: BorrowedFd<'_>) -> Found {
        self.names.clear();
        self.listed.clear();
        if self.buf.is_empty() {
            self.buf.resize(DIRENT_BUF, std::mem::MaybeUninit::uninit());
        }
        let mut found = Found::default();
        let mut dir = RawDir::new(fd, &mut self.buf);
        while let Some(entry) = dir.next() {
            let Ok(entry) = entry else {
                break;
            };
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            if name.first() == Some(&b'.') {
                found.note(name);
            }
            let start = self.names.len();
            self.names.extend_from_slice(name);
            self.listed.push(Listed {
                start,
                end: self.names.len(),
                ty: entry.file_type(),
            });
        }
        found
    }

    /// Reads one directory: visits its kept files and queues its kept subdirectories.
    fn read(&mut self, job: DirJob<'a>) {
        let shared = self.shared;
        let Some(fd) = self.open(&job) else {
            return;
        };
        // The parent's handle is no longer needed by this job.
        drop(job.parent);
        self.visitor.directory(fd.as_fd(), &job.rel);
        let found = self.list(fd.as_fd());
        // Most directories have no ignore file and share their parent's rules.
        let level = if shared.options.ignore_files && found.any() {
            let strip = if job.rel.is_empty() {
                0
            } else {
                job.rel.len() + 1
            };
            let dir = shared.root.join(OsStr::from_bytes(&job.rel));
            dir_level(
                &dir,
                Some(fd.as_fd()),
                Some(strip),
                &found,
                &job.level,
                shared.global.is_some(),
            )
            .unwrap_or(job.level)
        } else {
            job.level
        };
        let dir = Arc::new(DirFd::new(fd, shared.fds));
        let mut entries = Entries {
            dir,
            rel: job.rel,
            level,
            share_fd: shared.fds.open.load(Ordering::Relaxed) <= shared.cap,
            names: std::mem::take(&mut self.names),
            listed: std::mem::take(&mut self.listed),
        };
        self.visit_entries(&mut entries);
        self.names = entries.names;
        self.listed = entries.listed;
    }

    /// Hands the second half of `entries` from `at` on to an idle thread, when one waits
    /// and there is more than one entry left.
    fn share_entries(&mut self, entries: &mut Entries<'a>, at: usize) {
        let left = entries.listed.len() - at;
        if left < 2 || !self.shared.wanted() {
            return;
        }
        let mid = at + left / 2;
        let mut names = Vec::new();
        let listed = entries
            .listed
            .drain(mid..)
            .map(|item| {
                let start = names.len();
                names.extend_from_slice(&entries.names[item.start..item.end]);
                Listed {
                    start,
                    end: names.len(),
                    ty: item.ty,
                }
            })
            .collect();
        let handed = Entries {
            dir: Arc::clone(&entries.dir),
            rel: entries.rel.clone(),
            level: Arc::clone(&entries.level),
            share_fd: entries.share_fd,
            names,
            listed,
        };
        let shared = self.shared;
        if let Ok(mut queue) = shared.queue.lock() {
            queue.jobs.push(Job::Entries(Box::new(handed)));
            shared.queued.store(queue.jobs.len(), Ordering::Relaxed);
            shared.wake.notify_all();
        }
    }

    /// Judges listed entries: visits the kept files, queues the kept subdirectories.
    fn visit_entries(&mut self, entries: &mut Entries<'a>) {
        let shared = self.shared;
        let mut i = 0;
        let mut skipped = 0u64;
        while i < entries.listed.len() {
            if self.check.should_quit() {
                shared.quit.store(true, Ordering::Relaxed);
                break;
            }
            self.share_entries(entries, i);
            let item = entries.listed[i];
            i += 1;
            let dir = &entries.dir;
            let level = &entries.level;
            let name = &entries.names[item.start..item.end];
            // Version-control folders (and files of their names, such as a linked
            // worktree's `.git`) are never listed, nor counted as skipped.
            if name.first() == Some(&b'.') && VCS_DIRS.iter().any(|v| v.as_bytes() == name) {
                continue;
            }
            let mut ty = item.ty;
            if ty == FileType::Unknown {
                ty =
                    rustix::fs::statat(&dir.fd, OsStr::from_bytes(name), AtFlags::SYMLINK_NOFOLLOW)
                        .map_or(FileType::Unknown, |st| FileType::from_raw_mode(st.st_mode));
            }
            let is_dir = ty == FileType::Directory;
            self.seen += 1;
            let verdict = if level.active {
                join_rel(&mut self.rel, &entries.rel, name);
                level.matched(shared, &self.rel, is_dir)
            } else {
                Match::None
            };
            if verdict.is_ignore() {
                skipped += 1;
                continue;
            }
            self.kept += 1;
            if is_dir {
                let mut rel = Vec::with_capacity(entries.rel.len() + 1 + name.len());
                join_rel(&mut rel, &entries.rel, name);
                self.visitor.subdir(&rel);
                if shared.options.recurse {
                    self.children.push(Job::Dir(DirJob {
                        parent: entries.share_fd.then(|| Arc::clone(dir)),
                        rel,
                        level: Arc::clone(level),
                    }));
                }
                continue;
            }
            let kind = match ty {
                FileType::RegularFile => Kind::File,
                FileType::Symlink => Kind::Symlink,
                _ => Kind::Other,
            };
            let mut entry = FileEntry {
                dir: dir.fd.as_fd(),
                name,
                kind,
                root: shared.root,
                dir_rel: &entries.rel,
                rel: &mut self.rel,
                rel_built: level.active,
            };
            self.visitor.visit(&mut entry);
        }
        if skipped > 0 {
            self.visitor.skipped(&entries.rel, skipped);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::collections::BTreeSet;
    use std::time::{Duration, Instant};

    use tool_core::CancellationToken;

    use super::*;
    use crate::ignore_policy::IgnorePolicy;

    /// Creates `entries` under `root`: `"a/b"` an empty file, `"d/"` a directory,
    /// `"f = text"` a file with text (`\n` for newlines), `"l -> target"` a symlink.
    fn make(root: &Path, entries: &[&str]) {
        for entry in entries {
            if let Some((link, target)) = entry.split_once(" -> ") {
                let link = root.join(link);
                std::fs::create_dir_all(link.parent().unwrap()).unwrap();
                std::os::unix::fs::symlink(target, link).unwrap();
            } else if let Some(dir) = entry.strip_suffix('/') {
                std::fs::create_dir_all(root.join(dir)).unwrap();
            } else {
                let (name, text) = entry.split_once(" = ").unwrap_or((entry, ""));
                let path = root.join(name);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text.replace("\\n", "\n")).unwrap();
            }
        }
    }

    /// Collects the relative paths a thread visits.
    struct Names(Vec<String>);

    impl Visitor for Names {
        fn visit(&mut self, entry: &mut FileEntry<'_>) {
            self.0.push(entry.rel_path().to_string_lossy().into_owned());
        }
    }

    fn deadline(cancel: &CancellationToken) -> WalkDeadline {
        WalkDeadline::new("Test", cancel, Instant::now(), Duration::from_secs(60))
    }

    /// Every non-directory entry our walker keeps under `root`, with its stats.
    fn ours(
        root: &Path,
        options: WalkOptions,
        threads: usize,
        cap: usize,
    ) -> (BTreeSet<String>, WalkStats) {
        let cancel = CancellationToken::new();
        let (names, stats) = walk_with(root, options, &deadline(&cancel), 64, threads, cap, || {
            Names(Vec::new())
        });
        (names.into_iter().flat_map(|n| n.0).collect(), stats)
    }

    /// What `ignore`'s walker keeps under the same policy ([`IgnorePolicy::configure`]).
    fn theirs(root: &Path, policy: IgnorePolicy) -> BTreeSet<String> {
        let mut builder = ignore::WalkBuilder::new(root);
        policy.configure(&mut builder);
        builder
            .build()
            .flatten()
            .filter(|e| e.depth() > 0 && !e.file_type().is_some_and(|t| t.is_dir()))
            .map(|e| {
                e.path()
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    }

    /// Walks `tree` (made under a fresh directory; `root` names the walk's root inside it)
    /// and compares with `expected` and with `ignore`'s walker, on one and on two threads.
    #[track_caller]
    fn check_at(tree: &[&str], root: &str, policy: IgnorePolicy, expected: &[&str]) {
        let dir = tempfile::tempdir().unwrap();
        make(dir.path(), tree);
        let root = dir.path().join(root);
        let expected: BTreeSet<String> = expected.iter().map(|s| (*s).to_owned()).collect();
        let options = policy.walk_options();
        for threads in [1, 2] {
            let (got, _) = ours(&root, options, threads, 64);
            assert_eq!(got, expected, "threads {threads}");
        }
        assert_eq!(theirs(&root, policy), expected, "ignore's walker");
    }

    #[track_caller]
    fn check(tree: &[&str], expected: &[&str]) {
        check_at(tree, "", IgnorePolicy::default(), expected);
    }

    const GIT: &str = ".git/HEAD = ref: refs/heads/main\\n";

    #[test]
    fn precedence_of_the_ignore_files() {
        check(
            &[
                GIT,
                ".gitignore = *.log\\n",
                ".ignore = !a.log\\n!b.txt\\n",
                ".agent-toolsignore = b.txt\\n",
                "a.log",
                "c.log",
                "b.txt",
                "d.txt",
                "sub/.gitignore = !c.log\\n",
                "sub/c.log",
                "sub/e.log",
            ],
            &[
                ".agent-toolsignore",
                ".gitignore",
                ".ignore",
                "a.log",
                "d.txt",
                "sub/.gitignore",
                "sub/c.log",
            ],
        );
    }

    #[test]
    fn git_info_exclude_applies_below_gitignore() {
        check(
            &[
                ".git/info/exclude = *.tmp\\nx.txt\\n",
                ".gitignore = !x.txt\\n",
                "a.tmp",
                "x.txt",
                "sub/b.tmp",
                "keep.rs",
            ],
            &[".gitignore", "keep.rs", "x.txt"],
        );
    }

    #[test]
    fn gitignore_only_inside_a_repository() {
        check(
            &[".gitignore = *.log\\n", "a.log", "b.rs"],
            &[".gitignore", "a.log", "b.rs"],
        );
        // Not even for a repository below it.
        check(
            &[".gitignore = *.log\\n", "a.log", "repo/.git/", "repo/b.log"],
            &[".gitignore", "a.log", "repo/b.log"],
        );
        check(
            &[
                "repo/.git/",
                "repo/.gitignore = *.log\\n",
                "repo/b.log",
                "repo/c.rs",
            ],
            &["repo/.gitignore", "repo/c.rs"],
        );
        // A nested repository stops its parent's rules; `.jj` marks one too.
        check(
            &[
                GIT,
                ".gitignore = *.log\\n",
                "a.log",
                "inner/.jj/",
                "inner/b.log",
                "c.rs",
            ],
            &[".gitignore", "c.rs", "inner/b.log"],
        );
    }

    #[test]
    fn ignore_files_of_the_parents_apply() {
        let tree = [
            ".ignore = skip.txt\\n/sub/anchored.txt\\n",
            "sub/skip.txt",
            "sub/anchored.txt",
            "sub/deep/anchored.txt",
            "sub/kept.txt",
        ];
        check_at(
            &tree,
            "sub",
            IgnorePolicy::default(),
            &["deep/anchored.txt", "kept.txt"],
        );
        // A repository above the root: its `.gitignore` applies, relative to its directory.
        let tree = [
            GIT,
            ".gitignore = /sub/top.rs\\n*.o\\n",
            "sub/top.rs",
            "sub/a.o",
            "sub/x/top.rs",
        ];
        check_at(&tree, "sub", IgnorePolicy::default(), &["x/top.rs"]);
    }

    #[test]
    fn negation_anchoring_and_directory_only_patterns() {
        check(
            &[
                GIT,
                ".gitignore = *.log\\n!keep.log\\n/top.txt\\nbuild/\\n",
                "keep.log",
                "drop.log",
                "top.txt",
                "sub/top.txt",
                "build/out.o",
                "sub/build/out.o",
                "file/build",
            ],
            &[".gitignore", "file/build", "keep.log", "sub/top.txt"],
        );
    }

    #[test]
    fn hidden_entries_are_listed() {
        // As ripgrep's `--hidden`: hidden files and folders are walked like any other.
        let tree = [".env", ".hidden/a.txt", "b/.c.txt", "d.txt"];
        check(&tree, &[".env", ".hidden/a.txt", "b/.c.txt", "d.txt"]);
        let all = IgnorePolicy {
            include_ignored: true,
        };
        check_at(
            &tree,
            "",
            all,
            &[".env", ".hidden/a.txt", "b/.c.txt", "d.txt"],
        );
        // An ignore rule still hides a hidden entry.
        check(
            &[".ignore = .other\\n", ".env", ".other"],
            &[".env", ".ignore"],
        );
    }

    #[test]
    fn version_control_directories_are_never_entered() {
        let all = IgnorePolicy {
            include_ignored: true,
        };
        check_at(
            &[
                GIT,
                ".hg/store",
                ".svn/entries",
                ".jj/repo",
                "sub/.git/config",
                "a.txt",
                "w/.git = gitdir: /nowhere\\n",
            ],
            "",
            all,
            // A `.git` file (a linked worktree's) is left out too, as the reference's
            // `--glob '!.git'` does.
            &["a.txt"],
        );
    }

    #[test]
    fn symlinks_are_not_followed() {
        check(
            &[
                "real/a.rs",
                "loop -> .",
                "real/up -> ..",
                "link -> real",
                "file -> real/a.rs",
            ],
            &["file", "link", "loop", "real/a.rs", "real/up"],
        );
    }

    #[test]
    fn a_directory_that_cannot_be_opened_is_skipped() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        make(dir.path(), &["a.txt", "locked/b.txt", "z/c.txt"]);
        let locked = dir.path().join("locked");
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        let readable = std::fs::read_dir(&locked).is_ok();
        let options = IgnorePolicy::default().walk_options();
        let (got, stats) = ours(dir.path(), options, 2, 64);
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut expected = vec!["a.txt", "z/c.txt"];
        if readable {
            // Running with the power to read anything (root): nothing is skipped.
            expected.push("locked/b.txt");
        }
        let expected: BTreeSet<String> = expected.into_iter().map(str::to_owned).collect();
        assert_eq!(got, expected);
        assert_eq!(stats.skipped(), 0);
        // Whoever runs the test: a directory whose open fails (by a test-only fault) is
        // skipped and the walk goes on.
        let dir = tempfile::tempdir().unwrap();
        make(
            dir.path(),
            &["a.txt", "x/unopenable-by-test/b.txt", "x/c.txt"],
        );
        let (got, _) = ours(dir.path(), options, 2, 64);
        assert_eq!(got.into_iter().collect::<Vec<_>>(), ["a.txt", "x/c.txt"]);
    }

    #[test]
    fn ignore_files_that_are_not_regular_files_are_not_read() {
        // Opening a FIFO for reading waits for a writer: the walk would never end.
        let dir = tempfile::tempdir().unwrap();
        make(
            dir.path(),
            &[
                GIT,
                "a.log",
                "b.rs",
                "sub/c.log",
                "sub/.ignore -> ../.gitignore",
            ],
        );
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.path().join(".gitignore"),
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let (got, _) = ours(dir.path(), IgnorePolicy::default().walk_options(), 2, 64);
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            [".gitignore", "a.log", "b.rs", "sub/.ignore", "sub/c.log"]
        );
    }

    #[test]
    fn global_excludes_file_applies_in_a_repository() {
        // Git's global excludes file is found through HOME and XDG_CONFIG_HOME, so the check
        // runs in a child process of this test binary with both pointing to a temporary
        // directory.
        const ROOT: &str = "AGENT_TOOLS_WALK_TEST_ROOT";
        if let Some(root) = std::env::var_os(ROOT) {
            let root = PathBuf::from(root);
            let policy = IgnorePolicy::default();
            for (dir, expected) in [("repo", &["b.txt"][..]), ("plain", &["c.secret", "d.txt"])] {
                let (got, _) = ours(&root.join(dir), policy.walk_options(), 2, 64);
                let expected: BTreeSet<String> = expected.iter().map(|s| (*s).to_owned()).collect();
                assert_eq!(got, expected, "{dir}");
                assert_eq!(theirs(&root.join(dir), policy), expected, "{dir}");
            }
            return;
        }
        let home = tempfile::tempdir().unwrap();
        make(home.path(), &["config/git/ignore = *.secret\\n"]);
        let tree = tempfile::tempdir().unwrap();
        make(
            tree.path(),
            &[
                "repo/.git/HEAD",
                "repo/a.secret",
                "repo/b.txt",
                "plain/c.secret",
                "plain/d.txt",
            ],
        );
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "walk::tests::global_excludes_file_applies_in_a_repository",
                "--test-threads=1",
            ])
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env(ROOT, tree.path())
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn a_panicking_visitor_ends_the_walk() {
        // The panic reaches the caller; the other worker does not wait forever.
        struct Panics;
        impl Visitor for Panics {
            fn visit(&mut self, entry: &mut FileEntry<'_>) {
                assert!(entry.name() != Path::new("boom.txt"), "boom");
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<String> = (0..60).map(|i| format!("d{}/f{i}.txt", i % 6)).collect();
        let mut files: Vec<&str> = files.iter().map(String::as_str).collect();
        files.push("d3/deeper/boom.txt");
        make(dir.path(), &files);
        let options = IgnorePolicy::default().walk_options();
        for threads in [1, 2, 3] {
            let cancel = CancellationToken::new();
            let deadline = deadline(&cancel);
            let walked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                walk_with(dir.path(), options, &deadline, 64, threads, 64, || Panics)
            }));
            assert!(walked.is_err(), "threads {threads}");
        }
    }

    #[test]
    fn a_large_directory_is_shared_with_an_idle_thread() {
        // The first thread to visit waits a little at each file while it is alone, so the
        // other one starts and asks for work: it gets half of the listing still to do.
        struct Threads(Arc<Mutex<BTreeSet<String>>>);
        impl Visitor for Threads {
            fn visit(&mut self, _entry: &mut FileEntry<'_>) {
                let mut seen = self.0.lock().unwrap();
                seen.insert(format!("{:?}", std::thread::current().id()));
                let alone = seen.len() < 2;
                drop(seen);
                if alone {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<String> = (0..1500).map(|i| format!("f{i}")).collect();
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        make(dir.path(), &files);
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let cancel = CancellationToken::new();
        let options = IgnorePolicy::default().walk_options();
        let (_, stats) = walk_with(dir.path(), options, &deadline(&cancel), 64, 2, 64, || {
            Threads(Arc::clone(&seen))
        });
        assert_eq!(stats.kept, 1500);
        assert_eq!(seen.lock().unwrap().len(), 2);
    }

    #[test]
    fn cancellation_stops_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<String> = (0..400).map(|i| format!("d{}/f{i}.txt", i % 20)).collect();
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        make(dir.path(), &files);
        let cancel = CancellationToken::new();
        cancel.cancel();
        let deadline = deadline(&cancel);
        let options = IgnorePolicy::default().walk_options();
        let (names, stats) = walk_with(dir.path(), options, &deadline, 1, 2, 64, || {
            Names(Vec::new())
        });
        let visited: usize = names.iter().map(|n| n.0.len()).sum();
        assert_eq!(visited, 0);
        assert!(stats.seen <= 2, "{stats:?}");
        assert!(deadline.outcome().is_err());
    }

    #[test]
    fn deep_trees_keep_few_directories_open() {
        // A comb: each level holds the next level and leaf directories made before and after
        // it, so whatever the listing order, a depth-first walk leaves leaves waiting (each
        // with its parent's handle) at most levels.
        let dir = tempfile::tempdir().unwrap();
        let mut path = PathBuf::new();
        let mut expected = BTreeSet::new();
        // Names differ by level, so that a file system listing in hash order does not put
        // the next level last everywhere.
        for level in 0..150 {
            let before = path.join(format!("a{level}/f.txt"));
            make(dir.path(), &[before.to_str().unwrap()]);
            std::fs::create_dir_all(dir.path().join(&path).join("c")).unwrap();
            let after = path.join(format!("z{level}/f.txt"));
            make(dir.path(), &[after.to_str().unwrap()]);
            expected.insert(before.to_string_lossy().into_owned());
            expected.insert(after.to_string_lossy().into_owned());
            path.push("c");
        }
        let options = IgnorePolicy::default().walk_options();
        for threads in [1, 2] {
            let (got, stats) = ours(dir.path(), options, threads, 8);
            assert_eq!(got, expected);
            // Each thread's own directory, and entries handed to idle threads, on top.
            assert!(stats.peak_fds <= 8 + 2 * threads, "{stats:?}");
        }
        let (got, stats) = ours(dir.path(), options, 1, 1000);
        assert_eq!(got, expected);
        assert!(
            stats.peak_fds > 8 + 4,
            "the cap is what keeps it low: {stats:?}"
        );
    }

    #[test]
    fn skipped_entries_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        make(
            dir.path(),
            &[
                GIT,
                ".gitignore = build/\\n*.log\\n",
                "src/a.rs",
                "build/out.rs",
                "app.log",
                ".hidden/h.rs",
                ".env",
            ],
        );
        let (got, stats) = ours(dir.path(), IgnorePolicy::default().walk_options(), 2, 64);
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            [".env", ".gitignore", ".hidden/h.rs", "src/a.rs"]
        );
        // build, app.log; never .git.
        assert_eq!(stats.skipped(), 2, "{stats:?}");
        let all = IgnorePolicy {
            include_ignored: true,
        };
        let (_, stats) = ours(dir.path(), all.walk_options(), 2, 64);
        assert_eq!(stats.skipped(), 0, "{stats:?}");
    }

    #[test]
    fn agrees_with_ignore_on_generated_trees() {
        // Trees drawn from a fixed sequence: names hidden or not, ignore files of every kind
        // with negated, anchored, directory-only and nested patterns, repositories at
        // several depths; walked from the top and from a subdirectory (the parents' rules).
        let mut seed: u64 = 0x5eed_1234_abcd_0001;
        let mut next = move |n: usize| -> usize {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            usize::try_from(seed >> 33).unwrap() % n
        };
        let names = [
            "a", "b", "src", "build", ".hid", "x.log", "keep.log", ".env", "y.rs", "out",
        ];
        let patterns = [
            "*.log",
            "!keep.log",
            "build/",
            "/a",
            "src/*.rs",
            "**/out",
            ".env",
            "!.env",
            "b",
            "*.rs",
            "!y.rs",
            "a/**",
            "/src/",
            "hid*",
            "!/b",
        ];
        let files = [".gitignore", ".ignore", ".agent-toolsignore"];
        for round in 0..120 {
            let dir = tempfile::tempdir().unwrap();
            let mut tree: Vec<String> = Vec::new();
            for _ in 0..(8 + next(25)) {
                let depth = 1 + next(4);
                let path: Vec<&str> = (0..depth).map(|_| names[next(names.len())]).collect();
                tree.push(path.join("/"));
            }
            for _ in 0..(1 + next(6)) {
                let depth = next(3);
                let mut path: Vec<&str> = (0..depth).map(|_| names[next(3)]).collect();
                path.push(files[next(files.len())]);
                let lines: Vec<&str> = (0..1 + next(4))
                    .map(|_| patterns[next(patterns.len())])
                    .collect();
                tree.push(format!("{} = {}\\n", path.join("/"), lines.join("\\n")));
            }
            for _ in 0..next(3) {
                let depth = next(3);
                let mut path: Vec<&str> = (0..depth).map(|_| names[next(3)]).collect();
                path.push(".git/HEAD");
                tree.push(path.join("/"));
            }
            // A path may be wanted both as a file and as a directory: the first one wins.
            let mut made: Vec<&str> = Vec::new();
            for entry in &tree {
                let path = entry.split(" = ").next().unwrap_or(entry);
                let clash = made.iter().any(|m| {
                    let m = m.split(" = ").next().unwrap_or(m);
                    m.starts_with(&format!("{path}/"))
                        || path.starts_with(&format!("{m}/"))
                        || m == path
                });
                if !clash {
                    made.push(entry);
                }
            }
            make(dir.path(), &made);
            for sub in ["", "a", "src"] {
                let root = dir.path().join(sub);
                if !root.is_dir() {
                    continue;
                }
                for policy in [
                    IgnorePolicy::default(),
                    IgnorePolicy {
                        include_ignored: true,
                    },
                ] {
                    let (got, _) = ours(&root, policy.walk_options(), 2, 64);
                    assert_eq!(
                        got,
                        theirs(&root, policy),
                        "round {round}, root {sub:?}, {policy:?}, tree {made:#?}"
                    );
                }
            }
        }
    }

    #[test]
    fn agrees_with_ignore_on_a_mixed_tree() {
        let tree = [
            GIT,
            ".gitignore = *.log\\nbuild/\\n!keep.log\\n/top-only.txt\\n",
            ".ignore = ignored-by-dot-ignore.md\\n",
            "keep.log",
            "drop.log",
            "top-only.txt",
            "sub/top-only.txt",
            "build/out.txt",
            "ignored-by-dot-ignore.md",
            ".hidden/secret.txt",
            ".env",
            "docs/.gitignore = private/\\n",
            "docs/private/p.md",
            "docs/readme.md",
            "unicode/café.txt",
            "src/deep/er/mod.rs",
            "a/.agent-toolsignore = *.rs\\n!keep.rs\\n",
            "a/x.rs",
            "a/keep.rs",
            "a/b/y.rs",
            "link -> src",
        ];
        let dir = tempfile::tempdir().unwrap();
        make(dir.path(), &tree);
        for policy in [
            IgnorePolicy::default(),
            IgnorePolicy {
                include_ignored: true,
            },
        ] {
            let (got, _) = ours(dir.path(), policy.walk_options(), 2, 64);
            assert_eq!(got, theirs(dir.path(), policy), "{policy:?}");
        }
    }
}
