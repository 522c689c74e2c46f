//! The `LSP` tool: code intelligence from language servers — definitions, references,
//! hover, symbols, implementations, call hierarchy — and, beyond the reference, the current
//! diagnostics of a file or of every open file.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use lsp_types::{
    CallHierarchyIncomingCall, CallHierarchyItem, CallHierarchyOutgoingCall,
    DocumentSymbolResponse, GotoDefinitionResponse, Hover, Location, OneOf,
    WorkspaceSymbolResponse,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::{
    HardenedGit, PermissionDecision, ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult,
    TypedTool, ValidationResult, linked_worktree, nested_repository,
};

use crate::format::{self, Files, Place};
use crate::manager::no_server;
use crate::position::{char_to_utf16, line_of, path_to_uri};

/// Files larger than this are not sent to a server (the reference's 10 MB).
pub const MAX_LSP_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Paths are given to `git check-ignore` in batches of this many.
const IGNORE_BATCH: usize = 50;

const DESCRIPTION: &str = "Interact with Language Server Protocol (LSP) servers to get code intelligence features.

Supported operations:
- goToDefinition: Find where a symbol is defined
- findReferences: Find all references to a symbol
- hover: Get hover information (documentation, type info) for a symbol
- documentSymbol: Get all symbols (functions, classes, variables) in a document
- workspaceSymbol: Search for symbols across the entire workspace (by `query`, else the word at the position)
- goToImplementation: Find implementations of an interface or abstract method
- prepareCallHierarchy: Get the call hierarchy item (function/method) at a position
- incomingCalls: Find all functions/methods that call the function at a position
- outgoingCalls: Find all functions/methods called by the function at a position
- diagnostics: The errors and warnings the server reports for a file (or, without filePath, for every open file)

All operations take filePath; the position operations also take line and character (both 1-based, as shown in editors and in Read's output).

Note: LSP servers must be configured for the file type (the `lsp` section of the settings, or a default server on PATH: rust-analyzer, pyright-langserver, typescript-language-server, gopls, clangd). If no server is available for a file type, an error is returned.";

/// An LSP operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum LspOperation {
    /// Where the symbol is defined
    GoToDefinition,
    /// Every reference to the symbol
    FindReferences,
    /// Documentation and type of the symbol
    Hover,
    /// The outline of the file
    DocumentSymbol,
    /// Symbols across the workspace
    WorkspaceSymbol,
    /// Implementations of an interface or abstract method
    GoToImplementation,
    /// The call hierarchy item at the position
    PrepareCallHierarchy,
    /// Who calls the function at the position
    IncomingCalls,
    /// What the function at the position calls
    OutgoingCalls,
    /// The file's current diagnostics
    Diagnostics,
}

impl LspOperation {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            LspOperation::GoToDefinition => "goToDefinition",
            LspOperation::FindReferences => "findReferences",
            LspOperation::Hover => "hover",
            LspOperation::DocumentSymbol => "documentSymbol",
            LspOperation::WorkspaceSymbol => "workspaceSymbol",
            LspOperation::GoToImplementation => "goToImplementation",
            LspOperation::PrepareCallHierarchy => "prepareCallHierarchy",
            LspOperation::IncomingCalls => "incomingCalls",
            LspOperation::OutgoingCalls => "outgoingCalls",
            LspOperation::Diagnostics => "diagnostics",
        }
    }

    fn needs_position(self) -> bool {
        !matches!(
            self,
            LspOperation::DocumentSymbol
                | LspOperation::Diagnostics
                | LspOperation::WorkspaceSymbol
        )
    }
}

