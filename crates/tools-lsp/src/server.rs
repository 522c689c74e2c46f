//! One running language server: the process (in its own process group), a reader thread
//! that dispatches responses, answers the server's own requests and caches diagnostics, and
//! the open documents with their versions.
//!
//! Pipes are plain blocking `std` pipes driven by threads, so that dropping a server can
//! send `shutdown` and `exit` and kill the process group synchronously, whatever state the
//! async runtime is in: no server outlives its manager.
//!
//! Positions: we advertise only UTF-16 (`general.positionEncodings: ["utf-16"]`), the
//! encoding every server must speak; pyright and typescript-language-server speak nothing
//! else, and one encoding means one conversion path (in `position.rs`), tested once.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use lsp_types::{Diagnostic, PublishDiagnosticsParams};
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};
use tool_core::{ProcessGroup, ToolError};

use crate::config::{LanguageServerConfig, extension_of, find_on_path, language_id};
use crate::position::{path_to_uri, uri_to_path};
use crate::transport::{Frame, MAX_MESSAGE_BYTES, read_frame, write_frame};

/// How long `initialize` may take (pyright needs about 2 s on a small project).
pub(crate) const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a write to the server's stdin may block before the server is declared stuck.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long dropping a server waits for `shutdown`'s answer, then for the process to exit.
const SHUTDOWN_WAIT: Duration = Duration::from_millis(1500);
const EXIT_WAIT: Duration = Duration::from_millis(1000);
/// At most this many documents stay open in one server; the least recently used is closed.
const MAX_OPEN_DOCUMENTS: usize = 200;
/// Lines of the server's stderr kept for error messages.
const STDERR_LINES: usize = 20;

type Reply = Result<Value, String>;

/// Whether a server has shown it is ready, and until when calls wait for it to.
#[derive(Debug)]
struct Readiness {
    /// The server's start plus its startup time
    deadline: tokio::time::Instant,
    /// It has shown it is ready
    shown: AtomicBool,
}

impl Readiness {
    fn new(startup: Duration) -> Readiness {
        Readiness {
            deadline: tokio::time::Instant::now() + startup,
            shown: AtomicBool::new(false),
        }
    }
}

/// A cached `publishDiagnostics`.
#[derive(Debug, Clone)]
pub(crate) struct Published {
    /// The document version the server said it analysed, when it said
    pub version: Option<i32>,
    /// The order in which publications arrived (server-wide)
    pub seq: u64,
    /// The diagnostics
    pub diagnostics: Vec<Diagnostic>,
}

/// State the reader thread shares with callers.
#[derive(Debug)]
struct ReaderState {
    name: String,
    pending: Mutex<HashMap<i64, oneshot::Sender<Reply>>>,
    diagnostics: Mutex<HashMap<PathBuf, Published>>,
    diag_seq: AtomicU64,
    /// Whether the server names the document version in its publications
    versioned: AtomicBool,
    diag_tx: watch::Sender<u64>,
    dead: AtomicBool,
    stderr_tail: Mutex<VecDeque<String>>,
    settings: Option<Value>,
    root_uri: String,
    root: PathBuf,
    writer: Mutex<std::fs::File>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ReaderState {
    fn write(&self, message: &Value) -> std::io::Result<()> {
        let body = serde_json::to_vec(message)?;
        write_frame(&mut *lock(&self.writer), &body)
    }

    fn stderr_summary(&self) -> String {
        let tail = lock(&self.stderr_tail);
        if tail.is_empty() {
            String::new()
        } else {
            let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
            format!("; its last output: {}", lines.join(" | "))
        }
    }

    fn gone(&self, method: &str) -> ToolError {
        ToolError::respond(format!(
            "the language server {} stopped while handling {method}{}; it will be restarted on the next call",
            self.name,
            self.stderr_summary()
        ))
    }

    /// The answer to one of the server's own requests.
    fn answer(&self, method: &str, params: &Value) -> Result<Value, (i64, String)> {
        match method {
            "workspace/configuration" => {
                let items = params
                    .get("items")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                Ok(Value::Array(
                    items
                        .iter()
                        .map(|item| {
                            let section = item.get("section").and_then(Value::as_str);
                            lookup_section(self.settings.as_ref(), section)
                        })
                        .collect(),
                ))
            }
            "client/registerCapability"
            | "client/unregisterCapability"
            | "window/workDoneProgress/create"
            | "workspace/diagnostic/refresh"
            | "workspace/semanticTokens/refresh"
            | "workspace/inlayHint/refresh"
            | "workspace/codeLens/refresh" => Ok(Value::Null),
            "workspace/workspaceFolders" => Ok(json!([{
                "uri": self.root_uri,
                "name": folder_name(&self.root),
            }])),
            "window/showMessageRequest" => Ok(Value::Null),
            "workspace/applyEdit" => Ok(json!({
                "applied": false,
                "failureReason": "this client does not apply edits from the server",
            })),
            _ => Err((
                -32601,
                format!("method not supported by this client: {method}"),
            )),
        }
    }

    fn on_message(&self, message: Value) {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = message.get("id").cloned();
        match (method, id) {
            (Some(method), Some(id)) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                let reply = match self.answer(&method, &params) {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err((code, text)) => json!({
                        "jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text}
                    }),
                };
                // A failed write means the server is gone; the reader sees EOF next.
                let _ = self.write(&reply);
            }
            (Some(method), None) => {
                if method == "textDocument/publishDiagnostics"
                    && let Some(params) = message.get("params")
                    && let Ok(p) =
                        serde_json::from_value::<PublishDiagnosticsParams>(params.clone())
                    && let Some(path) = uri_to_path(p.uri.as_str())
                {
                    let seq = self.diag_seq.fetch_add(1, Ordering::SeqCst) + 1;
                    if p.version.is_some() {
                        self.versioned.store(true, Ordering::SeqCst);
                    }
                    lock(&self.diagnostics).insert(
                        path,
                        Published {
                            version: p.version,
                            seq,
                            diagnostics: p.diagnostics,
                        },
                    );
                    self.diag_tx.send_replace(seq);
                }
            }
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { return };
                let Some(tx) = lock(&self.pending).remove(&id) else {
                    return;
                };
                let reply = match message.get("error") {
                    Some(error) => Err(format!(
                        "{} (code {})",
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("unknown error"),
                        error.get("code").and_then(Value::as_i64).unwrap_or(0)
                    )),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = tx.send(reply);
            }
            (None, None) => {}
        }
    }

