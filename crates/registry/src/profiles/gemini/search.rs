//! `glob` and `grep_search` over Glob and Grep, and `list_directory`.

use std::path::Path;
use std::sync::OnceLock;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{
    ParsedInput, PermissionDecision, Tool, ToolCategory, ToolContext, ToolError, ToolResult,
    ValidationResult, schema_for,
};

use super::{absolute, str_of, with_text};
use crate::profiles::Mapping;

mod many;

pub(super) use many::ReadManyFiles;

/// Whether files ignored by `.gitignore` are searched, from gemini's respect flags.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct FileFilteringOptions {
    /// Optional: Whether to respect .gitignore patterns when listing files. Only available
    /// in git repositories. Defaults to true.
    #[serde(default)]
    respect_git_ignore: Option<bool>,
    /// Optional: Whether to respect .geminiignore patterns when listing files. Defaults to
    /// true.
    #[serde(default)]
    respect_gemini_ignore: Option<bool>,
}

/// Gemini CLI's `glob` over Glob.
pub(super) struct GlobFiles;

/// Input of `glob`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GlobFilesInput {
    /// The glob pattern to match against (e.g., '**/*.py', 'docs/*.md').
    #[schemars(length(max = tool_core::MAX_PATTERN_CHARS))]
    pattern: String,
    /// Optional: The absolute path to the directory to search within. If omitted, searches
    /// the root directory.
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    dir_path: Option<String>,
    /// Optional: Whether the search should be case-sensitive. Defaults to false.
    #[serde(default)]
    case_sensitive: Option<bool>,
    /// Optional: Whether to respect .gitignore patterns when finding files. Only available
    /// in git repositories. Defaults to true.
    #[serde(default)]
    respect_git_ignore: Option<bool>,
    /// Optional: Whether to respect .geminiignore patterns when finding files. Defaults to
    /// true.
    #[serde(default)]
    #[allow(dead_code)] // Glob reads the project's ignore files itself; accepted, not used.
    respect_gemini_ignore: Option<bool>,
}

/// `pattern` matching either case of every letter, as a glob.
fn any_case(pattern: &str) -> String {
    let mut out = String::new();
    let mut class = false;
    for c in pattern.chars() {
        match c {
            '[' => {
                class = true;
                out.push(c);
            }
            ']' => {
                class = false;
                out.push(c);
            }
            c if !class && c.is_alphabetic() && c.to_lowercase().ne(c.to_uppercase()) => {
                out.push('[');
                out.extend(c.to_lowercase());
                out.extend(c.to_uppercase());
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}

/// Where a search runs, as gemini names it in its result texts.
fn place(dir: Option<&str>, ctx: &ToolContext) -> String {
    match dir {
        Some(d) if !d.is_empty() => ctx.resolve_path(d).display().to_string(),
        _ => ctx.cwd().display().to_string(),
    }
}

impl Mapping for GlobFiles {
    type Input = GlobFilesInput;

    fn name(&self) -> &'static str {
        "glob"
    }

    fn description(&self) -> String {
        "Efficiently finds files matching specific glob patterns (e.g., `src/**/*.ts`, `**/*.md`), returning absolute paths sorted by modification time (newest first). Ideal for quickly locating files based on their name or path structure, especially in large codebases.".to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["Glob"]
    }

    fn inner_input(&self, input: &GlobFilesInput, _inner: &dyn Tool) -> Result<Value, ToolError> {
        if input.pattern.trim().is_empty() {
            return Err(ToolError::respond(
                "`pattern` is empty: give a glob pattern such as '**/*.py'",
            ));
        }
        let pattern = if input.case_sensitive == Some(true) {
            input.pattern.clone()
        } else {
            any_case(&input.pattern)
        };
        let mut glob = json!({ "pattern": pattern });
        if let Some(dir) = input.dir_path.as_deref().filter(|d| !d.is_empty()) {
            glob["path"] = json!(dir);
        }
        if input.respect_git_ignore == Some(false) {
            glob["include_ignored"] = json!(true);
        }
        Ok(glob)
    }

    fn render_in(
        &self,
        input: &GlobFilesInput,
        result: ToolResult<Value>,
        ctx: &ToolContext,
    ) -> ToolResult<Value> {
        if result.is_error {
            return result;
        }
        let within = place(input.dir_path.as_deref(), ctx);
        let files: Vec<String> = result
            .data
            .get("filenames")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(Value::as_str)
                    .map(|s| absolute(s, ctx))
                    .collect()
            })
            .unwrap_or_default();
        let pattern = &input.pattern;
        let text = if files.is_empty() {
            format!("No files found matching pattern \"{pattern}\" within {within}")
        } else {
            let mut text = format!(
                "Found {} file(s) matching \"{pattern}\" within {within}, sorted by modification time (newest first):\n{}",
                files.len(),
                files.join("\n")
            );
            if result.data.get("truncated").and_then(Value::as_bool) == Some(true) {
                text.push_str(
                    "\n(Results are truncated: use a more specific pattern or dir_path.)",
                );
            }
            text
        };
        with_text(result, text)
    }
}