/// Input of LSP.
///
/// # JSON names
///
/// The model sends these fields under JSON names that differ from the Rust ones:
///
/// | JSON name | Rust field |
/// | --- | --- |
/// | `filePath` | [`file_path`](Self::file_path) |
///
/// `operation` takes the [`LspOperation`] variants in camel case (`goToDefinition`,
/// `findReferences`, `hover`, `documentSymbol`, `workspaceSymbol`, `goToImplementation`,
/// `prepareCallHierarchy`, `incomingCalls`, `outgoingCalls`, `diagnostics`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LspInput {
    /// The LSP operation to perform
    pub operation: LspOperation,
    /// The absolute or relative path to the file (optional only for `diagnostics`, which
    /// then reports every open file)
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    pub file_path: Option<String>,
    /// The line number (1-based, as shown in editors)
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub line: Option<u32>,
    /// The character offset (1-based, as shown in editors)
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub character: Option<u32>,
    /// For workspaceSymbol: the symbol name to search for (default: the word at
    /// line/character)
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATTERN_CHARS))]
    pub query: Option<String>,
}

/// Output of LSP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LspOutput {
    /// The operation performed
    pub operation: LspOperation,
    /// The result as readable text
    pub result: String,
    /// The file the operation was about (as given)
    pub file_path: String,
    /// How many results (locations, symbols, calls, diagnostics)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_count: Option<usize>,
    /// How many files the results are in
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_count: Option<usize>,
}

/// The LSP tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lsp;

fn invalid(message: String, code: u32) -> ValidationResult {
    ValidationResult::invalid_code(message, code)
}

/// The file, resolved against the working directory.
fn target(input: &LspInput, ctx: &ToolContext) -> Option<PathBuf> {
    input
        .file_path
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| ctx.resolve_path(p))
}

/// The word (identifier characters) around 0-based `character` of `line`.
fn word_at(line: &str, character: usize) -> String {
    let chars: Vec<char> = line.chars().collect();
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let mut start = character.min(chars.len());
    while start > 0 && chars.get(start - 1).is_some_and(|c| is_word(*c)) {
        start -= 1;
    }
    let mut end = character.min(chars.len());
    while chars.get(end).is_some_and(|c| is_word(*c)) {
        end += 1;
    }
    chars[start..end].iter().collect()
}

/// The paths among `paths` that git ignores (checked for paths inside `cwd`, in batches);
/// none when the project is not in a repository or git is missing.
///
/// Git runs hardened ([`HardenedGit`]) and only for the project's own repository (found from
/// `project`, the session's project root) and its linked worktrees (named by their git
/// directory, so nothing inside them chooses the repository). A path inside another
/// repository nested in the project is not checked: it stays visible.
async fn git_ignored(paths: &[PathBuf], cwd: &Path, project: &Path) -> HashSet<PathBuf> {
    let mut ignored = HashSet::new();
    let inside: Vec<&PathBuf> = paths.iter().filter(|p| p.starts_with(cwd)).collect();
    if inside.is_empty() {
        return ignored;
    }
    let Ok(dirs) = HardenedGit::at(project)
        .text(&[
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-common-dir",
        ])
        .await
    else {
        return ignored;
    };
    let mut lines = dirs.lines();
    let (Some(top), Some(common)) = (lines.next(), lines.next()) else {
        return ignored;
    };
    let top = tool_core::path::canonicalize_lenient(Path::new(top));
    let common = tool_core::path::canonicalize_lenient(Path::new(common));
    // Each path goes to the repository it belongs to: the project's, or one of its worktrees.
    let mut groups: Vec<(HardenedGit, Vec<&PathBuf>)> = Vec::new();
    for path in inside {
        let Some(parent) = path.parent() else {
            continue;
        };
        let git = match nested_repository(parent, &top) {
            None => HardenedGit::at(&top),
            Some(nested) => match linked_worktree(&common, &nested) {
                Some(admin) => HardenedGit::with_git_dir(admin, nested),
                None => continue,
            },
        };
        match groups.iter_mut().find(|(g, _)| *g == git) {
            Some((_, members)) => members.push(path),
            None => groups.push((git, vec![path])),
        }
    }
    for (git, members) in groups {
        for batch in members.chunks(IGNORE_BATCH) {
            let mut input = Vec::new();
            for p in batch {
                input.extend_from_slice(p.as_os_str().as_encoded_bytes());
                input.push(0);
            }
            let Ok(output) = git
                .output(&["check-ignore", "-z", "--stdin"], Some(&input))
                .await
            else {
                break;
            };
            for name in output.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
                let path = PathBuf::from(String::from_utf8_lossy(name).into_owned());
                ignored.insert(if path.is_absolute() {
                    path
                } else {
                    git.dir().join(path)
                });
            }
        }
    }
    ignored
}