    fn mark_dead(&self) {
        self.dead.store(true, Ordering::SeqCst);
        // Dropping the senders wakes every waiting request with an error.
        lock(&self.pending).clear();
        self.diag_tx.send_modify(|_| {});
    }
}

fn folder_name(root: &Path) -> String {
    root.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| root.display().to_string())
}

/// `settings` at a dotted `section` (`python.analysis`); null when absent.
fn lookup_section(settings: Option<&Value>, section: Option<&str>) -> Value {
    let Some(settings) = settings else {
        return Value::Null;
    };
    let Some(section) = section.filter(|s| !s.is_empty()) else {
        return settings.clone();
    };
    if let Some(v) = settings.get(section) {
        return v.clone();
    }
    section
        .split('.')
        .try_fold(settings, |v, key| v.get(key))
        .cloned()
        .unwrap_or(Value::Null)
}

/// A document the server has open.
#[derive(Debug, Clone)]
pub(crate) struct OpenDoc {
    /// The version last sent
    pub version: i32,
    /// The text last sent
    pub text: String,
    /// When it was last used (a counter), to close the least recently used
    pub used: u64,
}

/// How a document sync went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sync {
    /// The server had this text already
    Unchanged,
    /// The document was opened
    Opened,
    /// The server got a new version
    Changed,
}

/// typescript-language-server's command that forwards a request to tsserver.
const TSSERVER_REQUEST: &str = "typescript.tsserverRequest";

/// How a server's diagnostics of a file are asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pull {
    /// `textDocument/diagnostic`
    Lsp,
    /// tsserver's `syntacticDiagnosticsSync` and `semanticDiagnosticsSync`, through
    /// `workspace/executeCommand`
    Tsserver,
}

