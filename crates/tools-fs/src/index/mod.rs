//! The search index service: Grep and Glob answered from a trigram index of the project
//! that is never older than the query (Linux).
//!
//! One [`Service`] per session, installed with [`install_index`] (the registry does it for
//! every session it builds). The index covers exactly the files the scan walks from the
//! project root under the default ignore policy (hidden files, ignore files, version-control
//! folders, the same walker). Lifecycle:
//!
//! - **Load or build.** On the first Grep or Glob (`search.index: "auto"`, when the tree holds
//!   at least `search.autoThresholdMB`) or at session start (`"eager"`), a background thread
//!   walks the tree once — adding an inotify watch on every directory before listing it —
//!   and either reuses the saved index of this project (state directory, `search-index/`,
//!   keyed by the canonical project path; files whose metadata changed are read again) or
//!   builds one and saves it. While a saved index is validated queries wait for it (that costs
//!   less than a scan); while one is built from scratch, the scan answers.
//! - **Fresh.** A query first drains the inotify queue (the kernel queues an event within
//!   the call that changes a file, so every change made before the query is seen) and the
//!   paths our own write tools reported ([`tool_core::WriteObserver`]), then brings the index
//!   up to date: changed files are read again, directories whose entries changed are listed
//!   again, a changed ignore file walks its directory again. A queue overflow, too many
//!   changes at once, or a failed watch sends the query to the scan while the index is
//!   validated again in the background; without notifications every query validates its
//!   scope first.
//! - **Answer.** [`Service::view`] gives a query its [`View`]: Grep gets the candidate files
//!   (those whose trigrams satisfy the pattern's query, or every file when the pattern does
//!   not narrow), newest first, and searches them with its own matcher; Glob gets the kept
//!   list. Results are byte for byte those of the scan.
//!
//! One-shot sessions (`agent-tools call`) use a valid saved index (validated by the walk)
//! and never build one; `agent-tools index --rebuild` does.

mod blind;
mod collect;
mod watch;

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant, SystemTime};

use rustix::fs::{Mode, OFlags};
pub(crate) use search_index::DocKind;
use search_index::{
    Candidates, Content, Contents, DirEntry, Doc, DocMeta, Extractor, GramQuery, IndexFile,
    Indexed, LiveIndex, Postings, within,
};
use tool_core::{CancellationToken, ToolContext, ToolContextBuilder, ToolError};

use crate::index_settings::{DISK_SHARE, MB, MEMORY_SHARE};
use crate::index_settings::{IndexMode, IndexSettings, IndexStatus, index_file};

use self::collect::{Found, collect, read_content, stat_at};
use self::watch::{Pending, Watch};
use crate::ignore_policy::WalkDeadline;

/// Where the index stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// Not started.
    Idle,
    /// A saved index is being validated: queries wait for it.
    Loading,
    /// Building from scratch: the scan answers meanwhile.
    Building,
    /// Queries are answered from the index.
    Ready,
    /// Not used, and why (settings, size, budget).
    Skipped(String),
    /// It failed, and why; the scan answers.
    Failed(String),
}

/// What the index knows of itself, for `doctor`.
#[derive(Debug, Clone, Default)]
struct Info {
    files: usize,
    bytes: u64,
    took: Duration,
    reused: bool,
    reread: usize,
    saved_bytes: Option<u64>,
    watched: usize,
}

struct State {
    phase: Phase,
    index: Option<Arc<RwLock<LiveIndex>>>,
    watch: Option<Arc<Watch>>,
    pending: Pending,
    notes: VecDeque<String>,
    info: Info,
    /// Bumped by every load or build, so that a stale one's result is dropped.
    generation: u64,
}

/// Notes kept for `doctor`, at most.
const MAX_NOTES: usize = 8;
/// Changes brought in by a query at most; more are left to a validation in the background.
const MAX_PENDING: usize = 2000;
/// How long a query waits for a saved index to be validated, at most.
const LOAD_WAIT: Duration = Duration::from_secs(120);
/// Files changed within this long before the index was built are read again when it is
/// validated: a change in the same tick of the clock leaves the time unchanged.
const RACY: Duration = Duration::from_secs(2);