/// Drops locations in gitignored files.
async fn visible(places: Vec<Place>, cwd: &Path, project: &Path) -> Vec<Place> {
    let mut paths: Vec<PathBuf> = places.iter().map(|p| p.path.clone()).collect();
    paths.sort();
    paths.dedup();
    let ignored = git_ignored(&paths, cwd, project).await;
    places
        .into_iter()
        .filter(|p| !ignored.contains(&p.path))
        .collect()
}

fn parse<T: serde::de::DeserializeOwned>(value: Value, what: &str) -> Result<Option<T>, ToolError> {
    if value.is_null() {
        return Ok(None);
    }
    serde_json::from_value(value).map(Some).map_err(|e| {
        ToolError::respond(format!(
            "the language server sent a {what} this client cannot read: {e}"
        ))
    })
}

fn definition_locations(response: Option<GotoDefinitionResponse>) -> Vec<Location> {
    match response {
        None => Vec::new(),
        Some(GotoDefinitionResponse::Scalar(l)) => vec![l],
        Some(GotoDefinitionResponse::Array(ls)) => ls,
        Some(GotoDefinitionResponse::Link(links)) => links
            .into_iter()
            .map(|l| Location::new(l.target_uri, l.target_selection_range))
            .collect(),
    }
}

/// What an operation found: the text the model reads, the number of results and the
/// number of files they are in (each when the operation counts it).
struct Answer {
    text: String,
    results: Option<usize>,
    files: Option<usize>,
}

impl Answer {
    fn new(text: String, results: Option<usize>, files: Option<usize>) -> Self {
        Answer {
            text,
            results,
            files,
        }
    }
}

/// What one call works on.
struct Call<'a> {
    ctx: &'a ToolContext,
    path: PathBuf,
    uri: String,
    text: String,
    /// 0-based line and UTF-16 column
    position: Option<(u32, u32)>,
}

