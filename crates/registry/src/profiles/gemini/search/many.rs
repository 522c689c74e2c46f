//! `read_many_files`: files found by Glob, each read as Read reads it and checked as Read
//! checks it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{
    ParsedInput, PermissionDecision, PermissionMode, Tool, ToolCategory, ToolContext, ToolError,
    ToolResult, ValidationResult, schema_for,
};

use super::FileFilteringOptions;
use crate::profiles::gemini::{absolute, str_of};

/// Directories and binary files left out unless `useDefaultExcludes` is false.
const DEFAULT_EXCLUDES: &[&str] = &[
    "**/node_modules/**",
    "**/.git/**",
    "**/.vscode/**",
    "**/.idea/**",
    "**/dist/**",
    "**/build/**",
    "**/coverage/**",
    "**/__pycache__/**",
    "**/*.pyc",
    "**/*.pyo",
    "**/*.bin",
    "**/*.exe",
    "**/*.dll",
    "**/*.so",
    "**/*.dylib",
    "**/*.class",
    "**/*.jar",
    "**/*.war",
    "**/*.zip",
    "**/*.tar",
    "**/*.gz",
    "**/*.bz2",
    "**/*.rar",
    "**/*.7z",
    "**/*.doc",
    "**/*.docx",
    "**/*.xls",
    "**/*.xlsx",
    "**/*.ppt",
    "**/*.pptx",
    "**/*.odt",
    "**/*.ods",
    "**/*.odp",
    "**/.DS_Store",
    "**/.env",
];

/// Image and PDF extensions read only when an include pattern names them.
const MEDIA: &[&str] = &["png", "jpg", "jpeg", "gif", "webp", "bmp", "svg", "pdf"];

/// Files read at most in one call.
const MAX_FILES: usize = 200;

/// Gemini CLI's `read_many_files` over Glob and Read.
pub(crate) struct ReadManyFiles {
    read: Arc<dyn Tool>,
    glob: Arc<dyn Tool>,
    schema: OnceLock<Value>,
}

impl ReadManyFiles {
    /// The files the include patterns name (each file, each directory's files, each
    /// glob's matches through Glob); a pattern that names nothing is added to `skipped`.
    async fn list(
        &self,
        input: &ReadManyFilesInput,
        include_ignored: bool,
        recursive: bool,
        skipped: &mut Vec<(String, String)>,
        ctx: &ToolContext,
    ) -> Result<BTreeSet<PathBuf>, ToolError> {
        let mut found: BTreeSet<PathBuf> = BTreeSet::new();
        for pattern in &input.include {
            let base = base_of(pattern, ctx);
            if !is_glob(pattern) && base.is_file() {
                found.insert(base);
                continue;
            }
            let (dir, glob) = if !is_glob(pattern) && base.is_dir() {
                (base, if recursive { "**/*" } else { "*" }.to_owned())
            } else {
                let rest = pattern
                    .trim_start_matches("./")
                    .strip_prefix(&format!(
                        "{}/",
                        pattern
                            .split('/')
                            .take_while(|c| !is_glob(c))
                            .collect::<Vec<_>>()
                            .join("/")
                    ))
                    .unwrap_or(pattern)
                    .to_owned();
                (base, rest)
            };
            if !dir.is_dir() {
                skipped.push((pattern.clone(), "no such file or directory".to_owned()));
                continue;
            }
            let raw = json!({
                "pattern": glob,
                "path": dir.display().to_string(),
                "include_ignored": include_ignored,
            });
            let parsed = self.glob.parse_input(&raw)?;
            let listed = self.glob.call(parsed, ctx).await?;
            for name in listed
                .data
                .get("filenames")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                found.insert(PathBuf::from(absolute(name, ctx)));
            }
        }
        Ok(found)
    }

    pub(crate) fn new(read: Arc<dyn Tool>, glob: Arc<dyn Tool>) -> Self {
        ReadManyFiles {
            read,
            glob,
            schema: OnceLock::new(),
        }
    }
}

