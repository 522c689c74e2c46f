//! Edit and MultiEdit: string replacement in a file read earlier in the session, decided by
//! content, written atomically in the file's own encoding, BOM, line endings and mode.

use std::io::Read;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    PermissionDecision, ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult, TypedTool,
    ValidationResult,
};

use crate::atomic::{Content, write_atomic, write_atomic_content};
use crate::common::{self, CheckedTarget, unchanged_since};
use crate::diff::{Hunk, Span, hunks_for_spans, unified};
use crate::large_edit::locate_streamed;
use crate::matching::{MatchKind, locate_edit, splice};
use crate::target::{Existing, Parents, WriteTarget};
use crate::text::{Encoding, TextFile, decode_vec};

/// Files larger than this are not edited.
pub const MAX_EDIT_FILE: u64 = 1024 * 1024 * 1024;

const EDIT_DESCRIPTION: &str = "Performs exact string replacements in files.

Usage:
- You must use your `Read` tool at least once in the conversation before editing. This tool will error if you attempt an edit without reading the file.
- When editing text from Read tool output, ensure you preserve the exact indentation (tabs/spaces) as it appears AFTER the line number prefix. The line number prefix format is: line number + tab. Everything after that tab is the actual file content to match. Never include any part of the line number prefix in the old_string or new_string.
- ALWAYS prefer editing existing files in the codebase. NEVER write new files unless explicitly required.
- Only use emojis if the user explicitly requests it. Avoid adding emojis to files unless asked.
- The edit will FAIL if `old_string` is not unique in the file. Either provide a larger string with more surrounding context to make it unique or use `replace_all` to change every instance of `old_string`.
- Use `replace_all` for replacing and renaming strings across the file. This parameter is useful if you want to rename a variable for instance.
- If old_string is not found exactly, a match that differs only in curly vs straight quotes, line endings, indentation style (tabs vs spaces) or trailing whitespace is accepted when it is unique; otherwise the error shows the closest region of the file.
- An empty old_string creates a new file (or fills an empty one) with new_string.
- The file keeps its encoding, byte-order mark, line endings and permissions.";

const MULTI_EDIT_DESCRIPTION: &str = "Makes several edits to one file in one call, all or nothing.

Usage:
- Prefer this tool over Edit when you need to make multiple edits to the same file.
- Each edit works as in the Edit tool: `old_string` must match uniquely unless `replace_all` is true.
- The edits are applied in order, each to the result of the previous one; the file is written once.
- If any edit fails, none is applied and the error says which edit failed and why.
- You must Read the file first. An empty old_string in the first edit creates a new file.
- Plan edits so that an earlier edit does not change the text a later edit looks for.";

/// Input of Edit.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    /// The absolute path to the file to modify
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    pub file_path: String,
    /// The text to replace
    pub old_string: String,
    /// The text to replace it with (must be different from old_string)
    pub new_string: String,
    /// Replace all occurrences of old_string (default false)
    #[serde(default)]
    pub replace_all: Option<bool>,
    /// The target the permission check judged
    #[serde(skip)]
    #[schemars(skip)]
    checked: CheckedTarget,
}

impl EditInput {
    /// An input replacing the one occurrence of `old_string` in `file_path` by `new_string`
    /// (set `replace_all` to replace every one).
    pub fn new(
        file_path: impl Into<String>,
        old_string: impl Into<String>,
        new_string: impl Into<String>,
    ) -> Self {
        EditInput {
            file_path: file_path.into(),
            old_string: old_string.into(),
            new_string: new_string.into(),
            replace_all: None,
            checked: CheckedTarget::default(),
        }
    }
}

/// One edit of MultiEdit.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditOperation {
    /// The text to replace
    pub old_string: String,
    /// The text to replace it with
    pub new_string: String,
    /// Replace all occurrences of old_string (default false)
    #[serde(default)]
    pub replace_all: Option<bool>,
}

/// Input of MultiEdit.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MultiEditInput {
    /// The absolute path to the file to modify
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    pub file_path: String,
    /// Edits to apply in order, all or nothing
    #[schemars(length(min = 1))]
    pub edits: Vec<EditOperation>,
    /// The target the permission check judged
    #[serde(skip)]
    #[schemars(skip)]
    checked: CheckedTarget,
}

