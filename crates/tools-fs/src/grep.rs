//! Grep: regex search in process with ripgrep's crates (`grep` for matching and searching,
//! `ignore` for the glob and type filters) over the crate's parallel walker (`walk.rs`; on
//! other systems than Linux, `ignore`'s), under the ignore policy Glob uses. Files are
//! opened relative to their open directory, and the paths the ignore rules skipped are
//! counted as the walk goes.

use std::path::{Path, PathBuf};
#[cfg(not(target_os = "linux"))]
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use grep::regex::{RegexMatcher, RegexMatcherBuilder};
use grep::searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::Override;
use ignore::types::{Types, TypesBuilder};
#[cfg(not(target_os = "linux"))]
use ignore::{WalkBuilder, WalkState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    PermissionDecision, RuleBehavior, ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult,
    TypedTool, ValidationResult, path,
};

#[cfg(not(target_os = "linux"))]
use crate::ignore_policy::VCS_DIRS;
use crate::ignore_policy::{IgnorePolicy, WalkDeadline, newest_first, suggest_similar};

/// Results shown when `head_limit` is not given.
pub const DEFAULT_HEAD_LIMIT: usize = crate::host_limits::DEFAULT_GREP_HEAD_LIMIT;
/// Lines longer than this many characters are cut.
pub const MAX_COLUMNS: usize = 500;
/// The search gives up after this long.
pub const GREP_TIMEOUT: Duration = Duration::from_secs(20);
/// Where `ignore`'s walker is used (other systems than Linux): above this many
/// directories, skipped paths are counted only when nothing matched. On Linux they are
/// always counted, during the walk.
#[cfg(not(target_os = "linux"))]
const COUNT_IGNORED_MAX_DIRS: usize = 2000;
/// Memory a multiline search may use for one file.
const MULTILINE_HEAP_LIMIT: usize = 256 * 1024 * 1024;

const DESCRIPTION: &str = "A powerful search tool built on ripgrep's engine

  Usage:
  - ALWAYS use Grep for search tasks. NEVER invoke `grep` or `rg` as a Bash command. The Grep tool has been optimized for correct permissions and access.
  - Supports full regex syntax (e.g., \"log.*Error\", \"function\\\\s+\\\\w+\")
  - Filter files with glob parameter (e.g., \"*.js\", \"**/*.tsx\") or type parameter (e.g., \"js\", \"py\", \"rust\")
  - Output modes: \"content\" shows matching lines, \"files_with_matches\" shows only file paths (default), \"count\" shows match counts
  - Files are listed newest first. Respects .gitignore, .ignore and .agent-toolsignore files and skips hidden files (like Glob); set include_ignored to true to search them too. Version-control folders are never searched; binary files are skipped
  - Use Agent tool for open-ended searches requiring multiple rounds
  - Pattern syntax: Uses ripgrep (not grep) - literal braces need escaping (use `interface\\\\{\\\\}` to find `interface{}` in Go code)
  - Multiline matching: By default patterns match within single lines only. For cross-line patterns like `struct \\\\{[\\\\s\\\\S]*?field`, use `multiline: true`
  - Results are limited to 250 entries by default (head_limit; 0 means unlimited); use offset to page. Lines longer than 500 characters are cut
";

/// What Grep returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Matching lines
    Content,
    /// Paths of matching files
    #[default]
    FilesWithMatches,
    /// Matches per file
    Count,
}

/// Input of Grep.
///
/// # JSON names
///
/// The model sends these fields under JSON names that differ from the Rust ones:
///
/// | JSON name | Rust field |
/// | --- | --- |
/// | `-B` | [`before`](Self::before) |
/// | `-A` | [`after`](Self::after) |
/// | `-C` | [`context_c`](Self::context_c) |
/// | `-n` | [`line_numbers`](Self::line_numbers) |
/// | `-i` | [`case_insensitive`](Self::case_insensitive) |
/// | `type` | [`file_type`](Self::file_type) |
///
/// `output_mode` takes the [`OutputMode`] variants in snake case: `content`,
/// `files_with_matches`, `count`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepInput {
    /// The regular expression pattern to search for in file contents
    #[schemars(length(max = tool_core::MAX_PATTERN_CHARS))]
    pub pattern: String,
    /// File or directory to search in. Defaults to the current working directory.
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    pub path: Option<String>,
    /// Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}")
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATTERN_CHARS))]
    pub glob: Option<String>,
    /// Output mode: "content" shows matching lines (supports -A/-B/-C context, -n line
    /// numbers, head_limit), "files_with_matches" shows file paths (supports head_limit),
    /// "count" shows match counts (supports head_limit). Defaults to "files_with_matches".
    #[serde(default)]
    pub output_mode: Option<OutputMode>,
    /// Number of lines to show before each match. Requires output_mode: "content".
    #[serde(default, rename = "-B")]
    #[schemars(range(min = 0))]
    pub before: Option<u64>,
    /// Number of lines to show after each match. Requires output_mode: "content".
    #[serde(default, rename = "-A")]
    #[schemars(range(min = 0))]
    pub after: Option<u64>,
    /// Alias for context.
    #[serde(default, rename = "-C")]
    #[schemars(range(min = 0))]
    pub context_c: Option<u64>,
    /// Number of lines to show before and after each match. Requires output_mode: "content".
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub context: Option<u64>,
    /// Show line numbers in output. Requires output_mode: "content". Defaults to true.
    #[serde(default, rename = "-n")]
    pub line_numbers: Option<bool>,
    /// Case insensitive search
    #[serde(default, rename = "-i")]
    pub case_insensitive: Option<bool>,
    /// File type to search (ripgrep's types, e.g. js, py, rust, go, java). More efficient
    /// than glob for standard file types.
    #[serde(default, rename = "type")]
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub file_type: Option<String>,
    /// Limit output to the first N lines/entries. Defaults to 250; 0 means unlimited.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub head_limit: Option<u64>,
    /// Skip the first N lines/entries before applying head_limit. Defaults to 0.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub offset: Option<u64>,
    /// Enable multiline mode where . matches newlines and patterns can span lines.
    /// Default: false.
    #[serde(default)]
    pub multiline: Option<bool>,
    /// Also search files that .gitignore / .ignore rules exclude, and hidden files
    /// (default false)
    #[serde(default)]
    pub include_ignored: Option<bool>,
}

