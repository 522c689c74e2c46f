//! The background task manager (tool-core's [`TaskManager`]): shell commands started with
//! `run_in_background`, Monitor commands, and tasks of other kinds (background agents) that
//! register a future. Each task has an id, a status, an exit code and an output file; stopping
//! one kills its whole process tree.
//!
//! A shell task runs under a supervisor of its own (the `supervisor` module), which ends
//! everything the command started when the task ends, is stopped, or this process dies.
//! Its output goes through a [`Spool`] into `<state>/tasks/<manager>/<id>.output`, capped
//! like a foreground command's; readers (TaskOutput, readiness, Monitor) read the spool by
//! stream offset, so they see the latest output also once the head is full.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use regex::Regex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tool_core::{
    EventSink, ProgressSink, SessionEvent, TaskFinish, TaskInfo, TaskKind, TaskManager, TaskRun,
    TaskSpec, TaskStatus, ToolError,
};

use sandbox::{Ending, Io, KILL_GRACE, Launch, RunSpec, SandboxSettings};

use crate::spool::{Caps, Chunk, OutputDir, Parked, Spool};

/// A readiness condition for a background command.
#[derive(Debug, Clone)]
pub struct Readiness {
    /// A line of output matches
    pub pattern: Option<Regex>,
    /// 127.0.0.1:port accepts a TCP connection
    pub port: Option<u16>,
    /// How long to wait
    pub timeout: Duration,
}

impl Readiness {
    /// A condition from Bash's input fields; `None` when neither is given.
    pub fn from_input(
        pattern: Option<&str>,
        port: Option<u16>,
        timeout: Duration,
    ) -> Result<Option<Self>, ToolError> {
        if pattern.is_none() && port.is_none() {
            return Ok(None);
        }
        let pattern = pattern.map(Regex::new).transpose().map_err(|e| {
            ToolError::respond(format!(
                "ready_pattern is not a valid regular expression: {e}"
            ))
        })?;
        Ok(Some(Readiness {
            pattern,
            port,
            timeout,
        }))
    }
}

/// How waiting for readiness ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyOutcome {
    /// Whether the condition was met
    pub ready: bool,
    /// What happened, for the model
    pub message: String,
    /// The tail of the output so far
    pub output: String,
}

/// A request to start a shell task with its sandbox.
#[derive(Debug)]
pub struct ShellTaskSpec {
    /// LocalBash or Monitor
    pub kind: TaskKind,
    /// A short description
    pub description: String,
    /// The command
    pub command: String,
    /// Its working directory
    pub cwd: PathBuf,
    /// How to start it (sandbox)
    pub launch: Launch,
    /// A time limit (Monitor's 30 minutes), if any
    pub time_limit: Option<Duration>,
    /// Where new output lines go as progress events (Monitor)
    pub progress: Option<ProgressSink>,
}

#[derive(Debug)]
struct Entry {
    info: Mutex<TaskInfo>,
    done: watch::Sender<bool>,
    cancel: CancellationToken,
    /// How far TaskOutput has read a monitor's output
    cursor: Mutex<u64>,
    /// The output: being written, then (its file closed) parked
    output: Mutex<Option<Output>>,
}

/// A task's output: the spool while the task runs, then only what is needed to open its
/// file again, so a finished task holds no descriptor.
#[derive(Debug, Clone)]
enum Output {
    Live(Spool),
    Parked(Parked),
}

impl Output {
    fn read_from(&self, dir: &OutputDir, offset: u64, max: usize) -> std::io::Result<Chunk> {
        match self {
            Output::Live(spool) => spool.read_from(offset, max),
            Output::Parked(parked) => parked.read_from(dir, offset, max),
        }
    }

    fn tail(&self, dir: &OutputDir, max: usize) -> std::io::Result<Vec<u8>> {
        match self {
            Output::Live(spool) => spool.tail(max),
            Output::Parked(parked) => parked.tail(dir, max),
        }
    }

    fn total(&self) -> u64 {
        match self {
            Output::Live(spool) => spool.summary().total,
            Output::Parked(parked) => parked.summary().total,
        }
    }
}