/// An LSP diagnostic from a tsserver one (1-based line and UTF-16 offset, `text`,
/// `category`), as typescript-language-server converts them.
fn from_tsserver(d: &Value) -> Option<Diagnostic> {
    let position = |p: &Value| -> Option<lsp_types::Position> {
        let line = p.get("line")?.as_u64()?.checked_sub(1)?;
        let offset = p.get("offset")?.as_u64()?.checked_sub(1)?;
        Some(lsp_types::Position::new(
            u32::try_from(line).ok()?,
            u32::try_from(offset).ok()?,
        ))
    };
    let severity = match d.get("category").and_then(Value::as_str) {
        Some("warning") => lsp_types::DiagnosticSeverity::WARNING,
        Some("suggestion") => lsp_types::DiagnosticSeverity::HINT,
        Some("message") => lsp_types::DiagnosticSeverity::INFORMATION,
        _ => lsp_types::DiagnosticSeverity::ERROR,
    };
    let tags = [
        ("reportsUnnecessary", lsp_types::DiagnosticTag::UNNECESSARY),
        ("reportsDeprecated", lsp_types::DiagnosticTag::DEPRECATED),
    ]
    .into_iter()
    .filter(|(key, _)| {
        d.get(*key)
            .is_some_and(|v| !v.is_null() && v != &Value::Bool(false))
    })
    .map(|(_, tag)| tag)
    .collect::<Vec<_>>();
    Some(Diagnostic {
        range: lsp_types::Range::new(position(d.get("start")?)?, position(d.get("end")?)?),
        severity: Some(severity),
        code: d
            .get("code")
            .and_then(Value::as_i64)
            .and_then(|c| i32::try_from(c).ok())
            .map(lsp_types::NumberOrString::Number),
        source: Some(
            d.get("source")
                .and_then(Value::as_str)
                .unwrap_or("typescript")
                .to_owned(),
        ),
        message: d.get("text").and_then(Value::as_str)?.to_owned(),
        tags: (!tags.is_empty()).then_some(tags),
        ..Diagnostic::default()
    })
}

/// The sandbox language servers run in (see `LanguageServers::with_sandbox`).
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    pub(crate) settings: sandbox::SandboxSettings,
    pub(crate) dirs: Vec<PathBuf>,
}

/// A running language server.
#[derive(Debug)]
pub(crate) struct Server {
    config: LanguageServerConfig,
    shared: Arc<ReaderState>,
    child: Mutex<Child>,
    pid: u32,
    /// Its process group, killed when the server is dropped
    group: ProcessGroup,
    /// How it is sandboxed
    sandbox: String,
    /// What its sandbox needs kept while it runs
    _hold: sandbox::SandboxHold,
    next_id: AtomicI64,
    docs: tokio::sync::Mutex<HashMap<PathBuf, OpenDoc>>,
    tick: AtomicU64,
    /// The server's capabilities, from its `initialize` answer
    capabilities: Value,
    /// Whether (and until when it is waited for) the server shows it is ready (see
    /// [`Server::wait_ready`])
    ready: Readiness,
    /// What the last workspace scan saw, to tell the server what changed on disk since
    files: tokio::sync::Mutex<Option<crate::watch::Snapshot>>,
}

impl Server {
    /// Starts `config`'s program in the workspace sandbox; says whether a sandbox holds it.
    fn launch(
        config: &LanguageServerConfig,
        root: &Path,
        sandbox: &Sandbox,
    ) -> Result<(sandbox::SandboxedProgram, bool), ToolError> {
        let program = find_on_path(&config.command).ok_or_else(|| {
            ToolError::respond(format!(
                "the language server command `{}` was not found (not on PATH or not a file); install it or change the `lsp` section of the settings",
                config.command
            ))
        })?;
        // The server runs project code (build scripts, proc macros, `go list`, plugins):
        // it runs in the workspace sandbox a person's approved command gets.
        let mut dirs = sandbox.dirs.clone();
        if !dirs.iter().any(|d| root.starts_with(d)) {
            dirs.push(root.to_path_buf());
        }
        let prepared = sandbox::prepare(&sandbox.settings, &dirs, root, false).map_err(|e| {
            ToolError::respond(format!(
                "the language server `{}` was not started: {e}",
                config.command_line()
            ))
        })?;
        let started = sandbox::spawn_program(&prepared, &program, &config.args, root, &config.env)
            .map_err(|e| {
                ToolError::respond(format!(
                    "could not start the language server `{}`: {e}",
                    config.command_line()
                ))
            })?;
        Ok((started, prepared.launch.policy().is_some()))
    }