/// Gemini CLI's `grep_search` (its ripgrep form) over Grep.
pub(super) struct GrepSearch;

/// Input of `grep_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GrepSearchInput {
    /// The pattern to search for. By default, treated as a Rust-flavored regular
    /// expression. Use '\b' for precise symbol matching (e.g., '\bMatchMe\b').
    #[schemars(length(max = tool_core::MAX_PATTERN_CHARS))]
    pattern: String,
    /// Directory or file to search. Directories are searched recursively. Relative paths
    /// are resolved against current working directory. Defaults to current working
    /// directory ('.') if omitted.
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    dir_path: Option<String>,
    /// Glob pattern to filter files (e.g., '*.ts', 'src/**'). Recommended for large
    /// repositories to reduce noise. Defaults to all files if omitted.
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATTERN_CHARS))]
    include_pattern: Option<String>,
    /// Optional: A regular expression pattern to exclude from the search results. If a
    /// line matches both the pattern and the exclude_pattern, it will be omitted.
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATTERN_CHARS))]
    exclude_pattern: Option<String>,
    /// Optional: If true, only the file paths of the matches will be returned, without the
    /// line content or line numbers. This is useful for gathering a list of files.
    #[serde(default)]
    names_only: Option<bool>,
    /// If true, search is case-sensitive. Defaults to false (ignore case) if omitted.
    #[serde(default)]
    case_sensitive: Option<bool>,
    /// If true, treats the `pattern` as a literal string instead of a regular expression.
    /// Defaults to false (basic regex) if omitted.
    #[serde(default)]
    fixed_strings: Option<bool>,
    /// Show this many lines of context around each match (equivalent to grep -C). Defaults
    /// to 0 if omitted.
    #[serde(default)]
    context: Option<u64>,
    /// Show this many lines after each match (equivalent to grep -A). Defaults to 0 if
    /// omitted.
    #[serde(default)]
    after: Option<u64>,
    /// Show this many lines before each match (equivalent to grep -B). Defaults to 0 if
    /// omitted.
    #[serde(default)]
    before: Option<u64>,
    /// If true, searches all files including those usually ignored (like in .gitignore,
    /// build/, dist/, etc). Defaults to false if omitted.
    #[serde(default)]
    no_ignore: Option<bool>,
    /// Optional: Maximum number of matches to return per file. Use this to prevent being
    /// overwhelmed by repetitive matches in large files.
    #[serde(default)]
    #[schemars(range(min = 1))]
    max_matches_per_file: Option<u64>,
    /// Optional: Maximum number of total matches to return. Use this to limit the overall
    /// size of the response. Defaults to 100 if omitted.
    #[serde(default)]
    #[schemars(range(min = 1))]
    total_max_matches: Option<u64>,
}

/// Matches shown when `total_max_matches` is not given.
const DEFAULT_TOTAL_MATCHES: u64 = 100;

/// `text` with the characters a regular expression gives meaning escaped.
fn escape_regex(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// One line of Grep's content output: its file, number, whether it is context, and text.
struct Line<'a> {
    file: &'a str,
    number: &'a str,
    context: bool,
    text: &'a str,
}

/// Reads `raw` ("file:12:text" for a match, "file-12-text" for context) knowing the
/// `files` Grep found, so a path holding `:` or `-` is read whole.
fn split_line<'a>(raw: &'a str, files: &'a [String]) -> Option<Line<'a>> {
    let parse = |file: &'a str, rest: &'a str| -> Option<Line<'a>> {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        if digits == 0 {
            return None;
        }
        let (number, tail) = rest.split_at(digits);
        let sep = tail.chars().next()?;
        let context = match sep {
            ':' => false,
            '-' => true,
            _ => return None,
        };
        Some(Line {
            file,
            number,
            context,
            text: &tail[1..],
        })
    };
    files
        .iter()
        .filter(|f| raw.len() > f.len() && raw.starts_with(f.as_str()))
        .filter_map(|f| {
            let rest = &raw[f.len()..];
            let rest = rest.strip_prefix(':').or_else(|| rest.strip_prefix('-'))?;
            parse(f.as_str(), rest)
        })
        .next()
        .or_else(|| match files {
            [only] => parse(only.as_str(), raw),
            _ => None,
        })
}