impl Call<'_> {
    fn doc(&self) -> Value {
        json!({"uri": self.uri})
    }

    fn at(&self) -> Value {
        let (line, character) = self.position.unwrap_or((0, 0));
        json!({
            "textDocument": self.doc(),
            "position": {"line": line, "character": character},
        })
    }

    async fn send(&self, method: &str, params: Value) -> Result<Value, ToolError> {
        self.ctx.lsp().request(&self.path, method, params).await
    }

    fn files(&self) -> Files {
        Files::new(&self.ctx.cwd(), (&self.path, &self.text))
    }

    async fn prepare(&self) -> Result<Vec<CallHierarchyItem>, ToolError> {
        let value = self
            .send("textDocument/prepareCallHierarchy", self.at())
            .await?;
        Ok(parse::<Vec<CallHierarchyItem>>(value, "call hierarchy")?.unwrap_or_default())
    }

    fn where_(&self) -> String {
        let (line, _) = self.position.unwrap_or((0, 0));
        let files = self.files();
        format!("{}:{}", files.show(&self.path), line + 1)
    }

    /// Runs `op`.
    async fn run(&self, op: LspOperation, query: Option<&str>) -> Result<Answer, ToolError> {
        match op {
            LspOperation::GoToDefinition | LspOperation::GoToImplementation => {
                self.definitions(op).await
            }
            LspOperation::FindReferences => self.references().await,
            LspOperation::Hover => self.hover().await,
            LspOperation::DocumentSymbol => self.document_symbols().await,
            LspOperation::WorkspaceSymbol => self.workspace_symbols(query).await,
            LspOperation::PrepareCallHierarchy => self.call_hierarchy().await,
            LspOperation::IncomingCalls | LspOperation::OutgoingCalls => self.calls(op).await,
            LspOperation::Diagnostics => self.diagnostics().await,
        }
    }

    /// goToDefinition and goToImplementation.
    async fn definitions(&self, op: LspOperation) -> Result<Answer, ToolError> {
        let (method, what, none) = if op == LspOperation::GoToDefinition {
            (
                "textDocument/definition",
                ("definition", "definitions"),
                "No definition found",
            )
        } else {
            (
                "textDocument/implementation",
                ("implementation", "implementations"),
                "No implementation found",
            )
        };
        let mut files = self.files();
        let value = self.send(method, self.at()).await?;
        let locations = definition_locations(parse(value, "location list")?);
        let places = visible(
            format::places(&mut files, &locations),
            &self.ctx.cwd(),
            self.ctx.original_cwd(),
        )
        .await;
        let none = format!("{none} for the symbol at {}.", self.where_());
        let (text, file_count) = format::locations(&mut files, &places, what, &none);
        Ok(Answer::new(text, Some(places.len()), Some(file_count)))
    }

    async fn references(&self) -> Result<Answer, ToolError> {
        let mut files = self.files();
        let mut params = self.at();
        params["context"] = json!({"includeDeclaration": true});
        let value = self.send("textDocument/references", params).await?;
        let locations: Vec<Location> = parse(value, "reference list")?.unwrap_or_default();
        let places = visible(
            format::places(&mut files, &locations),
            &self.ctx.cwd(),
            self.ctx.original_cwd(),
        )
        .await;
        let (text, file_count) = format::references(&mut files, &places);
        Ok(Answer::new(text, Some(places.len()), Some(file_count)))
    }

    async fn hover(&self) -> Result<Answer, ToolError> {
        let value = self.send("textDocument/hover", self.at()).await?;
        Ok(match format::hover(parse::<Hover>(value, "hover")?) {
            Some(text) => Answer::new(text, Some(1), None),
            None => Answer::new(
                format!("No hover information at {}.", self.where_()),
                Some(0),
                None,
            ),
        })
    }

    async fn document_symbols(&self) -> Result<Answer, ToolError> {
        let mut files = self.files();
        let value = self
            .send(
                "textDocument/documentSymbol",
                json!({"textDocument": self.doc()}),
            )
            .await?;
        Ok(
            match parse::<DocumentSymbolResponse>(value, "symbol list")? {
                None => Answer::new(
                    format!("No symbols found in {}.", files.show(&self.path)),
                    Some(0),
                    None,
                ),
                Some(DocumentSymbolResponse::Nested(symbols)) => {
                    let (text, count) = format::document_symbols(&symbols, &mut files, &self.path);
                    Answer::new(text, Some(count), None)
                }
                Some(DocumentSymbolResponse::Flat(symbols)) => {
                    let count = symbols.len();
                    let rows = format::symbol_information(symbols, &mut files);
                    let header = format!("Found {count} symbols in {}:", files.show(&self.path));
                    Answer::new(
                        format::flat_symbols(&rows, &files, &header),
                        Some(count),
                        None,
                    )
                }
            },
        )
    }

    /// The query of workspaceSymbol: the one given, else the word at the position.
    fn symbol_query(&self, query: Option<&str>) -> Result<String, ToolError> {
        let query = match query.map(str::trim).filter(|q| !q.is_empty()) {
            Some(q) => q.to_owned(),
            None => {
                let (line, character) = self.position.unwrap_or((0, 0));
                let line_text = line_of(&self.text, line);
                let chars = crate::position::utf16_to_char(line_text, character) as usize;
                word_at(line_text, chars)
            }
        };
        if query.is_empty() {
            return Err(ToolError::respond(
                "workspaceSymbol needs a `query`, or line and character on a symbol name",
            ));
        }
        Ok(query)
    }

    async fn workspace_symbols(&self, query: Option<&str>) -> Result<Answer, ToolError> {
        let query = self.symbol_query(query)?;
        let mut files = self.files();
        let value = self
            .send("workspace/symbol", json!({"query": query}))
            .await?;
        let rows = match parse::<WorkspaceSymbolResponse>(value, "symbol list")? {
            None => Vec::new(),
            Some(WorkspaceSymbolResponse::Flat(symbols)) => {
                format::symbol_information(symbols, &mut files)
            }
            Some(WorkspaceSymbolResponse::Nested(symbols)) => symbols
                .into_iter()
                .map(|s| format::SymbolRow {
                    place: match &s.location {
                        OneOf::Left(l) => files.place(&l.uri, l.range.start),
                        OneOf::Right(w) => crate::position::uri_to_path(w.uri.as_str())
                            .map(|p| files.place_in(&p, lsp_types::Position::new(0, 0))),
                    },
                    name: s.name,
                    kind: s.kind,
                    container: s.container_name,
                })
                .collect(),
        };
        let paths: Vec<PathBuf> = rows
            .iter()
            .filter_map(|r| r.place.as_ref().map(|p| p.path.clone()))
            .collect();
        let ignored = git_ignored(&paths, &self.ctx.cwd(), self.ctx.original_cwd()).await;
        let rows: Vec<_> = rows
            .into_iter()
            .filter(|r| r.place.as_ref().is_none_or(|p| !ignored.contains(&p.path)))
            .collect();
        if rows.is_empty() {
            return Ok(Answer::new(
                format!("No symbols matching \"{query}\" found in the workspace."),
                Some(0),
                Some(0),
            ));
        }
        let file_count = rows
            .iter()
            .filter_map(|r| r.place.as_ref().map(|p| &p.path))
            .collect::<HashSet<_>>()
            .len();
        let header = format!(
            "Found {} matching \"{query}\":",
            if rows.len() == 1 {
                "1 symbol".to_owned()
            } else {
                format!("{} symbols", rows.len())
            }
        );
        Ok(Answer::new(
            format::flat_symbols(&rows, &files, &header),
            Some(rows.len()),
            Some(file_count),
        ))
    }

    async fn call_hierarchy(&self) -> Result<Answer, ToolError> {
        let items = self.prepare().await?;
        if items.is_empty() {
            return Ok(Answer::new(
                format!(
                    "No call hierarchy item at {}: put the position on a function or method name.",
                    self.where_()
                ),
                Some(0),
                None,
            ));
        }
        let mut files = self.files();
        let lines: Vec<String> = items.iter().map(|i| format::item(&mut files, i)).collect();
        let header = if items.len() == 1 {
            "Found 1 call hierarchy item:".to_owned()
        } else {
            format!("Found {} call hierarchy items:", items.len())
        };
        Ok(Answer::new(
            format!("{header}\n{}", lines.join("\n")),
            Some(items.len()),
            None,
        ))
    }

    /// incomingCalls and outgoingCalls.
    async fn calls(&self, op: LspOperation) -> Result<Answer, ToolError> {
        let items = self.prepare().await?;
        if items.is_empty() {
            return Ok(Answer::new(
                format!(
                    "No function or method at {}: put the position on its name.",
                    self.where_()
                ),
                Some(0),
                None,
            ));
        }
        let cwd = self.ctx.cwd();
        let mut files = self.files();
        let mut texts = Vec::new();
        let mut count = 0;
        let mut paths = HashSet::new();
        for item in &items {
            let params = json!({"item": item});
            if op == LspOperation::IncomingCalls {
                let value = self.send("callHierarchy/incomingCalls", params).await?;
                let calls: Vec<CallHierarchyIncomingCall> =
                    parse(value, "call list")?.unwrap_or_default();
                let calls = self.keep_visible(calls, |c| &c.from.uri, &cwd).await;
                count += calls.len();
                paths.extend(
                    calls
                        .iter()
                        .filter_map(|c| crate::position::uri_to_path(c.from.uri.as_str())),
                );
                texts.push(format::incoming(&mut files, item, &calls));
            } else {
                let value = self.send("callHierarchy/outgoingCalls", params).await?;
                let calls: Vec<CallHierarchyOutgoingCall> =
                    parse(value, "call list")?.unwrap_or_default();
                let calls = self.keep_visible(calls, |c| &c.to.uri, &cwd).await;
                count += calls.len();
                paths.extend(
                    calls
                        .iter()
                        .filter_map(|c| crate::position::uri_to_path(c.to.uri.as_str())),
                );
                texts.push(format::outgoing(&mut files, item, &calls));
            }
        }
        Ok(Answer::new(
            texts.join("\n\n"),
            Some(count),
            Some(paths.len()),
        ))
    }

    async fn diagnostics(&self) -> Result<Answer, ToolError> {
        let diagnostics = self.ctx.lsp().diagnostics(Some(&self.path)).await?;
        let shown = self.files().show(&self.path);
        if diagnostics.is_empty() {
            return Ok(Answer::new(
                format!("No diagnostics in {shown}."),
                Some(0),
                Some(0),
            ));
        }
        let cwd = self.ctx.cwd();
        let lines: Vec<String> = diagnostics.iter().map(|d| d.display(&cwd)).collect();
        Ok(Answer::new(
            format!(
                "{} in {shown}:\n{}",
                if diagnostics.len() == 1 {
                    "1 diagnostic".to_owned()
                } else {
                    format!("{} diagnostics", diagnostics.len())
                },
                lines.join("\n")
            ),
            Some(diagnostics.len()),
            Some(1),
        ))
    }

    async fn keep_visible<T>(
        &self,
        calls: Vec<T>,
        uri: impl Fn(&T) -> &lsp_types::Uri,
        cwd: &Path,
    ) -> Vec<T> {
        let paths: Vec<PathBuf> = calls
            .iter()
            .filter_map(|c| crate::position::uri_to_path(uri(c).as_str()))
            .collect();
        let ignored = git_ignored(&paths, cwd, self.ctx.original_cwd()).await;
        calls
            .into_iter()
            .filter(|c| {
                crate::position::uri_to_path(uri(c).as_str()).is_none_or(|p| !ignored.contains(&p))
            })
            .collect()
    }
}

