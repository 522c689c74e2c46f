//! `save_memory`: a fact appended under "## Gemini Added Memories" in `GEMINI.md` of the
//! session's state directory, checked as an Edit of that file and written atomically.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{
    ParsedInput, PermissionDecision, Tool, ToolCategory, ToolContext, ToolError, ToolResult,
    ValidationResult, schema_for,
};

/// The heading the facts go under.
pub(crate) const SECTION: &str = "## Gemini Added Memories";

/// The memory file's name in the state directory.
pub(crate) const FILE: &str = "GEMINI.md";

/// Gemini CLI's `save_memory`.
pub(super) struct SaveMemory {
    schema: OnceLock<Value>,
}

impl SaveMemory {
    pub(super) fn new() -> Self {
        SaveMemory {
            schema: OnceLock::new(),
        }
    }
}

/// Input of `save_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SaveMemoryInput {
    /// A concise fact or preference to remember. Should be a clear, self-contained
    /// statement.
    fact: String,
}

/// `fact` as one list item's text: one line, no leading dashes, no angle brackets (a fact
/// cannot close the tags memory is shown to the model in).
fn clean(fact: &str) -> String {
    let one_line = fact.replace(['\r', '\n'], " ");
    let trimmed = one_line
        .trim()
        .trim_start_matches(|c: char| c == '-' || c.is_whitespace());
    trimmed.replace(['<', '>'], " ").trim().to_owned()
}

/// `current` with `- item` added at the end of the memories section (created at the end
/// of the file when missing).
pub(crate) fn with_fact(current: &str, item: &str) -> String {
    let line = format!("- {item}");
    let Some(at) = current.find(SECTION) else {
        let sep = if current.is_empty() || current.ends_with("\n\n") {
            ""
        } else if current.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        };
        return format!("{current}{sep}{SECTION}\n{line}\n");
    };
    let body_start = at + SECTION.len();
    let end = current[body_start..]
        .find("\n## ")
        .map_or(current.len(), |i| body_start + i);
    let head = current[..body_start].trim_end();
    let body = current[body_start..end].trim();
    let tail = &current[end..];
    let mut out = format!("{head}\n");
    if !body.is_empty() {
        out.push_str(body);
        out.push('\n');
    }
    out.push_str(&line);
    out.push('\n');
    if !tail.is_empty() {
        out.push_str(tail.trim_start_matches('\n').trim_start_matches('\n'));
        let trimmed = out.trim_end().to_owned();
        out = format!("{trimmed}\n");
    }
    out
}

/// Writes `text` to `path` atomically (tool-core's [`tool_core::write_atomic`]), creating
/// its directory, so the file is never seen half written.
fn write_atomic(path: &Path, text: &str) -> Result<(), ToolError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| ToolError::io(dir, e))?;
    tool_core::write_atomic(path, text.as_bytes()).map_err(|e| ToolError::io(path, e))
}

fn memory_path(ctx: &ToolContext) -> PathBuf {
    ctx.state_dir().join(FILE)
}

#[async_trait]
impl Tool for SaveMemory {
    fn name(&self) -> &str {
        "save_memory"
    }
    fn checked_as(&self) -> &[&str] {
        &["Edit"]
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::FileSystem
    }
    fn input_schema(&self) -> &Value {
        self.schema.get_or_init(schema_for::<SaveMemoryInput>)
    }
    async fn description(&self, _input: Option<&ParsedInput>) -> String {
        "Persists preferences or facts across future sessions, in the GEMINI.md memory file of this agent's state directory. Use it for facts the user asks you to remember or clear, lasting preferences. CRITICAL: Do not use for session-specific context or temporary data.".to_owned()
    }
    fn parse_input(&self, raw: &Value) -> Result<ParsedInput, ToolError> {
        let (input, json) =
            tool_core::parse_input::<SaveMemoryInput>("save_memory", self.input_schema(), raw)?;
        if clean(&input.fact).is_empty() {
            return Err(ToolError::respond(
                "Parameter \"fact\" must be a non-empty string: give the fact to remember as one sentence",
            ));
        }
        Ok(ParsedInput::new(json, input))
    }
    fn is_concurrency_safe(&self, _input: &ParsedInput) -> bool {
        false
    }
    fn is_read_only(&self, _input: &ParsedInput) -> bool {
        false
    }
    async fn validate(&self, _input: &ParsedInput, _ctx: &ToolContext) -> ValidationResult {
        ValidationResult::Valid
    }
    async fn check_permission(
        &self,
        _input: &ParsedInput,
        ctx: &ToolContext,
    ) -> PermissionDecision {
        ctx.permissions().check_write_path(&memory_path(ctx), ctx)
    }
    async fn call(
        &self,
        input: ParsedInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Value>, ToolError> {
        let input = input.into_typed::<SaveMemoryInput>()?;
        let path = memory_path(ctx);
        let current = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(ToolError::io(&path, e)),
        };
        let fact = clean(&input.fact);
        write_atomic(&path, &with_fact(&current, &fact))?;
        ctx.note_write(&path);
        let message = format!("Okay, I've remembered that: \"{fact}\"");
        let data =
            json!({ "success": true, "message": message, "filePath": path.display().to_string() });
        Ok(ToolResult::ok(data).with_text(message))
    }
}