    /// Starts `config` for the workspace `root` and runs `initialize`/`initialized`.
    pub(crate) async fn start(
        config: &LanguageServerConfig,
        root: &Path,
        sandbox: &Sandbox,
    ) -> Result<Arc<Server>, ToolError> {
        let name = config.name();
        let (started, sandboxed) = Self::launch(config, root, sandbox)?;
        let sandbox::SandboxedProgram {
            child,
            group,
            stdin,
            stdout,
            stderr,
            description,
            hold,
        } = started;
        let pid = child.id();
        let root_uri = path_to_uri(root)?;
        let (diag_tx, _) = watch::channel(0);
        let shared = Arc::new(ReaderState {
            name: name.clone(),
            pending: Mutex::new(HashMap::new()),
            diagnostics: Mutex::new(HashMap::new()),
            diag_seq: AtomicU64::new(0),
            versioned: AtomicBool::new(false),
            diag_tx,
            dead: AtomicBool::new(false),
            stderr_tail: Mutex::new(VecDeque::new()),
            settings: config.settings.clone(),
            root_uri: root_uri.clone(),
            root: root.to_path_buf(),
            writer: Mutex::new(stdin),
        });
        let reader_shared = Arc::clone(&shared);
        let mut child = child;
        let spawned = std::thread::Builder::new()
            .name(format!("lsp-{name}-reader"))
            .spawn(move || reader_loop(stdout, &reader_shared))
            .and_then(|_| match stderr {
                Some(stderr) => {
                    let stderr_shared = Arc::clone(&shared);
                    std::thread::Builder::new()
                        .name(format!("lsp-{name}-stderr"))
                        .spawn(move || stderr_loop(stderr, &stderr_shared))
                        .map(|_| ())
                }
                None => Ok(()),
            });
        if let Err(e) = spawned {
            kill_group(&group, &mut child);
            return Err(ToolError::fatal(format!(
                "could not start a reader thread: {e}"
            )));
        }
        let mut server = Server {
            config: config.clone(),
            shared,
            child: Mutex::new(child),
            pid,
            group,
            sandbox: description,
            _hold: hold,
            next_id: AtomicI64::new(1),
            docs: tokio::sync::Mutex::new(HashMap::new()),
            tick: AtomicU64::new(0),
            capabilities: Value::Null,
            ready: Readiness::new(config.startup_timeout),
            files: tokio::sync::Mutex::new(None),
        };
        let mut params = initialize_params(config, root, &root_uri);
        if sandboxed {
            // Inside a sandbox this process is out of the server's sight (another pid
            // namespace, or signals scoped by Landlock): a server that watches the client's
            // process id (vscode-languageserver does, every few seconds) would take it for
            // dead and exit. The manager ends its servers itself.
            params["processId"] = Value::Null;
        }
        let answer = server
            .request_with_timeout("initialize", params, INITIALIZE_TIMEOUT)
            .await
            .map_err(|e| {
                ToolError::respond(format!(
                    "the language server `{}` failed to initialize: {e}",
                    config.command_line()
                ))
            })?;
        server.capabilities = answer.get("capabilities").cloned().unwrap_or(Value::Null);
        server.notify("initialized", json!({})).await?;
        if let Some(settings) = &config.settings {
            server
                .notify(
                    "workspace/didChangeConfiguration",
                    json!({ "settings": settings }),
                )
                .await?;
        }
        Ok(Arc::new(server))
    }

    /// How it was started.
    pub(crate) fn config(&self) -> &LanguageServerConfig {
        &self.config
    }

    /// The server's name, for messages.
    pub(crate) fn name(&self) -> &str {
        &self.shared.name
    }

    /// The workspace root.
    pub(crate) fn root(&self) -> &Path {
        &self.shared.root
    }

    /// The process id (also the process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// How it is sandboxed: `bubblewrap (workspace-write, network off)`, ...
    pub(crate) fn sandbox(&self) -> &str {
        &self.sandbox
    }

    /// Whether the process is still running and talking.
    pub(crate) fn is_alive(&self) -> bool {
        if self.shared.dead.load(Ordering::SeqCst) {
            return false;
        }
        match lock(&self.child).try_wait() {
            Ok(None) => true,
            _ => {
                self.shared.mark_dead();
                false
            }
        }
    }

