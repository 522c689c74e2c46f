//! `read_file`, `write_file` and `replace` over Read, Write and Edit.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{Tool, ToolContext, ToolError, ToolResult};

use super::{str_of, u64_of, with_text};
use crate::profiles::Mapping;

/// Gemini CLI's `read_file` over Read.
pub(super) struct ReadFile;

/// Input of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReadFileInput {
    /// The path to the file to read.
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    file_path: String,
    /// Optional: The 1-based line number to start reading from.
    #[serde(default)]
    #[schemars(range(min = 1))]
    start_line: Option<u64>,
    /// Optional: The 1-based line number to end reading at (inclusive).
    #[serde(default)]
    #[schemars(range(min = 1))]
    end_line: Option<u64>,
}

impl Mapping for ReadFile {
    type Input = ReadFileInput;

    fn name(&self) -> &'static str {
        "read_file"
    }

    fn description(&self) -> String {
        "Reads and returns the content of a specified file. To maintain context efficiency, you MUST use 'start_line' and 'end_line' for targeted, surgical reads of specific sections. For your safety, the tool will automatically truncate output exceeding 2000 lines, 2000 characters per line, or 20MB in size; however, triggering these limits is considered token-inefficient. Always retrieve only the minimum content necessary for your next step. Handles text, images (PNG, JPG, GIF, WEBP, SVG, BMP), and PDF files.".to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["Read"]
    }

    fn inner_input(&self, input: &ReadFileInput, _inner: &dyn Tool) -> Result<Value, ToolError> {
        let mut read = json!({ "file_path": input.file_path });
        let start = input.start_line.unwrap_or(1);
        if input.start_line.is_some() {
            read["offset"] = json!(start);
        }
        if let Some(end) = input.end_line {
            if end < start {
                return Err(ToolError::respond(format!(
                    "`end_line` ({end}) is before `start_line` ({start}): give an end_line at or after start_line, or leave it out to read to the end"
                )));
            }
            read["limit"] = json!(end - start + 1);
        }
        Ok(read)
    }

    fn render(&self, _input: &ReadFileInput, result: ToolResult<Value>) -> ToolResult<Value> {
        let data = &result.data;
        if !result.is_error && str_of(data, "type") == "file_unchanged" {
            let text = format!(
                "File unchanged since it was last read: the content from the earlier read_file result for {} is still current; refer to that instead of reading it again.",
                str_of(data, "filePath")
            );
            return with_text(result, text);
        }
        if result.is_error || str_of(data, "type") != "text" {
            return result;
        }
        let content = str_of(data, "content").to_owned();
        let start = u64_of(data, "startLine").max(1);
        let shown = u64_of(data, "numLines");
        let total = u64_of(data, "totalLines");
        let partial = data
            .get("truncated")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            || start > 1;
        if !partial || shown == 0 {
            return with_text(result, content);
        }
        let end = start + shown - 1;
        let text = format!(
            "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines {start}-{end} of {total} total lines.\nAction: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: {}.\n\n--- FILE CONTENT (truncated) ---\n{content}",
            end + 1
        );
        with_text(result, text)
    }
}

/// The ledger's refusal of a write to a file not read, in words that name `read_file`.
fn unread(error: ToolError, path: &str, tool: &str) -> ToolError {
    match &error {
        ToolError::Respond { message } if message.contains("has not been read yet") => {
            ToolError::respond(format!(
                "File has not been read yet: call read_file on {path} first (a file must be read in this session before it is changed), then retry {tool}."
            ))
        }
        ToolError::Respond { message } if message.contains("modified since") => {
            ToolError::respond(format!(
                "{message}\nCall read_file on {path} again to see its current content, then retry {tool}."
            ))
        }
        _ => error,
    }
}

/// Gemini CLI's `write_file` over Write.
pub(super) struct WriteFile;

/// Input of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WriteFileInput {
    /// Path to the file.
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    file_path: String,
    /// The complete content to write. Provide the full file; do not use placeholders like
    /// '// ... rest of code'.
    content: String,
}

impl Mapping for WriteFile {
    type Input = WriteFileInput;

    fn name(&self) -> &'static str {
        "write_file"
    }

    fn description(&self) -> String {
        "Writes the complete content to a file, automatically creating missing parent directories. Overwrites existing files. Best for new or small files; use 'replace' for targeted edits to large files to minimize token usage and simplify reviews.".to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["Write"]
    }

    fn inner_input(&self, input: &WriteFileInput, _inner: &dyn Tool) -> Result<Value, ToolError> {
        Ok(json!({ "file_path": input.file_path, "content": input.content }))
    }

    fn render(&self, _input: &WriteFileInput, result: ToolResult<Value>) -> ToolResult<Value> {
        if result.is_error {
            return result;
        }
        let path = str_of(&result.data, "filePath").to_owned();
        let text = if str_of(&result.data, "type") == "create" {
            format!("Successfully created and wrote to new file: {path}.")
        } else {
            format!("Successfully overwrote file: {path}.")
        };
        with_text(result, text)
    }

    fn render_error(&self, input: &WriteFileInput, error: ToolError) -> ToolError {
        unread(error, &input.file_path, "write_file")
    }
}

/// Gemini CLI's `replace` over Edit.
pub(super) struct Replace;