impl Entry {
    fn snapshot(&self) -> TaskInfo {
        match self.info.lock() {
            Ok(i) => i.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    fn output(&self) -> Option<Output> {
        self.output.lock().ok().and_then(|o| o.clone())
    }

    /// Once the output is final: makes sure its path leads to it (a copy, should a
    /// sandboxed command have put something in its place), and parks it, which closes
    /// its file.
    fn settle(&self, dir: &OutputDir) {
        let Some(Output::Live(spool)) = self.output() else {
            return;
        };
        let path = self.snapshot().output_path;
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            return;
        };
        let Ok((claimed, copy)) = dir.claim(name, spool.file()) else {
            return;
        };
        if claimed != path
            && let Ok(mut i) = self.info.lock()
        {
            i.output_path.clone_from(&claimed);
        }
        let Some(name) = claimed.file_name().and_then(|n| n.to_str()) else {
            return;
        };
        if let Ok(parked) = spool.park(name, copy.as_ref().unwrap_or(spool.file()))
            && let Ok(mut output) = self.output.lock()
        {
            *output = Some(Output::Parked(parked));
        }
    }

    fn finish(&self, status: TaskStatus, code: Option<i32>) {
        if let Ok(mut i) = self.info.lock()
            && !i.status.is_terminal()
        {
            i.status = status;
            i.exit_code = code;
        }
        // `send` stores nothing when no receiver exists yet: a task that ends before anyone
        // waits for it would look running to every later wait (TaskOutput with `block`, the
        // session's end), which then ran to its timeout.
        self.done.send_replace(true);
    }
}

/// The background task manager of one session.
#[derive(Debug, Clone)]
pub struct ShellTasks {
    inner: Arc<Inner>,
}
impl tool_core::ServiceType for ShellTasks {}

#[derive(Debug)]
struct Inner {
    /// The state directory
    state_dir: PathBuf,
    /// This manager's directory under `<state>/tasks/`
    unique: String,
    dir: Mutex<Option<Arc<OutputDir>>>,
    tasks: Mutex<HashMap<String, Arc<Entry>>>,
    counter: AtomicU64,
    /// The sandbox for shell tasks started through the generic trait
    sandbox: SandboxSettings,
    /// The working directories for that sandbox
    dirs: Vec<PathBuf>,
    /// Where the session's events go (tasks that end, monitored lines)
    events: Mutex<Option<EventSink>>,
}

impl Inner {
    fn events(&self) -> Option<EventSink> {
        self.events.lock().ok().and_then(|e| e.clone())
    }

    /// Tells the host that a task ended.
    fn announce(&self, info: &TaskInfo) {
        let Some(sink) = self.events() else {
            return;
        };
        let status = status_name(info.status);
        let code = info
            .exit_code
            .map(|c| format!(" (exit code {c})"))
            .unwrap_or_default();
        sink.emit(SessionEvent {
            event: "task".to_owned(),
            id: Some(info.id.clone()),
            text: format!(
                "Background task {} ({}) {status}{code}. Read its output with TaskOutput or at {}.",
                info.id,
                info.description,
                info.output_path.display()
            ),
            data: serde_json::json!({
                "status": status,
                "exitCode": info.exit_code,
                "kind": format!("{:?}", info.kind),
                "outputPath": info.output_path,
            }),
        });
    }
}

static MANAGERS: AtomicU64 = AtomicU64::new(0);

impl ShellTasks {
    /// A manager whose task output files go under `state_dir/tasks/`. Shell tasks started
    /// through the generic [`TaskManager::start`] run in the `sandbox` for `working_dirs`.
    pub fn new(state_dir: &Path, sandbox: SandboxSettings, working_dirs: Vec<PathBuf>) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let unique = format!(
            "{}-{}-{nanos:x}",
            std::process::id(),
            MANAGERS.fetch_add(1, Ordering::Relaxed)
        );
        ShellTasks {
            inner: Arc::new(Inner {
                state_dir: state_dir.to_path_buf(),
                unique,
                dir: Mutex::new(None),
                tasks: Mutex::new(HashMap::new()),
                counter: AtomicU64::new(0),
                sandbox,
                dirs: working_dirs,
                events: Mutex::new(None),
            }),
        }
    }

