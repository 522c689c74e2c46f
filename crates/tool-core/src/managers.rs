//! The managers other categories provide through the context: language servers and
//! background tasks. Their implementations live in `tools-lsp` and `tools-shell`; until a
//! host wires them, [`Unconfigured`] answers every call with a clear error.

use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::ToolError;

/// One diagnostic a language server reported, with 1-based positions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDiagnostic {
    /// The file
    pub path: PathBuf,
    /// 1-based line
    pub line: u32,
    /// 1-based column
    pub character: u32,
    /// `error`, `warning`, `information` or `hint`
    pub severity: String,
    /// What the server said
    pub message: String,
    /// The server or checker that produced it
    pub source: Option<String>,
}

impl FileDiagnostic {
    /// One line for the model: `path:line:col: severity: message [source]`, the path
    /// relative to `cwd` when inside it; a message's further lines are indented.
    pub fn display(&self, cwd: &Path) -> String {
        let path = crate::path::display_path(&self.path, cwd);
        let source = self
            .source
            .as_deref()
            .map(|s| format!(" [{s}]"))
            .unwrap_or_default();
        format!(
            "{path}:{}:{}: {}: {}{source}",
            self.line,
            self.character,
            self.severity,
            self.message.trim_end().replace('\n', "\n    ")
        )
    }
}

/// Language servers, one per language and workspace root.
#[async_trait]
pub trait LspManager: Send + Sync + fmt::Debug {
    /// Whether a server is configured for `file`'s language.
    fn has_server_for(&self, file: &Path) -> bool;

    /// Sends a request (`textDocument/hover`, ...) to the server for `file`.
    async fn request(&self, file: &Path, method: &str, params: Value) -> Result<Value, ToolError>;

    /// Tells the server for `file` that its content changed and was saved.
    async fn did_change(&self, file: &Path, text: &str) -> Result<(), ToolError>;

    /// Like [`did_change`](Self::did_change), then waits a bounded time for the server's
    /// diagnostics of the new content and returns those the change introduced (none when no
    /// server is running for `file`). The default reports none.
    async fn did_change_diagnostics(
        &self,
        file: &Path,
        text: &str,
    ) -> Result<Vec<FileDiagnostic>, ToolError> {
        self.did_change(file, text).await.map(|()| Vec::new())
    }

    /// Current diagnostics of one file, or of every open file.
    async fn diagnostics(&self, file: Option<&Path>) -> Result<Vec<FileDiagnostic>, ToolError>;
}

/// The kind of a background task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// A shell command started with `run_in_background`
    LocalBash,
    /// A sub-agent started in the background
    LocalAgent,
    /// A Monitor command
    Monitor,
}

/// Where a background task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Accepted, not started
    Pending,
    /// Running
    Running,
    /// Finished successfully
    Completed,
    /// Finished with a failure
    Failed,
    /// Stopped by TaskStop or shutdown
    Killed,
}

impl TaskStatus {
    /// Whether the task has finished, one way or another.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Killed
        )
    }
}

/// A snapshot of one background task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskInfo {
    /// Identifier the model uses with TaskOutput and TaskStop
    pub id: String,
    /// What kind of task
    pub kind: TaskKind,
    /// Where it is
    pub status: TaskStatus,
    /// A short description
    pub description: String,
    /// The command, for shell and monitor tasks
    pub command: Option<String>,
    /// The exit code, once finished
    pub exit_code: Option<i32>,
    /// The file the task's output is written to
    pub output_path: PathBuf,
}

/// How a task ended, for tasks that run a future.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFinish {
    /// Completed, failed or killed
    pub status: TaskStatus,
    /// An exit code, when there is one
    pub exit_code: Option<i32>,
    /// Final output to append to the task's output file
    pub output: String,
}

/// Starts a task's future; it gets the task's cancellation token.
pub type TaskFuture =
    Box<dyn FnOnce(CancellationToken) -> Pin<Box<dyn Future<Output = TaskFinish> + Send>> + Send>;

