//! Every file of a patch changed in memory first. The sections are applied in order, as
//! codex applies them (a later section sees what an earlier one did: an added file can be
//! updated), to a view of the files the patch touches; nothing is written here.

use std::io::Read;
use std::path::{Path, PathBuf};

use tool_core::{ToolContext, ToolError};

use super::apply::apply;
use super::grammar::{Chunk, Hunk};
use super::stream;
use crate::common::{self, HASH_LIMIT};
use crate::diff::Span;
use crate::edit::MAX_EDIT_FILE;
use crate::target::{Existing, Parents, WriteTarget};
use crate::text::{TextFile, decode_vec, looks_binary};

/// What a file is, as far as the patch has got.
pub(crate) enum State {
    /// As on disk (untouched, or not yet read)
    Disk,
    /// Gone (deleted or moved away), or never there
    Absent,
    /// This text, written in this encoding and BOM
    Text(TextFile),
    /// A large file: the original with these byte ranges replaced, never loaded
    Spliced { spans: Vec<Span>, new_len: u64 },
}

/// One file the patch touches.
pub(crate) struct Slot {
    /// The path written (the one the permission check judged)
    pub key: PathBuf,
    /// The path as shown in messages
    pub shown: String,
    /// Its held directory; `None` when a parent is missing (made when written)
    pub target: Option<WriteTarget>,
    /// The file on disk before the patch
    pub original: Option<Existing>,
    /// Why the path cannot be opened (a directory, a FIFO, a parent that is a file)
    pub open_error: Option<String>,
    /// What it is now
    pub state: State,
}

/// The files' new states and the summary codex prints.
pub(crate) struct Plan {
    pub slots: Vec<Slot>,
    pub added: Vec<String>,
    pub modified: Vec<String>,
    pub deleted: Vec<String>,
}

/// Resolves a path of the patch to the path written: the one its permission check judged.
pub(crate) type Resolve<'a> = dyn Fn(&Path) -> Result<PathBuf, ToolError> + 'a;

fn hint(message: String, what_to_do: &str) -> ToolError {
    ToolError::respond(format!("{message}\n{NOTHING_WRITTEN} {what_to_do}"))
}

const NOTHING_WRITTEN: &str = "Nothing was changed: a patch applies in full or not at all.";

impl Plan {
    /// A Delete section: the file must exist and be a regular file, not a link.
    fn delete(
        &mut self,
        ctx: &ToolContext,
        path: &str,
        resolve: &Resolve<'_>,
    ) -> Result<(), ToolError> {
        let given = common::resolve(ctx, path);
        let link = std::fs::symlink_metadata(&given).is_ok_and(|m| m.file_type().is_symlink());
        if link {
            return Err(hint(
                format!("Failed to delete file {}", given.display()),
                "It is a symbolic link: apply_patch deletes regular files only; remove the link with the shell.",
            ));
        }
        let i = self.slot(ctx, path, resolve)?;
        let slot = &mut self.slots[i];
        let present = match slot.state {
            State::Disk => slot.original.is_some(),
            State::Text(_) | State::Spliced { .. } => true,
            State::Absent => false,
        };
        if slot.open_error.is_some() || !present {
            let why = slot
                .open_error
                .clone()
                .unwrap_or_else(|| "No such file or directory (os error 2)".to_owned());
            return Err(hint(
                format!("Failed to delete file {}", slot.shown),
                &format!(
                    "{why}. Check the path (relative to the working directory); only existing regular files can be deleted."
                ),
            ));
        }
        slot.state = State::Absent;
        self.deleted.push(path.to_owned());
        Ok(())
    }