impl MultiEditInput {
    /// An input applying `edits` to `file_path` in order.
    pub fn new(file_path: impl Into<String>, edits: Vec<EditOperation>) -> Self {
        MultiEditInput {
            file_path: file_path.into(),
            edits,
            checked: CheckedTarget::default(),
        }
    }
}

/// One applied edit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppliedEdit {
    /// The text of the file that was replaced (the first match)
    pub old_string: String,
    /// The replacement as given
    pub new_string: String,
    /// Whether every occurrence was replaced
    pub replace_all: bool,
    /// How the match was found
    pub matched_by: MatchKind,
    /// How many occurrences were replaced
    pub replacements: usize,
}

/// Output of Edit and MultiEdit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EditOutput {
    /// The file
    pub file_path: String,
    /// The replaced text of the first edit (the file's text, which may differ from the
    /// old_string sent in quotes, line endings or whitespace)
    pub old_string: String,
    /// The replacement of the first edit
    pub new_string: String,
    /// Whether the first edit replaced every occurrence
    pub replace_all: bool,
    /// Every edit applied
    pub edits: Vec<AppliedEdit>,
    /// The change as hunks
    pub structured_patch: Vec<Hunk>,
    /// The change as a unified diff
    pub diff: String,
    /// Whether the file was created
    pub created: bool,
    /// Never true here: no person edits the proposal
    pub user_modified: bool,
}

/// The Edit tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Edit;

/// The MultiEdit tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct MultiEdit;

fn is_notebook(path: &str) -> bool {
    Path::new(path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("ipynb"))
}

const NOTEBOOK: &str = "File is a Jupyter Notebook. Use the NotebookEdit to edit this file.";
const SAME: &str = "No changes to make: old_string and new_string are exactly the same.";

struct Request {
    edits: Vec<EditOperation>,
    multi: bool,
}

/// The shared body of Edit and MultiEdit (blocking: run it off the async runtime).
fn run_edits(
    ctx: &ToolContext,
    file_path: &str,
    checked: &CheckedTarget,
    req: &Request,
) -> Result<(EditOutput, PathBuf, String), ToolError> {
    let given = common::resolve(ctx, file_path);
    let key = checked.target_for(&given)?;
    let shown = given.display().to_string();
    let n = req.edits.len();
    let fail = |i: usize, message: String| -> ToolError {
        if req.multi {
            ToolError::respond(format!(
                "Edit {} of {n} failed: {message}\nNo edits were applied; the file is unchanged.",
                i + 1
            ))
        } else {
            ToolError::respond(message)
        }
    };
    let creating_first = req.edits.first().is_some_and(|e| e.old_string.is_empty());
    // Missing parents are made only for a file this call creates.
    let parents = if creating_first {
        Parents::Create
    } else {
        Parents::Require
    };
    let Some(target) = WriteTarget::open(&key, parents)? else {
        return Err(common::not_found(ctx, &given));
    };
    let existing = target.open_existing()?;
    let meta = existing.as_ref().map(|e| e.meta.clone());
    if let Some(existing) = &existing
        && let Some(done) = try_streamed(ctx, req, &target, &shown, existing)?
    {
        return Ok(done);
    }
    let (file, original, created, source) = match existing {
        None if creating_first => (TextFile::utf8(String::new()), String::new(), true, None),
        None => return Err(common::not_found(ctx, &given)),
        Some(existing) => {
            let (file, text, source) =
                read_existing(ctx, &key, &shown, existing, creating_first, &fail)?;
            (file, text, false, Some(source))
        }
    };
    // A large UTF-8 file edited once is written as the original file with the replacement
    // spliced in (the unchanged ranges copied by the kernel): its new text is never built.
    let spliced = n == 1
        && !created
        && file.encoding == Encoding::Utf8
        && !file.bom
        && original.len() as u64 > SPLICE_FROM
        && !ctx.lsp().has_server_for(&key);
    let Applied {
        applied,
        current,
        mut spans,
    } = apply_edits(req, &original, spliced, &fail)?;
    if let (true, Some(source)) = (spliced, &source) {
        if spans
            .iter()
            .all(|s| original.get(s.start..s.end) == Some(s.replacement.as_str()))
        {
            return Err(ToolError::respond(UNCHANGED));
        }
        let hunks = hunks_for_spans(&original, &spans);
        let hash = spliced_hash(&original, &spans);
        let splice = Splice {
            source,
            len: original.len() as u64,
            spans: &spans,
            hunks,
            hash,
        };
        return finish_spliced(ctx, &target, &shown, meta.as_ref(), splice, applied);
    }
    let text = current.unwrap_or_else(|| original.clone());
    if !created && text == original {
        return Err(ToolError::respond(UNCHANGED));
    }
    // The diff: the first edit's spans when it is the only one, else the one region
    // between the common prefix and suffix of the old and new text.
    if n > 1 || created {
        spans = vec![common_region(&original, &text)];
    }
    let bytes = file.encode(&text);
    let written = write_atomic(&target, &bytes, meta.as_ref(), || {
        unchanged_since(&target, meta.as_ref())
    })?;
    common::record_write(ctx, &key, common::ledger_hash(&bytes), &written);
    let structured_patch = hunks_for_spans(&original, &spans);
    let diff = unified(&shown, &structured_patch);
    let output = edit_output(shown, applied, structured_patch, diff, created);
    Ok((output, key, text))
}