/// Input of `read_many_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadManyFilesInput {
    /// An array of glob patterns or paths. Examples: ["src/**/*.ts"], ["README.md",
    /// "docs/"]
    #[schemars(length(min = 1))]
    #[schemars(inner(length(max = tool_core::MAX_PATTERN_CHARS)))]
    include: Vec<String>,
    /// Optional. Glob patterns for files/directories to exclude. Added to default excludes
    /// if useDefaultExcludes is true. Example: "**/*.log", "temp/"
    #[serde(default)]
    #[schemars(inner(length(max = tool_core::MAX_PATTERN_CHARS)))]
    exclude: Vec<String>,
    /// Optional. Whether to search recursively (primarily controlled by `**` in glob
    /// patterns). Defaults to true.
    #[serde(default)]
    recursive: Option<bool>,
    /// Optional. Whether to apply a list of default exclusion patterns (e.g., node_modules,
    /// .git, binary files). Defaults to true.
    #[serde(default, rename = "useDefaultExcludes")]
    use_default_excludes: Option<bool>,
    /// Whether to respect ignore patterns from .gitignore or .geminiignore
    #[serde(default)]
    file_filtering_options: Option<FileFilteringOptions>,
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// The directory an include pattern searches: its leading components without glob
/// characters, resolved against the working directory.
fn base_of(pattern: &str, ctx: &ToolContext) -> PathBuf {
    if !is_glob(pattern) {
        return ctx.resolve_path(pattern);
    }
    let literal: Vec<&str> = pattern.split('/').take_while(|c| !is_glob(c)).collect();
    let joined = literal.join("/");
    if joined.is_empty() && pattern.starts_with('/') {
        PathBuf::from("/")
    } else if joined.is_empty() {
        ctx.cwd()
    } else {
        ctx.resolve_path(&joined)
    }
}

/// Patterns made to match at any depth, and `dir/` as everything beneath it.
fn matcher(patterns: &[&str]) -> Result<globset::GlobSet, String> {
    let mut set = globset::GlobSetBuilder::new();
    for p in patterns {
        let p = p.trim_start_matches("./");
        let mut forms = vec![p.to_owned()];
        if let Some(dir) = p.strip_suffix('/') {
            forms = vec![format!("{dir}/**"), format!("**/{dir}/**")];
        } else if !p.starts_with("**/") && !p.starts_with('/') {
            forms.push(format!("**/{p}"));
            forms.push(format!("{p}/**"));
        }
        for f in forms {
            let glob = globset::Glob::new(&f).map_err(|e| format!("`{p}` ({e})"))?;
            set.add(glob);
        }
    }
    set.build().map_err(|e| e.to_string())
}

/// The decision on reading `path` as Read decides it, with the session's mode applied as
/// the engine applies it around a tool's own check.
async fn read_decision(read: &dyn Tool, path: &Path, ctx: &ToolContext) -> Result<(), String> {
    let raw = json!({ "file_path": path.display().to_string() });
    let parsed = read.parse_input(&raw).map_err(|e| e.to_string())?;
    if let ValidationResult::Invalid { message, .. } = read.validate(&parsed, ctx).await {
        return Err(message);
    }
    match read.check_permission(&parsed, ctx).await {
        PermissionDecision::Allow => Ok(()),
        PermissionDecision::Deny { reason } => Err(reason),
        PermissionDecision::Ask { reason, kind, .. } => {
            if ctx.permission_mode() == PermissionMode::BypassPermissions && kind.is_bypassable() {
                Ok(())
            } else {
                Err(format!(
                    "{reason}; read it with read_file to ask for approval"
                ))
            }
        }
    }
}

