//! The gemini profile: Gemini CLI's tool vocabulary for Gemini models.
//!
//! Names, parameters and descriptions follow Gemini CLI's current tool set for Gemini 3
//! models; result texts are the ones Gemini CLI gives the model. Every tool runs over a
//! built-in and is checked as it:
//!
//! | gemini tool         | runs over            | checked as    |
//! |---------------------|----------------------|---------------|
//! | `read_file`         | Read                 | Read          |
//! | `read_many_files`   | Glob, then Read per file | Read      |
//! | `write_file`        | Write                | Write         |
//! | `replace`           | Edit                 | Edit          |
//! | `glob`              | Glob                 | Glob          |
//! | `grep_search`       | Grep                 | Grep          |
//! | `list_directory`    | a listing            | Read (the directory) |
//! | `run_shell_command` | Bash                 | Bash          |
//! | `web_fetch`         | WebFetch             | WebFetch      |
//! | `google_web_search` | WebSearch            | WebSearch     |
//! | `write_todos`       | TodoWrite            | TodoWrite     |
//! | `save_memory`       | an append to `GEMINI.md` in the state directory | Edit |
//!
//! The built-ins with a counterpart ([`REPLACED`]) leave the pool; MultiEdit goes too (a
//! Gemini model edits with one `replace` per change). Tools Gemini CLI has no counterpart
//! for (NotebookEdit, LSP, Agent, the task tools, MCP resources, plan mode, worktrees, ...)
//! stay under their own names.

mod files;
mod memory;
mod search;
mod shell;
mod todos;
mod web;

use std::sync::Arc;

use serde_json::Value;
use tool_core::{ContentBlock, Tool, ToolContext, ToolResult};

use super::{adapt, builtin};

/// Built-ins the gemini profile replaces.
pub(crate) const REPLACED: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "MultiEdit",
    "Glob",
    "Grep",
    "Bash",
    "WebFetch",
    "WebSearch",
    "TodoWrite",
];

/// The gemini profile's own tools, over the built-ins of `builtins`.
pub(crate) fn tools(builtins: &[Arc<dyn Tool>]) -> Vec<Arc<dyn Tool>> {
    let read = builtin(builtins, "Read").cloned();
    let glob = builtin(builtins, "Glob").cloned();
    let mut out: Vec<Option<Arc<dyn Tool>>> = vec![
        adapt(builtins, "Read", files::ReadFile),
        adapt(builtins, "Write", files::WriteFile),
        adapt(builtins, "Edit", files::Replace),
        adapt(builtins, "Glob", search::GlobFiles),
        adapt(builtins, "Grep", search::GrepSearch),
        adapt(builtins, "Bash", shell::RunShellCommand),
        adapt(builtins, "WebFetch", web::WebFetch),
        adapt(builtins, "WebSearch", web::GoogleWebSearch),
        adapt(builtins, "TodoWrite", todos::WriteTodos),
    ];
    if read.is_some() {
        out.push(Some(Arc::new(search::ListDirectory::new())));
    }
    if let (Some(read), Some(glob)) = (read, glob) {
        out.push(Some(Arc::new(search::ReadManyFiles::new(read, glob))));
    }
    if builtin(builtins, "Edit").is_some() {
        out.push(Some(Arc::new(memory::SaveMemory::new())));
    }
    out.into_iter().flatten().collect()
}

/// `result` with `text` as all the model reads (data, error flag and side messages kept).
fn with_text(mut result: ToolResult<Value>, text: impl Into<String>) -> ToolResult<Value> {
    let text = text.into();
    if result.is_error {
        result.error_message = Some(text.clone());
    }
    result.content = vec![ContentBlock::text(text)];
    result
}

/// The string field `key` of `data`, or "".
fn str_of<'a>(data: &'a Value, key: &str) -> &'a str {
    data.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The unsigned field `key` of `data`, or 0.
fn u64_of(data: &Value, key: &str) -> u64 {
    data.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// `shown` (a path as the built-ins print it: relative to the working directory when
/// beneath it) made absolute, as Gemini CLI prints paths.
fn absolute(shown: &str, ctx: &ToolContext) -> String {
    let path = std::path::Path::new(shown);
    if path.is_absolute() {
        shown.to_owned()
    } else {
        ctx.cwd().join(path).display().to_string()
    }
}
