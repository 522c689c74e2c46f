//! What the file tools share: resolving the path the model sent, the messages for missing
//! files and stale reads, the ledger entries writes leave, and the language-server hook.

use std::fs::Metadata;
use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tool_core::{
    AskKind, Freshness, PermissionDecision, ReadRecord, ReadSource, ToolContext, ToolError,
    content_hash, path,
};

use crate::atomic::{BeforeRename, UNEXPECTEDLY_MODIFIED};
use crate::ignore_policy::suggest_similar;
use crate::target::{Version, WriteTarget};

/// Files above this size are not hashed for the ledger: staleness falls back to modification
/// time and size, so reading a page of a huge file does not cost a pass over all of it.
pub(crate) const HASH_LIMIT: u64 = 64 * 1024 * 1024;

/// The reference's "has not been read yet" refusal.
pub(crate) const NOT_READ: &str = "File has not been read yet. Read it first before writing to it.";
/// The reference's "modified since read" refusal.
pub(crate) const MODIFIED: &str = "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it.";

/// The absolute, lexically normalised path for what the model sent.
pub(crate) fn resolve(ctx: &ToolContext, input: &str) -> PathBuf {
    ctx.resolve_path(input.trim())
}

/// The key of a file in the read ledger: its canonical path, so a read through a symlink
/// and an edit of its target are the same file.
pub(crate) fn ledger_key(path: &Path) -> PathBuf {
    path::canonicalize_lenient(path)
}

/// "File does not exist. Note: your current working directory is CWD. Did you mean X?"
pub(crate) fn not_found(ctx: &ToolContext, path: &Path) -> ToolError {
    let cwd = ctx.cwd();
    let base = ToolError::not_found(&cwd);
    match suggest_similar(path, &cwd) {
        Some(similar) => ToolError::respond(format!("{base} Did you mean {}?", similar.display())),
        None => base,
    }
}

/// Decides whether an existing file may be changed, by the ledger, by content.
pub(crate) fn check_fresh(
    ctx: &ToolContext,
    key: &Path,
    meta: &Metadata,
    current: &[u8],
) -> Result<(), ToolError> {
    let mtime = meta.modified().ok();
    let freshness = match ctx.ledger().get(key) {
        // Huge files were recorded without a hash; decide by time and size.
        Some(record) if record.content_hash.is_none() && !record.partial_view => {
            if record.mtime == mtime && mtime.is_some() && record.len == meta.len() {
                Freshness::Fresh
            } else {
                Freshness::Modified
            }
        }
        _ => ctx.ledger().freshness(key, mtime, current),
    };
    match freshness {
        Freshness::Fresh => Ok(()),
        Freshness::NotRead | Freshness::PartialView => Err(ToolError::respond(NOT_READ)),
        Freshness::Modified => Err(ToolError::respond(format!(
            "{MODIFIED} (Its content differs from what was last read or written in this session.)"
        ))),
    }
}

/// The hash the ledger keeps for `bytes`, or none above [`HASH_LIMIT`].
pub(crate) fn ledger_hash(bytes: &[u8]) -> Option<u64> {
    (bytes.len() as u64 <= HASH_LIMIT).then(|| content_hash(bytes))
}

/// A streaming form of [`content_hash`] (same value for the same bytes).
#[derive(Debug, Default)]
pub(crate) struct StreamHash {
    hasher: DefaultHasher,
    len: u64,
}

impl StreamHash {
    /// Feeds bytes.
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.hasher.write(bytes);
        self.len += bytes.len() as u64;
    }

    /// The hash of everything fed.
    pub(crate) fn finish(mut self) -> u64 {
        self.hasher.write_u64(self.len);
        self.hasher.finish()
    }
}

/// Records a write of `key` in the ledger with the new content's [`ledger_hash`] (none for
/// content over [`HASH_LIMIT`], decided by time and size) and the new file's metadata; a
/// later Read of the file is not answered with "unchanged" on the strength of it.
pub(crate) fn record_write(
    ctx: &ToolContext,
    key: &Path,
    content_hash: Option<u64>,
    meta: &Metadata,
) {
    ctx.note_write(key);
    ctx.ledger().record(
        key,
        ReadRecord {
            content_hash,
            mtime: meta.modified().ok(),
            len: meta.len(),
            offset: None,
            limit: None,
            partial_view: false,
            source: ReadSource::Write,
        },
    );
}

/// Tells the language server, if one handles this file, about its new content. The default
/// manager is unconfigured, so errors are ignored.
pub(crate) async fn notify_lsp(ctx: &ToolContext, path: &Path, text: &str) -> String {
    if !ctx.lsp().has_server_for(path) {
        return String::new();
    }
    // The manager waits a bounded time for the server's verdict; an error (no server could
    // start, a crash) must not fail a write that already happened.
    let diagnostics = ctx
        .lsp()
        .did_change_diagnostics(path, text)
        .await
        .unwrap_or_default();
    render_diagnostics(path, &diagnostics, &ctx.cwd())
}