/// Reads an existing file for editing: size-capped, not binary, fresh against the ledger
/// (unless the first edit creates it), decoded. Returns the file with its text taken out,
/// the text, and the open handle (a large file's unchanged ranges are copied from it).
fn read_existing(
    ctx: &ToolContext,
    key: &Path,
    shown: &str,
    existing: Existing,
    creating_first: bool,
    fail: &dyn Fn(usize, String) -> ToolError,
) -> Result<(TextFile, String, std::fs::File), ToolError> {
    let Existing {
        file: mut source,
        meta,
    } = existing;
    if meta.len() > MAX_EDIT_FILE {
        return Err(ToolError::respond(format!(
            "File is too large to edit ({} bytes; the maximum is 1 GiB). Use Bash (sed) for files this large.",
            meta.len()
        )));
    }
    // The handle stays open: a large file's unchanged ranges are copied from it.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    source
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io(key, e))?;
    if crate::text::looks_binary(&bytes) {
        return Err(ToolError::respond(
            crate::text::DecodeError::Binary.message(shown),
        ));
    }
    if !creating_first {
        common::check_fresh(ctx, key, &meta, &bytes)?;
    }
    let mut file = decode_vec(bytes).map_err(|e| ToolError::respond(e.message(shown)))?;
    if creating_first && !file.text.trim().is_empty() {
        return Err(fail(
            0,
            "Cannot create new file - file already exists.".to_owned(),
        ));
    }
    // Filling an empty file needs no read: there is nothing to overwrite.
    let text = std::mem::take(&mut file.text);
    Ok((file, text, source))
}

/// What [`apply_edits`] did.
struct Applied {
    /// Each edit as applied
    applied: Vec<AppliedEdit>,
    /// The new text (`None` for a spliced write, which never builds it)
    current: Option<String>,
    /// Where the first edit replaced text
    spans: Vec<Span>,
}