/// The session's search index: see the module documentation.
pub struct Service {
    root: Option<PathBuf>,
    file: PathBuf,
    settings: IndexSettings,
    long_lived: bool,
    state: Mutex<State>,
    changed: Condvar,
    /// Queries answered from the index.
    answered: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("root", &self.root)
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl tool_core::ServiceType for Service {}

/// Installs the search index of the project at `root` in a session being built; the saved
/// index lives under `state_dir`. A `long_lived` session (batch, serve, a library host)
/// builds the index and keeps it fresh; a one-shot one only uses a valid saved index.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let settings = tools_fs::IndexSettings::default();
/// let builder = tool_core::ToolContext::builder(dir.path());
/// let ctx = tools_fs::install_index(builder, dir.path(), &dir.path().join(".state"), settings, true)
///     .build();
/// assert!(tools_fs::index_status(&ctx).is_some());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn install_index(
    builder: ToolContextBuilder,
    root: &Path,
    state_dir: &Path,
    settings: IndexSettings,
    long_lived: bool,
) -> ToolContextBuilder {
    let service = shared(Service::new(root, state_dir, settings, long_lived));
    if settings.mode == IndexMode::Eager && long_lived {
        service.start();
    }
    builder
        .service(Arc::clone(&service))
        .service(service as Arc<dyn tool_core::WriteObserver>)
}

/// The long-lived services of this process, by index file: the sessions of one server
/// (`serve` makes one per client) share their project's index.
static SERVICES: Mutex<Vec<(PathBuf, std::sync::Weak<Service>)>> = Mutex::new(Vec::new());

/// `service`, or the live one of the same project and settings.
fn shared(service: Service) -> Arc<Service> {
    if !service.long_lived {
        return Arc::new(service);
    }
    let Ok(mut list) = SERVICES.lock() else {
        return Arc::new(service);
    };
    list.retain(|(_, w)| w.strong_count() > 0);
    if let Some(existing) = list
        .iter()
        .filter(|(file, _)| *file == service.file)
        .find_map(|(_, w)| w.upgrade())
        .filter(|e| e.settings == service.settings)
    {
        return existing;
    }
    let service = Arc::new(service);
    list.push((service.file.clone(), Arc::downgrade(&service)));
    service
}

/// The session's index service, if one is installed.
pub(crate) fn service(ctx: &ToolContext) -> Option<Arc<Service>> {
    ctx.services().get::<Arc<Service>>()
}

/// The status of the session's index; `None` when none is installed.
pub fn index_status(ctx: &ToolContext) -> Option<IndexStatus> {
    service(ctx).map(|s| s.status())
}

/// Builds the index of the project at `root` now (whatever its size) and saves it under
/// `state_dir`; returns its status.
pub fn rebuild_index(root: &Path, state_dir: &Path, settings: IndexSettings) -> IndexStatus {
    let settings = IndexSettings {
        mode: IndexMode::Eager,
        ..settings
    };
    let service = Service::new(root, state_dir, settings, false);
    if let Err(e) = std::fs::remove_file(&service.file)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        service.note(format!("could not remove {}: {e}", service.file.display()));
    }
    service.refresh(0);
    service.status()
}

/// Validates the saved index of the project at `root` with one walk (nothing is built or
/// saved); returns its status.
pub fn saved_index_status(root: &Path, state_dir: &Path) -> IndexStatus {
    let service = Service::new(root, state_dir, IndexSettings::default(), false);
    if !service.file.is_file() {
        let mut status = service.status();
        status.state = "not built".to_owned();
        status.detail = "no saved index (agent-tools index --rebuild builds one)".to_owned();
        return status;
    }
    service.load_only();
    service.status()
}

/// Removes the saved index of the project at `root`; true when there was one.
pub fn drop_index(root: &Path, state_dir: &Path) -> Result<bool, ToolError> {
    let service = Service::new(root, state_dir, IndexSettings::default(), false);
    match std::fs::remove_file(&service.file) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(ToolError::io(&service.file, e)),
    }
}

/// The path of `rel` (relative to the root) as bytes `a/b`, or `None` outside the root.
fn rel_of(root: &Path, path: &Path) -> Option<Vec<u8>> {
    let rest = path.strip_prefix(root).ok()?;
    let mut out = Vec::new();
    for part in rest.components() {
        match part {
            std::path::Component::Normal(name) => {
                if !out.is_empty() {
                    out.push(b'/');
                }
                out.extend_from_slice(name.as_bytes());
            }
            std::path::Component::CurDir => {}
            _ => return None,
        }
    }
    Some(out)
}

fn parent_of(rel: &[u8]) -> &[u8] {
    rel.iter()
        .rposition(|&b| b == b'/')
        .map_or(&[], |i| &rel[..i])
}

fn open_dir(path: &Path) -> Option<OwnedFd> {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()
}

