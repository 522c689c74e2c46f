//! [`LanguageServers`]: tool-core's `LspManager`, one server per (server command, workspace
//! root), started on first use, restarted on the next use after a crash, stopped (with
//! `shutdown`, `exit`, then its process group killed) when the manager is dropped.
//!
//! Before each use the server hears what changed on disk since the last one (`watch.rs`):
//! files created, changed or deleted, as `workspace/didChangeWatchedFiles`; a new file is
//! also opened (a few per scan), which pyright takes at once, where its watcher waits for a
//! timer; an open document whose file changed is sent again.
//!
//! After an edit (`did_change_diagnostics`), the diagnostics reported are the ones the
//! change introduced in the edited file and in the other files it broke. Before the change
//! is sent, the server is asked which symbols the changed lines touch and who refers to
//! them (`impact.rs`); those files are opened and their diagnostics taken as they were
//! (pulled, where the server offers `textDocument/diagnostic`, published otherwise). After
//! the change, the same files' new diagnostics are compared with those; a file whose state
//! before is unknown counts only diagnostics on the lines that refer to what changed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use lsp_types::{
    Diagnostic, DiagnosticSeverity, DiagnosticTag, DocumentSymbolResponse, Location, NumberOrString,
};
use serde_json::{Value, json};
use tool_core::{FileDiagnostic, LspManager, ToolError};

use crate::config::{LspConfig, extension_of, find_root};
use crate::impact::{self, Users};
use crate::position::{line_of, path_to_uri, utf16_to_char};
use crate::server::{Published, Sandbox, Server, Sync};
use crate::watch::{self, Change};

/// How long an edit waits, after its change is sent, for the diagnostics of the edited file
/// and of the other files it may break.
pub const CHANGE_DIAGNOSTICS_WAIT: Duration = Duration::from_secs(5);
/// How long an edit spends, before its change is sent, finding the files that use what it
/// changes and their diagnostics before the change.
pub const IMPACT_WAIT: Duration = Duration::from_secs(2);
/// At most this many other files are checked after an edit.
pub const MAX_AFFECTED_FILES: usize = 10;
/// After an edit, once no publication came for this long, files still silent are taken as
/// unchanged (servers publish only diagnostics that changed).
const AFFECTED_QUIET: Duration = Duration::from_secs(1);
/// At most this many new files are opened in a server per scan.
const MAX_BACKGROUND_OPENS: usize = 20;
/// How long the `diagnostics` operation waits for a file's first diagnostics (a server
/// that has just started may still be analysing the workspace).
pub const DIAGNOSTICS_WAIT: Duration = Duration::from_secs(20);

/// How long a request waits, after opening a document in a server that is ready, for the
/// server's first diagnostics of it (the server's own readiness is waited for within its
/// startup time, `LanguageServerConfig::startup_timeout`).
const OPEN_WAIT: Duration = Duration::from_secs(3);

/// A server that does not name versions may publish a file's diagnostics in parts
/// (typescript-language-server: syntax, semantic, suggestion, 50 ms apart): after a
/// publication, later ones within this quiet time replace it.
const SETTLE: Duration = Duration::from_millis(400);
/// Such a server publishes nothing when a change leaves a file's diagnostics as they were;
/// after this long the cached ones stand.
const UNVERSIONED_CHANGE_WAIT: Duration = Duration::from_secs(2);

type Slot = Arc<tokio::sync::Mutex<Option<Arc<Server>>>>;

/// A running server, as [`LanguageServers::running`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// The program's name
    pub name: String,
    /// The workspace root
    pub root: PathBuf,
    /// The process id, which is also its process group id
    pub pid: u32,
    /// How it is sandboxed: `bubblewrap (workspace-write, network off)`, ...
    pub sandbox: String,
}

/// The language servers of a session.
#[derive(Debug)]
pub struct LanguageServers {
    config: LspConfig,
    cwd: PathBuf,
    slots: Mutex<HashMap<(String, PathBuf), Slot>>,
    sandbox: Sandbox,
}

fn canonical(file: &Path) -> PathBuf {
    std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf())
}