/// At most this many new diagnostics are listed after a write for the edited file, and as
/// many for the other files it broke.
const MAX_DIAGNOSTICS: usize = 20;
/// Of each other file, at most this many.
const MAX_PER_OTHER_FILE: usize = 5;

/// The diagnostics a change of `path` introduced, in it and in other files, as a note
/// appended to the tool's message; empty when there are none.
pub(crate) fn render_diagnostics(
    path: &Path,
    diagnostics: &[tool_core::FileDiagnostic],
    cwd: &Path,
) -> String {
    let key = ledger_key(path);
    let (own, others): (Vec<_>, Vec<_>) = diagnostics
        .iter()
        .partition(|d| d.path == path || ledger_key(&d.path) == key);
    let mut out = String::new();
    if !own.is_empty() {
        out.push_str("\n\nNew diagnostics after this change:");
        for d in own.iter().take(MAX_DIAGNOSTICS) {
            out.push('\n');
            out.push_str(&d.display(cwd));
        }
        if own.len() > MAX_DIAGNOSTICS {
            out.push_str(&format!(
                "\n... and {} more: call LSP with operation diagnostics to see them all",
                own.len() - MAX_DIAGNOSTICS
            ));
        }
    }
    if others.is_empty() {
        return out;
    }
    let mut by_file: std::collections::BTreeMap<&Path, Vec<&tool_core::FileDiagnostic>> =
        std::collections::BTreeMap::new();
    for d in &others {
        by_file.entry(d.path.as_path()).or_default().push(d);
    }
    out.push_str(&format!(
        "\n\nNew diagnostics in {} using what this change touched:",
        tool_core::plural(by_file.len(), "other file", "other files")
    ));
    let (mut shown, mut files_left) = (0, 0);
    for list in by_file.values() {
        let room = MAX_PER_OTHER_FILE.min(MAX_DIAGNOSTICS - shown);
        for d in list.iter().take(room) {
            out.push('\n');
            out.push_str(&d.display(cwd));
        }
        shown += room.min(list.len());
        if list.len() > room {
            files_left += 1;
        }
    }
    if shown < others.len() {
        out.push_str(&format!(
            "\n... and {} more in {}: call LSP with operation diagnostics to see them all",
            others.len() - shown,
            tool_core::plural(files_left, "file", "files")
        ));
    }
    out
}

/// Where a write of `path` goes: the file itself, or the target of a symlink (written
/// through, never replaced by a regular file). A symlink whose target does not exist is
/// refused, so no write creates a file outside what the permission check saw.
pub(crate) fn write_target(path: &Path) -> Result<PathBuf, ToolError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => match path.canonicalize() {
            Ok(target) => Ok(target),
            Err(_) => {
                let to = std::fs::read_link(path)
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|_| "?".to_owned());
                Err(ToolError::respond(format!(
                    "Cannot write {}: it is a symbolic link to {to}, which does not exist. Refusing to create a file through a dangling link; write the target path directly.",
                    path.display()
                )))
            }
        },
        _ => Ok(path::canonicalize_lenient(path)),
    }
}

/// The check run just before the rename: the file must still be what we read (the same
/// file, size and modification time), or still be missing.
pub(crate) fn unchanged_since(
    target: &WriteTarget,
    before: Option<&Metadata>,
) -> Result<BeforeRename, ToolError> {
    let now = target.version().ok().flatten();
    if now == before.map(Version::of) {
        Ok(BeforeRename::Proceed)
    } else {
        Err(ToolError::respond(UNEXPECTEDLY_MODIFIED))
    }
}

/// The target a write's permission check judged, carried to the call in the call's own
/// input (the same parsed input goes from the check to the call): the given path and the
/// canonical path it resolved to. The call writes exactly that path, or fails.
#[derive(Debug, Default)]
pub(crate) struct CheckedTarget(Mutex<Option<(PathBuf, PathBuf)>>);

impl Clone for CheckedTarget {
    fn clone(&self) -> Self {
        CheckedTarget(Mutex::new(self.0.lock().ok().and_then(|g| g.clone())))
    }
}

impl CheckedTarget {
    fn set(&self, given: &Path, resolved: PathBuf) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some((given.to_path_buf(), resolved));
        }
    }

    /// The path to write for `given`: the one its permission check judged, else (a call
    /// without a check, as a library may make) `given` resolved now.
    pub(crate) fn target_for(&self, given: &Path) -> Result<PathBuf, ToolError> {
        let checked = self.0.lock().ok().and_then(|g| g.clone());
        match checked {
            Some((checked_given, resolved)) if checked_given == given => Ok(resolved),
            _ => write_target(given),
        }
    }
}