/// Applies the edits in order to `original`, refusing (with `fail`) an edit that cannot
/// apply; `spliced` leaves the new text unbuilt.
fn apply_edits(
    req: &Request,
    original: &str,
    spliced: bool,
    fail: &dyn Fn(usize, String) -> ToolError,
) -> Result<Applied, ToolError> {
    let mut current: Option<String> = None;
    let mut applied = Vec::with_capacity(req.edits.len());
    let mut spans: Vec<Span> = Vec::new();
    for (i, edit) in req.edits.iter().enumerate() {
        if edit.old_string.is_empty() && i > 0 {
            return Err(fail(
                i,
                "old_string is empty; only the first edit may create or fill a file.".to_owned(),
            ));
        }
        if edit.old_string == edit.new_string {
            return Err(fail(i, SAME.to_owned()));
        }
        // The reference's guard: a later edit must not target text an earlier edit wrote.
        let trimmed = edit.old_string.trim_end_matches('\n');
        if req.multi
            && !trimmed.is_empty()
            && req.edits[..i]
                .iter()
                .any(|prev| prev.new_string.contains(trimmed) && !original.contains(trimmed))
        {
            return Err(fail(
                i,
                "Cannot edit file: old_string is a substring of a new_string from a previous edit."
                    .to_owned(),
            ));
        }
        let replace_all = edit.replace_all.unwrap_or(false);
        let before = current.as_deref().unwrap_or(original);
        let located = locate_edit(before, &edit.old_string, &edit.new_string, replace_all)
            .map_err(|m| fail(i, m))?;
        applied.push(AppliedEdit {
            old_string: located.actual_old,
            new_string: edit.new_string.clone(),
            replace_all,
            matched_by: located.kind,
            replacements: located.spans.len(),
        });
        // A spliced write never builds the new text.
        if !spliced {
            current = Some(splice(before, &located.spans));
        }
        if i == 0 {
            spans = located.spans;
        }
    }
    Ok(Applied {
        applied,
        current,
        spans,
    })
}

/// One exact edit of a file over [`common::HASH_LIMIT`] (whose freshness is decided by time
/// and size, so its content is not needed for that): streamed by [`locate_streamed`] and
/// spliced, never loaded. `None` when anything needs the general path.
fn try_streamed(
    ctx: &ToolContext,
    req: &Request,
    target: &WriteTarget,
    shown: &str,
    existing: &Existing,
) -> Result<Option<(EditOutput, PathBuf, String)>, ToolError> {
    let key = target.path();
    let meta = &existing.meta;
    let [edit] = req.edits.as_slice() else {
        return Ok(None);
    };
    let unhashed = ctx
        .ledger()
        .get(key)
        .is_some_and(|r| r.content_hash.is_none() && !r.partial_view);
    if edit.old_string.is_empty()
        || edit.old_string == edit.new_string
        || meta.len() <= common::HASH_LIMIT
        || meta.len() > MAX_EDIT_FILE
        || !unhashed
        || ctx.lsp().has_server_for(key)
    {
        return Ok(None);
    }
    common::check_fresh(ctx, key, meta, &[])?;
    let source = &existing.file;
    let located = locate_streamed(source, meta.len(), &edit.old_string, &edit.new_string)
        .map_err(|e| ToolError::io(key, e))?;
    let Some(found) = located else {
        return Ok(None);
    };
    let span = &found.span;
    let new_len = meta.len() - (span.end - span.start) as u64 + span.replacement.len() as u64;
    if new_len <= common::HASH_LIMIT {
        // Small enough afterwards to be hashed: the general path has the text to hash.
        return Ok(None);
    }
    if span.end - span.start == edit.old_string.len() && span.replacement == edit.old_string {
        return Err(ToolError::respond(UNCHANGED));
    }
    let applied = vec![AppliedEdit {
        old_string: edit.old_string.clone(),
        new_string: edit.new_string.clone(),
        replace_all: edit.replace_all.unwrap_or(false),
        matched_by: MatchKind::Exact,
        replacements: 1,
    }];
    let splice = Splice {
        source,
        len: meta.len(),
        spans: std::slice::from_ref(span),
        hunks: found.hunks,
        // Over HASH_LIMIT afterwards (checked above): decided by time and size.
        hash: None,
    };
    finish_spliced(ctx, target, shown, Some(meta), splice, applied).map(Some)
}

/// A spliced write: the original file, the replaced spans, the diff and the ledger hash of
/// the new content (none above [`common::HASH_LIMIT`]).
struct Splice<'a> {
    source: &'a std::fs::File,
    len: u64,
    spans: &'a [Span],
    hunks: Vec<Hunk>,
    hash: Option<u64>,
}