/// Input of `replace`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReplaceInput {
    /// The path to the file to modify.
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    file_path: String,
    /// A clear, semantic instruction for the code change, acting as a high-quality prompt
    /// for an expert LLM assistant. It must be self-contained and explain the goal of the
    /// change.
    #[allow(dead_code)]
    // Gemini CLI hands it to a model that repairs failed edits; Edit has none.
    instruction: String,
    /// The exact literal text to replace, unescaped. If this string is not the exact
    /// literal text (i.e. you escaped it) or does not match exactly, the tool will fail.
    old_string: String,
    /// The exact literal text to replace `old_string` with, unescaped. Provide the EXACT
    /// text. Ensure the resulting code is correct and idiomatic. Do not use omission
    /// placeholders like '(rest of methods ...)', '...', or 'unchanged code'; provide exact
    /// literal code.
    new_string: String,
    /// If true, the tool will replace all occurrences of `old_string`. If false (default),
    /// it will only succeed if exactly one occurrence is found.
    #[serde(default)]
    allow_multiple: Option<bool>,
    /// Number of replacements expected (older Gemini CLI releases). Defaults to 1; when
    /// given, the file must hold exactly this many occurrences of `old_string`, and all of
    /// them are replaced.
    #[serde(default)]
    #[schemars(range(min = 1))]
    expected_replacements: Option<u64>,
}

impl ReplaceInput {
    fn replace_all(&self) -> bool {
        self.allow_multiple == Some(true) || self.expected_replacements.is_some_and(|n| n > 1)
    }
}

impl Mapping for Replace {
    type Input = ReplaceInput;

    fn name(&self) -> &'static str {
        "replace"
    }

    fn description(&self) -> String {
        "Replaces text within a file. By default, the tool expects to find and replace exactly ONE occurrence of `old_string`. If you want to replace multiple occurrences of the exact same string, set `allow_multiple` to true. This tool is preferred for surgical edits to existing files as it minimizes token usage, simplifies code reviews, and avoids accidental deletions. This tool requires providing significant context around the change to ensure precise targeting. Read the file with `read_file` before replacing text in it.".to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["Edit"]
    }

    fn inner_input(&self, input: &ReplaceInput, _inner: &dyn Tool) -> Result<Value, ToolError> {
        if input.expected_replacements == Some(1) && input.allow_multiple == Some(true) {
            return Err(ToolError::respond(
                "`expected_replacements` is 1 but `allow_multiple` is true: leave out one of them",
            ));
        }
        let mut edit = json!({
            "file_path": input.file_path,
            "old_string": input.old_string,
            "new_string": input.new_string,
        });
        if input.replace_all() {
            edit["replace_all"] = json!(true);
        }
        Ok(edit)
    }

    fn precheck(&self, input: &ReplaceInput, ctx: &ToolContext) -> Result<(), ToolError> {
        let Some(expected) = input.expected_replacements.filter(|n| *n > 1) else {
            return Ok(());
        };
        if input.old_string.is_empty() {
            return Ok(());
        }
        let path = ctx.resolve_path(&input.file_path);
        // A missing or unreadable file is Edit's to report.
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Ok(());
        };
        let found = text.matches(input.old_string.as_str()).count() as u64;
        if found == 0 || found == expected {
            return Ok(());
        }
        Err(ToolError::respond(format!(
            "Failed to edit, Expected {expected} occurrences but found {found} for old_string in file: {}. Set `expected_replacements` to {found}, or give more context in old_string to pick the occurrences to change.",
            input.file_path
        )))
    }

    fn render(&self, _input: &ReplaceInput, result: ToolResult<Value>) -> ToolResult<Value> {
        if result.is_error {
            return result;
        }
        let data = &result.data;
        let path = str_of(data, "filePath").to_owned();
        let text = if data.get("created").and_then(Value::as_bool) == Some(true) {
            format!("Created new file: {path} with provided content.")
        } else {
            let replaced: u64 = data
                .get("edits")
                .and_then(Value::as_array)
                .map(|edits| edits.iter().map(|e| u64_of(e, "replacements")).sum())
                .unwrap_or(1);
            format!("Successfully modified file: {path} ({replaced} replacements).")
        };
        with_text(result, text)
    }

    fn render_error(&self, input: &ReplaceInput, error: ToolError) -> ToolError {
        let path = &input.file_path;
        let ToolError::Respond { message } = &error else {
            return error;
        };
        if message.starts_with("String to replace not found") {
            return ToolError::respond(format!(
                "Failed to edit, 0 occurrences found for old_string in {path}. Ensure you're not escaping content incorrectly and check whitespace, indentation, and context. Use read_file tool to verify."
            ));
        }
        if message.starts_with("Found ") && message.contains("replace_all is false") {
            let found = message
                .split_whitespace()
                .nth(1)
                .unwrap_or("several")
                .to_owned();
            return ToolError::respond(format!(
                "Failed to edit, Expected 1 occurrence but found {found} for old_string in file: {path}. If you intended to replace multiple occurrences, set 'allow_multiple' to true."
            ));
        }
        if message.starts_with("No changes to make") {
            return ToolError::respond(format!(
                "No changes to apply. The old_string and new_string are identical in file: {path}"
            ));
        }
        unread(error, path, "replace")
    }
}