    /// An Update section of `path`, moved to `move_to`; `touches` holds the file each
    /// section names (a file no other section touches may be streamed).
    fn update(
        &mut self,
        ctx: &ToolContext,
        path: &str,
        move_to: Option<&str>,
        chunks: &[Chunk],
        touches: &[PathBuf],
        resolve: &Resolve<'_>,
    ) -> Result<(), ToolError> {
        let i = self.slot(ctx, path, resolve)?;
        let once = touches.iter().filter(|k| **k == self.slots[i].key).count() == 1;
        let streamed = if once && move_to.is_none() {
            try_stream(ctx, &self.slots[i], chunks)?
        } else {
            None
        };
        if let Some(state) = streamed {
            self.slots[i].state = state;
            self.modified.push(path.to_owned());
            return Ok(());
        }
        let slot = &mut self.slots[i];
        let shown = slot.shown.clone();
        let file = current(slot)?;
        let text = apply(&file.text, chunks, &shown).map_err(|m| {
        hint(m, "Read the file again and send its lines exactly as context (' ') and removed ('-') lines, in file order.")
    })?;
        let new = TextFile {
            encoding: file.encoding,
            bom: file.bom,
            text,
        };
        let dest = match move_to {
            Some(to) => Some((self.slot(ctx, to, resolve)?, to)),
            None => None,
        };
        match dest {
            // Codex writes the destination and then removes the source, which loses
            // a file moved onto itself; here that is an update in place.
            Some((d, to)) if d != i => {
                let dslot = &mut self.slots[d];
                if let Some(e) = &dslot.open_error {
                    return Err(hint(
                        format!("Failed to write file {}: {e}", dslot.shown),
                        "Choose a destination that is not a directory or special file.",
                    ));
                }
                dslot.state = State::Text(new);
                self.slots[i].state = State::Absent;
                self.modified.push(to.to_owned());
            }
            Some((_, to)) => {
                self.slots[i].state = State::Text(new);
                self.modified.push(to.to_owned());
            }
            None => {
                self.slots[i].state = State::Text(new);
                self.modified.push(path.to_owned());
            }
        }
        Ok(())
    }

    fn slot(
        &mut self,
        ctx: &ToolContext,
        raw: &str,
        resolve: &Resolve<'_>,
    ) -> Result<usize, ToolError> {
        let given = common::resolve(ctx, raw);
        let key = resolve(&given)?;
        if let Some(i) = self.slots.iter().position(|s| s.key == key) {
            return Ok(i);
        }
        let (target, original, open_error) = match WriteTarget::open(&key, Parents::Require) {
            Ok(Some(t)) => match t.open_existing() {
                Ok(original) => (Some(t), original, None),
                Err(e) => (Some(t), None, Some(e.to_string())),
            },
            Ok(None) => (None, None, None),
            Err(e) => (None, None, Some(e.to_string())),
        };
        self.slots.push(Slot {
            key,
            shown: given.display().to_string(),
            target,
            original,
            open_error,
            state: State::Disk,
        });
        Ok(self.slots.len() - 1)
    }
}