/// Writes `splice` atomically, records it in the ledger and builds the output. Only taken
/// when no language server handles the file, so there is no new text to hand over.
fn finish_spliced(
    ctx: &ToolContext,
    target: &WriteTarget,
    shown: &str,
    meta: Option<&std::fs::Metadata>,
    splice: Splice<'_>,
    applied: Vec<AppliedEdit>,
) -> Result<(EditOutput, PathBuf, String), ToolError> {
    let content = Content::Spliced {
        source: splice.source,
        len: splice.len,
        spans: splice.spans,
    };
    let written = write_atomic_content(target, content, meta, || unchanged_since(target, meta))?;
    common::record_write(ctx, target.path(), splice.hash, &written);
    let diff = unified(shown, &splice.hunks);
    let output = edit_output(shown.to_owned(), applied, splice.hunks, diff, false);
    Ok((output, target.path().to_path_buf(), String::new()))
}

/// Files at least this large that are edited once are written by [`Content::Spliced`].
const SPLICE_FROM: u64 = 1024 * 1024;

/// The ledger hash of `original` with `spans` replaced, without building that text.
fn spliced_hash(original: &str, spans: &[Span]) -> Option<u64> {
    let replaced: usize = spans.iter().map(|s| s.end - s.start).sum();
    let added: usize = spans.iter().map(|s| s.replacement.len()).sum();
    if (original.len() - replaced + added) as u64 > common::HASH_LIMIT {
        return None;
    }
    let mut hash = common::StreamHash::default();
    let mut at = 0;
    for span in spans {
        hash.update(&original.as_bytes()[at..span.start]);
        hash.update(span.replacement.as_bytes());
        at = span.end;
    }
    hash.update(&original.as_bytes()[at..]);
    Some(hash.finish())
}

const UNCHANGED: &str = "Original and edited file match exactly. Failed to apply edit.";

fn edit_output(
    shown: String,
    applied: Vec<AppliedEdit>,
    structured_patch: Vec<Hunk>,
    diff: String,
    created: bool,
) -> EditOutput {
    let first = applied.first().cloned();
    EditOutput {
        file_path: shown,
        old_string: first
            .as_ref()
            .map(|a| a.old_string.clone())
            .unwrap_or_default(),
        new_string: first
            .as_ref()
            .map(|a| a.new_string.clone())
            .unwrap_or_default(),
        replace_all: first.as_ref().is_some_and(|a| a.replace_all),
        edits: applied,
        structured_patch,
        diff,
        created,
        user_modified: false,
    }
}

