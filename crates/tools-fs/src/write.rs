//! Write: creates a file, or replaces one read earlier in the session; keeps the existing
//! file's encoding, BOM, line endings and mode (the reference dropped CRLF); atomic.

use std::io::Read as _;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    PermissionDecision, ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult, TypedTool,
    ValidationResult,
};

use crate::atomic::write_atomic;
use crate::common::{self, CheckedTarget, unchanged_since};
use crate::diff::{Hunk, hunks_whole, unified};
use crate::target::{Parents, WriteTarget};
use crate::text::{LineEnding, TextFile, decode, dominant_ending, with_ending};

const DESCRIPTION: &str = "Writes a file to the local filesystem.

Usage:
- This tool will overwrite the existing file if there is one at the provided path.
- If this is an existing file, you MUST use the Read tool first to read the file's contents. This tool will fail if you did not read the file first.
- The existing file keeps its encoding, byte-order mark, line endings (CRLF stays CRLF) and permissions; missing parent directories are created.
- ALWAYS prefer editing existing files in the codebase. NEVER write new files unless explicitly required.
- NEVER proactively create documentation files (*.md) or README files. Only create documentation files if explicitly requested by the User.
- Only use emojis if the user explicitly requests it. Avoid writing emojis to files unless asked.";

/// Input of Write.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteInput {
    /// The absolute path to the file to write (must be absolute, not relative)
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    pub file_path: String,
    /// The content to write to the file
    pub content: String,
    /// The target the permission check judged
    #[serde(skip)]
    #[schemars(skip)]
    checked: CheckedTarget,
}

impl WriteInput {
    /// An input writing `content` to `file_path`.
    pub fn new(file_path: impl Into<String>, content: impl Into<String>) -> Self {
        WriteInput {
            file_path: file_path.into(),
            content: content.into(),
            checked: CheckedTarget::default(),
        }
    }
}

/// Output of Write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteOutput {
    /// Whether the file was created or replaced
    #[serde(rename = "type")]
    pub kind: WriteKind,
    /// The file
    pub file_path: String,
    /// The change as hunks (empty for a new file, or when too large to diff)
    pub structured_patch: Vec<Hunk>,
    /// The change as a unified diff
    pub diff: String,
    /// Bytes written
    pub bytes_written: usize,
}

/// What Write did to the file (`type` of [`WriteOutput`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteKind {
    /// The file did not exist
    Create,
    /// The file existed and was replaced
    Update,
}

/// The Write tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Write;

fn run(
    ctx: &ToolContext,
    input: &WriteInput,
) -> Result<(WriteOutput, std::path::PathBuf, String), ToolError> {
    let given = common::resolve(ctx, &input.file_path);
    let path = input.checked.target_for(&given)?;
    let shown = given.display().to_string();
    // Missing parents are made on the way: a file under a missing directory is new.
    let target = WriteTarget::open(&path, Parents::Create)?
        .ok_or_else(|| ToolError::fatal("internal error: Write found no parent directory"))?;
    let existing = target.open_existing()?;
    let meta = existing.as_ref().map(|e| e.meta.clone());
    let (bytes, text, old_text) = match existing {
        None => (
            input.content.as_bytes().to_vec(),
            input.content.clone(),
            None,
        ),
        Some(mut existing) => {
            let mut current = Vec::with_capacity(usize::try_from(existing.meta.len()).unwrap_or(0));
            existing
                .file
                .read_to_end(&mut current)
                .map_err(|e| ToolError::io(&path, e))?;
            common::check_fresh(ctx, &path, &existing.meta, &current)?;
            // Keep what the file was: encoding, BOM, CRLF. A file that is not text is
            // replaced by the content as given.
            let (file, old) = match decode(&current) {
                Ok(file) => {
                    let old = file.text.clone();
                    (file, Some(old))
                }
                Err(_) => (TextFile::utf8(String::new()), None),
            };
            let mut text = input.content.clone();
            if let Some(old) = &old
                && dominant_ending(old) == LineEnding::CrLf
            {
                text = with_ending(&text, LineEnding::CrLf);
            }
            (file.encode(&text).into_owned(), text, old)
        }
    };
    let written = write_atomic(&target, &bytes, meta.as_ref(), || {
        unchanged_since(&target, meta.as_ref())
    })?;
    common::record_write(ctx, &path, common::ledger_hash(&bytes), &written);
    let structured_patch = old_text
        .as_deref()
        .map(|old| hunks_whole(old, &text))
        .unwrap_or_default();
    let output = WriteOutput {
        kind: if meta.is_some() {
            WriteKind::Update
        } else {
            WriteKind::Create
        },
        diff: unified(&shown, &structured_patch),
        file_path: shown,
        structured_patch,
        bytes_written: bytes.len(),
    };
    Ok((output, path, text))
}

#[async_trait]
impl TypedTool for Write {
    type Input = WriteInput;
    type Output = WriteOutput;
    const META: ToolMeta = ToolMeta::new("Write")
        .describe(DESCRIPTION)
        .hint("create or overwrite files")
        .category(ToolCategory::FileSystem)
        .destructive_hint()
        .idempotent_hint();

    async fn validate(&self, input: &WriteInput, _ctx: &ToolContext) -> ValidationResult {
        if input.file_path.trim().is_empty() {
            return ValidationResult::invalid_code("file_path must not be empty.", 1);
        }
        ValidationResult::Valid
    }
    async fn check_permission(&self, input: &WriteInput, ctx: &ToolContext) -> PermissionDecision {
        common::check_write(ctx, &input.file_path, &input.checked)
    }
    async fn call(
        &self,
        input: WriteInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<WriteOutput>, ToolError> {
        let ctx2 = ctx.clone();
        let (output, target, text) = tokio::task::spawn_blocking(move || run(&ctx2, &input))
            .await
            .map_err(|e| ToolError::fatal(format!("internal error: Write failed: {e}")))??;
        let diagnostics = common::notify_lsp(ctx, &target, &text).await;
        let mut message = if output.kind == WriteKind::Create {
            format!("File created successfully at: {}", output.file_path)
        } else {
            format!(
                "The file {} has been updated successfully.",
                output.file_path
            )
        };
        message.push_str(&diagnostics);
        Ok(ToolResult::ok(output).with_text(message))
    }
}
