//! [`LanguageServers`]: tool-core's `LspManager`, one server per (server command, workspace
//! root), started on first use, restarted on the next use after a crash, stopped (with
//! `shutdown`, `exit`, then its process group killed) when the manager is dropped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use lsp_types::{Diagnostic, DiagnosticSeverity, DiagnosticTag, NumberOrString};
use serde_json::Value;
use tool_core::{FileDiagnostic, LspManager, ToolError};

use crate::config::{LspConfig, extension_of, find_root};
use crate::position::{line_of, utf16_to_char};
use crate::server::{Published, Server, Sync};

/// How long an edit waits for the diagnostics of its new content.
pub const CHANGE_DIAGNOSTICS_WAIT: Duration = Duration::from_secs(5);
/// How long the `diagnostics` operation waits for a file's first diagnostics (a server
/// that has just started may still be analysing the workspace).
pub const DIAGNOSTICS_WAIT: Duration = Duration::from_secs(20);

/// How long a request waits, after opening the first document of a server, for the server to
/// be ready (its first diagnostics for that document).
const FIRST_OPEN_WAIT: Duration = Duration::from_secs(15);
/// The same for later documents.
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
}

/// The language servers of a session.
#[derive(Debug)]
pub struct LanguageServers {
    config: LspConfig,
    cwd: PathBuf,
    slots: Mutex<HashMap<(String, PathBuf), Slot>>,
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
    /// A manager for `config`; relative roots fall back to `cwd`.
    pub fn new(config: LspConfig, cwd: impl Into<PathBuf>) -> Self {
        LanguageServers {
            config,
            cwd: cwd.into(),
            slots: Mutex::new(HashMap::new()),
        }
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
        let server = Server::start(config, &root).await?;
        *guard = Some(Arc::clone(&server));
        Ok(Some(server))
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
        let first = server.open_paths().await.is_empty();
        let after_seq = server.diagnostics_seq();
        let (sync, version) = server.sync_document(&file, None).await?;
        if sync == Sync::Opened {
            // A server answers from a partial view until it has loaded the project
            // (typescript-language-server's syntax server finds only the import for a
            // definition); its first diagnostics for the file say it is ready.
            let wait = if first { FIRST_OPEN_WAIT } else { OPEN_WAIT };
            server
                .wait_diagnostics(&file, version, after_seq, wait)
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
        let was_open = server.open_text(&file).await.is_some();
        let before = if was_open {
            server
                .published(&file)
                .map(|p| p.diagnostics)
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let after_seq = server.diagnostics_seq();
        let synced = server.sync_document(&file, Some(text)).await?;
        if synced.0 == Sync::Unchanged {
            return Ok(Vec::new());
        }
        let Some(published) =
            Self::fresh_diagnostics(&server, &file, synced, after_seq, CHANGE_DIAGNOSTICS_WAIT)
                .await
        else {
            return Ok(Vec::new());
        };
        let new = introduced(&before, &published.diagnostics);
        Ok(Self::convert(&server, &file, &new).await)
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
                    if let Some(p) = server.published(&path) {
                        out.extend(Self::convert(&server, &path, &p.diagnostics).await);
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
        let after_seq = server.diagnostics_seq();
        let synced = server.sync_document(&file, None).await?;
        let published = match Self::fresh_diagnostics(
            &server,
            &file,
            synced,
            after_seq,
            DIAGNOSTICS_WAIT,
        )
        .await
        {
            Some(p) => p,
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
        Ok(Self::convert(&server, &file, &published.diagnostics).await)
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