impl GrepSearchInput {
    fn before_after(&self) -> (u64, u64) {
        let c = self.context.unwrap_or(0);
        (self.before.unwrap_or(c), self.after.unwrap_or(c))
    }

    fn described(&self) -> String {
        let shown = match self.dir_path.as_deref() {
            Some(d) if !d.is_empty() => d.to_owned(),
            _ => ".".to_owned(),
        };
        let mut text = format!("for pattern \"{}\" in path \"{shown}\"", self.pattern);
        if let Some(inc) = &self.include_pattern {
            text.push_str(&format!(" (filter: \"{inc}\")"));
        }
        text
    }
}

impl Mapping for GrepSearch {
    type Input = GrepSearchInput;

    fn name(&self) -> &'static str {
        "grep_search"
    }

    fn description(&self) -> String {
        "Searches for a regular expression pattern within file contents. This tool is FAST and optimized, powered by ripgrep. PREFERRED over standard `run_shell_command(\"grep ...\")` due to better performance and automatic output limiting (defaults to 100 matches, but can be increased via `total_max_matches`).".to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["Grep"]
    }

    fn inner_input(&self, input: &GrepSearchInput, _inner: &dyn Tool) -> Result<Value, ToolError> {
        if input.pattern.is_empty() {
            return Err(ToolError::respond(
                "`pattern` is empty: give the text or regular expression to search for",
            ));
        }
        if let Some(e) = input.exclude_pattern.as_deref().filter(|e| !e.is_empty())
            && let Err(err) = regex::Regex::new(e)
        {
            return Err(ToolError::respond(format!(
                "`exclude_pattern` is not a valid regular expression ({err}): fix it or leave it out"
            )));
        }
        let pattern = if input.fixed_strings == Some(true) {
            escape_regex(&input.pattern)
        } else {
            input.pattern.clone()
        };
        let names_only = input.names_only == Some(true);
        let mut grep = json!({
            "pattern": pattern,
            "output_mode": if names_only { "files_with_matches" } else { "content" },
            "-i": input.case_sensitive != Some(true),
        });
        if let Some(dir) = input.dir_path.as_deref().filter(|d| !d.is_empty()) {
            grep["path"] = json!(dir);
        }
        if let Some(glob) = input.include_pattern.as_deref().filter(|g| !g.is_empty()) {
            grep["glob"] = json!(glob);
        }
        if input.no_ignore == Some(true) {
            grep["include_ignored"] = json!(true);
        }
        if names_only {
            grep["head_limit"] = json!(0);
        } else {
            grep["-n"] = json!(true);
            let (before, after) = input.before_after();
            if before > 0 {
                grep["-B"] = json!(before);
            }
            if after > 0 {
                grep["-A"] = json!(after);
            }
            // Enough lines for the matches shown: each with its context and a separator.
            let total = input.total_max_matches.unwrap_or(DEFAULT_TOTAL_MATCHES);
            let per = 2 + before + after;
            grep["head_limit"] = json!(total.saturating_mul(per).min(50_000));
        }
        Ok(grep)
    }

    fn render_in(
        &self,
        input: &GrepSearchInput,
        result: ToolResult<Value>,
        _ctx: &ToolContext,
    ) -> ToolResult<Value> {
        if result.is_error {
            return result;
        }
        let described = input.described();
        let files: Vec<String> = result
            .data
            .get("filenames")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let total = input.total_max_matches.unwrap_or(DEFAULT_TOTAL_MATCHES);
        if input.names_only == Some(true) {
            if files.is_empty() {
                return with_text(result, format!("No matches found {described}."));
            }
            let limited = files.len() as u64 > total;
            let shown: Vec<&str> = files
                .iter()
                .take(total as usize)
                .map(String::as_str)
                .collect();
            let text = format!(
                "Found {} files with matches {described}{}:\n{}",
                shown.len(),
                if limited {
                    format!(" (results limited to {total} matches for performance)")
                } else {
                    String::new()
                },
                shown.join("\n")
            );
            return with_text(result, text);
        }
        let exclude = match input.exclude_pattern.as_deref().filter(|e| !e.is_empty()) {
            Some(e) => match regex::Regex::new(e) {
                Ok(m) => Some(m),
                Err(err) => {
                    let mut result = result;
                    result.is_error = true;
                    return with_text(
                        result,
                        format!(
                            "`exclude_pattern` is not a valid regular expression ({err}): fix it or leave it out"
                        ),
                    );
                }
            },
            None => None,
        };
        let content = str_of(&result.data, "content").to_owned();
        let per_file = input.max_matches_per_file.unwrap_or(u64::MAX);
        let mut blocks: Vec<(String, Vec<String>, u64)> = Vec::new();
        let mut matches = 0u64;
        let mut limited = false;
        for raw in content.lines() {
            let Some(line) = split_line(raw, &files) else {
                continue;
            };
            if !line.context && exclude.as_ref().is_some_and(|m| m.is_match(line.text)) {
                continue;
            }
            if blocks.last().is_none_or(|b| b.0 != line.file) {
                blocks.push((line.file.to_owned(), Vec::new(), 0));
            }
            let Some(block) = blocks.last_mut() else {
                continue;
            };
            if !line.context {
                if block.2 >= per_file {
                    continue;
                }
                if matches >= total {
                    limited = true;
                    break;
                }
                block.2 += 1;
                matches += 1;
            } else if block.2 >= per_file {
                continue;
            }
            let sep = if line.context { '-' } else { ':' };
            block.1.push(format!("L{}{sep} {}", line.number, line.text));
        }
        if matches == 0 {
            return with_text(result, format!("No matches found {described}."));
        }
        let term = if matches == 1 { "match" } else { "matches" };
        let mut text = format!("Found {matches} {term} {described}");
        if limited {
            text.push_str(&format!(
                " (results limited to {total} matches for performance)"
            ));
        }
        text.push_str(":\n---\n");
        for (file, lines, count) in &blocks {
            if *count == 0 {
                continue;
            }
            text.push_str(&format!("File: {file}\n"));
            for l in lines {
                text.push_str(l);
                text.push('\n');
            }
            text.push_str("---\n");
        }
        with_text(result, text)
    }
}