    fn entry(&self, id: &str) -> Result<Arc<Entry>, ToolError> {
        let tasks = self
            .inner
            .tasks
            .lock()
            .map_err(|_| ToolError::fatal("internal error: the task table is poisoned"))?;
        tasks
            .get(id.trim())
            .cloned()
            .ok_or_else(|| ToolError::respond(format!("No task found with ID: {}", id.trim())))
    }

    /// The directory of this manager's output files, opened (and created) on first use.
    fn dir(&self) -> Result<Arc<OutputDir>, ToolError> {
        let mut dir = self
            .inner
            .dir
            .lock()
            .map_err(|_| ToolError::fatal("internal error: the task directory is poisoned"))?;
        if let Some(d) = dir.as_ref() {
            return Ok(Arc::clone(d));
        }
        let opened = Arc::new(OutputDir::open(
            &self.inner.state_dir,
            &["tasks", &self.inner.unique],
        )?);
        *dir = Some(Arc::clone(&opened));
        Ok(opened)
    }

    /// Registers a task with its output: the entry, and the pipe end to write the output
    /// to.
    fn register(
        &self,
        kind: TaskKind,
        description: String,
        command: Option<String>,
    ) -> Result<(Arc<Entry>, std::os::fd::OwnedFd), ToolError> {
        let prefix = match kind {
            TaskKind::LocalBash => "b",
            TaskKind::LocalAgent => "a",
            TaskKind::Monitor => "m",
        };
        let n = self.inner.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("{prefix}{n}");
        let dir = self.dir()?;
        let (file, output_path) = dir.create_unique(&id, "output")?;
        let (spool, writer) = Spool::start(file, dir, Caps::OUTPUT)?;
        let (tx, _) = watch::channel(false);
        let entry = Arc::new(Entry {
            info: Mutex::new(TaskInfo {
                id: id.clone(),
                kind,
                status: TaskStatus::Pending,
                description,
                command,
                exit_code: None,
                output_path,
            }),
            done: tx,
            cancel: CancellationToken::new(),
            cursor: Mutex::new(0),
            output: Mutex::new(Some(Output::Live(spool))),
        });
        self.inner
            .tasks
            .lock()
            .map_err(|_| ToolError::fatal("internal error: the task table is poisoned"))?
            .insert(id, Arc::clone(&entry));
        Ok((entry, writer))
    }