/// The text of the file in `slot` now, loaded when needed; codex's message when there is
/// none.
fn current(slot: &mut Slot) -> Result<&TextFile, ToolError> {
    let missing = |slot: &Slot, why: &str| {
        hint(
            format!("Failed to read file to update {}: {why}", slot.shown),
            "Check the path (relative to the working directory), or add the file with '*** Add File: '.",
        )
    };
    if let Some(e) = &slot.open_error {
        let dir = std::fs::symlink_metadata(&slot.key).is_ok_and(|m| m.is_dir());
        let why = if dir {
            format!("path `{}` is not a file", slot.shown)
        } else {
            e.clone()
        };
        return Err(missing(slot, &why));
    }
    if matches!(slot.state, State::Disk) {
        let Some(original) = &slot.original else {
            return Err(missing(slot, "No such file or directory (os error 2)"));
        };
        let len = original.meta.len();
        if len > MAX_EDIT_FILE {
            return Err(ToolError::respond(format!(
                "Cannot update {}: it is too large ({len} bytes; the maximum is 1 GiB) for a patch whose lines are not all found exactly. Use the shell (sed) for files this large.",
                slot.shown
            )));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        (&original.file)
            .read_to_end(&mut bytes)
            .map_err(|e| ToolError::io(&slot.key, e))?;
        if looks_binary(&bytes) {
            return Err(ToolError::respond(
                crate::text::DecodeError::Binary.message(&slot.shown),
            ));
        }
        let file = decode_vec(bytes).map_err(|e| ToolError::respond(e.message(&slot.shown)))?;
        slot.state = State::Text(file);
    }
    match &slot.state {
        State::Text(file) => Ok(file),
        State::Absent => Err(missing(slot, "No such file or directory (os error 2)")),
        // A spliced file is touched by one section only.
        State::Disk | State::Spliced { .. } => Err(ToolError::fatal(format!(
            "internal error: {} was changed twice by one patch",
            slot.shown
        ))),
    }
}

/// Applies `hunks` in order to a view of the files, resolving each path with `resolve`.
pub(crate) fn plan(
    ctx: &ToolContext,
    hunks: &[Hunk],
    resolve: &Resolve<'_>,
) -> Result<Plan, ToolError> {
    if hunks.is_empty() {
        return Err(hint(
            "No files were modified.".to_owned(),
            "The patch has no file sections: add '*** Add File: ', '*** Delete File: ' or '*** Update File: ' sections between the markers.",
        ));
    }
    let mut plan = Plan {
        slots: Vec::new(),
        added: Vec::new(),
        modified: Vec::new(),
        deleted: Vec::new(),
    };
    // How many sections name each file: only a file touched once may be streamed.
    let mut touches: Vec<PathBuf> = Vec::new();
    for h in hunks {
        let mut paths = vec![h.path()];
        if let Hunk::Update {
            move_to: Some(to), ..
        } = h
        {
            paths.push(to);
        }
        for p in paths {
            touches.push(resolve(&common::resolve(ctx, p))?);
        }
    }
    for hunk in hunks {
        match hunk {
            Hunk::Add { path, contents } => {
                let i = plan.slot(ctx, path, resolve)?;
                let slot = &mut plan.slots[i];
                if let Some(e) = &slot.open_error {
                    return Err(hint(
                        format!("Failed to write file {}: {e}", slot.shown),
                        "Choose a path that is not a directory or special file.",
                    ));
                }
                slot.state = State::Text(TextFile::utf8(contents.clone()));
                plan.added.push(path.clone());
            }
            Hunk::Delete { path } => plan.delete(ctx, path, resolve)?,
            Hunk::Update {
                path,
                move_to,
                chunks,
            } => plan.update(ctx, path, move_to.as_deref(), chunks, &touches, resolve)?,
        }
    }
    Ok(plan)
}

/// The streamed state of an update of a large file, when it applies.
fn try_stream(
    ctx: &ToolContext,
    slot: &Slot,
    chunks: &[super::grammar::Chunk],
) -> Result<Option<State>, ToolError> {
    let (State::Disk, Some(original), None) = (&slot.state, &slot.original, &slot.open_error)
    else {
        return Ok(None);
    };
    let len = original.meta.len();
    if len <= HASH_LIMIT || len > MAX_EDIT_FILE || ctx.lsp().has_server_for(&slot.key) {
        return Ok(None);
    }
    let Some(spans) =
        stream::locate(&original.file, len, chunks).map_err(|e| ToolError::io(&slot.key, e))?
    else {
        return Ok(None);
    };
    let removed: u64 = spans.iter().map(|s| (s.end - s.start) as u64).sum();
    let added: u64 = spans.iter().map(|s| s.replacement.len() as u64).sum();
    let new_len = len - removed + added;
    if new_len <= HASH_LIMIT {
        // Small enough afterwards to be hashed: the loaded path has the text to hash.
        return Ok(None);
    }
    Ok(Some(State::Spliced { spans, new_len }))
}