/// Gemini CLI's `list_directory`: the entries of one directory, checked as Read on it.
pub(super) struct ListDirectory {
    schema: OnceLock<Value>,
}

impl ListDirectory {
    pub(super) fn new() -> Self {
        ListDirectory {
            schema: OnceLock::new(),
        }
    }
}

/// Input of `list_directory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ListDirectoryInput {
    /// The path to the directory to list
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    dir_path: String,
    /// List of glob patterns to ignore
    #[serde(default)]
    #[schemars(inner(length(max = tool_core::MAX_PATTERN_CHARS)))]
    ignore: Option<Vec<String>>,
    /// Optional: Whether to respect ignore patterns from .gitignore or .geminiignore
    #[serde(default)]
    file_filtering_options: Option<FileFilteringOptions>,
}

/// One entry of a listing.
struct Entry {
    name: String,
    dir: bool,
    size: u64,
}

/// The entries of `dir` (sorted directories first, then by name) and how many ignore
/// files hid; `respect_git` and `respect_gemini` as gemini's flags.
fn list(
    dir: &Path,
    ignore: &[globset::GlobMatcher],
    respect_git: bool,
    respect_gemini: bool,
    ctx: &ToolContext,
) -> Result<(Vec<Entry>, usize), ToolError> {
    let all: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)
        .map_err(|e| ToolError::io(dir, e))?
        .filter_map(Result::ok)
        .collect();
    let mut walk = ignore::WalkBuilder::new(dir);
    walk.max_depth(Some(1))
        .hidden(false)
        .parents(true)
        .git_ignore(respect_git)
        .git_exclude(respect_git)
        .git_global(false)
        .ignore(false);
    if respect_gemini {
        walk.add_custom_ignore_filename(".geminiignore");
    }
    let kept: std::collections::HashSet<std::path::PathBuf> = walk
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.depth() == 1)
        .map(|e| e.into_path())
        .collect();
    let mut entries = Vec::new();
    let mut ignored = 0;
    for entry in all {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == ".git" && respect_git {
            ignored += 1;
            continue;
        }
        if !kept.contains(&path) {
            ignored += 1;
            continue;
        }
        if ignore.iter().any(|g| g.is_match(&name)) {
            continue;
        }
        // Entries a Read deny rule covers are not shown, as Glob hides them.
        if matches!(
            ctx.permissions().check_read_path(&path, ctx),
            PermissionDecision::Deny { .. }
        ) {
            continue;
        }
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        entries.push(Entry {
            name,
            dir: meta.is_dir(),
            size: if meta.is_dir() { 0 } else { meta.len() },
        });
    }
    entries.sort_by(|a, b| b.dir.cmp(&a.dir).then_with(|| a.name.cmp(&b.name)));
    Ok((entries, ignored))
}