/// The work of a task.
pub enum TaskRun {
    /// A shell command
    Shell {
        /// The command, run with `bash -c`
        command: String,
        /// Its working directory
        cwd: PathBuf,
        /// Extra environment variables
        env: Vec<(String, String)>,
    },
    /// A future, such as a sub-agent run; it should watch the token and stop when cancelled
    Future(TaskFuture),
}

impl fmt::Debug for TaskRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskRun::Shell { command, cwd, .. } => f
                .debug_struct("Shell")
                .field("command", command)
                .field("cwd", cwd)
                .finish_non_exhaustive(),
            TaskRun::Future(_) => f.write_str("Future(..)"),
        }
    }
}

/// A request to start a background task.
#[derive(Debug)]
pub struct TaskSpec {
    /// What kind of task
    pub kind: TaskKind,
    /// A short description
    pub description: String,
    /// The work
    pub run: TaskRun,
}

/// Background tasks of every kind: shell commands, agents, monitors.
#[async_trait]
pub trait TaskManager: Send + Sync + fmt::Debug {
    /// Starts a task and returns at once.
    async fn start(&self, spec: TaskSpec) -> Result<TaskInfo, ToolError>;

    /// Where the session's events go (a task that ended, new lines of a monitored command):
    /// see [`crate::ToolContext::set_event_sink`]. The default drops them.
    fn set_event_sink(&self, sink: crate::EventSink) {
        let _ = sink;
    }

    /// The task's current state.
    async fn get(&self, id: &str) -> Result<TaskInfo, ToolError>;

    /// Every task of this session.
    async fn list(&self) -> Result<Vec<TaskInfo>, ToolError>;

    /// Waits until the task finishes, `timeout` passes or `cancel` fires; returns its state.
    async fn wait(
        &self,
        id: &str,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<TaskInfo, ToolError>;

    /// Stops a running task (its whole process tree) and returns its final state.
    async fn stop(&self, id: &str) -> Result<TaskInfo, ToolError>;

    /// The session is over: stops every task still running (their process trees) and
    /// deletes what the manager kept for its tasks (their output files). The default does
    /// nothing.
    async fn close(&self) {}
}

/// The stand-in manager a context has until a host wires a real one: every call returns an
/// error that says what to configure.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unconfigured;

impl Unconfigured {
    fn no_lsp() -> ToolError {
        ToolError::respond(
            "No language server manager is configured: build with the `lsp` feature of the registry and configure a server in the settings' `lsp` section",
        )
    }

    fn no_tasks() -> ToolError {
        ToolError::respond(
            "No background task manager is configured: background tasks need the `shell` feature of the registry",
        )
    }
}

#[async_trait]
impl LspManager for Unconfigured {
    fn has_server_for(&self, _file: &Path) -> bool {
        false
    }
    async fn request(
        &self,
        _file: &Path,
        _method: &str,
        _params: Value,
    ) -> Result<Value, ToolError> {
        Err(Self::no_lsp())
    }
    async fn did_change(&self, _file: &Path, _text: &str) -> Result<(), ToolError> {
        Err(Self::no_lsp())
    }
    async fn diagnostics(&self, _file: Option<&Path>) -> Result<Vec<FileDiagnostic>, ToolError> {
        Err(Self::no_lsp())
    }
}

#[async_trait]
impl TaskManager for Unconfigured {
    async fn start(&self, _spec: TaskSpec) -> Result<TaskInfo, ToolError> {
        Err(Self::no_tasks())
    }
    async fn get(&self, _id: &str) -> Result<TaskInfo, ToolError> {
        Err(Self::no_tasks())
    }
    async fn list(&self) -> Result<Vec<TaskInfo>, ToolError> {
        Err(Self::no_tasks())
    }
    async fn wait(
        &self,
        _id: &str,
        _timeout: Duration,
        _cancel: &CancellationToken,
    ) -> Result<TaskInfo, ToolError> {
        Err(Self::no_tasks())
    }
    async fn stop(&self, _id: &str) -> Result<TaskInfo, ToolError> {
        Err(Self::no_tasks())
    }
}