/// Diagnostics of every open file.
async fn all_diagnostics(ctx: &ToolContext) -> Result<(String, usize, usize), ToolError> {
    let diagnostics = ctx.lsp().diagnostics(None).await?;
    if diagnostics.is_empty() {
        return Ok((
            "No diagnostics in the files open in language servers. (Files are opened by the other operations and by edits; pass filePath to check one file.)".to_owned(),
            0,
            0,
        ));
    }
    let cwd = ctx.cwd();
    let files = diagnostics
        .iter()
        .map(|d| &d.path)
        .collect::<HashSet<_>>()
        .len();
    let lines: Vec<String> = diagnostics.iter().map(|d| d.display(&cwd)).collect();
    Ok((
        format!(
            "{} in {}:\n{}",
            if diagnostics.len() == 1 {
                "1 diagnostic".to_owned()
            } else {
                format!("{} diagnostics", diagnostics.len())
            },
            if files == 1 {
                "1 file".to_owned()
            } else {
                format!("{files} files")
            },
            lines.join("\n")
        ),
        diagnostics.len(),
        files,
    ))
}

#[async_trait]
impl TypedTool for Lsp {
    type Input = LspInput;
    type Output = LspOutput;
    const META: ToolMeta = ToolMeta::new("LSP")
        .describe(DESCRIPTION)
        .hint("code intelligence: definitions, references, symbols, hover, diagnostics")
        .category(ToolCategory::Lsp)
        .deferred()
        .read_only()
        .read_only_hint();