    /// Starts a shell command as a task, in the given sandbox, and returns at once.
    pub async fn start_shell(&self, spec: ShellTaskSpec) -> Result<TaskInfo, ToolError> {
        let (entry, output) =
            self.register(spec.kind, spec.description, Some(spec.command.clone()))?;
        let info = entry.snapshot();
        let Some(Output::Live(spool)) = entry.output() else {
            return Err(ToolError::fatal("internal error: the task has no output"));
        };
        let run = RunSpec {
            command: spec.command,
            cwd: spec.cwd,
            env: Vec::new(),
        };
        // A copy of the output pipe's write end: a resource limit the command runs into is
        // named at the end of its output (the spool ends once this copy is closed too).
        let note = output.try_clone().ok().map(std::fs::File::from);
        let io = Io::new(output, None);
        let mut running = match sandbox::start_alone(&run, &spec.launch, io).await {
            Ok(r) => r,
            Err(e) => {
                spool.close();
                entry.finish(TaskStatus::Failed, None);
                return Err(e);
            }
        };
        if let Ok(mut i) = entry.info.lock() {
            i.status = TaskStatus::Running;
        }
        let task_entry = Arc::clone(&entry);
        let limit = spec.time_limit;
        let watcher = spec.progress.map(|sink| {
            let done = entry.done.subscribe();
            // Weak: the manager's end (the session's) must not wait for its tasks.
            let events = Some((Arc::downgrade(&self.inner), info.id.clone()));
            tokio::spawn(report_lines(spool.clone(), sink, done, events))
        });
        let dir = self.dir()?;
        let inner = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let finished = running.wait(limit, &task_entry.cancel).await;
            // The supervisor of the task ends with it, and everything it ran.
            drop(running);
            if let (Some(hit), Some(mut note)) = (finished.limit, note) {
                let _ = tokio::task::spawn_blocking(move || {
                    use std::io::Write as _;
                    let _ = writeln!(note, "\n{hit}");
                })
                .await;
            }
            spool.finish().await;
            settle(&task_entry, &dir).await;
            let status = match finished.ending {
                Ending::Cancelled => TaskStatus::Killed,
                Ending::TimedOut | Ending::SandboxLost => TaskStatus::Failed,
                Ending::Exited if finished.code == 0 => TaskStatus::Completed,
                Ending::Exited => TaskStatus::Failed,
            };
            task_entry.finish(status, Some(finished.code));
            if let Some(w) = watcher {
                let _ = w.await;
            }
            if let Some(inner) = inner.upgrade() {
                inner.announce(&task_entry.snapshot());
            }
        });
        Ok(info)
    }

    /// Waits until a background command is ready (its output matches, its port accepts), it
    /// ends, the condition's timeout passes or `cancel` fires.
    pub async fn wait_ready(
        &self,
        id: &str,
        readiness: &Readiness,
        cancel: &CancellationToken,
    ) -> Result<ReadyOutcome, ToolError> {
        let entry = self.entry(id)?;
        let dir = self.dir()?;
        let mut done = entry.done.subscribe();
        let deadline = tokio::time::Instant::now() + readiness.timeout;
        let mut scanner = LineScanner::default();
        loop {
            if let Some(re) = &readiness.pattern {
                let output = entry.output().ok_or_else(|| {
                    ToolError::respond(format!("Task {id} has no command output"))
                })?;
                let mut s = std::mem::take(&mut scanner);
                let re = re.clone();
                let dir = Arc::clone(&dir);
                let (s, hit) = tokio::task::spawn_blocking(move || {
                    let hit = s.scan(&output, &dir, |line| re.is_match(line));
                    (s, hit)
                })
                .await
                .map_err(|e| ToolError::fatal(format!("internal error: {e}")))?;
                scanner = s;
                if let Some(line) = hit {
                    return Ok(self.ready_outcome(
                        &entry,
                        true,
                        format!("Ready: a line matched ready_pattern: {}", line.trim_end()),
                    ));
                }
            }
            if let Some(port) = readiness.port {
                let connect = tokio::net::TcpStream::connect(("127.0.0.1", port));
                if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_millis(200), connect).await {
                    return Ok(self.ready_outcome(
                        &entry,
                        true,
                        format!("Ready: 127.0.0.1:{port} accepts connections"),
                    ));
                }
            }
            let info = entry.snapshot();
            if info.status.is_terminal() {
                let code = info
                    .exit_code
                    .map(|c| format!(" with exit code {c}"))
                    .unwrap_or_default();
                return Ok(self.ready_outcome(&entry, false, format!(
                    "Not ready: the command ended ({}){code} before its readiness condition was met",
                    status_name(info.status)
                )));
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(self.ready_outcome(&entry, false, format!(
                    "Not ready: the readiness condition was not met within {:.1}s; the command is still running (stop it with TaskStop)",
                    readiness.timeout.as_secs_f64()
                )));
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = done.changed() => {}
                () = cancel.cancelled() => {
                    return Ok(self.ready_outcome(&entry, false, "Not ready: the call was cancelled while waiting; the command is still running".to_owned()));
                }
            }
        }
    }

    fn ready_outcome(&self, entry: &Entry, ready: bool, message: String) -> ReadyOutcome {
        let output = match (entry.output(), self.dir()) {
            (Some(output), Ok(dir)) => output_tail(&output, &dir, 4_000)
                .map(|(t, _)| t)
                .unwrap_or_default(),
            _ => String::new(),
        };
        ReadyOutcome {
            ready,
            message,
            output: output.trim_end().to_owned(),
        }
    }

    /// Output a monitor task wrote since the last call (at most `cap` bytes; the rest waits
    /// for the next call), and whether anything was skipped.
    pub fn read_new(&self, id: &str, cap: usize) -> Result<String, ToolError> {
        let entry = self.entry(id)?;
        let Some(output) = entry.output() else {
            return Ok(String::new());
        };
        let dir = self.dir()?;
        let mut cursor = entry
            .cursor
            .lock()
            .map_err(|_| ToolError::fatal("internal error: a task cursor is poisoned"))?;
        let path = entry.snapshot().output_path;
        let chunk = output
            .read_from(&dir, *cursor, cap)
            .map_err(|e| output_error(id, &path, e))?;
        let buf = chunk.data;
        // Only whole lines, unless one line alone is longer than the cap.
        let keep = match buf.iter().rposition(|b| *b == b'\n') {
            Some(i) => i + 1,
            None if buf.len() >= cap => buf.len(),
            None if entry.snapshot().status.is_terminal() => buf.len(),
            None => 0,
        };
        *cursor = chunk.next - (buf.len() - keep) as u64;
        let mut text = String::new();
        if chunk.skipped > 0 {
            text.push_str(&format!("… [{} bytes dropped] …\n", chunk.skipped));
        }
        text.push_str(&String::from_utf8_lossy(&buf[..keep]));
        Ok(text)
    }

    /// The last `cap` characters of a task's output and whether it was cut; `None` for a
    /// task whose output this manager does not hold.
    pub fn tail(&self, id: &str, cap: usize) -> Result<Option<(String, bool)>, ToolError> {
        let entry = self.entry(id)?;
        let Some(output) = entry.output() else {
            return Ok(None);
        };
        let path = entry.snapshot().output_path;
        let dir = self.dir()?;
        output_tail(&output, &dir, cap)
            .map(Some)
            .map_err(|e| output_error(id, &path, e))
    }
}