    async fn send(&self, message: Value, method: &str) -> Result<(), ToolError> {
        let shared = Arc::clone(&self.shared);
        let write = tokio::task::spawn_blocking(move || shared.write(&message));
        match tokio::time::timeout(WRITE_TIMEOUT, write).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(_)) | Err(_)) => {
                self.shared.mark_dead();
                Err(self.shared.gone(method))
            }
            Err(_) => {
                // The server stopped reading: it is stuck; kill it so the write unblocks.
                self.shared.mark_dead();
                kill_group(&self.group, &mut lock(&self.child));
                Err(ToolError::respond(format!(
                    "the language server {} stopped reading its input while sending {method}; it was stopped and will be restarted on the next call",
                    self.name()
                )))
            }
        }
    }

    /// Sends a notification.
    pub(crate) async fn notify(&self, method: &str, params: Value) -> Result<(), ToolError> {
        if self.shared.dead.load(Ordering::SeqCst) {
            return Err(self.shared.gone(method));
        }
        self.send(
            json!({"jsonrpc": "2.0", "method": method, "params": params}),
            method,
        )
        .await
    }

    /// Sends a request and waits for its answer, at most the configured request timeout.
    pub(crate) async fn request(&self, method: &str, params: Value) -> Result<Value, ToolError> {
        self.request_with_timeout(method, params, self.config.request_timeout)
            .await
    }

    /// Sends a request and waits at most `limit`; on timeout or when the caller stops
    /// waiting, the server gets `$/cancelRequest`.
    pub(crate) async fn request_with_timeout(
        &self,
        method: &str,
        params: Value,
        limit: Duration,
    ) -> Result<Value, ToolError> {
        if self.shared.dead.load(Ordering::SeqCst) {
            return Err(self.shared.gone(method));
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.pending).insert(id, tx);
        let guard = CancelGuard {
            shared: &self.shared,
            id,
        };
        self.send(
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
            method,
        )
        .await?;
        let outcome = tokio::time::timeout(limit, rx).await;
        drop(guard);
        match outcome {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(message))) => Err(ToolError::respond(format!(
                "the language server {} answered {method} with an error: {message}",
                self.name()
            ))),
            Ok(Err(_)) => Err(self.shared.gone(method)),
            Err(_) => Err(ToolError::respond(format!(
                "the language server {} did not answer {method} within {:.1} s; the request was cancelled",
                self.name(),
                limit.as_secs_f64()
            ))),
        }
    }

    /// Makes the server's copy of `path` equal to `text` (read from disk when `None`):
    /// `didOpen` the first time, then `didChange` with the next version and `didSave`.
    pub(crate) async fn sync_document(
        &self,
        path: &Path,
        text: Option<&str>,
    ) -> Result<(Sync, i32), ToolError> {
        let uri = path_to_uri(path)?;
        let text = match text {
            Some(t) => t.to_owned(),
            None => match tokio::fs::read(path).await {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) => {
                    if e.kind() == std::io::ErrorKind::NotFound {
                        // The file is gone: the server should forget it too.
                        self.close_document(path).await?;
                    }
                    return Err(ToolError::io(path, e));
                }
            },
        };
        let mut docs = self.docs.lock().await;
        let tick = self.tick.fetch_add(1, Ordering::SeqCst);
        match docs.get_mut(path) {
            Some(doc) if doc.text == text => {
                doc.used = tick;
                Ok((Sync::Unchanged, doc.version))
            }
            Some(doc) => {
                doc.used = tick;
                let version = doc.version + 1;
                self.notify(
                    "textDocument/didChange",
                    json!({
                        "textDocument": {"uri": uri, "version": version},
                        "contentChanges": [{"text": text}],
                    }),
                )
                .await?;
                self.notify(
                    "textDocument/didSave",
                    json!({"textDocument": {"uri": uri}}),
                )
                .await?;
                doc.version = version;
                doc.text = text;
                Ok((Sync::Changed, version))
            }
            None => {
                let ext = extension_of(path).unwrap_or_default();
                let language = self
                    .config
                    .language_id
                    .clone()
                    .unwrap_or_else(|| language_id(&ext).to_owned());
                self.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {
                        "uri": uri, "languageId": language, "version": 1, "text": text,
                    }}),
                )
                .await?;
                docs.insert(
                    path.to_path_buf(),
                    OpenDoc {
                        version: 1,
                        text,
                        used: tick,
                    },
                );
                // Keep the server's memory bounded: close the least recently used document.
                if docs.len() > MAX_OPEN_DOCUMENTS
                    && let Some(oldest) = docs
                        .iter()
                        .filter(|(p, _)| p.as_path() != path)
                        .min_by_key(|(_, d)| d.used)
                        .map(|(p, _)| p.clone())
                {
                    docs.remove(&oldest);
                    lock(&self.shared.diagnostics).remove(&oldest);
                    self.notify(
                        "textDocument/didClose",
                        json!({"textDocument": {"uri": path_to_uri(&oldest)?}}),
                    )
                    .await?;
                }
                Ok((Sync::Opened, 1))
            }
        }
    }

    /// `didClose` for `path` when it is open; its cached diagnostics are dropped.
    pub(crate) async fn close_document(&self, path: &Path) -> Result<(), ToolError> {
        let mut docs = self.docs.lock().await;
        if docs.remove(path).is_some() {
            lock(&self.shared.diagnostics).remove(path);
            self.notify(
                "textDocument/didClose",
                json!({"textDocument": {"uri": path_to_uri(path)?}}),
            )
            .await?;
        }
        Ok(())
    }

    /// The text the server has for `path`, when it is open.
    pub(crate) async fn open_text(&self, path: &Path) -> Option<String> {
        self.docs.lock().await.get(path).map(|d| d.text.clone())
    }

    /// Every open document's path.
    pub(crate) async fn open_paths(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = self.docs.lock().await.keys().cloned().collect();
        paths.sort();
        paths
    }

    /// The last diagnostics published for `path`.
    pub(crate) fn published(&self, path: &Path) -> Option<Published> {
        lock(&self.shared.diagnostics).get(path).cloned()
    }

    /// The sequence number of the last publication, server-wide.
    pub(crate) fn diagnostics_seq(&self) -> u64 {
        self.shared.diag_seq.load(Ordering::SeqCst)
    }

    /// Whether the server has named document versions in its publications (pyright does;
    /// typescript-language-server does not).
    pub(crate) fn versioned(&self) -> bool {
        self.shared.versioned.load(Ordering::SeqCst)
    }

    /// How the server can be asked for a file's diagnostics, if it can.
    fn pull_kind(&self) -> Option<Pull> {
        let caps = &self.capabilities;
        if caps
            .get("diagnosticProvider")
            .is_some_and(|p| !p.is_null() && p != &Value::Bool(false))
        {
            return Some(Pull::Lsp);
        }
        let commands = caps
            .pointer("/executeCommandProvider/commands")
            .and_then(Value::as_array);
        if commands.is_some_and(|c| c.iter().any(|c| c == TSSERVER_REQUEST)) {
            return Some(Pull::Tsserver);
        }
        None
    }

    /// Whether the server's first publications tell when it has loaded a project: every
    /// server but one that offers `textDocument/diagnostic`. (typescript-language-server
    /// sends references to its syntax server, which sees one file, until its semantic
    /// server has reported diagnostics; a diagnostics request through tsserver does not end
    /// that.)
    pub(crate) fn shows_readiness_in_publications(&self) -> bool {
        self.pull_kind() != Some(Pull::Lsp)
    }

    /// Whether the server's diagnostics of a file can be asked for (see
    /// [`pull_diagnostics`](Self::pull_diagnostics)) rather than waited for.
    pub(crate) fn pulls_diagnostics(&self) -> bool {
        self.pull_kind().is_some()
    }

    /// The server's diagnostics of `path` now, asked for: `textDocument/diagnostic` where the
    /// server offers it (pull diagnostics); for typescript-language-server, which offers no
    /// pull but forwards requests to tsserver, tsserver's synchronous syntactic and semantic
    /// diagnostics. `None` when the server cannot be asked, did not answer within `limit`,
    /// or answered with something else than a full report.
    pub(crate) async fn pull_diagnostics(
        &self,
        path: &Path,
        limit: Duration,
    ) -> Option<Vec<Diagnostic>> {
        let kind = self.pull_kind()?;
        if limit.is_zero() {
            return None;
        }
        match kind {
            Pull::Lsp => {
                let uri = path_to_uri(path).ok()?;
                let answer = self
                    .request_with_timeout(
                        "textDocument/diagnostic",
                        json!({"textDocument": {"uri": uri}}),
                        limit,
                    )
                    .await
                    .ok()?;
                if answer.get("kind").and_then(Value::as_str) != Some("full") {
                    return None;
                }
                serde_json::from_value(answer.get("items").cloned().unwrap_or(Value::Null)).ok()
            }
            Pull::Tsserver => {
                let deadline = tokio::time::Instant::now() + limit;
                let mut out = Vec::new();
                for command in ["syntacticDiagnosticsSync", "semanticDiagnosticsSync"] {
                    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                    let answer = self
                        .request_with_timeout(
                            "workspace/executeCommand",
                            json!({
                                "command": TSSERVER_REQUEST,
                                "arguments": [command, {"file": path.display().to_string()}],
                            }),
                            left,
                        )
                        .await
                        .ok()?;
                    if answer.get("success") != Some(&Value::Bool(true)) {
                        return None;
                    }
                    out.extend(
                        answer
                            .get("body")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(from_tsserver),
                    );
                }
                Some(out)
            }
        }
    }

    /// Waits until the server has shown it is ready — its first diagnostics of any file (a
    /// pull of `path` for a server that offers `textDocument/diagnostic`) — or its startup
    /// time (`startupTimeoutMs`, counted from its start) is over; whether it is ready. A
    /// server answers from a partial view until it has loaded the project
    /// (typescript-language-server's syntax server finds only the import for a definition
    /// and no reference in a file it has not opened; pyright has not listed the workspace's
    /// files). Every caller, the first one and those beside or after it (an edit's check of
    /// the files it breaks included), waits for that same moment, so none slips past it;
    /// only a server that has shown it is ready counts as ready, so a startup that ran out
    /// of time is never mistaken for one.
    pub(crate) async fn wait_ready(&self, path: &Path) -> bool {
        if self.ready.shown.load(Ordering::SeqCst) {
            return true;
        }
        let left = || {
            self.ready
                .deadline
                .saturating_duration_since(tokio::time::Instant::now())
        };
        let shown = (!self.shows_readiness_in_publications()
            && !left().is_zero()
            && self.pull_diagnostics(path, left()).await.is_some())
            || self.diagnostics_seq() > 0
            || self.wait_publication(0, left()).await.is_some();
        if shown {
            self.ready.shown.store(true, Ordering::SeqCst);
        }
        shown
    }

    /// Waits until any publication arrives after publication `after`; its sequence
    /// number, or `None` after `limit` (or when the server died).
    pub(crate) async fn wait_publication(&self, after: u64, limit: Duration) -> Option<u64> {
        let mut rx = self.shared.diag_tx.subscribe();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let seq = *rx.borrow_and_update();
            if seq > after {
                return Some(seq);
            }
            if self.shared.dead.load(Ordering::SeqCst) {
                return None;
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                _ => return None,
            }
        }
    }

    /// The workspace snapshot slot (see `watch.rs`).
    pub(crate) fn files(&self) -> &tokio::sync::Mutex<Option<crate::watch::Snapshot>> {
        &self.files
    }

    /// Waits until the server publishes diagnostics for `path` after publication `after`
    /// and for version `version` or later (when it names one); `None` after `limit`.
    pub(crate) async fn wait_diagnostics(
        &self,
        path: &Path,
        version: i32,
        after: u64,
        limit: Duration,
    ) -> Option<Published> {
        let mut rx = self.shared.diag_tx.subscribe();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            rx.borrow_and_update();
            if let Some(p) = self.published(path)
                && p.seq > after
                && p.version.is_none_or(|v| v >= version)
            {
                return Some(p);
            }
            if self.shared.dead.load(Ordering::SeqCst) {
                return None;
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                _ => return None,
            }
        }
    }
}

