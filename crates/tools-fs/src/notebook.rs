//! Jupyter notebooks: Read renders every cell with its outputs; NotebookEdit replaces,
//! inserts or deletes one cell.

use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tool_core::{
    ContentBlock, PermissionDecision, ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult,
    TypedTool, ValidationResult, cut_middle,
};

use crate::atomic::write_atomic;
use crate::common::{self, CheckedTarget};
use crate::read_output::{MAX_OUTPUT_CHARS, NotebookCellView, ReadOutput};
use crate::target::{Existing, Parents, WriteTarget};
use crate::text::{LineEnding, decode, dominant_ending, with_ending};
use crate::whole_file::{read_capped, read_capped_file, record_whole};

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

const NOTEBOOK_DESCRIPTION: &str = "Completely replaces the contents of a specific cell in a Jupyter notebook (.ipynb file) with new source. Jupyter notebooks are interactive documents that combine code, text, and visualizations, commonly used for data analysis and scientific computing. The notebook_path parameter must be an absolute path, not a relative path. The cell_id is the id of the cell to edit (as Read shows it; `cell-N` addresses the N-th cell, 0-based). Use edit_mode=insert to add a new cell after the cell with that id (or at the beginning when cell_id is omitted); cell_type is required then. Use edit_mode=delete to delete the cell. You must Read the notebook first.";

/// How NotebookEdit changes the notebook.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotebookEditMode {
    /// Replace the cell's source
    #[default]
    Replace,
    /// Insert a new cell after the given one
    Insert,
    /// Delete the cell
    Delete,
}

/// A cell type NotebookEdit can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotebookCellType {
    /// Code
    Code,
    /// Markdown
    Markdown,
}

impl NotebookCellType {
    fn as_str(self) -> &'static str {
        match self {
            NotebookCellType::Code => "code",
            NotebookCellType::Markdown => "markdown",
        }
    }
}

/// Input of NotebookEdit.
///
/// # JSON names
///
/// Every field's JSON name is its Rust name.
///
/// `cell_type` takes the [`NotebookCellType`] variants and `edit_mode` the [`NotebookEditMode`]
/// variants, in snake case.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotebookEditInput {
    /// The absolute path to the Jupyter notebook file to edit (must be absolute, not relative)
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    pub notebook_path: String,
    /// The ID of the cell to edit. When inserting a new cell, the new cell will be inserted
    /// after the cell with this ID, or at the beginning if not specified.
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub cell_id: Option<String>,
    /// The new source for the cell
    pub new_source: String,
    /// The type of the cell (code or markdown). If not specified, it defaults to the current
    /// cell type. If using edit_mode=insert, this is required.
    #[serde(default)]
    pub cell_type: Option<NotebookCellType>,
    /// The type of edit to make (replace, insert, delete). Defaults to replace.
    #[serde(default)]
    pub edit_mode: Option<NotebookEditMode>,
    /// The target the permission check judged
    #[serde(skip)]
    #[schemars(skip)]
    checked: CheckedTarget,
}

impl NotebookEditInput {
    /// An input replacing the source of cell `cell_id` of `notebook_path` by `new_source`
    /// (set `edit_mode` and `cell_type` to insert or delete).
    pub fn new(
        notebook_path: impl Into<String>,
        cell_id: Option<String>,
        new_source: impl Into<String>,
    ) -> Self {
        NotebookEditInput {
            notebook_path: notebook_path.into(),
            cell_id,
            new_source: new_source.into(),
            cell_type: None,
            edit_mode: None,
            checked: CheckedTarget::default(),
        }
    }
}

/// Output of NotebookEdit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotebookEditOutput {
    /// The notebook
    pub notebook_path: String,
    /// The cell changed (for an insert, the new cell's id)
    pub cell_id: String,
    /// Its type
    pub cell_type: String,
    /// What was done
    pub edit_mode: NotebookEditMode,
    /// The notebook's language
    pub language: String,
    /// The new source
    pub new_source: String,
}

/// The NotebookEdit tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct NotebookEdit;

fn respond_code(message: impl Into<String>) -> ToolError {
    ToolError::respond(message)
}

/// A new random cell id (8 base-36 characters).
fn new_cell_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(N.fetch_add(1, Ordering::Relaxed));
    let mut v = h.finish();
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    (0..8)
        .map(|_| {
            let d = digits[(v % 36) as usize] as char;
            v /= 36;
            d
        })
        .collect()
}

/// The source in the form the cell already uses: a list of lines or one string.
fn source_value(text: &str, as_list: bool) -> Value {
    if !as_list {
        return Value::String(text.to_owned());
    }
    Value::Array(
        text.split_inclusive('\n')
            .map(|l| Value::String(l.to_owned()))
            .collect(),
    )
}