/// Output of Grep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepOutput {
    /// The output mode
    pub mode: OutputMode,
    /// Files listed (files and count modes) or with lines shown (content mode)
    pub num_files: usize,
    /// The files, newest first
    pub filenames: Vec<String>,
    /// The lines shown (content and count modes)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Lines shown (content mode)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_lines: Option<usize>,
    /// Matches in the files shown (count mode)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_matches: Option<u64>,
    /// The head_limit, when it cut the results
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_limit: Option<usize>,
    /// The offset, when not 0
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_offset: Option<usize>,
    /// Files and directories the ignore rules and the hidden-file rule skipped (a skipped
    /// directory counts once; version-control folders never count); always counted on
    /// Linux, elsewhere when nothing matched or the tree has at most 2,000 directories
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored_entries: Option<u64>,
}

/// The Grep tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Grep;

/// One line of a file's results.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    Hit {
        number: u64,
        is_match: bool,
        text: String,
    },
    Break,
}

/// One file's results.
#[derive(Debug)]
struct FileHits {
    path: PathBuf,
    mtime: SystemTime,
    lines: Vec<Line>,
    count: u64,
}

/// Collects a file's matches.
struct Collect {
    mode: OutputMode,
    lines: Vec<Line>,
    count: u64,
    binary: bool,
}