/// Removes a request that is no longer awaited and tells the server to drop it.
struct CancelGuard<'a> {
    shared: &'a ReaderState,
    id: i64,
}

impl Drop for CancelGuard<'_> {
    fn drop(&mut self) {
        if lock(&self.shared.pending).remove(&self.id).is_some() {
            let _ = self.shared.write(&json!({
                "jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": self.id}
            }));
        }
    }
}

impl Drop for Server {
    /// `shutdown` (answered or not within a moment), `exit`, then the whole process group
    /// is killed and the process reaped.
    fn drop(&mut self) {
        let mut child = lock(&self.child);
        if !self.shared.dead.load(Ordering::SeqCst) && matches!(child.try_wait(), Ok(None)) {
            let id = self.next_id.fetch_add(1, Ordering::SeqCst);
            let (tx, mut rx) = oneshot::channel();
            lock(&self.shared.pending).insert(id, tx);
            if self
                .shared
                .write(&json!({"jsonrpc": "2.0", "id": id, "method": "shutdown", "params": null}))
                .is_ok()
            {
                let deadline = Instant::now() + SHUTDOWN_WAIT;
                while Instant::now() < deadline
                    && matches!(rx.try_recv(), Err(oneshot::error::TryRecvError::Empty))
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                let _ = self
                    .shared
                    .write(&json!({"jsonrpc": "2.0", "method": "exit", "params": null}));
                let deadline = Instant::now() + EXIT_WAIT;
                while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
        kill_group(&self.group, &mut child);
    }
}

/// Kills the process group the child leads and reaps the child.
fn kill_group(group: &ProcessGroup, child: &mut Child) {
    group.kill();
    let _ = child.kill();
    let _ = child.wait();
}

fn reader_loop(stdout: std::fs::File, shared: &ReaderState) {
    let mut reader = BufReader::new(stdout);
    loop {
        match read_frame(&mut reader, MAX_MESSAGE_BYTES) {
            Ok(Frame::Message(body)) => {
                if let Ok(message) = serde_json::from_slice::<Value>(&body) {
                    shared.on_message(message);
                }
            }
            Ok(Frame::TooLarge(n)) => {
                let mut tail = lock(&shared.stderr_tail);
                tail.push_back(format!(
                    "(a {n}-byte message from the server was dropped: over the {MAX_MESSAGE_BYTES}-byte cap)"
                ));
                if tail.len() > STDERR_LINES {
                    tail.pop_front();
                }
            }
            Ok(Frame::Eof) | Err(_) => break,
        }
    }
    shared.mark_dead();
}

fn stderr_loop(stderr: std::fs::File, shared: &ReaderState) {
    let mut reader = BufReader::new(stderr);
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let text = line.trim_end();
                if !text.is_empty() {
                    let mut tail = lock(&shared.stderr_tail);
                    tail.push_back(text.chars().take(300).collect());
                    if tail.len() > STDERR_LINES {
                        tail.pop_front();
                    }
                }
            }
        }
    }
}