/// Serialises with the one-space indentation Jupyter uses.
fn to_notebook_text(nb: &Value) -> Result<String, ToolError> {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    nb.serialize(&mut ser).map_err(|e| {
        ToolError::fatal(format!(
            "internal error: cannot serialise the notebook: {e}"
        ))
    })?;
    String::from_utf8(out).map_err(|e| ToolError::fatal(format!("internal error: {e}")))
}

/// The index of the cell an edit names: by id, else by the `cell-N` form (`None` to insert
/// at the start). Replacing may name one past the last cell.
fn find_cell(
    cells: &[Value],
    cell_id: Option<&str>,
    mode: NotebookEditMode,
) -> Result<Option<usize>, ToolError> {
    let index = match cell_id.filter(|c| !c.is_empty()) {
        None if mode == NotebookEditMode::Insert => None,
        None => {
            return Err(respond_code(
                "Cell ID must be specified when not inserting a new cell.",
            ));
        }
        Some(id) => match cells
            .iter()
            .position(|c| c.get("id").and_then(Value::as_str) == Some(id))
        {
            Some(i) => Some(i),
            None => match id
                .strip_prefix("cell-")
                .and_then(|n| n.parse::<usize>().ok())
            {
                Some(n)
                    if n < cells.len()
                        || (n == cells.len() && mode == NotebookEditMode::Replace) =>
                {
                    Some(n)
                }
                Some(n) => {
                    return Err(respond_code(format!(
                        "Cell with index {n} does not exist in notebook."
                    )));
                }
                None => {
                    return Err(respond_code(format!(
                        "Cell with ID \"{id}\" not found in notebook."
                    )));
                }
            },
        },
    };
    Ok(index)
}

/// Inserts a new cell at `at` (with a fresh id when the format has ids); its id and type.
fn insert_cell(
    cells: &mut Vec<Value>,
    at: usize,
    input: &NotebookEditInput,
    with_ids: bool,
) -> (String, String) {
    let kind = input.cell_type.unwrap_or(NotebookCellType::Code);
    let as_list = cells
        .iter()
        .any(|c| c.get("source").is_some_and(Value::is_array));
    let mut cell = Map::new();
    cell.insert("cell_type".into(), Value::String(kind.as_str().into()));
    let id = if with_ids {
        let id = new_cell_id();
        cell.insert("id".into(), Value::String(id.clone()));
        id
    } else {
        format!("cell-{at}")
    };
    cell.insert("metadata".into(), Value::Object(Map::new()));
    cell.insert("source".into(), source_value(&input.new_source, as_list));
    if kind == NotebookCellType::Code {
        cell.insert("execution_count".into(), Value::Null);
        cell.insert("outputs".into(), Value::Array(Vec::new()));
    }
    cells.insert(at, Value::Object(cell));
    (id, kind.as_str().to_owned())
}

/// Replaces cell `i`'s source (and type, when given; a code cell's outputs are cleared);
/// its id and type.
fn replace_cell(
    cells: &mut [Value],
    i: usize,
    input: &NotebookEditInput,
) -> Result<(String, String), ToolError> {
    let id = cell_id(&cells[i], i);
    let Some(cell) = cells[i].as_object_mut() else {
        return Err(respond_code(format!(
            "Cell with ID \"{id}\" is not an object."
        )));
    };
    let as_list = cell.get("source").is_some_and(Value::is_array);
    cell.insert("source".into(), source_value(&input.new_source, as_list));
    let kind = input.cell_type.map_or_else(
        || {
            cell.get("cell_type")
                .and_then(Value::as_str)
                .unwrap_or("code")
                .to_owned()
        },
        |k| k.as_str().to_owned(),
    );
    cell.insert("cell_type".into(), Value::String(kind.clone()));
    if kind == "code" {
        cell.insert("execution_count".into(), Value::Null);
        cell.insert("outputs".into(), Value::Array(Vec::new()));
    } else {
        cell.remove("execution_count");
        cell.remove("outputs");
    }
    Ok((id, kind))
}

