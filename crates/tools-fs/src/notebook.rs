//! Jupyter notebooks: Read renders every cell with its outputs; NotebookEdit replaces,
//! inserts or deletes one cell (reference §4.11).

use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tool_core::{
    ContentBlock, PermissionDecision, ToolAnnotations, ToolCategory, ToolContext, ToolError,
    ToolResult, TypedTool, ValidationResult, cut_middle,
};

use crate::atomic::write_atomic;
use crate::common;
use crate::read::{MAX_OUTPUT_CHARS, NotebookCellView, ReadOutput, read_capped, record_whole};
use crate::text::{self, LineEnding};

/// Notebooks above this size are refused.
const MAX_NOTEBOOK_FILE: u64 = 32 * 1024 * 1024;
/// One output's text is cut to this many characters (as Bash output is).
const MAX_OUTPUT_TEXT: usize = 30_000;
/// A cell whose outputs total more than this shows a `jq` hint instead.
const MAX_CELL_OUTPUTS: usize = 10_000;

/// A cell's source: a string or a list of strings in the file.
fn source_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

fn notebook_language(nb: &Value) -> String {
    nb.pointer("/metadata/language_info/name")
        .or_else(|| nb.pointer("/metadata/kernelspec/language"))
        .and_then(Value::as_str)
        .unwrap_or("python")
        .to_owned()
}

/// The id a cell is addressed by: its `id`, else `cell-N`.
fn cell_id(cell: &Value, index: usize) -> String {
    cell.get("id")
        .and_then(Value::as_str)
        .map_or_else(|| format!("cell-{index}"), str::to_owned)
}

/// Removes ANSI escape sequences (tracebacks are coloured).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The text and images of one output.
fn render_output(output: &Value) -> (String, Vec<(String, String)>) {
    let mut images = Vec::new();
    let text = match output.get("output_type").and_then(Value::as_str) {
        Some("stream") => source_text(output.get("text")),
        Some("execute_result" | "display_data") => {
            let data = output.get("data");
            for mime in ["image/png", "image/jpeg"] {
                if let Some(b64) = data.and_then(|d| d.get(mime)).map(|v| source_text(Some(v))) {
                    images.push((mime.to_owned(), b64.replace('\n', "")));
                }
            }
            source_text(data.and_then(|d| d.get("text/plain")))
        }
        Some("error") => {
            let name = output.get("ename").and_then(Value::as_str).unwrap_or("");
            let value = output.get("evalue").and_then(Value::as_str).unwrap_or("");
            let trace: Vec<&str> = output
                .get("traceback")
                .and_then(Value::as_array)
                .map(|t| t.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            strip_ansi(&format!("{name}: {value}\n{}", trace.join("\n")))
        }
        _ => String::new(),
    };
    (cut_middle(&text, MAX_OUTPUT_TEXT), images)
}

pub(crate) fn read_notebook(
    target: &Path,
    shown: &str,
    meta: &std::fs::Metadata,
    key: &Path,
    ctx: &ToolContext,
) -> Result<ToolResult<ReadOutput>, ToolError> {
    let bytes = read_capped(target, MAX_NOTEBOOK_FILE, "The notebook")?;
    let nb: Value = serde_json::from_slice(&bytes).map_err(|e| {
        ToolError::respond(format!(
            "Cannot read the notebook {shown}: it is not valid JSON ({e})."
        ))
    })?;
    let cells = nb.get("cells").and_then(Value::as_array).ok_or_else(|| {
        ToolError::respond(format!(
            "Cannot read the notebook {shown}: it has no \"cells\" list."
        ))
    })?;
    record_whole(ctx, key, meta, &bytes);
    let language = notebook_language(&nb);
    let mut views = Vec::new();
    let mut blocks = Vec::new();
    let mut text = String::new();
    for (i, cell) in cells.iter().enumerate() {
        let id = cell_id(cell, i);
        let kind = cell
            .get("cell_type")
            .and_then(Value::as_str)
            .unwrap_or("code")
            .to_owned();
        let source = source_text(cell.get("source"));
        let mut part = format!("<cell id=\"{id}\">");
        if kind != "code" {
            part.push_str(&format!("<cell_type>{kind}</cell_type>"));
        } else if language != "python" {
            part.push_str(&format!("<language>{language}</language>"));
        }
        part.push_str(&source);
        part.push_str(&format!("</cell id=\"{id}\">\n"));
        let mut outputs = Vec::new();
        let mut images = Vec::new();
        for output in cell
            .get("outputs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (out_text, out_images) = render_output(output);
            if !out_text.is_empty() {
                outputs.push(out_text);
            }
            images.extend(out_images);
        }
        let total: usize = outputs.iter().map(String::len).sum();
        if total > MAX_CELL_OUTPUTS {
            outputs = vec![format!(
                "Outputs are too large to include ({total} characters). Use Bash with: jq '.cells[{i}].outputs' {shown}"
            )];
            images.clear();
        }
        for out in &outputs {
            part.push_str(out);
            if !out.ends_with('\n') {
                part.push('\n');
            }
        }
        if text.len() + part.len() > MAX_OUTPUT_CHARS {
            text.push_str(&format!(
                "\n[Stopped before cell {i} of {}: the output reached {MAX_OUTPUT_CHARS} characters. Use Bash with: jq '.cells[{i}:]' {shown}]",
                cells.len()
            ));
            break;
        }
        text.push_str(&part);
        for (mime, data) in images {
            if !text.is_empty() {
                blocks.push(ContentBlock::text(std::mem::take(&mut text)));
            }
            blocks.push(ContentBlock::Image {
                media_type: mime,
                data,
            });
        }
        views.push(NotebookCellView {
            cell_id: id,
            cell_type: kind,
            source,
            execution_count: cell.get("execution_count").and_then(Value::as_i64),
            outputs,
        });
    }
    if views.is_empty() && text.is_empty() {
        text = "<system-reminder>Warning: the notebook exists but has no cells.</system-reminder>"
            .to_owned();
    }
    if !text.is_empty() {
        blocks.push(ContentBlock::text(text.trim_end().to_owned()));
    }
    let mut result = ToolResult::ok(ReadOutput::Notebook {
        file_path: shown.to_owned(),
        cells: views,
    });
    result.content = blocks;
    Ok(result)
}