fn deadline(cancel: &CancellationToken) -> WalkDeadline {
    WalkDeadline::new(
        "search index",
        cancel,
        Instant::now(),
        Duration::from_secs(600),
    )
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(12))
}

/// Reads `rel` again and puts it in the index (or takes it out when it is no longer a file).
fn reindex(
    index: &mut LiveIndex,
    dir: &OwnedFd,
    rel: &[u8],
    meta: DocMeta,
    x: &mut Extractor,
    buf: &mut Vec<u8>,
) {
    if meta.kind == DocKind::Symlink {
        index.upsert(rel, meta, Indexed::Listed, &[]);
        return;
    }
    buf.clear();
    match read_content(dir, rel, buf) {
        Content::Text => {
            x.feed(buf);
            index.upsert(rel, meta, Indexed::Grams, x.grams());
            x.reset();
        }
        Content::Always => index.upsert(rel, meta, Indexed::Always, &[]),
        Content::Skip => {
            index.remove(rel);
        }
    }
}

/// Removes the documents under `scope` that a walk of it did not find.
fn drop_gone(index: &mut LiveIndex, scope: &[u8], found: &Found) {
    let gone: Vec<Box<[u8]>> = index
        .under(scope)
        .filter(|(_, e)| !found.docs.contains_key(&e.rel[..]))
        .map(|(_, e)| e.rel.clone())
        .collect();
    for rel in gone {
        index.remove(&rel);
    }
}

/// Replaces the directories under `scope` with those a walk of it found.
fn set_dirs(index: &mut LiveIndex, scope: &[u8], found: &Found) {
    index.remove_dirs_under(scope);
    for (rel, skipped) in &found.dirs {
        index.set_dir(rel, *skipped);
    }
}

/// Brings the documents and directories under `scope` in line with a walk of it.
fn reconcile(
    index: &mut LiveIndex,
    dir: &OwnedFd,
    scope: &[u8],
    found: &Found,
    force: bool,
) -> usize {
    drop_gone(index, scope, found);
    let mut x = Extractor::new();
    let mut buf = Vec::new();
    let mut read = 0;
    for (rel, meta) in &found.docs {
        let same = index.get(rel).is_some_and(|e| e.meta == *meta);
        if force || !same {
            reindex(index, dir, rel, *meta, &mut x, &mut buf);
            read += 1;
        }
    }
    set_dirs(index, scope, found);
    read
}