fn initialize_params(config: &LanguageServerConfig, root: &Path, root_uri: &str) -> Value {
    let mut params = json!({
        "processId": std::process::id(),
        "clientInfo": {"name": "agent-tools", "version": env!("CARGO_PKG_VERSION")},
        "locale": "en",
        "rootPath": root.display().to_string(),
        "rootUri": root_uri,
        "workspaceFolders": [{"uri": root_uri, "name": folder_name(root)}],
        "trace": "off",
        "capabilities": {
            "general": {"positionEncodings": ["utf-16"]},
            "workspace": {
                "configuration": true,
                "workspaceFolders": true,
                "didChangeConfiguration": {"dynamicRegistration": false},
                "symbol": {"dynamicRegistration": false},
                "applyEdit": false,
                // The client reports files created, changed or deleted on disk (found by a
                // bounded scan before each request); pyright sets up its watchers only when
                // a client says it can, and otherwise never sees a file added after start.
                "didChangeWatchedFiles": {"dynamicRegistration": true, "relativePatternSupport": false},
            },
            "textDocument": {
                "synchronization": {"dynamicRegistration": false, "didSave": true, "willSave": false},
                // typescript-language-server publishes no diagnostics without this.
                "publishDiagnostics": {
                    "relatedInformation": false,
                    "versionSupport": true,
                    "tagSupport": {"valueSet": [1, 2]},
                },
                "hover": {"dynamicRegistration": false, "contentFormat": ["markdown", "plaintext"]},
                "definition": {"dynamicRegistration": false, "linkSupport": true},
                "implementation": {"dynamicRegistration": false, "linkSupport": true},
                "references": {"dynamicRegistration": false},
                "documentSymbol": {
                    "dynamicRegistration": false,
                    "hierarchicalDocumentSymbolSupport": true,
                },
                "callHierarchy": {"dynamicRegistration": false},
                // Pull diagnostics, for a server that offers them statically (pyright offers
                // them only by dynamic registration, and then stops publishing: it keeps
                // publishing here).
                "diagnostic": {"dynamicRegistration": false, "relatedDocumentSupport": false},
            },
            "window": {"workDoneProgress": true, "showMessage": {}},
        },
    });
    if let Some(options) = &config.initialization_options {
        params["initializationOptions"] = options.clone();
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsserver_diagnostics_become_lsp_diagnostics() {
        let d = from_tsserver(&json!({
            "start": {"line": 3, "offset": 18}, "end": {"line": 3, "offset": 23},
            "text": "Expected 2 arguments, but got 1.", "code": 2554, "category": "error",
        }))
        .unwrap_or_default();
        assert_eq!(
            (
                d.range.start.line,
                d.range.start.character,
                d.range.end.character
            ),
            (2, 17, 22)
        );
        assert_eq!(d.severity, Some(lsp_types::DiagnosticSeverity::ERROR));
        assert_eq!(d.code, Some(lsp_types::NumberOrString::Number(2554)));
        assert_eq!(d.source.as_deref(), Some("typescript"));
        assert_eq!(d.message, "Expected 2 arguments, but got 1.");
        let hint = from_tsserver(&json!({
            "start": {"line": 1, "offset": 1}, "end": {"line": 1, "offset": 2},
            "text": "unused", "category": "suggestion", "reportsUnnecessary": {},
        }))
        .unwrap_or_default();
        assert_eq!(hint.severity, Some(lsp_types::DiagnosticSeverity::HINT));
        assert_eq!(hint.tags, Some(vec![lsp_types::DiagnosticTag::UNNECESSARY]));
        for bad in [
            json!({"start": {"line": 0, "offset": 1}, "end": {"line": 1, "offset": 1}, "text": "x"}),
            json!({"start": {"line": 1, "offset": 1}, "end": {"line": 1, "offset": 1}}),
            json!("x"),
        ] {
            assert!(from_tsserver(&bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn configuration_sections_are_looked_up() {
        let settings = json!({"python": {"analysis": {"typeCheckingMode": "strict"}}, "a.b": 1});
        assert_eq!(
            lookup_section(Some(&settings), Some("python.analysis")),
            json!({"typeCheckingMode": "strict"})
        );
        assert_eq!(lookup_section(Some(&settings), Some("a.b")), json!(1));
        assert_eq!(
            lookup_section(Some(&settings), Some("missing.x")),
            Value::Null
        );
        assert_eq!(lookup_section(None, Some("python")), Value::Null);
        assert_eq!(lookup_section(Some(&settings), None), settings);
    }
}