/// The permission check of a write of `file_path`: the path is resolved once (symbolic
/// links followed, as [`write_target`] does); the engine's write check judges the path as
/// given and, when it differs, the resolved path too (the stricter answer wins); the
/// resolved path is kept in `checked` for the call, which writes exactly it.
pub(crate) fn check_write(
    ctx: &ToolContext,
    file_path: &str,
    checked: &CheckedTarget,
) -> PermissionDecision {
    let given = resolve(ctx, file_path);
    let (decision, resolved) = check_write_resolved(ctx, &given);
    if let Some(resolved) = resolved {
        checked.set(&given, resolved);
    }
    decision
}

/// The decision of [`check_write`] for the absolute path `given`, and the path it resolved
/// to (`None` for a dangling link, which the call reports).
pub(crate) fn check_write_resolved(
    ctx: &ToolContext,
    given: &Path,
) -> (PermissionDecision, Option<PathBuf>) {
    let lexical = ctx.permissions().check_write_path(given, ctx);
    let Ok(resolved) = write_target(given) else {
        return (lexical, None);
    };
    let decision = if resolved == given {
        lexical
    } else {
        stricter(lexical, ctx.permissions().check_write_path(&resolved, ctx))
    };
    (decision, Some(resolved))
}

/// The stricter of two decisions: deny, then an ask bypass cannot skip, then an ask about a
/// path outside (over one the mode would allow), then allow.
pub(crate) fn stricter(a: PermissionDecision, b: PermissionDecision) -> PermissionDecision {
    fn rank(d: &PermissionDecision) -> u8 {
        match d {
            PermissionDecision::Allow => 0,
            PermissionDecision::Ask {
                kind: AskKind::Mode(_),
                ..
            } => 1,
            PermissionDecision::Ask { kind, .. } if kind.is_bypassable() => 2,
            PermissionDecision::Ask { .. } => 3,
            PermissionDecision::Deny { .. } => 4,
        }
    }
    if rank(&b) > rank(&a) { b } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diag(path: &str, line: u32) -> tool_core::FileDiagnostic {
        tool_core::FileDiagnostic {
            path: PathBuf::from(path),
            line,
            character: 1,
            severity: "error".to_owned(),
            message: format!("broken {line}"),
            source: None,
        }
    }

    /// Renders the diagnostics of an edit of /p/u.ts and compares with `expected`.
    fn check(diagnostics: &[tool_core::FileDiagnostic], expected: &str) {
        let got = render_diagnostics(Path::new("/p/u.ts"), diagnostics, Path::new("/p"));
        assert_eq!(got, expected, "{diagnostics:?}");
    }

    #[test]
    fn other_files_are_listed_apart_and_capped() {
        check(&[], "");
        check(
            &[diag("/p/u.ts", 1)],
            "\n\nNew diagnostics after this change:\nu.ts:1:1: error: broken 1",
        );
        check(
            &[diag("/p/u.ts", 1), diag("/p/a.ts", 3), diag("/p/b/c.ts", 4)],
            "\n\nNew diagnostics after this change:\nu.ts:1:1: error: broken 1\n\nNew diagnostics in 2 other files using what this change touched:\na.ts:3:1: error: broken 3\nb/c.ts:4:1: error: broken 4",
        );
        check(
            &[diag("/p/a.ts", 3)],
            "\n\nNew diagnostics in 1 other file using what this change touched:\na.ts:3:1: error: broken 3",
        );
        // Five per file, twenty in all, then a summary of the rest.
        let many: Vec<_> = (1..=7).map(|i| diag("/p/a.ts", i)).collect();
        let text = render_diagnostics(Path::new("/p/u.ts"), &many, Path::new("/p"));
        assert!(
            text.contains("a.ts:5:1") && !text.contains("a.ts:6:1"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "\n... and 2 more in 1 file: call LSP with operation diagnostics to see them all"
            ),
            "{text}"
        );
        let wide: Vec<_> = (0..6)
            .flat_map(|f| (1..=4).map(move |i| diag(&format!("/p/f{f}.ts"), i)))
            .collect();
        let text = render_diagnostics(Path::new("/p/u.ts"), &wide, Path::new("/p"));
        assert_eq!(
            text.lines().filter(|l| l.contains(": error: ")).count(),
            20,
            "{text}"
        );
        assert!(
            text.ends_with(
                "\n... and 4 more in 1 file: call LSP with operation diagnostics to see them all"
            ),
            "{text}"
        );
    }

    #[test]
    fn stream_hash_equals_content_hash() {
        let data = b"hello world, a longer text to hash in pieces".repeat(7);
        let mut h = StreamHash::default();
        for chunk in data.chunks(13) {
            h.update(chunk);
        }
        assert_eq!(h.finish(), content_hash(&data));
    }
}