fn edit_notebook(
    ctx: &ToolContext,
    input: &NotebookEditInput,
) -> Result<NotebookEditOutput, ToolError> {
    let given = common::resolve(ctx, &input.notebook_path);
    let key = input.checked.target_for(&given)?;
    let shown = given.display().to_string();
    let existing = match WriteTarget::open(&key, Parents::Require)? {
        Some(target) => target.open_existing()?.map(|e| (target, e)),
        None => None,
    };
    let Some((target, Existing { file, meta })) = existing else {
        return Err(respond_code("Notebook file does not exist."));
    };
    let bytes = read_capped_file(file, meta.len(), &key, MAX_NOTEBOOK_FILE, "The notebook")?;
    common::check_fresh(ctx, &key, &meta, &bytes)?;
    let file = decode(&bytes).map_err(|e| ToolError::respond(e.message(&shown)))?;
    let mut nb: Value = serde_json::from_str(&file.text)
        .map_err(|e| respond_code(format!("Notebook is not valid JSON: {e}")))?;
    let language = notebook_language(&nb);
    let minor = nb
        .get("nbformat_minor")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let major = nb.get("nbformat").and_then(Value::as_u64).unwrap_or(0);
    let with_ids = major > 4 || (major == 4 && minor >= 5);
    let cells = nb
        .get_mut("cells")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| respond_code("Notebook is not valid: it has no \"cells\" list."))?;
    let mut mode = input.edit_mode.unwrap_or_default();
    let index = find_cell(cells, input.cell_id.as_deref(), mode)?;
    // Replacing one past the last cell appends.
    let mut insert_at = None;
    if mode == NotebookEditMode::Replace && index == Some(cells.len()) {
        mode = NotebookEditMode::Insert;
        insert_at = Some(cells.len());
    }
    let (cell_id, cell_type) = match mode {
        NotebookEditMode::Insert => {
            let at = insert_at.unwrap_or_else(|| index.map_or(0, |i| i + 1));
            insert_cell(cells, at, input, with_ids)
        }
        NotebookEditMode::Delete => {
            let i = index.unwrap_or(0);
            let removed = cells.remove(i);
            let kind = removed
                .get("cell_type")
                .and_then(Value::as_str)
                .unwrap_or("code")
                .to_owned();
            (cell_id(&removed, i), kind)
        }
        NotebookEditMode::Replace => replace_cell(cells, index.unwrap_or(0), input)?,
    };
    let mut text = to_notebook_text(&nb)?;
    if file.text.ends_with('\n') {
        text.push('\n');
    }
    if dominant_ending(&file.text) == LineEnding::CrLf {
        text = with_ending(&text, LineEnding::CrLf);
    }
    let out = file.encode(&text);
    let written = write_atomic(&target, &out, Some(&meta), || {
        common::unchanged_since(&target, Some(&meta))
    })?;
    common::record_write(ctx, &key, common::ledger_hash(&out), &written);
    Ok(NotebookEditOutput {
        notebook_path: shown,
        cell_id,
        cell_type,
        edit_mode: mode,
        language,
        new_source: input.new_source.clone(),
    })
}

#[async_trait]
impl TypedTool for NotebookEdit {
    type Input = NotebookEditInput;
    type Output = NotebookEditOutput;
    const META: ToolMeta = ToolMeta::new("NotebookEdit")
        .describe(NOTEBOOK_DESCRIPTION)
        .hint("edit Jupyter notebook cells (.ipynb)")
        .category(ToolCategory::FileSystem)
        .destructive_hint();

    async fn validate(&self, input: &NotebookEditInput, _ctx: &ToolContext) -> ValidationResult {
        let is_ipynb = Path::new(input.notebook_path.trim())
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("ipynb"));
        if !is_ipynb {
            return ValidationResult::invalid_code(
                "File must be a Jupyter notebook (.ipynb file). For editing other file types, use the Edit tool.",
                2,
            );
        }
        if input.edit_mode == Some(NotebookEditMode::Insert) && input.cell_type.is_none() {
            return ValidationResult::invalid_code(
                "Cell type is required when using edit_mode=insert.",
                5,
            );
        }
        ValidationResult::Valid
    }
    async fn check_permission(
        &self,
        input: &NotebookEditInput,
        ctx: &ToolContext,
    ) -> PermissionDecision {
        common::check_write(ctx, &input.notebook_path, &input.checked)
    }
    async fn call(
        &self,
        input: NotebookEditInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<NotebookEditOutput>, ToolError> {
        let ctx2 = ctx.clone();
        let output = tokio::task::spawn_blocking(move || edit_notebook(&ctx2, &input))
            .await
            .map_err(|e| ToolError::fatal(format!("internal error: NotebookEdit failed: {e}")))??;
        let text = match output.edit_mode {
            NotebookEditMode::Replace => {
                format!("Updated cell {} with {}", output.cell_id, output.new_source)
            }
            NotebookEditMode::Insert => {
                format!(
                    "Inserted cell {} with {}",
                    output.cell_id, output.new_source
                )
            }
            NotebookEditMode::Delete => format!("Deleted cell {}", output.cell_id),
        };
        Ok(ToolResult::ok(output).with_text(text))
    }
}