impl Service {
    fn new(root: &Path, state_dir: &Path, settings: IndexSettings, long_lived: bool) -> Self {
        let canonical = root.canonicalize().ok();
        let file = index_file(state_dir, canonical.as_deref().unwrap_or(root));
        let phase = if settings.mode == IndexMode::Off {
            Phase::Skipped("search.index is \"off\"".to_owned())
        } else if canonical.is_none() {
            Phase::Failed(format!("{} cannot be resolved", root.display()))
        } else {
            Phase::Idle
        };
        Service {
            root: canonical,
            file,
            settings,
            long_lived,
            state: Mutex::new(State {
                phase,
                index: None,
                watch: None,
                pending: Pending::default(),
                notes: VecDeque::new(),
                info: Info::default(),
                generation: 0,
            }),
            changed: Condvar::new(),
            answered: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn lock(&self) -> Option<MutexGuard<'_, State>> {
        self.state.lock().ok()
    }

    fn note(&self, note: String) {
        if let Some(mut state) = self.lock() {
            push_note(&mut state, note);
        }
    }

    /// Starts loading or building in the background, unless already started.
    fn start(self: &Arc<Self>) {
        let Some(mut state) = self.lock() else { return };
        self.start_locked(&mut state);
    }

    fn start_locked(self: &Arc<Self>, state: &mut State) {
        if !matches!(state.phase, Phase::Idle) {
            return;
        }
        state.phase = if self.file.is_file() {
            Phase::Loading
        } else {
            Phase::Building
        };
        state.generation += 1;
        let generation = state.generation;
        let this = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("search-index".to_owned())
            .spawn(move || this.refresh(generation));
        if let Err(e) = spawned {
            state.phase = Phase::Failed(format!("could not start the index thread: {e}"));
        }
    }

    /// Validates a saved index without building or saving (`agent-tools index --status`).
    fn load_only(&self) {
        let Some(root) = self.root.clone() else {
            return;
        };
        let started = Instant::now();
        let cancel = CancellationToken::new();
        let (found, opened) = self.walk_and_open(&root, None, &cancel);
        match opened {
            Ok(file) if file.contents.root == root => {
                let (index, reread) =
                    self.reuse(LiveIndex::from_file(file), &root, &found, usize::MAX);
                self.finish(0, index, None, &found, started, true, reread);
            }
            Ok(_) => self.fail(0, "the saved index is of another directory".to_owned()),
            Err(e) => self.fail(0, e.to_string()),
        }
    }

    /// Walks the tree and, at the same time, opens and checks the saved index (its
    /// checksum reads the whole file).
    fn walk_and_open(
        &self,
        root: &Path,
        watch: Option<&Watch>,
        cancel: &CancellationToken,
    ) -> (Found, Result<IndexFile, search_index::IndexError>) {
        std::thread::scope(|scope| {
            let opening = scope.spawn(|| IndexFile::open(&self.file));
            let found = collect(root, b"", true, watch, &deadline(cancel));
            let opened = opening.join().unwrap_or_else(|_| {
                Err(search_index::IndexError::Corrupt {
                    path: self.file.clone(),
                    reason: "reading it failed".to_owned(),
                })
            });
            (found, opened)
        })
    }

    fn fail(&self, generation: u64, why: String) {
        if let Some(mut state) = self.lock()
            && state.generation == generation
        {
            state.phase = Phase::Failed(why);
            state.index = None;
            self.changed.notify_all();
        }
    }

    /// Applies a walk to a saved index: files whose metadata changed (or that changed
    /// within [`RACY`] of its build) are read again; `None` when more than `max` did (a
    /// build is cheaper).
    fn reuse(
        &self,
        mut index: LiveIndex,
        root: &Path,
        found: &Found,
        max: usize,
    ) -> (Option<LiveIndex>, usize) {
        let built = index.built();
        // One look-up per file found: what to read again (new, changed, or racy: changed
        // within RACY of the build, read again even when its metadata matches), and how
        // many of the index's documents are still there.
        let mut stale: Vec<(&[u8], DocMeta)> = Vec::new();
        let mut kept = 0usize;
        let mut cursor = 0;
        for (rel, meta) in &found.docs {
            let known = index.get_ascending(rel, &mut cursor);
            kept += usize::from(known.is_some());
            let fresh = known.is_some_and(|e| {
                e.meta == *meta && meta.mtime.checked_add(RACY).is_some_and(|t| t < built)
            });
            if !fresh {
                stale.push((rel, *meta));
            }
        }
        let gone = index.len().saturating_sub(kept);
        if stale.len() + gone > max {
            return (None, stale.len() + gone);
        }
        let Some(dir) = open_dir(root) else {
            return (None, 0);
        };
        if gone > 0 {
            drop_gone(&mut index, b"", found);
        }
        let mut x = Extractor::new();
        let mut buf = Vec::new();
        for &(rel, meta) in &stale {
            reindex(&mut index, &dir, rel, meta, &mut x, &mut buf);
        }
        set_dirs(&mut index, b"", found);
        (Some(index), stale.len())
    }

    /// The notifications of a long-lived session (a one-shot session has none; a failure
    /// is noted, and every query then validates its scope).
    fn new_watch(&self, root: &Path) -> Option<Arc<Watch>> {
        if !self.long_lived {
            return None;
        }
        if !self.settings.notifications {
            self.note(
                "search.notifications is false: every query validates its scope first".to_owned(),
            );
            return None;
        }
        if let Some(fs) = blind::blind_file_system(root) {
            self.note(format!(
                "the project is on a file system whose changes made elsewhere send no notifications ({fs}): every query validates its scope first"
            ));
            return None;
        }
        match Watch::new() {
            Ok(w) => Some(Arc::new(w)),
            Err(e) => {
                self.note(format!(
                    "no file-system notifications ({e}): every query validates its scope first"
                ));
                None
            }
        }
    }

    /// Why the project found is left to the scan: under the automatic threshold (with no
    /// saved index), or over a budget.
    fn skip_reason(&self, found: &Found) -> Option<String> {
        let settings = self.settings;
        if settings.mode == IndexMode::Auto
            && found.bytes < settings.auto_min_bytes
            && !self.file.is_file()
        {
            return Some(format!(
                "the project holds {} MB of searchable files; the index starts at {} MB (search.autoThresholdMB), below it the scan is as fast",
                found.bytes / MB,
                settings.auto_min_bytes / MB
            ));
        }
        let disk = (found.bytes as f64 * DISK_SHARE) as u64;
        let memory = (found.bytes as f64 * MEMORY_SHARE) as u64;
        if disk > settings.disk_budget_bytes || memory > settings.memory_budget_bytes {
            return Some(format!(
                "the project holds {} MB of searchable files: its index (about {} MB on disk, {} MB to build) is over the budget (search.diskBudgetMB {}, search.memoryBudgetMB {}); the scan answers",
                found.bytes / MB,
                disk / MB,
                memory / MB,
                settings.disk_budget_bytes / MB,
                settings.memory_budget_bytes / MB
            ));
        }
        None
    }

    /// Loads (validating the saved index) or builds, then publishes the result if
    /// `generation` is still current.
    fn refresh(&self, generation: u64) {
        let Some(root) = self.root.clone() else {
            return;
        };
        let started = Instant::now();
        let built_at = SystemTime::now();
        let watch = self.new_watch(&root);
        let cancel = CancellationToken::new();
        let (found, opened) = self.walk_and_open(&root, watch.as_deref(), &cancel);
        if found.dirs.is_empty() {
            self.fail(generation, format!("{} cannot be read", root.display()));
            return;
        }
        let settings = self.settings;
        if let Some(why) = self.skip_reason(&found) {
            if let Some(mut state) = self.lock()
                && state.generation == generation
            {
                state.phase = Phase::Skipped(why);
                self.changed.notify_all();
            }
            return;
        }
        // A saved index of this project, validated by the walk. A one-shot session reuses
        // whatever it can (it answers one query) and never builds.
        let building = self.long_lived || settings.mode == IndexMode::Eager;
        match opened {
            Ok(file) if file.contents.root == root => {
                let max = if building {
                    (found.docs.len() / 4).max(2000)
                } else {
                    usize::MAX
                };
                if let (Some(index), reread) =
                    self.reuse(LiveIndex::from_file(file), &root, &found, max)
                {
                    self.finish(
                        generation,
                        Some(index),
                        watch,
                        &found,
                        started,
                        true,
                        reread,
                    );
                    return;
                }
            }
            Ok(_) => self.note("the saved index named another directory: rebuilt".to_owned()),
            Err(search_index::IndexError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                let _ = std::fs::remove_file(&self.file);
                self.note(format!(
                    "{e}: removed, {}",
                    if building {
                        "rebuilt"
                    } else {
                        "the next long-lived session rebuilds it"
                    }
                ));
            }
        }
        if !building {
            self.fail(generation, "no usable saved index".to_owned());
            return;
        }
        if let Some(mut state) = self.lock()
            && state.generation == generation
            && state.phase == Phase::Loading
        {
            // A build from scratch: the scan answers meanwhile.
            state.phase = Phase::Building;
            self.changed.notify_all();
        }
        let index = self.build(&root, &found, built_at);
        self.finish(
            generation,
            index,
            watch,
            &found,
            started,
            false,
            found.docs.len(),
        );
    }

    /// Builds and saves the index of the walked files.
    fn build(&self, root: &Path, found: &Found, built_at: SystemTime) -> Option<LiveIndex> {
        let Some(dir) = open_dir(root) else {
            self.note(format!("{} cannot be opened", root.display()));
            return None;
        };
        let docs: Vec<(&Vec<u8>, &DocMeta)> = found.docs.iter().collect();
        let read = |id: usize, buf: &mut Vec<u8>| match docs.get(id) {
            Some((rel, meta)) if meta.kind == DocKind::File => read_content(&dir, rel, buf),
            _ => Content::Skip,
        };
        let postings = Postings::build(docs.len(), threads(), &read, &AtomicBool::new(false));
        let contents = Contents {
            root: root.to_path_buf(),
            built: built_at,
            docs: docs
                .iter()
                .map(|(rel, meta)| Doc {
                    rel: rel.as_slice().into(),
                    meta: **meta,
                })
                .collect(),
            dirs: found
                .dirs
                .iter()
                .map(|(rel, skipped)| DirEntry {
                    rel: rel.as_slice().into(),
                    skipped: *skipped,
                })
                .collect(),
        };
        if let Some(parent) = self.file.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            self.note(format!(
                "the index is kept in memory: {} cannot be created: {e}",
                parent.display()
            ));
            return Some(LiveIndex::from_memory(contents, postings));
        }
        match search_index::save(&self.file, &contents, &postings) {
            Ok(bytes) if bytes > self.settings.disk_budget_bytes => {
                let _ = std::fs::remove_file(&self.file);
                self.note(format!(
                    "the index takes {} MB, over search.diskBudgetMB ({}): kept in memory for this session only",
                    bytes / MB,
                    self.settings.disk_budget_bytes / MB
                ));
                Some(LiveIndex::from_memory(contents, postings))
            }
            Ok(_) => {
                drop(postings);
                match IndexFile::open(&self.file) {
                    Ok(file) => Some(LiveIndex::from_file(file)),
                    Err(e) => {
                        self.note(format!("the index just saved cannot be read back: {e}"));
                        None
                    }
                }
            }
            Err(e) => {
                self.note(format!("the index is kept in memory: {e}"));
                Some(LiveIndex::from_memory(contents, postings))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        generation: u64,
        index: Option<LiveIndex>,
        watch: Option<Arc<Watch>>,
        found: &Found,
        started: Instant,
        reused: bool,
        reread: usize,
    ) {
        let Some(mut state) = self.lock() else { return };
        if state.generation != generation {
            return;
        }
        let Some(index) = index else {
            state.phase = Phase::Failed("the index could not be built (see the notes)".to_owned());
            self.changed.notify_all();
            return;
        };
        if let Some(w) = &watch
            && w.incomplete()
        {
            push_note(
                &mut state,
                "some directories could not be watched (the inotify watch limit, fs.inotify.max_user_watches): every query validates its scope first".to_owned(),
            );
        }
        state.info = Info {
            files: index.len(),
            bytes: found.bytes,
            took: started.elapsed(),
            reused,
            reread,
            saved_bytes: index.file_bytes(),
            watched: watch.as_ref().map_or(0, |w| w.len()),
        };
        state.watch = watch.filter(|w| !w.incomplete());
        state.index = Some(Arc::new(RwLock::new(index)));
        state.phase = Phase::Ready;
        self.changed.notify_all();
    }

    fn status(&self) -> IndexStatus {
        let Some(state) = self.lock() else {
            return IndexStatus {
                state: "failed".to_owned(),
                detail: "internal error: the index state is poisoned".to_owned(),
                notes: Vec::new(),
                file: self.file.clone(),
                answered: 0,
            };
        };
        let (name, detail) = match &state.phase {
            Phase::Idle => (
                "not started",
                if self.long_lived {
                    "built on the first Grep or Glob when the project is large enough".to_owned()
                } else {
                    "a one-shot session uses a valid saved index on its first Grep or Glob"
                        .to_owned()
                },
            ),
            Phase::Loading => ("loading", "validating the saved index".to_owned()),
            Phase::Building => ("building", "the scan answers until it is ready".to_owned()),
            Phase::Ready => {
                let i = &state.info;
                let mut detail = format!(
                    "{} files ({} MB), {} in {} ms",
                    i.files,
                    i.bytes / MB,
                    if i.reused {
                        format!("saved index validated, {} files read again", i.reread)
                    } else {
                        "built".to_owned()
                    },
                    i.took.as_millis()
                );
                match i.saved_bytes {
                    Some(b) => detail.push_str(&format!(", {} MB on disk", b.div_ceil(MB))),
                    None => detail.push_str(", kept in memory"),
                }
                if state.watch.is_some() {
                    detail.push_str(&format!(", {} directories watched (inotify)", i.watched));
                } else if self.long_lived {
                    detail.push_str(", no notifications: each query validates its scope");
                }
                ("ready", detail)
            }
            Phase::Skipped(why) => ("not used", why.clone()),
            Phase::Failed(why) => ("failed", format!("{why}; the scan answers")),
        };
        IndexStatus {
            state: name.to_owned(),
            detail,
            notes: state.notes.iter().cloned().collect(),
            file: self.file.clone(),
            answered: self.answered.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// The index's view for a Grep or Glob rooted at `root`, brought up to date with every
    /// change made before this call; `None` when the scan must answer.
    pub(crate) fn view(self: &Arc<Self>, root: &Path) -> Option<View> {
        let project = self.root.as_ref()?;
        let canonical = root.canonicalize().ok()?;
        let scope = rel_of(project, &canonical)?;
        let mut state = self.lock()?;
        let waited = Instant::now();
        loop {
            match &state.phase {
                Phase::Idle => {
                    // A one-shot session only uses a saved index.
                    if !self.long_lived && !self.file.is_file() {
                        return None;
                    }
                    self.start_locked(&mut state);
                    if state.phase != Phase::Loading {
                        return None;
                    }
                }
                Phase::Loading => {
                    let left = LOAD_WAIT.checked_sub(waited.elapsed())?;
                    state = self.changed.wait_timeout(state, left).ok()?.0;
                }
                Phase::Ready => break,
                _ => return None,
            }
        }
        if let Some(watch) = state.watch.clone() {
            watch.drain(&mut state.pending);
        } else if self.long_lived {
            // No notifications: validate the scope before answering.
            state.pending.subtrees.insert(scope.clone());
        }
        let pending = std::mem::take(&mut state.pending);
        if pending.root_gone {
            push_note(
                &mut state,
                "the project directory was removed or moved: the index was dropped".to_owned(),
            );
            state.index = None;
            state.watch = None;
            state.phase = Phase::Idle;
            return None;
        }
        if pending.everything || pending.len() > MAX_PENDING {
            push_note(
                &mut state,
                if pending.everything {
                    "notifications may have been missed (the queue overflowed): the scan answered while the index was validated again".to_owned()
                } else {
                    format!(
                        "{} changes at once: the scan answered while the index was validated again",
                        pending.len()
                    )
                },
            );
            state.index = None;
            state.watch = None;
            state.phase = Phase::Idle;
            self.start_locked(&mut state);
            return None;
        }
        let index = state.index.clone()?;
        if !pending.is_empty() {
            let Ok(mut live) = index.write() else {
                return None;
            };
            let watch = state.watch.clone();
            self.apply(&mut live, project, pending, watch.as_deref());
        }
        let live = index.read().ok()?;
        if !live.has_dir(&scope) {
            return None;
        }
        drop(live);
        Some(View {
            index,
            scope,
            service: Arc::clone(self),
        })
    }

    /// Brings the index up to date with `pending`.
    fn apply(&self, index: &mut LiveIndex, root: &Path, pending: Pending, watch: Option<&Watch>) {
        let Some(dir) = open_dir(root) else { return };
        let cancel = CancellationToken::new();
        let deadline = deadline(&cancel);
        let mut x = Extractor::new();
        let mut buf = Vec::new();
        // Ignore rules changed: the whole directory walked again (which files it keeps
        // changed; their content did not, unless an event says so below).
        let mut subtrees: Vec<&Vec<u8>> = pending.subtrees.iter().collect();
        subtrees.retain(|s| !pending.subtrees.iter().any(|o| o != *s && within(s, o)));
        for sub in &subtrees {
            if !sub.is_empty() && !index.has_dir(parent_of(sub)) && !index.has_dir(sub) {
                continue;
            }
            let found = collect(root, sub, true, watch, &deadline);
            reconcile(index, &dir, sub, &found, false);
        }
        let covered = |rel: &[u8]| subtrees.iter().any(|s| within(rel, s));
        // Entries created, deleted or renamed: the directory listed again, new
        // subdirectories walked, vanished ones dropped.
        for d in &pending.dirs {
            if covered(d) || !index.has_dir(d) {
                continue;
            }
            let found = collect(root, d, false, watch, &deadline);
            if found.dirs.is_empty() {
                index.remove_under(d);
                continue;
            }
            let vanished: Vec<Box<[u8]>> = index
                .under(d)
                .filter(|(_, e)| {
                    parent_of(&e.rel) == &d[..] && !found.docs.contains_key(&e.rel[..])
                })
                .map(|(_, e)| e.rel.clone())
                .collect();
            for rel in vanished {
                index.remove(&rel);
            }
            for (rel, meta) in &found.docs {
                if !index.get(rel).is_some_and(|e| e.meta == *meta) {
                    reindex(index, &dir, rel, *meta, &mut x, &mut buf);
                }
            }
            index.set_dir(d, found.dirs.get(d).copied().unwrap_or(0));
            let gone: Vec<Vec<u8>> = index
                .dirs()
                .filter(|(rel, _)| {
                    !rel.is_empty()
                        && parent_of(rel) == &d[..]
                        && !found.subdirs.iter().any(|s| s == rel)
                })
                .map(|(rel, _)| rel.to_vec())
                .collect();
            for rel in gone {
                index.remove_under(&rel);
            }
            for sub in &found.subdirs {
                if !index.has_dir(sub) {
                    let below = collect(root, sub, true, watch, &deadline);
                    reconcile(index, &dir, sub, &below, false);
                }
            }
        }
        // Files written: read again (an event says the content changed, whatever its time).
        for f in &pending.files {
            if index.get(f).is_none() {
                continue;
            }
            let path = root.join(OsStr::from_bytes(f));
            match stat_at(rustix::fs::CWD, &path, false) {
                Some((meta, ty))
                    if ty == rustix::fs::FileType::RegularFile
                        || ty == rustix::fs::FileType::Symlink =>
                {
                    reindex(index, &dir, f, meta, &mut x, &mut buf);
                }
                _ => {
                    index.remove(f);
                }
            }
        }
    }
}

fn push_note(state: &mut State, note: String) {
    if state.notes.back() == Some(&note) {
        return;
    }
    if state.notes.len() == MAX_NOTES {
        state.notes.pop_front();
    }
    state.notes.push_back(note);
}

impl tool_core::WriteObserver for Service {
    fn wrote(&self, path: &Path) {
        let Some(root) = &self.root else { return };
        let Some(rel) = rel_of(root, path) else {
            return;
        };
        let Some(mut state) = self.lock() else { return };
        if state.phase != Phase::Ready {
            return;
        }
        state.pending.dirs.insert(parent_of(&rel).to_vec());
        state.pending.files.insert(rel);
    }
}

/// A query's view of the index, up to date as of the query's start.
pub(crate) struct View {
    index: Arc<RwLock<LiveIndex>>,
    scope: Vec<u8>,
    service: Arc<Service>,
}

impl View {
    /// Counts a query answered from the index.
    pub(crate) fn answered(&self) {
        self.service
            .answered
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn relative<'a>(&self, rel: &'a [u8]) -> &'a [u8] {
        if self.scope.is_empty() {
            rel
        } else {
            rel.get(self.scope.len() + 1..).unwrap_or_default()
        }
    }

    /// Calls `each` with every regular file under the root that may hold a match of
    /// `query` (its path relative to the root and its time), newest first, then by path,
    /// until `each` returns false; returns the entries the ignore rules skipped below the
    /// root, or `None` when the index cannot answer (a damaged list: it is rebuilt).
    pub(crate) fn grep_ordered(
        &self,
        query: &GramQuery,
        each: &mut dyn FnMut(&[u8], SystemTime) -> bool,
    ) -> Option<u64> {
        let index = self.index.read().ok()?;
        let candidates = match index.candidates(query) {
            Ok(c) => c,
            Err(e) => {
                drop(index);
                self.service.damaged(e.to_string());
                return None;
            }
        };
        let skipped = index.skipped_under(&self.scope);
        let searched = |e: &search_index::Entry| e.indexed != Indexed::Listed;
        match candidates {
            Candidates::All => {
                for (_, e) in index.newest_first(&self.scope) {
                    if searched(e) && !each(self.relative(&e.rel), e.meta.mtime) {
                        break;
                    }
                }
            }
            Candidates::Some(mut ids) => {
                ids.retain(|&id| {
                    index
                        .entry(id)
                        .is_some_and(|e| !e.dead && searched(e) && within(&e.rel, &self.scope))
                });
                index.sort_newest_first(&mut ids);
                for id in ids {
                    let Some(e) = index.entry(id) else { continue };
                    if !each(self.relative(&e.rel), e.meta.mtime) {
                        break;
                    }
                }
            }
        }
        Some(skipped)
    }

    /// Calls `each` with every file and symbolic link under the root (path relative to the
    /// root, time, kind): the links first, in any order, then the files newest first, until
    /// `each` returns false.
    pub(crate) fn glob_ordered(
        &self,
        each: &mut dyn FnMut(&[u8], SystemTime, DocKind) -> bool,
    ) -> Option<()> {
        let index = self.index.read().ok()?;
        for (_, e) in index.under(&self.scope) {
            if e.meta.kind == DocKind::Symlink
                && !each(self.relative(&e.rel), e.meta.mtime, e.meta.kind)
            {
                return Some(());
            }
        }
        for (_, e) in index.newest_first(&self.scope) {
            if e.meta.kind == DocKind::File
                && !each(self.relative(&e.rel), e.meta.mtime, e.meta.kind)
            {
                break;
            }
        }
        Some(())
    }
}

impl Service {
    /// A posting list could not be read: the saved file is dropped and rebuilt.
    fn damaged(self: &Arc<Self>, why: String) {
        let Some(mut state) = self.lock() else { return };
        push_note(
            &mut state,
            format!("{why}: the index is rebuilt, the scan answers meanwhile"),
        );
        let _ = std::fs::remove_file(&self.file);
        state.index = None;
        state.watch = None;
        state.phase = Phase::Idle;
        if self.long_lived {
            self.start_locked(&mut state);
        }
    }
}