/// The single span that turns `old` into `new`: between their common prefix and suffix.
fn common_region(old: &str, new: &str) -> Span {
    let prefix = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let max_suffix = old.len().min(new.len()) - prefix;
    let suffix = old
        .bytes()
        .rev()
        .zip(new.bytes().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let mut start = prefix;
    while !old.is_char_boundary(start) || !new.is_char_boundary(start) {
        start -= 1;
    }
    let mut old_end = old.len() - suffix;
    let mut new_end = new.len() - suffix;
    while !old.is_char_boundary(old_end) || !new.is_char_boundary(new_end) {
        old_end += 1;
        new_end += 1;
    }
    Span {
        start,
        end: old_end,
        replacement: new[start..new_end].to_owned(),
    }
}

/// The model text of a successful edit.
fn summary(output: &EditOutput, multi: bool) -> String {
    let path = &output.file_path;
    let mut text = if output.created {
        format!("File created successfully at: {path}")
    } else if multi {
        format!(
            "Applied {} edits to {path}; the file has been updated successfully.",
            output.edits.len()
        )
    } else if output.replace_all {
        format!("The file {path} has been updated. All occurrences were successfully replaced.")
    } else {
        format!("The file {path} has been updated successfully.")
    };
    for (i, edit) in output.edits.iter().enumerate() {
        let how = match edit.matched_by {
            MatchKind::Exact => continue,
            MatchKind::LineEndings => "after reading CRLF line endings as LF",
            MatchKind::Quotes => {
                "after reading curly quotes as straight ones (the file's quote style was kept)"
            }
            MatchKind::Whitespace => {
                "ignoring indentation style and trailing whitespace (the file's indentation was kept)"
            }
        };
        let which = if multi {
            format!("Edit {}", i + 1)
        } else {
            "old_string".to_owned()
        };
        text.push_str(&format!("\nNote: {which} matched {how}."));
    }
    text
}

async fn execute(
    ctx: &ToolContext,
    file_path: String,
    checked: CheckedTarget,
    req: Request,
) -> Result<ToolResult<EditOutput>, ToolError> {
    let multi = req.multi;
    let ctx2 = ctx.clone();
    let (output, target, text) =
        tokio::task::spawn_blocking(move || run_edits(&ctx2, &file_path, &checked, &req))
            .await
            .map_err(|e| ToolError::fatal(format!("internal error: the edit failed: {e}")))??;
    let diagnostics = common::notify_lsp(ctx, &target, &text).await;
    let text = summary(&output, multi) + &diagnostics;
    Ok(ToolResult::ok(output).with_text(text))
}

#[async_trait]
impl TypedTool for Edit {
    type Input = EditInput;
    type Output = EditOutput;
    const META: ToolMeta = ToolMeta::new("Edit")
        .describe(EDIT_DESCRIPTION)
        .hint("modify file contents in place")
        .category(ToolCategory::FileSystem)
        .destructive_hint();

    async fn validate(&self, input: &EditInput, _ctx: &ToolContext) -> ValidationResult {
        if input.old_string == input.new_string {
            return ValidationResult::invalid_code(SAME, 1);
        }
        if is_notebook(&input.file_path) {
            return ValidationResult::invalid_code(NOTEBOOK, 5);
        }
        ValidationResult::Valid
    }
    async fn check_permission(&self, input: &EditInput, ctx: &ToolContext) -> PermissionDecision {
        common::check_write(ctx, &input.file_path, &input.checked)
    }
    async fn call(
        &self,
        input: EditInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<EditOutput>, ToolError> {
        let req = Request {
            edits: vec![EditOperation {
                old_string: input.old_string,
                new_string: input.new_string,
                replace_all: input.replace_all,
            }],
            multi: false,
        };
        execute(ctx, input.file_path, input.checked, req).await
    }
}

#[async_trait]
impl TypedTool for MultiEdit {
    type Input = MultiEditInput;
    type Output = EditOutput;
    const META: ToolMeta = ToolMeta::new("MultiEdit")
        .describe(MULTI_EDIT_DESCRIPTION)
        .hint("several edits to one file at once")
        .category(ToolCategory::FileSystem)
        .destructive_hint();

    async fn validate(&self, input: &MultiEditInput, _ctx: &ToolContext) -> ValidationResult {
        if input.edits.is_empty() {
            return ValidationResult::invalid_code("edits must contain at least one edit.", 1);
        }
        if let Some(i) = input
            .edits
            .iter()
            .position(|e| e.old_string == e.new_string)
        {
            return ValidationResult::invalid_code(
                format!("Edit {} of {}: {SAME}", i + 1, input.edits.len()),
                1,
            );
        }
        if is_notebook(&input.file_path) {
            return ValidationResult::invalid_code(NOTEBOOK, 5);
        }
        ValidationResult::Valid
    }
    async fn check_permission(
        &self,
        input: &MultiEditInput,
        ctx: &ToolContext,
    ) -> PermissionDecision {
        common::check_write(ctx, &input.file_path, &input.checked)
    }
    async fn call(
        &self,
        input: MultiEditInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<EditOutput>, ToolError> {
        let req = Request {
            edits: input.edits,
            multi: true,
        };
        execute(ctx, input.file_path, input.checked, req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_region_is_minimal_and_on_char_boundaries() {
        let s = common_region("abcdef", "abXYef");
        assert_eq!((s.start, s.end, s.replacement.as_str()), (2, 4, "XY"));
        let s = common_region("aé", "aè");
        assert_eq!(&"aé"[s.start..s.end], "é");
        assert_eq!(s.replacement, "è");
        let s = common_region("", "new");
        assert_eq!((s.start, s.end, s.replacement.as_str()), (0, 0, "new"));
    }
}