#[async_trait]
impl Tool for ListDirectory {
    fn name(&self) -> &str {
        "list_directory"
    }
    fn checked_as(&self) -> &[&str] {
        &["Read"]
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::FileSystem
    }
    fn input_schema(&self) -> &Value {
        self.schema.get_or_init(schema_for::<ListDirectoryInput>)
    }
    async fn description(&self, _input: Option<&ParsedInput>) -> String {
        "Lists the names of files and subdirectories directly within a specified directory path. Can optionally ignore entries matching provided glob patterns.".to_owned()
    }
    fn parse_input(&self, raw: &Value) -> Result<ParsedInput, ToolError> {
        let (input, json) = tool_core::parse_input::<ListDirectoryInput>(
            "list_directory",
            self.input_schema(),
            raw,
        )?;
        if input.dir_path.trim().is_empty() {
            return Err(ToolError::respond(
                "`dir_path` is empty: give the directory to list, such as '.' or an absolute path",
            ));
        }
        for pattern in input.ignore.iter().flatten() {
            if let Err(e) = globset::Glob::new(pattern) {
                return Err(ToolError::respond(format!(
                    "`ignore` pattern `{pattern}` is not a valid glob ({e}): fix or remove it"
                )));
            }
        }
        Ok(ParsedInput::new(json, input))
    }
    fn is_concurrency_safe(&self, _input: &ParsedInput) -> bool {
        true
    }
    fn is_read_only(&self, _input: &ParsedInput) -> bool {
        true
    }
    async fn validate(&self, input: &ParsedInput, ctx: &ToolContext) -> ValidationResult {
        let Some(input) = input.downcast_ref::<ListDirectoryInput>() else {
            return ValidationResult::invalid(
                "internal error: a tool received another tool's input",
            );
        };
        let dir = ctx.resolve_path(&input.dir_path);
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => ValidationResult::Valid,
            Ok(_) => ValidationResult::invalid(format!(
                "Error: Path is not a directory: {}",
                dir.display()
            )),
            Err(_) => ValidationResult::invalid(format!(
                "Error: Directory not found or inaccessible: {}",
                dir.display()
            )),
        }
    }
    async fn check_permission(&self, input: &ParsedInput, ctx: &ToolContext) -> PermissionDecision {
        match input.downcast_ref::<ListDirectoryInput>() {
            Some(input) => ctx
                .permissions()
                .check_read_path(&ctx.resolve_path(&input.dir_path), ctx),
            None => {
                PermissionDecision::deny("internal error: a tool received another tool's input")
            }
        }
    }
    async fn call(
        &self,
        input: ParsedInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Value>, ToolError> {
        let input = input.into_typed::<ListDirectoryInput>()?;
        let dir = ctx.resolve_path(&input.dir_path);
        let matchers: Vec<globset::GlobMatcher> = input
            .ignore
            .iter()
            .flatten()
            .filter_map(|p| globset::Glob::new(p).ok())
            .map(|g| g.compile_matcher())
            .collect();
        let opts = input.file_filtering_options.unwrap_or_default();
        let (entries, ignored) = list(
            &dir,
            &matchers,
            opts.respect_git_ignore.unwrap_or(true),
            opts.respect_gemini_ignore.unwrap_or(true),
            ctx,
        )?;
        let data = json!({
            "dirPath": dir.display().to_string(),
            "entries": entries.iter().map(|e| json!({"name": e.name, "isDirectory": e.dir, "size": e.size})).collect::<Vec<_>>(),
            "ignored": ignored,
        });
        if entries.is_empty() && ignored == 0 {
            return Ok(
                ToolResult::ok(data).with_text(format!("Directory {} is empty.", dir.display()))
            );
        }
        let listing: Vec<String> = entries
            .iter()
            .map(|e| {
                if e.dir {
                    format!("[DIR] {}", e.name)
                } else {
                    format!("{} ({} bytes)", e.name, e.size)
                }
            })
            .collect();
        let mut text = format!(
            "Directory listing for {}:\n{}",
            dir.display(),
            listing.join("\n")
        );
        if ignored > 0 {
            text.push_str(&format!("\n\n({ignored} ignored)"));
        }
        Ok(ToolResult::ok(data).with_text(text))
    }
}