fn cut_line(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= MAX_COLUMNS {
        return text.into_owned();
    }
    let total = text.chars().count();
    if total <= MAX_COLUMNS {
        return text.into_owned();
    }
    let head: String = text.chars().take(MAX_COLUMNS).collect();
    format!("{head} [... {} more characters]", total - MAX_COLUMNS)
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.count += 1;
        match self.mode {
            OutputMode::FilesWithMatches => Ok(false),
            OutputMode::Count => Ok(true),
            OutputMode::Content => {
                let first = mat.line_number().unwrap_or(0);
                for (i, line) in mat.lines().enumerate() {
                    self.lines.push(Line::Hit {
                        number: first + i as u64,
                        is_match: true,
                        text: cut_line(line),
                    });
                }
                Ok(true)
            }
        }
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        ctx: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        if self.mode == OutputMode::Content {
            self.lines.push(Line::Hit {
                number: ctx.line_number().unwrap_or(0),
                is_match: false,
                text: cut_line(ctx.bytes()),
            });
        }
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, Self::Error> {
        if self.mode == OutputMode::Content {
            self.lines.push(Line::Break);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Everything a search needs, built once and cloned per worker thread.
#[derive(Clone)]
struct Plan {
    matcher: RegexMatcher,
    mode: OutputMode,
    before: usize,
    after: usize,
    multiline: bool,
    globs: Option<Override>,
    types: Option<Types>,
}

impl Plan {
    fn searcher(&self) -> Searcher {
        let mut b = SearcherBuilder::new();
        // Line numbers cost a count of every newline; only content lines show them.
        b.line_number(self.mode == OutputMode::Content)
            .binary_detection(BinaryDetection::quit(0))
            .multi_line(self.multiline);
        if self.mode == OutputMode::Content {
            b.before_context(self.before).after_context(self.after);
        }
        if self.multiline {
            b.heap_limit(Some(MULTILINE_HEAP_LIMIT));
        }
        b.build()
    }

    /// Whether the glob and type filters admit `path` (a file).
    #[cfg(not(target_os = "linux"))]
    fn admits(&self, path: &Path) -> bool {
        if let Some(globs) = &self.globs
            && globs.matched(path, false).is_ignore()
        {
            return false;
        }
        if let Some(types) = &self.types
            && !types.matched(path, false).is_whitelist()
        {
            return false;
        }
        true
    }

    fn search(&self, searcher: &mut Searcher, path: &Path) -> Option<FileHits> {
        let file = std::fs::File::open(path).ok()?;
        self.search_file(searcher, &file, || path.to_path_buf())
    }

    /// Searches an open file; `path` names it when it has hits.
    fn search_file(
        &self,
        searcher: &mut Searcher,
        file: &std::fs::File,
        path: impl FnOnce() -> PathBuf,
    ) -> Option<FileHits> {
        let mut sink = Collect {
            mode: self.mode,
            lines: Vec::new(),
            count: 0,
            binary: false,
        };
        if searcher
            .search_file(&self.matcher, file, &mut sink)
            .is_err()
            || sink.binary
        {
            return None;
        }
        if sink.count == 0 {
            return None;
        }
        let mtime = file
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        Some(FileHits {
            path: path(),
            mtime,
            lines: sink.lines,
            count: sink.count,
        })
    }
}

/// Splits the `glob` input as the reference does: on whitespace, then on commas unless the
/// token holds a brace group.
fn split_globs(glob: &str) -> Vec<String> {
    let mut out = Vec::new();
    for token in glob.split_whitespace() {
        if token.contains('{') && token.contains('}') {
            out.push(token.to_owned());
        } else {
            out.extend(
                token
                    .split(',')
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned),
            );
        }
    }
    out
}

fn build_plan(input: &GrepInput, root: &Path) -> Result<Plan, String> {
    let multiline = input.multiline.unwrap_or(false);
    let mut mb = RegexMatcherBuilder::new();
    mb.case_insensitive(input.case_insensitive.unwrap_or(false));
    if multiline {
        mb.multi_line(true).dot_matches_new_line(true);
    } else {
        mb.line_terminator(Some(b'\n'));
    }
    let matcher = mb
        .build(&input.pattern)
        .map_err(|e| format!("Invalid regular expression \"{}\": {e}", input.pattern))?;
    let globs = match input
        .glob
        .as_deref()
        .map(str::trim)
        .filter(|g| !g.is_empty())
    {
        None => None,
        Some(glob) => {
            let mut ob = ignore::overrides::OverrideBuilder::new(root);
            for g in split_globs(glob) {
                ob.add(&g)
                    .map_err(|e| format!("Invalid glob \"{g}\": {e}"))?;
            }
            Some(
                ob.build()
                    .map_err(|e| format!("Invalid glob \"{glob}\": {e}"))?,
            )
        }
    };
    let types = match input
        .file_type
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        None => None,
        Some(name) => {
            let mut tb = TypesBuilder::new();
            tb.add_defaults();
            tb.select(name);
            let types = tb.build().map_err(|e| {
                format!("Invalid type \"{name}\": {e}. Use one of ripgrep's file types, such as rust, py, js, ts, go, java, c, cpp, md.")
            })?;
            Some(types)
        }
    };
    let context = input.context.or(input.context_c);
    let before = context.or(input.before).unwrap_or(0);
    let after = context.or(input.after).unwrap_or(0);
    Ok(Plan {
        matcher,
        mode: input.output_mode.unwrap_or_default(),
        before: usize::try_from(before).unwrap_or(usize::MAX),
        after: usize::try_from(after).unwrap_or(usize::MAX),
        multiline,
        globs,
        types,
    })
}

/// Searches `root` (a directory) in parallel; returns the files with hits and the number of
/// entries the ignore rules and the hidden-file rule skipped (counted during the walk).
#[cfg(target_os = "linux")]
fn search_tree(
    root: &Path,
    plan: &Plan,
    policy: IgnorePolicy,
    glob_hint: &str,
    cancel: &tool_core::CancellationToken,
    started: Instant,
) -> Result<(Vec<FileHits>, Option<u64>), ToolError> {
    use crate::walk::{FileEntry, Kind, Visitor, walk};
    use rustix::fs::{Mode, OFlags};

    /// One thread's searcher and hits.
    struct Search<'a> {
        plan: &'a Plan,
        searcher: Searcher,
        hits: Vec<FileHits>,
    }

    impl Visitor for Search<'_> {
        fn visit(&mut self, entry: &mut FileEntry<'_>) {
            // Regular files only: a symlink is not followed out of the tree.
            if entry.kind() != Kind::File {
                return;
            }
            if let Some(types) = &self.plan.types
                && !types.matched(entry.name(), false).is_whitelist()
            {
                return;
            }
            if let Some(globs) = &self.plan.globs
                && globs.matched(entry.rel_path(), false).is_ignore()
            {
                return;
            }
            // Non-blocking: a FIFO put in the file's place since the listing must not hold
            // the open (or a read) until a writer comes; for a regular file it changes nothing.
            let Ok(fd) = rustix::fs::openat(
                entry.dir(),
                entry.name(),
                OFlags::RDONLY
                    | OFlags::CLOEXEC
                    | OFlags::NOFOLLOW
                    | OFlags::NOCTTY
                    | OFlags::NONBLOCK,
                Mode::empty(),
            ) else {
                return;
            };
            let file = std::fs::File::from(fd);
            if let Some(hits) = self
                .plan
                .search_file(&mut self.searcher, &file, || entry.path())
            {
                self.hits.push(hits);
            }
        }
    }

    let deadline = WalkDeadline::new("Grep", cancel, started, GREP_TIMEOUT);
    let (threads, stats) = walk(root, policy.walk_options(glob_hint), &deadline, 128, || {
        Search {
            plan,
            searcher: plan.searcher(),
            hits: Vec::new(),
        }
    });
    deadline.outcome()?;
    let mut hits = Vec::new();
    for mut t in threads {
        hits.append(&mut t.hits);
    }
    Ok((hits, Some(stats.skipped())))
}