/// [`Entry::settle`] on a blocking thread: it may copy the whole output file.
async fn settle(entry: &Arc<Entry>, dir: &Arc<OutputDir>) {
    let (entry, dir) = (Arc::clone(entry), Arc::clone(dir));
    let _ = tokio::task::spawn_blocking(move || entry.settle(&dir)).await;
}

/// The error for a task's output that cannot be read: pruned (deleted after the retention
/// time, or to keep the state directory within its budget), replaced, or unreadable.
fn output_error(id: &str, path: &Path, e: std::io::Error) -> ToolError {
    if e.kind() == std::io::ErrorKind::NotFound {
        ToolError::respond(format!(
            "The output of task {id} is no longer kept: its file {} was pruned (finished tasks' output is deleted after the server's retention time, or when output files take more than their budget of the state directory). The task's status and exit code are still known",
            path.display()
        ))
    } else {
        ToolError::io(path, e)
    }
}

/// The last `cap` characters of a task's output, and whether it was cut.
fn output_tail(output: &Output, dir: &OutputDir, cap: usize) -> std::io::Result<(String, bool)> {
    let bytes = output.tail(dir, cap.saturating_mul(4))?;
    let whole = output.total() == bytes.len() as u64;
    let text = String::from_utf8_lossy(&bytes);
    let count = text.chars().count();
    if count <= cap && whole {
        return Ok((text.into_owned(), false));
    }
    let skip = count.saturating_sub(cap);
    Ok((text.chars().skip(skip).collect(), true))
}

/// Scans a growing output for a line matching a predicate, remembering where it stopped.
#[derive(Debug, Default)]
struct LineScanner {
    offset: u64,
    partial: Vec<u8>,
}

impl LineScanner {
    fn scan(
        &mut self,
        output: &Output,
        dir: &OutputDir,
        mut matches: impl FnMut(&str) -> bool,
    ) -> Option<String> {
        loop {
            let chunk = output.read_from(dir, self.offset, 64 * 1024).ok()?;
            if chunk.skipped > 0 {
                // The middle of a flood was dropped: the line in progress is incomplete.
                self.partial.clear();
            }
            if chunk.data.is_empty() {
                // The unterminated last line counts too (a prompt, "listening on ...").
                let line = String::from_utf8_lossy(&self.partial).into_owned();
                return (!line.is_empty() && matches(&line)).then_some(line);
            }
            self.offset = chunk.next;
            for &b in &chunk.data {
                if b == b'\n' {
                    let line = String::from_utf8_lossy(&self.partial).into_owned();
                    self.partial.clear();
                    if matches(&line) {
                        return Some(line);
                    }
                } else if self.partial.len() < 64 * 1024 {
                    self.partial.push(b);
                }
            }
        }
    }
}

