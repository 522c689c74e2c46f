//! Writing a planned patch all or nothing. Each file is written by the crate's atomic
//! writer (a temporary file in its directory, then a rename); the original of every file
//! replaced or deleted is kept under a temporary name until every file is done, so a
//! failure part-way puts back what was already renamed, removes what was created and the
//! directories made for it. Codex applies a patch file by file and leaves the files before
//! a failure changed; here a patch changes every file or none.

use std::path::{Path, PathBuf};

use tool_core::{ToolContext, ToolError};

use super::plan::{Plan, Slot, State};
use crate::atomic::{Backup, Content, write_atomic_content};
use crate::common::{self, unchanged_since};
use crate::target::{Parents, WriteTarget};

/// How to take back one completed step.
enum Undo {
    /// A file that did not exist: remove it
    Created(usize),
    /// A file replaced: put the original back
    Replaced(usize, Backup),
    /// A file deleted: put it back
    Deleted(usize, Backup),
}

/// A file written, for the language-server hook: its path and new text (when loaded).
pub(crate) struct Written {
    pub path: PathBuf,
    pub text: Option<String>,
}

/// The missing ancestors of `path` (deepest first), which opening it will make.
fn missing_dirs(path: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dir = path.parent();
    while let Some(d) = dir {
        if std::fs::symlink_metadata(d).is_ok() {
            break;
        }
        out.push(d.to_path_buf());
        dir = d.parent();
    }
    out
}

/// Writes every changed file of `plan`, or none.
pub(crate) fn commit(ctx: &ToolContext, plan: &mut Plan) -> Result<Vec<Written>, ToolError> {
    let mut undo: Vec<Undo> = Vec::new();
    let mut made_dirs: Vec<PathBuf> = Vec::new();
    let mut written = Vec::new();
    let mut result = Ok(());
    for i in 0..plan.slots.len() {
        match step(
            ctx,
            &mut plan.slots,
            i,
            &mut undo,
            &mut made_dirs,
            &mut written,
        ) {
            Ok(()) => {}
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    if let Err(e) = result {
        let problems = rollback(ctx, &plan.slots, undo, &made_dirs);
        if problems.is_empty() {
            return Err(ToolError::respond(format!(
                "{e}\nNo file was changed: the files written before the failure were put back."
            )));
        }
        return Err(ToolError::respond(format!(
            "{e}\nPutting back the files written before the failure also failed: {}",
            problems.join("; ")
        )));
    }
    for u in undo {
        match u {
            Undo::Replaced(i, b) | Undo::Deleted(i, b) => {
                if let Some(t) = &plan.slots[i].target {
                    b.discard(t);
                    t.sync_dir();
                }
            }
            Undo::Created(_) => {}
        }
    }
    Ok(written)
}

fn step(
    ctx: &ToolContext,
    slots: &mut [Slot],
    i: usize,
    undo: &mut Vec<Undo>,
    made_dirs: &mut Vec<PathBuf>,
    written: &mut Vec<Written>,
) -> Result<(), ToolError> {
    let slot = &mut slots[i];
    let meta = slot.original.as_ref().map(|o| o.meta.clone());
    match &slot.state {
        State::Disk => Ok(()),
        State::Absent => {
            let Some(target) = &slot.target else {
                return Ok(());
            };
            if slot.original.is_none() {
                return Ok(());
            }
            unchanged_since(target, meta.as_ref())?;
            let backup = Backup::take(target)?;
            target.sync_dir();
            ctx.ledger().forget(&slot.key);
            ctx.note_write(&slot.key);
            undo.push(Undo::Deleted(i, backup));
            Ok(())
        }
        State::Text(_) | State::Spliced { .. } => {
            if slot.target.is_none() {
                let missing = missing_dirs(&slot.key);
                let opened = WriteTarget::open(&slot.key, Parents::Create);
                made_dirs.extend(missing);
                match opened? {
                    Some(t) => slot.target = Some(t),
                    None => {
                        return Err(ToolError::respond(format!(
                            "Failed to create parent directories for {}",
                            slot.shown
                        )));
                    }
                }
            }
            let Some(target) = &slot.target else {
                return Ok(());
            };
            let backup = match &meta {
                Some(_) => Some(Backup::link(target)?),
                None => None,
            };
            let (content, text, hash) = match &slot.state {
                State::Text(file) => {
                    let bytes = file.encode(&file.text).into_owned();
                    let hash = common::ledger_hash(&bytes);
                    let text = ctx
                        .lsp()
                        .has_server_for(&slot.key)
                        .then(|| file.text.clone());
                    (Bytes::Owned(bytes), text, hash)
                }
                State::Spliced { spans, new_len } => {
                    let _ = new_len;
                    (Bytes::Spliced(spans), None, None)
                }
                State::Disk | State::Absent => return Ok(()),
            };
            let content = match &content {
                Bytes::Owned(b) => Content::Bytes(b),
                Bytes::Spliced(spans) => match &slot.original {
                    Some(o) => Content::Spliced {
                        source: &o.file,
                        len: o.meta.len(),
                        spans,
                    },
                    None => {
                        return Err(ToolError::fatal(
                            "internal error: a spliced file without its original",
                        ));
                    }
                },
            };
            let done = write_atomic_content(target, content, meta.as_ref(), || {
                unchanged_since(target, meta.as_ref())
            });
            let new_meta = match done {
                Ok(m) => m,
                Err(e) => {
                    if let Some(b) = backup {
                        b.discard(target);
                    }
                    return Err(e);
                }
            };
            common::record_write(ctx, &slot.key, hash, &new_meta);
            undo.push(match backup {
                Some(b) => Undo::Replaced(i, b),
                None => Undo::Created(i),
            });
            written.push(Written {
                path: slot.key.clone(),
                text,
            });
            Ok(())
        }
    }
}

/// What the temporary file of one file receives.
enum Bytes<'a> {
    Owned(Vec<u8>),
    Spliced(&'a [crate::diff::Span]),
}

/// Takes back `undo` in reverse order; the problems met, if any.
fn rollback(
    ctx: &ToolContext,
    slots: &[Slot],
    undo: Vec<Undo>,
    made_dirs: &[PathBuf],
) -> Vec<String> {
    let mut problems = Vec::new();
    for u in undo.into_iter().rev() {
        let (i, done) = match u {
            Undo::Created(i) => {
                let Some(t) = &slots[i].target else { continue };
                (i, t.remove(t.name()))
            }
            Undo::Replaced(i, b) | Undo::Deleted(i, b) => {
                let Some(t) = &slots[i].target else { continue };
                (i, b.restore(t))
            }
        };
        // The ledger entry of a file put back no longer describes it.
        ctx.ledger().forget(&slots[i].key);
        ctx.note_write(&slots[i].key);
        if let Err(e) = done {
            problems.push(format!("{}: {e}", slots[i].shown));
        }
    }
    // Deepest first: a directory made for a file, then the ones made above it.
    let mut dirs: Vec<&PathBuf> = made_dirs.iter().collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    for dir in dirs {
        let _ = std::fs::remove_dir(dir);
    }
    problems
}