#[cfg(not(target_os = "linux"))]
/// Directories listed, entries the walk yielded below the root, and the files with hits.
type Shared = Arc<Mutex<(Vec<PathBuf>, u64, Vec<FileHits>)>>;

#[cfg(not(target_os = "linux"))]
/// Per-thread tallies for the count of ignored entries, merged when the worker ends.
///
/// Skipped entries = every listed directory's children − the entries the walk yielded
/// below the root; summing over the whole tree needs one counter, not a map per directory.
struct Tally {
    listed: Vec<PathBuf>,
    yielded: u64,
    hits: Vec<FileHits>,
    shared: Shared,
}

#[cfg(not(target_os = "linux"))]
impl Drop for Tally {
    fn drop(&mut self) {
        if let Ok(mut shared) = self.shared.lock() {
            shared.0.append(&mut self.listed);
            shared.1 += self.yielded;
            shared.2.append(&mut self.hits);
        }
    }
}

#[cfg(not(target_os = "linux"))]
/// Children of `dir` a walk would consider (version-control folders are never counted).
fn count_children(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_none_or(|n| !VCS_DIRS.contains(&n))
            })
            .count() as u64
    })
}

#[cfg(not(target_os = "linux"))]
/// Searches `root` (a directory) in parallel; returns the files with hits and the number of
/// entries the ignore rules skipped.
fn search_tree(
    root: &Path,
    plan: &Plan,
    policy: IgnorePolicy,
    glob_hint: &str,
    cancel: &tool_core::CancellationToken,
    started: Instant,
) -> Result<(Vec<FileHits>, Option<u64>), ToolError> {
    let mut builder = WalkBuilder::new(root);
    policy.configure(&mut builder, glob_hint);
    let shared: Shared = Arc::default();
    let deadline = WalkDeadline::new("Grep", cancel, started, GREP_TIMEOUT);
    builder.build_parallel().run(|| {
        let plan = plan.clone();
        let mut searcher = plan.searcher();
        let mut check = deadline.worker(128);
        let mut tally = Tally {
            listed: Vec::new(),
            yielded: 0,
            hits: Vec::new(),
            shared: Arc::clone(&shared),
        };
        Box::new(move |entry| {
            if check.should_quit() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if entry.depth() > 0 {
                tally.yielded += 1;
            }
            let Some(ft) = entry.file_type() else {
                return WalkState::Continue;
            };
            if ft.is_dir() {
                tally.listed.push(entry.path().to_path_buf());
                return WalkState::Continue;
            }
            // Regular files only: a symlink is not followed out of the tree.
            if !ft.is_file() || !plan.admits(entry.path()) {
                return WalkState::Continue;
            }
            if let Some(hits) = plan.search(&mut searcher, entry.path()) {
                tally.hits.push(hits);
            }
            WalkState::Continue
        })
    });
    deadline.outcome()?;
    let mut shared = shared
        .lock()
        .map_err(|_| ToolError::fatal("internal error: Grep results lock poisoned"))?;
    let (listed, yielded, hits) = &mut *shared;
    // Listing every directory again costs a pass over the tree's metadata, so the count is
    // made when it matters most (nothing matched) or when the tree is small.
    let ignored = (hits.is_empty() || listed.len() <= COUNT_IGNORED_MAX_DIRS).then(|| {
        listed
            .iter()
            .map(|dir| count_children(dir))
            .sum::<u64>()
            .saturating_sub(*yielded)
    });
    Ok((std::mem::take(hits), ignored))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl Grep {
    fn root(input: &GrepInput, ctx: &ToolContext) -> PathBuf {
        match input.path.as_deref().map(str::trim) {
            Some(p) if !p.is_empty() => ctx.resolve_path(p),
            _ => ctx.cwd(),
        }
    }
}

#[async_trait]
impl TypedTool for Grep {
    type Input = GrepInput;
    type Output = GrepOutput;
    const META: ToolMeta = ToolMeta::new("Grep")
        .describe(DESCRIPTION)
        .hint("search file contents with regex (ripgrep)")
        .category(ToolCategory::FileSystem)
        .read_only()
        .max_result_chars(20_000)
        .read_only_hint()
        .idempotent_hint();

    async fn validate(&self, input: &GrepInput, ctx: &ToolContext) -> ValidationResult {
        if input.pattern.is_empty() {
            return ValidationResult::invalid_code("The pattern must not be empty.", 1);
        }
        let root = Grep::root(input, ctx);
        if let Err(message) = build_plan(input, &root) {
            return ValidationResult::invalid_code(message, 1);
        }
        if let Err(e) = path::check_regular_or_dir(&root) {
            return ValidationResult::invalid_code(e.to_string(), 1);
        }
        if std::fs::metadata(&root).is_err() {
            let cwd = ctx.cwd();
            let mut message = format!(
                "Path does not exist: {}. Note: your current working directory is {}.",
                root.display(),
                cwd.display()
            );
            if let Some(similar) = suggest_similar(&root, &cwd) {
                message.push_str(&format!(" Did you mean {}?", similar.display()));
            }
            return ValidationResult::invalid_code(message, 1);
        }
        ValidationResult::Valid
    }

    async fn check_permission(&self, input: &GrepInput, ctx: &ToolContext) -> PermissionDecision {
        ctx.permissions()
            .check_read_path(&Grep::root(input, ctx), ctx)
    }

    async fn call(
        &self,
        input: GrepInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<GrepOutput>, ToolError> {
        let started = Instant::now();
        let root = Grep::root(&input, ctx);
        let plan = build_plan(&input, &root).map_err(ToolError::respond)?;
        let policy = IgnorePolicy {
            include_ignored: input.include_ignored.unwrap_or(false),
        };
        let cancel = ctx.cancel_token().clone();
        let deny_ctx = ctx.clone();
        let glob_hint = input.glob.clone().unwrap_or_default();
        let search_root = root.clone();
        let single = std::fs::metadata(&root).is_ok_and(|m| m.is_file());
        let searched = tokio::task::spawn_blocking(move || {
            let (mut hits, ignored) = if single {
                let mut searcher = plan.searcher();
                (
                    plan.search(&mut searcher, &search_root)
                        .into_iter()
                        .collect(),
                    Some(0),
                )
            } else {
                search_tree(&search_root, &plan, policy, &glob_hint, &cancel, started)?
            };
            // Read-deny rules hide files, as the reference passes them to rg as exclusions.
            if deny_ctx
                .permissions()
                .has_content_rules("Read", RuleBehavior::Deny)
            {
                hits.retain(|h| {
                    !matches!(
                        deny_ctx.permissions().check_read_path(&h.path, &deny_ctx),
                        PermissionDecision::Deny { .. }
                    )
                });
            }
            newest_first(&mut hits, usize::MAX, |h| (h.mtime, h.path.as_path()));
            Ok::<_, ToolError>((hits, ignored))
        });
        let (hits, ignored) = searched.await.map_err(|e| {
            ToolError::fatal(format!("internal error: the Grep search failed: {e}"))
        })??;
        Ok(render(&input, ctx, &hits, ignored, single))
    }
}

/// Applies offset and head_limit; returns the page and the limit when it cut something.
fn paginate<T: Clone>(
    items: &[T],
    input: &GrepInput,
    default_limit: usize,
) -> (Vec<T>, Option<usize>, Option<usize>) {
    let offset = usize::try_from(input.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let limit = match input.head_limit {
        Some(0) => usize::MAX,
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        None => default_limit,
    };
    let rest = items.get(offset.min(items.len())..).unwrap_or_default();
    let page: Vec<T> = rest.iter().take(limit).cloned().collect();
    let applied_limit = (rest.len() > limit).then_some(limit);
    let applied_offset = (offset > 0).then_some(offset);
    (page, applied_limit, applied_offset)
}

fn limit_info(limit: Option<usize>, offset: Option<usize>) -> String {
    let mut parts = Vec::new();
    if let Some(l) = limit {
        parts.push(format!("limit: {l}"));
    }
    if let Some(o) = offset {
        parts.push(format!("offset: {o}"));
    }
    parts.join(", ")
}

fn render(
    input: &GrepInput,
    ctx: &ToolContext,
    hits: &[FileHits],
    ignored: Option<u64>,
    single: bool,
) -> ToolResult<GrepOutput> {
    let cwd = ctx.cwd();
    let shown = |p: &Path| path::display_path(p, &cwd);
    let head_limit = crate::host_limits::limits(ctx).grep_head_limit;
    let mode = input.output_mode.unwrap_or_default();
    let mut output = GrepOutput {
        mode,
        num_files: 0,
        filenames: Vec::new(),
        content: None,
        num_lines: None,
        num_matches: None,
        applied_limit: None,
        applied_offset: None,
        ignored_entries: ignored,
    };
    let text = match mode {
        OutputMode::FilesWithMatches => {
            let all: Vec<String> = hits.iter().map(|h| shown(&h.path)).collect();
            let (page, limit, offset) = paginate(&all, input, head_limit);
            output.applied_limit = limit;
            output.applied_offset = offset;
            output.num_files = page.len();
            output.filenames = page.clone();
            if page.is_empty() {
                "No files found".to_owned()
            } else {
                let info = limit_info(limit, offset);
                let info = if info.is_empty() {
                    String::new()
                } else {
                    format!(" {info}")
                };
                format!(
                    "Found {}{info}\n{}",
                    plural(page.len(), "file", "files"),
                    page.join("\n")
                )
            }
        }
        OutputMode::Count => {
            let all: Vec<(String, u64)> = hits.iter().map(|h| (shown(&h.path), h.count)).collect();
            let (page, limit, offset) = paginate(&all, input, head_limit);
            output.applied_limit = limit;
            output.applied_offset = offset;
            output.num_files = page.len();
            output.filenames = page.iter().map(|(p, _)| p.clone()).collect();
            let total: u64 = page.iter().map(|(_, n)| n).sum();
            output.num_matches = Some(total);
            let lines: Vec<String> = page.iter().map(|(p, n)| format!("{p}:{n}")).collect();
            output.content = Some(lines.join("\n"));
            if page.is_empty() {
                "No matches found".to_owned()
            } else {
                let info = limit_info(limit, offset);
                let info = if info.is_empty() {
                    String::new()
                } else {
                    format!(" with pagination = {info}")
                };
                format!(
                    "{}\n\nFound {} total {} across {}.{info}",
                    lines.join("\n"),
                    total,
                    if total == 1 {
                        "occurrence"
                    } else {
                        "occurrences"
                    },
                    plural(page.len(), "file", "files")
                )
            }
        }
        OutputMode::Content => {
            let numbers = input.line_numbers.unwrap_or(true);
            let has_context = input
                .context
                .or(input.context_c)
                .or(input.before)
                .or(input.after)
                .unwrap_or(0)
                > 0;
            let mut all: Vec<(usize, String)> = Vec::new();
            for (i, h) in hits.iter().enumerate() {
                if i > 0 && has_context {
                    all.push((i, "--".to_owned()));
                }
                let prefix = if single {
                    String::new()
                } else {
                    shown(&h.path)
                };
                for line in &h.lines {
                    let text = match line {
                        Line::Break => "--".to_owned(),
                        Line::Hit {
                            number,
                            is_match,
                            text,
                        } => {
                            let sep = if *is_match { ':' } else { '-' };
                            match (single, numbers) {
                                (true, true) => format!("{number}{sep}{text}"),
                                (true, false) => text.clone(),
                                (false, true) => format!("{prefix}{sep}{number}{sep}{text}"),
                                (false, false) => format!("{prefix}{sep}{text}"),
                            }
                        }
                    };
                    all.push((i, text));
                }
            }
            let (page, limit, offset) = paginate(&all, input, head_limit);
            output.applied_limit = limit;
            output.applied_offset = offset;
            let mut files: Vec<usize> = page.iter().map(|(i, _)| *i).collect();
            files.dedup();
            output.filenames = files.iter().map(|&i| shown(&hits[i].path)).collect();
            output.num_files = output.filenames.len();
            output.num_lines = Some(page.len());
            let body: Vec<&str> = page.iter().map(|(_, t)| t.as_str()).collect();
            let body = body.join("\n");
            output.content = Some(body.clone());
            let info = limit_info(limit, offset);
            let mut text = if page.is_empty() {
                "No matches found".to_owned()
            } else {
                body
            };
            if !info.is_empty() {
                text.push_str(&format!("\n\n[Showing results with pagination = {info}]"));
            }
            text
        }
    };
    let mut text = text;
    if let Some(ignored) = ignored.filter(|n| *n > 0) {
        text.push_str(&format!(
            "\n\n({} skipped by .gitignore/.ignore rules or as hidden; set include_ignored: true to search them.)",
            plural(usize::try_from(ignored).unwrap_or(usize::MAX), "path was", "paths were")
        ));
    }
    ToolResult::ok(output).with_text(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_split_like_the_reference() {
        assert_eq!(split_globs("*.rs *.toml"), ["*.rs", "*.toml"]);
        assert_eq!(split_globs("*.rs,*.md"), ["*.rs", "*.md"]);
        assert_eq!(split_globs("*.{ts,tsx}"), ["*.{ts,tsx}"]);
    }

    #[test]
    fn long_lines_are_cut() {
        let line = "é".repeat(600);
        let cut = cut_line(format!("{line}\r\n").as_bytes());
        assert!(cut.ends_with(" [... 100 more characters]"), "{cut}");
        assert_eq!(cut_line(b"short\n"), "short");
    }
}