/// Reports each new line of a monitor's output as a progress event, about once a second,
/// until the task ends.
/// The new lines also go to the session's event sink, one `monitor` event per wake-up.
async fn report_lines(
    spool: Spool,
    sink: ProgressSink,
    mut done: watch::Receiver<bool>,
    events: Option<(std::sync::Weak<Inner>, String)>,
) {
    let mut offset = 0_u64;
    let mut partial = String::new();
    let mut stop_after_next = false;
    loop {
        let finished = stop_after_next || *done.borrow();
        let mut lines: Vec<String> = Vec::new();
        if let Ok(chunk) = spool.read_from(offset, 1 << 20) {
            offset = chunk.next;
            if chunk.skipped > 0 {
                partial.clear();
                lines.push(format!("… [{} bytes dropped] …", chunk.skipped));
            }
            partial.push_str(&String::from_utf8_lossy(&chunk.data));
            while let Some(i) = partial.find('\n') {
                let line: String = partial.drain(..=i).collect();
                lines.push(line.trim_end_matches(['\n', '\r']).to_owned());
            }
        }
        if finished && !partial.is_empty() {
            lines.push(std::mem::take(&mut partial));
        }
        for line in &lines {
            sink.report(line.clone());
        }
        if !lines.is_empty()
            && let Some((inner, id)) = &events
            && let Some(events) = inner.upgrade().and_then(|i| i.events())
        {
            events.emit(SessionEvent {
                event: "monitor".to_owned(),
                id: Some(id.clone()),
                text: lines.join("\n"),
                data: serde_json::json!({ "lines": lines.len() }),
            });
        }
        if finished {
            return;
        }
        // Wake every second, or when the task ends (a closed channel also means it ended).
        let closed = tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => false,
            changed = done.changed() => changed.is_err(),
        };
        if closed {
            stop_after_next = true;
        }
    }
}

/// The last `cap` characters of a file (read in bounded memory) and whether it was cut.
/// The file is opened without following a link and must be a regular file.
pub fn read_tail(path: &Path, cap: usize) -> std::io::Result<(String, bool)> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc_flags())
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let len = meta.len();
    let want = (cap as u64).saturating_mul(4);
    let start = len.saturating_sub(want);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)?;
    let text = String::from_utf8_lossy(&buf);
    let count = text.chars().count();
    if count <= cap && start == 0 {
        return Ok((text.into_owned(), false));
    }
    let skip = count.saturating_sub(cap);
    Ok((text.chars().skip(skip).collect(), true))
}

/// `O_NOFOLLOW | O_NONBLOCK`: a link is refused and a FIFO does not block.
fn libc_flags() -> i32 {
    (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32
}

/// The reference's name of a status.
pub fn status_name(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Pending => "pending",
        TaskStatus::Running => "running",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Killed => "killed",
    }
}

#[async_trait]
impl TaskManager for ShellTasks {
    fn set_event_sink(&self, sink: EventSink) {
        if let Ok(mut events) = self.inner.events.lock() {
            *events = Some(sink);
        }
    }

    async fn start(&self, spec: TaskSpec) -> Result<TaskInfo, ToolError> {
        match spec.run {
            TaskRun::Shell { command, cwd, env } => {
                let prepared =
                    sandbox::prepare(&self.inner.sandbox, &self.inner.dirs, &cwd, false)?;
                if !env.is_empty() {
                    // Extra variables: prefix them the way a shell would, quoted.
                    let mut prefixed = String::new();
                    for (k, v) in &env {
                        if !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || k.is_empty()
                        {
                            return Err(ToolError::respond(format!(
                                "invalid environment variable name `{k}`"
                            )));
                        }
                        prefixed.push_str(&format!("export {k}='{}'; ", v.replace('\'', r"'\''")));
                    }
                    prefixed.push_str(&command);
                    return self
                        .start_shell(ShellTaskSpec {
                            kind: spec.kind,
                            description: spec.description,
                            command: prefixed,
                            cwd,
                            launch: prepared.launch,
                            time_limit: None,
                            progress: None,
                        })
                        .await;
                }
                self.start_shell(ShellTaskSpec {
                    kind: spec.kind,
                    description: spec.description,
                    command,
                    cwd,
                    launch: prepared.launch,
                    time_limit: None,
                    progress: None,
                })
                .await
            }
            TaskRun::Future(start) => {
                let (entry, output) = self.register(spec.kind, spec.description, None)?;
                if let Ok(mut i) = entry.info.lock() {
                    i.status = TaskStatus::Running;
                }
                let fut = start(entry.cancel.clone());
                let task_entry = Arc::clone(&entry);
                let dir = self.dir();
                let inner = Arc::downgrade(&self.inner);
                tokio::spawn(async move {
                    let TaskFinish {
                        status,
                        exit_code,
                        output: text,
                    } = fut.await;
                    // Through the spool, as a command's output: capped the same way.
                    let _ = tokio::task::spawn_blocking(move || {
                        use std::io::Write;
                        let mut pipe = std::fs::File::from(output);
                        if !text.is_empty() {
                            let _ = pipe.write_all(text.as_bytes());
                        }
                    })
                    .await;
                    if let Some(Output::Live(spool)) = task_entry.output() {
                        spool.finish().await;
                    }
                    if let Ok(dir) = &dir {
                        settle(&task_entry, dir).await;
                    }
                    let status = if task_entry.cancel.is_cancelled() && !status.is_terminal() {
                        TaskStatus::Killed
                    } else if status.is_terminal() {
                        status
                    } else {
                        TaskStatus::Completed
                    };
                    task_entry.finish(status, exit_code);
                    if let Some(inner) = inner.upgrade() {
                        inner.announce(&task_entry.snapshot());
                    }
                });
                Ok(entry.snapshot())
            }
        }
    }