/// "No LSP server available for file type: .ext", the reference's words.
pub(crate) fn no_server(file: &Path) -> ToolError {
    let ext = extension_of(file)
        .map(|e| format!(".{e}"))
        .unwrap_or_else(|| {
            file.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
    ToolError::respond(format!(
        "No LSP server available for file type: {ext}. Configure one in the `lsp` section of the settings, such as \"lsp\": {{\"{}\": \"my-language-server --stdio\"}}",
        ext.trim_start_matches('.')
    ))
}

impl LanguageServers {
    /// A manager for `config`; relative roots fall back to `cwd`. Servers run in the
    /// default workspace sandbox with `cwd` as the working directory (see
    /// [`LanguageServers::with_sandbox`]).
    pub fn new(config: LspConfig, cwd: impl Into<PathBuf>) -> Self {
        let cwd = cwd.into();
        LanguageServers {
            config,
            slots: Mutex::new(HashMap::new()),
            sandbox: Sandbox {
                settings: sandbox::SandboxSettings::default(),
                dirs: vec![cwd.clone()],
            },
            cwd,
        }
    }

    /// Runs the servers in the sandbox of `settings` (the session's `sandbox` section) with
    /// `dirs` as the working directories: language servers run project code (build
    /// scripts, proc macros, `go list`, plugins), so they get the workspace sandbox a
    /// person's approved command gets — writes only in the working directories and the
    /// temporary directory, no network, the scrubbed environment, the resource limits.
    pub fn with_sandbox(mut self, settings: sandbox::SandboxSettings, dirs: Vec<PathBuf>) -> Self {
        self.sandbox = Sandbox { settings, dirs };
        self
    }

    /// The configuration.
    pub fn config(&self) -> &LspConfig {
        &self.config
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<(String, PathBuf), Slot>> {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn all_slots(&self) -> Vec<Slot> {
        self.slots().values().cloned().collect()
    }

    /// The servers that are running now.
    pub async fn running(&self) -> Vec<ServerStatus> {
        let mut out = Vec::new();
        for slot in self.all_slots() {
            if let Some(server) = slot.lock().await.as_ref()
                && server.is_alive()
            {
                out.push(ServerStatus {
                    name: server.name().to_owned(),
                    root: server.root().to_path_buf(),
                    pid: server.pid(),
                    sandbox: server.sandbox().to_owned(),
                });
            }
        }
        out.sort_by(|a, b| (&a.name, &a.root).cmp(&(&b.name, &b.root)));
        out
    }

    /// Stops every server now (as dropping the manager would).
    pub async fn shutdown(&self) {
        for slot in self.all_slots() {
            let server = slot.lock().await.take();
            if let Some(server) = server {
                // The protocol exchange blocks for a moment: keep it off the async threads.
                let _ = tokio::task::spawn_blocking(move || drop(server)).await;
            }
        }
    }

    /// The server for `file`: the running one, or (when `start`) a new one; a server that
    /// died is replaced. `Ok(None)` when none is configured, or none runs and `start` is
    /// false.
    async fn server(&self, file: &Path, start: bool) -> Result<Option<Arc<Server>>, ToolError> {
        let Some(config) = self.config.server_for(file) else {
            return Ok(None);
        };
        let root = find_root(file, &config.root_markers, &self.cwd);
        let slot = self
            .slots()
            .entry((config.command_line(), root.clone()))
            .or_default()
            .clone();
        let mut guard = slot.lock().await;
        if let Some(server) = guard.as_ref()
            && server.is_alive()
        {
            return Ok(Some(Arc::clone(server)));
        }
        if let Some(dead) = guard.take() {
            let _ = tokio::task::spawn_blocking(move || drop(dead)).await;
        }
        if !start {
            return Ok(None);
        }
        let server = Server::start(config, &root, &self.sandbox).await?;
        *guard = Some(Arc::clone(&server));
        drop(guard);
        self.refresh_files(&server, None).await;
        Ok(Some(server))
    }

    /// Tells `server` what changed on disk in its workspace since the last scan (the first
    /// scan only records what is there). `skip` is left alone: an edit syncs it itself.
    async fn refresh_files(&self, server: &Server, skip: Option<&Path>) {
        let extensions = self.config.extensions_of(server.config());
        let root = server.root().to_path_buf();
        let Ok(snapshot) = tokio::task::spawn_blocking(move || {
            watch::scan(&root, &extensions, watch::MAX_SCAN_ENTRIES)
        })
        .await
        else {
            return;
        };
        let changes = {
            let mut slot = server.files().lock().await;
            let Some(old) = slot.replace(snapshot.clone()) else {
                return;
            };
            watch::changes(&old, &snapshot)
        };
        if changes.is_empty() {
            return;
        }
        let open = server.open_paths().await;
        let mut events = Vec::new();
        let mut resync = Vec::new();
        let mut to_open = Vec::new();
        for (path, change) in changes {
            if skip == Some(path.as_path()) {
                continue;
            }
            if open.binary_search(&path).is_ok() {
                resync.push(path);
                continue;
            }
            if let Ok(uri) = path_to_uri(&path) {
                events.push(json!({"uri": uri, "type": change as u8}));
            }
            if change == Change::Created && to_open.len() < MAX_BACKGROUND_OPENS {
                to_open.push(path);
            }
        }
        if !events.is_empty() {
            let _ = server
                .notify(
                    "workspace/didChangeWatchedFiles",
                    json!({ "changes": events }),
                )
                .await;
        }
        // Errors (a file gone meanwhile) leave the server as it was: nothing to report.
        for path in resync.iter().chain(&to_open) {
            let _ = server.sync_document(path, None).await;
        }
    }

    /// Whether `path` belongs to `server`: the same command and the same workspace root.
    fn serves(&self, server: &Server, path: &Path) -> bool {
        self.config.server_for(path).is_some_and(|c| {
            c.command_line() == server.config().command_line()
                && find_root(path, &c.root_markers, &self.cwd) == server.root()
        })
    }

    /// The files that refer to what a change of `file` touches: the touched symbols from
    /// the server's outline of `text` (what the server has now; `lines` the changed lines,
    /// `None` for every symbol at the top), then their references, until `deadline`.
    async fn users_of(
        &self,
        server: &Server,
        file: &Path,
        text: &str,
        lines: Option<(u32, u32)>,
        deadline: tokio::time::Instant,
    ) -> Users {
        let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
        let Ok(uri) = path_to_uri(file) else {
            return Users::new();
        };
        let outline = server
            .request_with_timeout(
                "textDocument/documentSymbol",
                json!({"textDocument": {"uri": uri}}),
                left(),
            )
            .await
            .ok()
            .and_then(|v| serde_json::from_value::<Option<DocumentSymbolResponse>>(v).ok())
            .flatten();
        let Some(outline) = outline else {
            return Users::new();
        };
        let mut users = Users::new();
        for touched in impact::touched(outline, text, lines) {
            if left().is_zero() {
                break;
            }
            let answer = server
                .request_with_timeout(
                    "textDocument/references",
                    json!({
                        "textDocument": {"uri": uri},
                        "position": touched.at,
                        "context": {"includeDeclaration": false},
                    }),
                    left(),
                )
                .await;
            let locations: Vec<Location> = answer
                .ok()
                .and_then(|v| serde_json::from_value::<Option<Vec<Location>>>(v).ok())
                .flatten()
                .unwrap_or_default();
            impact::add_references(&mut users, file, &locations);
        }
        users.retain(|path, _| self.serves(server, path) && path.is_file());
        impact::busiest(users, MAX_AFFECTED_FILES)
    }

    /// Opens the `users` the server does not have open and returns the diagnostics each
    /// has now (pulled, or the first published after opening, until `deadline`); a file
    /// missing from the result has no known state.
    async fn diagnostics_before(
        server: &Server,
        users: &Users,
        deadline: tokio::time::Instant,
    ) -> HashMap<PathBuf, Vec<Diagnostic>> {
        let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
        let mut out = HashMap::new();
        let after = server.diagnostics_seq();
        let mut opened = Vec::new();
        for path in users.keys() {
            if let Ok((Sync::Opened, _)) = server.sync_document(path, None).await {
                opened.push(path.clone());
            }
        }
        if server.pulls_diagnostics() {
            for path in users.keys() {
                if let Some(d) = server.pull_diagnostics(path, left()).await {
                    out.insert(path.clone(), d);
                }
            }
            return out;
        }
        let fresh = |p: &PathBuf| server.published(p).is_some_and(|x| x.seq > after);
        let mut seen = after;
        while opened.iter().any(|p| !fresh(p)) {
            match server.wait_publication(seen, left()).await {
                Some(seq) => seen = seq,
                None => break,
            }
        }
        if !opened.is_empty() && !server.versioned() {
            // Published in parts (syntax, then semantic): the last part stands.
            while let Some(seq) = server.wait_publication(seen, SETTLE.min(left())).await {
                seen = seq;
            }
        }
        for path in users.keys() {
            let known = !opened.contains(path) || fresh(path);
            if let Some(p) = server.published(path).filter(|_| known) {
                out.insert(path.clone(), p.diagnostics);
            }
        }
        out
    }

    /// The diagnostics the change (published after `after_seq`) introduced in other files:
    /// the `users` (waited for until each was published again, the server fell quiet, or
    /// `deadline`) and any other open document republished meanwhile (`before` holds what
    /// every open document had). Errors and warnings only.
    async fn broken_elsewhere(
        server: &Server,
        users: &Users,
        before: &HashMap<PathBuf, Vec<Diagnostic>>,
        after_seq: u64,
        deadline: tokio::time::Instant,
    ) -> Vec<FileDiagnostic> {
        let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
        let mut now: Vec<(PathBuf, Vec<Diagnostic>)> = Vec::new();
        if server.pulls_diagnostics() {
            for path in users.keys() {
                let pulled = server.pull_diagnostics(path, left()).await;
                let published = || {
                    server
                        .published(path)
                        .filter(|p| p.seq > after_seq)
                        .map(|p| p.diagnostics)
                };
                if let Some(d) = pulled.or_else(published) {
                    now.push((path.clone(), d));
                }
            }
        } else {
            let fresh = |p: &PathBuf| server.published(p).is_some_and(|x| x.seq > after_seq);
            // A file never published yet will be (servers publish a file's first
            // diagnostics); one published before is published again only if they changed.
            let first: Vec<&PathBuf> = users
                .keys()
                .filter(|p| server.published(p).is_none())
                .collect();
            let mut seen = server.diagnostics_seq();
            let mut quiet_from = tokio::time::Instant::now();
            while users.keys().any(|p| !fresh(p)) {
                let quiet_left = if first.iter().any(|p| !fresh(p)) {
                    left()
                } else {
                    AFFECTED_QUIET.saturating_sub(quiet_from.elapsed())
                };
                match server.wait_publication(seen, left().min(quiet_left)).await {
                    Some(seq) => {
                        seen = seq;
                        quiet_from = tokio::time::Instant::now();
                    }
                    None => break,
                }
            }
            if !server.versioned() {
                while let Some(seq) = server.wait_publication(seen, SETTLE.min(left())).await {
                    seen = seq;
                }
            }
            let mut paths: Vec<&PathBuf> = users.keys().chain(before.keys()).collect();
            paths.sort();
            paths.dedup();
            for path in paths {
                if let Some(p) = server.published(path).filter(|p| p.seq > after_seq) {
                    now.push((path.clone(), p.diagnostics));
                }
            }
        }
        let mut out = Vec::new();
        for (path, diagnostics) in now {
            let new: Vec<Diagnostic> = match (before.get(&path), users.get(&path)) {
                (Some(b), _) => introduced(b, &diagnostics),
                (None, Some(lines)) => attributed(&diagnostics, lines),
                (None, None) => Vec::new(),
            };
            let new: Vec<Diagnostic> = new
                .into_iter()
                .filter(|d| {
                    matches!(
                        d.severity,
                        None | Some(DiagnosticSeverity::ERROR | DiagnosticSeverity::WARNING)
                    )
                })
                .collect();
            out.extend(Self::convert(server, &path, &new).await);
        }
        out
    }

    /// What the server says of `path` right after a sync (`synced`, `after` the
    /// publication count before it), waiting at most `limit`: pulled where the server
    /// pulls, else as [`fresh_diagnostics`](Self::fresh_diagnostics).
    async fn current_diagnostics(
        server: &Server,
        path: &Path,
        synced: (Sync, i32),
        after: u64,
        limit: Duration,
    ) -> Option<Vec<Diagnostic>> {
        let deadline = tokio::time::Instant::now() + limit;
        if let Some(d) = server.pull_diagnostics(path, limit).await {
            return Some(d);
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        Self::fresh_diagnostics(server, path, synced, after, left)
            .await
            .map(|p| p.diagnostics)
    }

    /// The diagnostics of `path` for the content just synced (`sync`, `version`; `after` is
    /// the publication count before the sync), waiting at most `limit` for a server that
    /// names versions; `None` when nothing came and nothing is cached.
    async fn fresh_diagnostics(
        server: &Server,
        path: &Path,
        (sync, version): (Sync, i32),
        after: u64,
        limit: Duration,
    ) -> Option<Published> {
        let cached = server.published(path);
        if sync == Sync::Unchanged
            && let Some(p) = cached
                .clone()
                .filter(|p| p.version.is_none_or(|v| v >= version))
        {
            return Some(p);
        }
        let after = if sync == Sync::Unchanged { 0 } else { after };
        let limit = if sync == Sync::Changed && !server.versioned() {
            limit.min(UNVERSIONED_CHANGE_WAIT)
        } else {
            limit
        };
        let Some(mut latest) = server.wait_diagnostics(path, version, after, limit).await else {
            return if sync == Sync::Changed { cached } else { None };
        };
        if latest.version.is_none() {
            while let Some(next) = server
                .wait_diagnostics(path, version, latest.seq, SETTLE)
                .await
            {
                latest = next;
            }
        }
        Some(latest)
    }

    async fn text_of(server: &Server, path: &Path) -> String {
        match server.open_text(path).await {
            Some(text) => text,
            None => tokio::fs::read(path)
                .await
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default(),
        }
    }

    async fn convert(
        server: &Server,
        path: &Path,
        diagnostics: &[Diagnostic],
    ) -> Vec<FileDiagnostic> {
        if diagnostics.is_empty() {
            return Vec::new();
        }
        let text = Self::text_of(server, path).await;
        let mut out: Vec<FileDiagnostic> = diagnostics
            .iter()
            .filter(|d| worth_reporting(d))
            .map(|d| to_file_diagnostic(path, &text, d))
            .collect();
        out.sort_by_key(|d| (d.line, d.character));
        out
    }
}

/// Hints tagged "unnecessary" or "deprecated" (pyright's "x is not accessed") are meant for
/// greying out code in an editor, not for reading: they are left out.
fn worth_reporting(d: &Diagnostic) -> bool {
    let fading = d.tags.as_ref().is_some_and(|tags| {
        tags.iter()
            .any(|t| *t == DiagnosticTag::UNNECESSARY || *t == DiagnosticTag::DEPRECATED)
    });
    !(fading && d.severity == Some(DiagnosticSeverity::HINT))
}

fn severity_name(severity: Option<DiagnosticSeverity>) -> &'static str {
    match severity {
        Some(DiagnosticSeverity::WARNING) => "warning",
        Some(DiagnosticSeverity::INFORMATION) => "information",
        Some(DiagnosticSeverity::HINT) => "hint",
        _ => "error",
    }
}

fn to_file_diagnostic(path: &Path, text: &str, d: &Diagnostic) -> FileDiagnostic {
    let start = d.range.start;
    FileDiagnostic {
        path: path.to_path_buf(),
        line: start.line + 1,
        character: utf16_to_char(line_of(text, start.line), start.character) + 1,
        severity: severity_name(d.severity).to_owned(),
        message: d.message.clone(),
        source: d.source.clone(),
    }
}

/// What identifies a diagnostic across an edit (lines move, so positions do not count).
fn identity(d: &Diagnostic) -> (&'static str, String, Option<String>, Option<String>) {
    let code = d.code.as_ref().map(|c| match c {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.clone(),
    });
    (
        severity_name(d.severity),
        d.message.clone(),
        d.source.clone(),
        code,
    )
}

/// The diagnostics of `after` that `before` did not have (as a multiset).
pub(crate) fn introduced(before: &[Diagnostic], after: &[Diagnostic]) -> Vec<Diagnostic> {
    let mut remaining: HashMap<_, usize> = HashMap::new();
    for d in before {
        *remaining.entry(identity(d)).or_default() += 1;
    }
    after
        .iter()
        .filter(|d| match remaining.get_mut(&identity(d)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .cloned()
        .collect()
}

/// The diagnostics that touch one of `lines` (0-based): in a file whose diagnostics before a
/// change are unknown, the ones where it refers to what changed.
pub(crate) fn attributed(diagnostics: &[Diagnostic], lines: &[u32]) -> Vec<Diagnostic> {
    diagnostics
        .iter()
        .filter(|d| {
            lines
                .iter()
                .any(|l| d.range.start.line <= *l && *l <= d.range.end.line)
        })
        .cloned()
        .collect()
}

/// Turns a server's "method not found" into a sentence.
fn explain(error: ToolError, server: &Server, method: &str) -> ToolError {
    let text = error.to_string();
    if text.contains("(code -32601)") {
        ToolError::respond(format!(
            "the language server {} does not support {method}",
            server.name()
        ))
    } else {
        error
    }
}

#[async_trait]
impl LspManager for LanguageServers {
    fn has_server_for(&self, file: &Path) -> bool {
        self.config.server_for(file).is_some()
    }

    /// Starts the server if needed, sends the file's current content when the server does
    /// not have it, then the request. Positions in `params` are the server's (UTF-16).
    async fn request(&self, file: &Path, method: &str, params: Value) -> Result<Value, ToolError> {
        let file = canonical(file);
        let server = self
            .server(&file, true)
            .await?
            .ok_or_else(|| no_server(&file))?;
        self.refresh_files(&server, None).await;
        let after_seq = server.diagnostics_seq();
        let (sync, version) = server.sync_document(&file, None).await?;
        // Every call, also one running beside the first, waits until the server is ready.
        server.wait_ready(&file).await;
        if sync == Sync::Opened && server.shows_readiness_in_publications() {
            // A document opened later: its first diagnostics say the server has it.
            server
                .wait_diagnostics(&file, version, after_seq, OPEN_WAIT)
                .await;
        }
        server
            .request(method, params)
            .await
            .map_err(|e| explain(e, &server, method))
    }

    async fn did_change(&self, file: &Path, text: &str) -> Result<(), ToolError> {
        let file = canonical(file);
        if let Some(server) = self.server(&file, false).await? {
            server.sync_document(&file, Some(text)).await?;
        }
        Ok(())
    }

    async fn did_change_diagnostics(
        &self,
        file: &Path,
        text: &str,
    ) -> Result<Vec<FileDiagnostic>, ToolError> {
        let file = canonical(file);
        let Some(server) = self.server(&file, false).await? else {
            return Ok(Vec::new());
        };
        let old = server.open_text(&file).await;
        if old.as_deref() == Some(text) {
            return Ok(Vec::new());
        }
        self.refresh_files(&server, Some(&file)).await;
        // A server still loading the project answers from a partial view: no reference in a
        // file it has not opened (typescript-language-server), no state before the change.
        // Within its startup time, the edit waits for it like any call.
        server.wait_ready(&file).await;
        // Before the change: who uses what it touches, and how they stood.
        let prepare = tokio::time::Instant::now() + IMPACT_WAIT;
        let mut users = match &old {
            Some(old) => {
                let lines = impact::changed_lines(old, text);
                self.users_of(&server, &file, old, lines, prepare).await
            }
            None => Users::new(),
        };
        let mut before_others = Self::diagnostics_before(&server, &users, prepare).await;
        for path in server.open_paths().await {
            if path != file
                && !before_others.contains_key(&path)
                && let Some(p) = server.published(&path)
            {
                before_others.insert(path, p.diagnostics);
            }
        }
        let before = match &old {
            Some(_) if server.pulls_diagnostics() => server
                .pull_diagnostics(
                    &file,
                    prepare.saturating_duration_since(tokio::time::Instant::now()),
                )
                .await
                .unwrap_or_default(),
            Some(_) => server
                .published(&file)
                .map(|p| p.diagnostics)
                .unwrap_or_default(),
            None => Vec::new(),
        };
        // The change, and the server's verdict within the same bounded wait.
        let deadline = tokio::time::Instant::now() + CHANGE_DIAGNOSTICS_WAIT;
        let after_seq = server.diagnostics_seq();
        let synced = server.sync_document(&file, Some(text)).await?;
        if synced.0 == Sync::Unchanged {
            return Ok(Vec::new());
        }
        if old.is_none() {
            // What the file had before is unknown: every symbol at its top may have
            // changed; their users count only diagnostics where they refer to them.
            let find = tokio::time::Instant::now() + IMPACT_WAIT;
            users = self.users_of(&server, &file, text, None, find).await;
            for path in users.keys() {
                let _ = server.sync_document(path, None).await;
            }
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let mut out = match Self::current_diagnostics(&server, &file, synced, after_seq, left).await
        {
            Some(now) => {
                let new = introduced(&before, &now);
                Self::convert(&server, &file, &new).await
            }
            None => Vec::new(),
        };
        out.extend(
            Self::broken_elsewhere(&server, &users, &before_others, after_seq, deadline).await,
        );
        Ok(out)
    }

    async fn diagnostics(&self, file: Option<&Path>) -> Result<Vec<FileDiagnostic>, ToolError> {
        let Some(file) = file else {
            let mut out = Vec::new();
            for slot in self.all_slots() {
                let server = slot.lock().await.clone();
                let Some(server) = server.filter(|s| s.is_alive()) else {
                    continue;
                };
                for path in server.open_paths().await {
                    let diagnostics = match server.pull_diagnostics(&path, DIAGNOSTICS_WAIT).await {
                        Some(d) => Some(d),
                        None => server.published(&path).map(|p| p.diagnostics),
                    };
                    if let Some(d) = diagnostics {
                        out.extend(Self::convert(&server, &path, &d).await);
                    }
                }
            }
            out.sort_by(|a, b| (&a.path, a.line, a.character).cmp(&(&b.path, b.line, b.character)));
            return Ok(out);
        };
        let file = canonical(file);
        let server = self
            .server(&file, true)
            .await?
            .ok_or_else(|| no_server(&file))?;
        self.refresh_files(&server, None).await;
        let after_seq = server.diagnostics_seq();
        let synced = server.sync_document(&file, None).await?;
        let diagnostics = match Self::current_diagnostics(
            &server,
            &file,
            synced,
            after_seq,
            DIAGNOSTICS_WAIT,
        )
        .await
        {
            Some(d) => d,
            None if !server.is_alive() => {
                return Err(ToolError::respond(format!(
                    "the language server {} stopped before it reported diagnostics for {}; it will be restarted on the next call",
                    server.name(),
                    file.display()
                )));
            }
            None => {
                return Err(ToolError::respond(format!(
                    "the language server {} reported no diagnostics for {} within {} s; try again in a moment",
                    server.name(),
                    file.display(),
                    DIAGNOSTICS_WAIT.as_secs()
                )));
            }
        };
        Ok(Self::convert(&server, &file, &diagnostics).await)
    }
}

#[cfg(test)]
mod tests {
    use lsp_types::{Position, Range};

    use super::*;

    fn diag(line: u32, message: &str) -> Diagnostic {
        Diagnostic {
            range: Range::new(Position::new(line, 0), Position::new(line, 1)),
            severity: Some(DiagnosticSeverity::ERROR),
            message: message.to_owned(),
            ..Diagnostic::default()
        }
    }

    #[test]
    fn introduced_ignores_moved_lines_and_counts_repeats() {
        let before = vec![diag(1, "a"), diag(2, "b")];
        let after = vec![diag(5, "a"), diag(6, "b"), diag(7, "b"), diag(8, "c")];
        let new: Vec<String> = introduced(&before, &after)
            .into_iter()
            .map(|d| d.message)
            .collect();
        assert_eq!(new, ["b", "c"]);
        assert!(introduced(&after, &before).is_empty());
    }

    #[test]
    fn fading_hints_are_left_out() {
        let mut d = diag(1, "x is not accessed");
        d.severity = Some(DiagnosticSeverity::HINT);
        assert!(worth_reporting(&d));
        d.tags = Some(vec![DiagnosticTag::UNNECESSARY]);
        assert!(!worth_reporting(&d));
        d.severity = Some(DiagnosticSeverity::WARNING);
        assert!(worth_reporting(&d));
    }

    #[test]
    fn diagnostics_get_one_based_character_columns() {
        let mut d = diag(1, "x");
        d.range.start.character = 4; // after "😀😀" in UTF-16
        d.severity = Some(DiagnosticSeverity::WARNING);
        let f = to_file_diagnostic(Path::new("/p/a.py"), "first\n😀😀y = 1\n", &d);
        assert_eq!(
            (f.line, f.character, f.severity.as_str()),
            (2, 3, "warning")
        );
    }

    #[test]
    fn files_without_a_server_are_named_by_extension() {
        let text = no_server(Path::new("/a/b.xyz")).to_string();
        assert!(
            text.starts_with("No LSP server available for file type: .xyz"),
            "{text}"
        );
        let text = no_server(Path::new("/a/Makefile")).to_string();
        assert!(
            text.starts_with("No LSP server available for file type: Makefile"),
            "{text}"
        );
    }
}