    async fn validate(&self, input: &LspInput, ctx: &ToolContext) -> ValidationResult {
        let op = input.operation.as_str();
        let Some(path) = target(input, ctx) else {
            if input.operation == LspOperation::Diagnostics {
                return ValidationResult::Valid;
            }
            return invalid(
                format!("filePath is required for {op}: give the file to ask about"),
                3,
            );
        };
        if input.operation.needs_position() {
            for (name, value) in [("line", input.line), ("character", input.character)] {
                match value {
                    None => {
                        return invalid(
                            format!("{name} is required for {op} (1-based, as shown in editors)"),
                            3,
                        );
                    }
                    Some(0) => {
                        return invalid(
                            format!("{name} must be 1 or more: positions are 1-based"),
                            3,
                        );
                    }
                    Some(_) => {}
                }
            }
        }
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                invalid(format!("File does not exist: {}", path.display()), 1)
            }
            Err(e) => invalid(format!("Cannot access file: {}: {e}", path.display()), 4),
            Ok(meta) if !meta.is_file() => {
                invalid(format!("Path is not a file: {}", path.display()), 2)
            }
            Ok(_) => ValidationResult::Valid,
        }
    }

    async fn check_permission(&self, input: &LspInput, ctx: &ToolContext) -> PermissionDecision {
        match target(input, ctx) {
            Some(path) => ctx.permissions().check_read_path(&path, ctx),
            None => PermissionDecision::Allow,
        }
    }

    async fn call(
        &self,
        input: LspInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<LspOutput>, ToolError> {
        let op = input.operation;
        let file_path = input.file_path.clone().unwrap_or_default();
        let output = |result: String, result_count: Option<usize>, file_count: Option<usize>| {
            let text = result.clone();
            ToolResult::ok(LspOutput {
                operation: op,
                result,
                file_path: file_path.clone(),
                result_count,
                file_count,
            })
            .with_text(text)
        };
        let failed =
            |e: ToolError| ToolError::respond(format!("Error performing {}: {e}", op.as_str()));
        let Some(path) = target(&input, ctx) else {
            let (text, count, files) = all_diagnostics(ctx).await.map_err(failed)?;
            return Ok(output(text, Some(count), Some(files)));
        };
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        let size = std::fs::metadata(&path)
            .map_err(|e| ToolError::io(&path, e))?
            .len();
        if size > MAX_LSP_FILE_BYTES {
            return Err(ToolError::respond(format!(
                "File too large for LSP analysis ({} MB; the limit is {} MB): {}",
                size / (1024 * 1024),
                MAX_LSP_FILE_BYTES / (1024 * 1024),
                path.display()
            )));
        }
        if !ctx.lsp().has_server_for(&path) {
            return Err(no_server(&path));
        }
        let bytes = tokio::fs::read(&path)
            .await
            .map_err(|e| ToolError::io(&path, e))?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let position = match (input.line, input.character) {
            (Some(line), Some(character)) if line >= 1 && character >= 1 => {
                let line0 = line - 1;
                let lines = text.split('\n').count();
                if line0 as usize >= lines {
                    return Err(ToolError::respond(format!(
                        "line {line} is past the end of {} ({lines} lines)",
                        path.display()
                    )));
                }
                Some((line0, char_to_utf16(line_of(&text, line0), character - 1)))
            }
            _ => None,
        };
        let call = Call {
            ctx,
            uri: path_to_uri(&path)?,
            path,
            text,
            position,
        };
        let answer = call.run(op, input.query.as_deref()).await.map_err(failed)?;
        Ok(output(answer.text, answer.results, answer.files))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_found_around_a_column() {
        assert_eq!(word_at("    dog = make_dog(\"rex\")", 12), "make_dog");
        assert_eq!(word_at("    dog = make_dog(\"rex\")", 10), "make_dog");
        assert_eq!(word_at("    dog = make_dog(\"rex\")", 18), "make_dog");
        assert_eq!(word_at("a + b", 2), "");
        assert_eq!(word_at("", 3), "");
    }
}