    async fn get(&self, id: &str) -> Result<TaskInfo, ToolError> {
        Ok(self.entry(id)?.snapshot())
    }

    async fn list(&self) -> Result<Vec<TaskInfo>, ToolError> {
        let tasks = self
            .inner
            .tasks
            .lock()
            .map_err(|_| ToolError::fatal("internal error: the task table is poisoned"))?;
        let mut all: Vec<TaskInfo> = tasks.values().map(|e| e.snapshot()).collect();
        all.sort_by_key(|i| {
            i.id.trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .parse::<u64>()
                .unwrap_or(0)
        });
        Ok(all)
    }

    async fn wait(
        &self,
        id: &str,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<TaskInfo, ToolError> {
        let entry = self.entry(id)?;
        let mut done = entry.done.subscribe();
        let wait_done = async {
            loop {
                if *done.borrow_and_update() {
                    return;
                }
                if done.changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::select! {
            () = wait_done => {}
            () = tokio::time::sleep(timeout) => {}
            () = cancel.cancelled() => {}
        }
        Ok(entry.snapshot())
    }

    async fn stop(&self, id: &str) -> Result<TaskInfo, ToolError> {
        let entry = self.entry(id)?;
        let info = entry.snapshot();
        if info.status.is_terminal() {
            return Err(ToolError::respond(format!(
                "Task {} is not running (status: {})",
                info.id,
                status_name(info.status)
            )));
        }
        entry.cancel.cancel();
        let never = CancellationToken::new();
        let info = self
            .wait(id, KILL_GRACE + Duration::from_secs(3), &never)
            .await?;
        if !info.status.is_terminal() {
            // A future that ignores its token: mark it killed; it is abandoned.
            entry.finish(TaskStatus::Killed, None);
        }
        Ok(entry.snapshot())
    }

    async fn close(&self) {
        let entries: Vec<Arc<Entry>> = self
            .inner
            .tasks
            .lock()
            .map(|t| t.values().cloned().collect())
            .unwrap_or_default();
        for entry in &entries {
            entry.cancel.cancel();
        }
        // Each task settles (its process tree killed and reaped, its output parked) before
        // its files go; a future that ignores its token is abandoned after the wait
        // TaskStop gives it.
        let deadline = tokio::time::Instant::now() + KILL_GRACE + Duration::from_secs(3);
        for entry in &entries {
            let mut done = entry.done.subscribe();
            let _ = tokio::time::timeout_at(deadline, done.wait_for(|d| *d)).await;
        }
        if let Ok(mut tasks) = self.inner.tasks.lock() {
            tasks.clear();
        }
        let held = self.inner.dir.lock().ok().and_then(|mut d| d.take());
        drop(held);
        let path = self.inner.state_dir.join("tasks").join(&self.inner.unique);
        let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(path)).await;
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The session is over: stop every task still running (their process groups are
        // killed by the runners' drop as well).
        if let Ok(tasks) = self.tasks.lock() {
            for e in tasks.values() {
                e.cancel.cancel();
            }
        }
    }
}
