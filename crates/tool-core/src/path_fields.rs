//! Input fields that name files ([`PathField`]): a tool declares them in its [`ToolMeta`]
//! (see [`ToolMeta::path_fields`]), and the execution path treats them as it treats the built-in
//! file tools' paths. Each value is resolved against the session's working directory and
//! handed to the tool absolute (the path that was checked is the path the tool gets); the
//! permission engine applies the Read rules to a field that is read and the Edit rules, the
//! protected paths and plan mode to one that is written, with the working directories
//! deciding what needs no approval; and an existing file a field writes must have been read
//! in this session and be unchanged since, as Edit and Write insist, its new content
//! recorded once the call succeeds.
//!
//! [`PathField`]: crate::PathField
//! [`ToolMeta`]: crate::ToolMeta
//! [`ToolMeta::path_fields`]: crate::ToolMeta::path_fields

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::ledger::{Freshness, ReadRecord, ReadSource, content_hash};
use crate::tool::{ParsedInput, PathAccess, Tool};
use crate::{PermissionDecision, ToolContext, ToolError, path};

/// Files above this size are recorded for the ledger by time and size, without a hash (as
/// the file tools do).
const HASH_LIMIT: u64 = 64 * 1024 * 1024;

/// The declared paths of an input: field, access, the value as sent and resolved.
fn declared(tool: &dyn Tool, json: &Value, ctx: &ToolContext) -> Vec<(PathAccess, PathBuf)> {
    let mut out = Vec::new();
    for field in tool.path_fields() {
        let values: Vec<&str> = match json.get(field.name) {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for v in values {
            out.push((field.access, ctx.resolve_path(v.trim())));
        }
    }
    out
}

/// The input with every declared path made absolute against the session's working
/// directory, parsed again; `None` when the tool declares no path field or nothing changed.
pub(crate) fn resolve(
    tool: &dyn Tool,
    input: &ParsedInput,
    ctx: &ToolContext,
) -> Option<Result<ParsedInput, ToolError>> {
    let fields = tool.path_fields();
    if fields.is_empty() {
        return None;
    }
    let mut json = input.json().clone();
    let mut changed = false;
    let absolute = |v: &mut Value, changed: &mut bool| {
        if let Value::String(s) = v {
            let resolved = ctx.resolve_path(s.trim()).to_string_lossy().into_owned();
            if *s != resolved {
                *s = resolved;
                *changed = true;
            }
        }
    };
    for field in fields {
        match json.get_mut(field.name) {
            Some(Value::Array(items)) => items.iter_mut().for_each(|v| absolute(v, &mut changed)),
            Some(v) => absolute(v, &mut changed),
            None => {}
        }
    }
    changed.then(|| tool.parse_input(&json))
}

/// The engine's decision for the declared paths: each checked as Read or Edit checks its
/// own (see [`crate::PermissionEngine::check_read_path`] and
/// [`crate::PermissionEngine::check_write_path`]); a denial wins, then an ask; `None` when
/// the tool declares none.
pub(crate) fn decide(
    tool: &dyn Tool,
    input: &ParsedInput,
    ctx: &ToolContext,
) -> Option<PermissionDecision> {
    let paths = declared(tool, input.json(), ctx);
    if paths.is_empty() {
        return None;
    }
    let mut verdict = PermissionDecision::Allow;
    for (access, p) in paths {
        let decision = match access {
            PathAccess::Read => ctx.permissions().check_read_path(&p, ctx),
            PathAccess::Write => ctx.permissions().check_write_path(&p, ctx),
        };
        verdict = stricter(verdict, decision);
    }
    Some(verdict)
}

/// The stricter of two decisions: a denial, else an ask (one that bypassPermissions cannot
/// skip before one it can), else allow.
pub(crate) fn stricter(a: PermissionDecision, b: PermissionDecision) -> PermissionDecision {
    let rank = |d: &PermissionDecision| match d {
        PermissionDecision::Deny { .. } => 3,
        PermissionDecision::Ask { kind, .. } if !kind.is_bypassable() => 2,
        PermissionDecision::Ask { .. } => 1,
        PermissionDecision::Allow => 0,
    };
    if rank(&b) > rank(&a) { b } else { a }
}

/// The ledger check of the written paths, before the call: an existing regular file must
/// have been read in this session and be unchanged since (by content).
pub(crate) async fn check_fresh(
    tool: &dyn Tool,
    input: &ParsedInput,
    ctx: &ToolContext,
) -> Result<(), ToolError> {
    let written = written(tool, input, ctx);
    if written.is_empty() {
        return Ok(());
    }
    let ctx = ctx.clone();
    tokio::task::spawn_blocking(move || {
        for p in written {
            fresh(&p, &ctx)?;
        }
        Ok(())
    })
    .await
    .map_err(|e| ToolError::fatal(format!("internal error checking the read ledger: {e}")))?
}

/// Records the new content of each written path that is a regular file, after a call that
/// succeeded: a later Edit or write of it needs no new Read.
pub(crate) async fn record_writes(tool: &dyn Tool, input: &ParsedInput, ctx: &ToolContext) {
    let written = written(tool, input, ctx);
    if written.is_empty() {
        return;
    }
    let ctx = ctx.clone();
    let _ = tokio::task::spawn_blocking(move || {
        for p in written {
            let key = path::canonicalize_lenient(&p);
            match record_of(&key) {
                Some(record) => ctx.ledger().record(&key, record),
                None => ctx.ledger().forget(&key),
            }
        }
    })
    .await;
}

fn written(tool: &dyn Tool, input: &ParsedInput, ctx: &ToolContext) -> Vec<PathBuf> {
    declared(tool, input.json(), ctx)
        .into_iter()
        .filter(|(access, _)| *access == PathAccess::Write)
        .map(|(_, p)| p)
        .collect()
}

/// Whether `p` may be written: a missing file or a directory may; an existing file must be
/// fresh in the ledger.
fn fresh(p: &Path, ctx: &ToolContext) -> Result<(), ToolError> {
    let key = path::canonicalize_lenient(p);
    let Ok(meta) = std::fs::metadata(&key) else {
        return Ok(());
    };
    if !meta.is_file() {
        return Ok(());
    }
    let mtime = meta.modified().ok();
    let record = ctx.ledger().get(&key);
    let freshness = match &record {
        // Too large to hash when recorded: decided by time and size.
        Some(r) if r.content_hash.is_none() && !r.partial_view => {
            if r.mtime == mtime && mtime.is_some() && r.len == meta.len() {
                Freshness::Fresh
            } else {
                Freshness::Modified
            }
        }
        Some(_) if meta.len() <= HASH_LIMIT => {
            let bytes = std::fs::read(&key).map_err(|e| ToolError::from_io(p, &ctx.cwd(), e))?;
            ctx.ledger().freshness(&key, mtime, &bytes)
        }
        Some(_) => Freshness::Modified,
        None => Freshness::NotRead,
    };
    match freshness {
        Freshness::Fresh => Ok(()),
        Freshness::NotRead | Freshness::PartialView => Err(ToolError::respond(format!(
            "File has not been read yet: {}. Read it first before writing to it.",
            p.display()
        ))),
        Freshness::Modified => Err(ToolError::respond(format!(
            "File has been modified since read, either by the user or by a linter: {}. Read it again before attempting to write it.",
            p.display()
        ))),
    }
}

/// What the ledger records for a file just written; `None` when it is not a regular file.
fn record_of(key: &Path) -> Option<ReadRecord> {
    let meta = std::fs::metadata(key)
        .ok()
        .filter(std::fs::Metadata::is_file)?;
    let content_hash = if meta.len() <= HASH_LIMIT {
        Some(content_hash(&std::fs::read(key).ok()?))
    } else {
        None
    };
    Some(ReadRecord {
        content_hash,
        mtime: meta.modified().ok(),
        len: meta.len(),
        offset: None,
        limit: None,
        partial_view: false,
        source: ReadSource::Write,
    })
}