#[async_trait]
impl Tool for ReadManyFiles {
    fn name(&self) -> &str {
        "read_many_files"
    }
    fn checked_as(&self) -> &[&str] {
        &["Read"]
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::FileSystem
    }
    fn input_schema(&self) -> &Value {
        self.schema.get_or_init(schema_for::<ReadManyFilesInput>)
    }
    async fn description(&self, _input: Option<&ParsedInput>) -> String {
        "Reads content from multiple files specified by glob patterns within a configured target directory. For text files, it concatenates their content into a single string. It is primarily designed for text-based files. However, it can also process image (e.g., .png, .jpg) and PDF (.pdf) files if their file names or extensions are explicitly included in the 'include' argument.\n\nUse this tool when the user's query implies needing the content of several files simultaneously for context, analysis, or summarization. For text files, it uses default UTF-8 encoding and a '--- {filePath} ---' separator between file contents. The tool inserts a '--- End of content ---' after the last file. Ensure glob patterns are relative to the target directory. Glob patterns like 'src/**/*.js' are supported. Avoid using for single files if a more specific single-file reading tool is available. Default excludes apply to common non-text files and large dependency directories unless 'useDefaultExcludes' is false.".to_owned()
    }
    fn parse_input(&self, raw: &Value) -> Result<ParsedInput, ToolError> {
        let (input, json) = tool_core::parse_input::<ReadManyFilesInput>(
            "read_many_files",
            self.input_schema(),
            raw,
        )?;
        if input.include.is_empty() || input.include.iter().any(|p| p.trim().is_empty()) {
            return Err(ToolError::respond(
                "`include` needs at least one non-empty path or glob pattern, such as [\"src/**/*.ts\"]",
            ));
        }
        let exclude: Vec<&str> = input.exclude.iter().map(String::as_str).collect();
        if let Err(bad) = matcher(&exclude) {
            return Err(ToolError::respond(format!(
                "`exclude` pattern {bad} is not a valid glob: fix or remove it"
            )));
        }
        Ok(ParsedInput::new(json, input))
    }
    fn is_concurrency_safe(&self, _input: &ParsedInput) -> bool {
        true
    }
    fn is_read_only(&self, _input: &ParsedInput) -> bool {
        true
    }
    async fn validate(&self, _input: &ParsedInput, _ctx: &ToolContext) -> ValidationResult {
        ValidationResult::Valid
    }
    async fn check_permission(&self, input: &ParsedInput, ctx: &ToolContext) -> PermissionDecision {
        let Some(input) = input.downcast_ref::<ReadManyFilesInput>() else {
            return PermissionDecision::deny(
                "internal error: a tool received another tool's input",
            );
        };
        // Each place searched is checked as Read checks it; each file again when it is read.
        for pattern in &input.include {
            let decision = ctx
                .permissions()
                .check_read_path(&base_of(pattern, ctx), ctx);
            if !matches!(decision, PermissionDecision::Allow) {
                return decision;
            }
        }
        PermissionDecision::Allow
    }
    async fn call(
        &self,
        input: ParsedInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Value>, ToolError> {
        let input = input.into_typed::<ReadManyFilesInput>()?;
        let mut excludes: Vec<&str> = input.exclude.iter().map(String::as_str).collect();
        if input.use_default_excludes != Some(false) {
            excludes.extend_from_slice(DEFAULT_EXCLUDES);
        }
        let excluded = matcher(&excludes).map_err(ToolError::respond)?;
        let include_ignored = input
            .file_filtering_options
            .as_ref()
            .and_then(|o| o.respect_git_ignore)
            == Some(false);
        let recursive = input.recursive != Some(false);

        let mut skipped: Vec<(String, String)> = Vec::new();
        let found = self
            .list(&input, include_ignored, recursive, &mut skipped, ctx)
            .await?;

        let cwd = ctx.cwd();
        let mut parts: Vec<String> = Vec::new();
        let mut read_files: Vec<String> = Vec::new();
        for path in found {
            let rel = path.strip_prefix(&cwd).unwrap_or(&path).to_path_buf();
            let shown = path.display().to_string();
            if excluded.is_match(&rel) || excluded.is_match(&path) {
                continue;
            }
            let ext = path
                .extension()
                .map(|e| e.to_string_lossy().to_lowercase())
                .unwrap_or_default();
            let named = input
                .include
                .iter()
                .any(|p| p.to_lowercase().contains(&ext));
            if MEDIA.contains(&ext.as_str()) && !named {
                skipped.push((
                    shown,
                    "asset file (image/pdf) was not explicitly requested by name or extension"
                        .to_owned(),
                ));
                continue;
            }
            if read_files.len() >= MAX_FILES {
                skipped.push((shown, format!("more than {MAX_FILES} files matched")));
                continue;
            }
            if let Err(reason) = read_decision(self.read.as_ref(), &path, ctx).await {
                skipped.push((shown, reason));
                continue;
            }
            // Every file is shown in full here, even one read before in the session.
            ctx.ledger().forget(&path);
            let raw = json!({ "file_path": shown });
            let parsed = self.read.parse_input(&raw)?;
            match self.read.call(parsed, ctx).await {
                Ok(r) if !r.is_error && str_of(&r.data, "type") == "text" => {
                    let mut part = format!("--- {shown} ---\n\n");
                    if r.data.get("truncated").and_then(Value::as_bool) == Some(true) {
                        part.push_str("[WARNING: This file was truncated. To view the full content, use the 'read_file' tool on this specific file.]\n\n");
                    }
                    part.push_str(str_of(&r.data, "content"));
                    part.push_str("\n\n");
                    parts.push(part);
                    read_files.push(shown);
                }
                Ok(r) if !r.is_error => {
                    skipped.push((shown, "not a text file: read it with read_file".to_owned()));
                }
                Ok(r) => skipped.push((shown, r.error_message.unwrap_or_default())),
                Err(e) => skipped.push((shown, e.to_string())),
            }
        }

        let mut text = if parts.is_empty() {
            "No files matching the criteria were found or all were skipped.".to_owned()
        } else {
            let mut t = parts.concat();
            t.push_str("\n--- End of content ---");
            t
        };
        if !skipped.is_empty() {
            text.push_str(&format!("\n\nSkipped {} item(s):", skipped.len()));
            for (path, reason) in skipped.iter().take(20) {
                text.push_str(&format!("\n- {path} (Reason: {reason})"));
            }
            if skipped.len() > 20 {
                text.push_str(&format!("\n- ...and {} more.", skipped.len() - 20));
            }
        }
        let data = json!({
            "files": read_files,
            "skipped": skipped.iter().map(|(p, r)| json!({"path": p, "reason": r})).collect::<Vec<_>>(),
        });
        Ok(ToolResult::ok(data).with_text(text))
    }
}
