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
  - Files are listed newest first. Searches hidden files and respects .gitignore, .ignore and .agent-toolsignore files (like Glob); set include_ignored to true to search ignored files too. Version-control folders are never searched; binary files are skipped
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
    /// Also search files that .gitignore / .ignore rules exclude (default false)
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
    /// Files and directories the ignore rules skipped (a skipped directory counts once;
    /// version-control folders never count); always counted on
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
pub(crate) struct FileHits {
    pub(crate) path: PathBuf,
    pub(crate) mtime: SystemTime,
    lines: Vec<Line>,
    count: u64,
}

/// Collects a file's matches.
struct Collect {
    mode: OutputMode,
    lines: Vec<Line>,
    /// Lines kept at most (content mode): past it, matches are still counted and the file
    /// still read to its end, so that a file found binary later is dropped as before.
    cap: usize,
    count: u64,
    binary: bool,
}

impl Collect {
    fn push(&mut self, line: Line) {
        if self.lines.len() < self.cap {
            self.lines.push(line);
        }
    }
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
                    if self.lines.len() >= self.cap {
                        break;
                    }
                    self.push(Line::Hit {
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
        if self.mode == OutputMode::Content && self.lines.len() < self.cap {
            self.push(Line::Hit {
                number: ctx.line_number().unwrap_or(0),
                is_match: false,
                text: cut_line(ctx.bytes()),
            });
        }
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, Self::Error> {
        if self.mode == OutputMode::Content {
            self.push(Line::Break);
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
pub(crate) struct Plan {
    matcher: RegexMatcher,
    mode: OutputMode,
    before: usize,
    after: usize,
    multiline: bool,
    globs: Option<Override>,
    types: Option<Types>,
    /// Content lines kept per file at most (a page never shows more).
    line_cap: usize,
}

impl Plan {
    pub(crate) fn searcher(&self) -> Searcher {
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

    /// Whether the type filter admits a file named `name`.
    #[cfg(target_os = "linux")]
    pub(crate) fn admits_name(&self, name: &Path) -> bool {
        self.types
            .as_ref()
            .is_none_or(|types| types.matched(name, false).is_whitelist())
    }

    /// Whether the glob filter admits a file at `rel` (relative to the search root).
    #[cfg(target_os = "linux")]
    pub(crate) fn admits_rel(&self, rel: &Path) -> bool {
        self.globs
            .as_ref()
            .is_none_or(|globs| !globs.matched(rel, false).is_ignore())
    }

    /// What one file adds to the page: one entry in files and count modes; its lines in
    /// content mode, and a `--` before it when context lines separate files and `shown`
    /// files come before it.
    pub(crate) fn results(&self, hits: &FileHits, shown: usize, separated: bool) -> usize {
        match self.mode {
            OutputMode::FilesWithMatches | OutputMode::Count => 1,
            OutputMode::Content => hits.lines.len() + usize::from(separated && shown > 0),
        }
    }

    fn search(&self, searcher: &mut Searcher, path: &Path) -> Option<FileHits> {
        let file = std::fs::File::open(path).ok()?;
        self.search_file(searcher, &file, None, || path.to_path_buf())
    }

    /// Searches an open file; `path` names it when it has hits, and `mtime` is its
    /// modification time when the caller knows it (the file is asked otherwise).
    pub(crate) fn search_file(
        &self,
        searcher: &mut Searcher,
        file: &std::fs::File,
        mtime: Option<SystemTime>,
        path: impl FnOnce() -> PathBuf,
    ) -> Option<FileHits> {
        let mut sink = Collect {
            mode: self.mode,
            lines: Vec::new(),
            cap: self.line_cap,
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
        let mtime = mtime.unwrap_or_else(|| {
            file.metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH)
        });
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
    // As ripgrep builds its matcher: always in multi-line mode, so `^` and `$` match at line
    // boundaries inside the buffer the searcher hands over (without it, a line-anchored
    // pattern loses the fast path and is searched line by line); a line search also names
    // the line terminator, which the matcher then never matches.
    let mut mb = RegexMatcherBuilder::new();
    mb.case_insensitive(input.case_insensitive.unwrap_or(false))
        .multi_line(true);
    if multiline {
        mb.dot_matches_new_line(true);
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
        line_cap: usize::MAX,
    })
}

/// Searches `root` (a directory) in parallel; returns the files with hits and the number of
/// entries the ignore rules skipped (counted during the walk).
#[cfg(target_os = "linux")]
fn search_tree(
    root: &Path,
    plan: &Plan,
    policy: IgnorePolicy,
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
            if !self.plan.admits_name(entry.name()) || !self.plan.admits_rel(entry.rel_path()) {
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
                .search_file(&mut self.searcher, &file, None, || entry.path())
            {
                self.hits.push(hits);
            }
        }
    }

    let deadline = WalkDeadline::new("Grep", cancel, started, GREP_TIMEOUT);
    let (threads, stats) = walk(root, policy.walk_options(), &deadline, 128, || Search {
        plan,
        searcher: plan.searcher(),
        hits: Vec::new(),
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
type WalkTotals = Arc<Mutex<(Vec<PathBuf>, u64, Vec<FileHits>)>>;

#[cfg(not(target_os = "linux"))]
/// Per-thread tallies for the count of ignored entries, merged when the worker ends.
///
/// Skipped entries = every listed directory's children − the entries the walk yielded
/// below the root; summing over the whole tree needs one counter, not a map per directory.
struct Tally {
    listed: Vec<PathBuf>,
    yielded: u64,
    hits: Vec<FileHits>,
    shared: WalkTotals,
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
    cancel: &tool_core::CancellationToken,
    started: Instant,
) -> Result<(Vec<FileHits>, Option<u64>), ToolError> {
    let mut builder = WalkBuilder::new(root);
    policy.configure(&mut builder);
    let shared: WalkTotals = Arc::default();
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
        let mut plan = build_plan(&input, &root).map_err(ToolError::respond)?;
        let policy = IgnorePolicy {
            include_ignored: input.include_ignored.unwrap_or(false),
        };
        let cancel = ctx.cancel_token().clone();
        let deny_ctx = ctx.clone();
        let search_root = root.clone();
        let single = std::fs::metadata(&root).is_ok_and(|m| m.is_file());
        let need = page_need(&input, crate::host_limits::limits(ctx).grep_head_limit);
        if let Some(need) = need {
            plan.line_cap = need;
        }
        let separated = separates_files(&input);
        // The session's search index answers when it covers the root (include_ignored
        // searches what the index leaves out: the scan answers it).
        #[cfg(target_os = "linux")]
        let index = crate::index::service(ctx)
            .filter(|_| !single && !policy.include_ignored)
            .map(|service| {
                let options = search_index::PatternOptions {
                    case_insensitive: input.case_insensitive.unwrap_or(false),
                    multiline: input.multiline.unwrap_or(false),
                };
                (service, search_index::query_for(&input.pattern, options))
            });
        let searched = tokio::task::spawn_blocking(move || {
            // Read-deny rules hide files, as the reference passes them to rg as exclusions.
            let any_deny = deny_ctx
                .permissions()
                .has_content_rules("Read", RuleBehavior::Deny);
            let keep = |p: &Path| {
                !any_deny
                    || !matches!(
                        deny_ctx.permissions().check_read_path(p, &deny_ctx),
                        PermissionDecision::Deny { .. }
                    )
            };
            if single {
                let mut searcher = plan.searcher();
                let hits = plan
                    .search(&mut searcher, &search_root)
                    .filter(|h| keep(&h.path))
                    .into_iter()
                    .collect();
                return Ok((hits, Some(0)));
            }
            #[cfg(target_os = "linux")]
            if let Some((service, query)) = &index
                && let Some(view) = service.view(&search_root)
            {
                let deadline = WalkDeadline::new("Grep", &cancel, started, GREP_TIMEOUT);
                let results = |h: &FileHits, shown: usize| plan.results(h, shown, separated);
                let mut paged = Paged::new(need);
                // Candidates come newest first; they are searched in batches that grow, so
                // that a page filled by the first files reads few of them.
                let mut batch: Vec<Listed> = Vec::new();
                let mut size = 64;
                let ignored = view.grep_ordered(query, &mut |rel, mtime| {
                    if !admits(&plan, rel) {
                        return true;
                    }
                    batch.push((rel.to_vec(), mtime));
                    if batch.len() < size {
                        return true;
                    }
                    size = (size * 4).min(16_384);
                    paged.search(&search_root, &mut batch, &plan, &keep, &results, &deadline)
                });
                if let Some(ignored) = ignored {
                    paged.search(&search_root, &mut batch, &plan, &keep, &results, &deadline);
                    deadline.outcome()?;
                    view.answered();
                    return Ok((paged.hits, Some(ignored)));
                }
            }
            #[cfg(target_os = "linux")]
            if need.is_some() {
                let deadline = WalkDeadline::new("Grep", &cancel, started, GREP_TIMEOUT);
                let (files, ignored) = list_tree(&search_root, &plan, policy, &deadline);
                deadline.outcome()?;
                let results = |h: &FileHits, shown: usize| plan.results(h, shown, separated);
                let (hits, _) = search_in_order(
                    &search_root,
                    &files,
                    &plan,
                    need,
                    &keep,
                    &results,
                    &deadline,
                    (0, 0),
                );
                deadline.outcome()?;
                return Ok((hits, Some(ignored)));
            }
            let (mut hits, ignored) = search_tree(&search_root, &plan, policy, &cancel, started)?;
            hits.retain(|h| keep(&h.path));
            newest_first(&mut hits, usize::MAX, |h| (h.mtime, h.path.as_path()));
            Ok::<_, ToolError>((hits, ignored))
        });
        let (hits, ignored) = searched.await.map_err(|e| {
            ToolError::fatal(format!("internal error: the Grep search failed: {e}"))
        })??;
        Ok(render(&input, ctx, &hits, ignored, single))
    }
}

/// Results a page needs (offset, then head_limit, plus one to know whether more follow);
/// `None` when head_limit is 0 (unlimited).
fn page_need(input: &GrepInput, default_limit: usize) -> Option<usize> {
    let offset = usize::try_from(input.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let limit = match input.head_limit {
        Some(0) => return None,
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        None => default_limit,
    };
    Some(offset.saturating_add(limit).saturating_add(1))
}

/// Whether content mode puts a `--` line between files: the first of `context`, `-C`,
/// `-B`, `-A` the call gives is above 0.
fn separates_files(input: &GrepInput) -> bool {
    input
        .context
        .or(input.context_c)
        .or(input.before)
        .or(input.after)
        .unwrap_or(0)
        > 0
}

/// Whether the type and glob filters admit the file at `rel` (relative to the root).
#[cfg(target_os = "linux")]
fn admits(plan: &Plan, rel: &[u8]) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
    plan.admits_name(Path::new(std::ffi::OsStr::from_bytes(name)))
        && plan.admits_rel(Path::new(std::ffi::OsStr::from_bytes(rel)))
}

/// A page filled from batches of files searched in order.
#[cfg(target_os = "linux")]
struct Paged {
    need: Option<usize>,
    hits: Vec<FileHits>,
    results: usize,
}

#[cfg(target_os = "linux")]
impl Paged {
    fn new(need: Option<usize>) -> Self {
        Paged {
            need,
            hits: Vec::new(),
            results: 0,
        }
    }

    /// Searches `batch` (emptied) after what came before; false once the page is full.
    fn search(
        &mut self,
        root: &Path,
        batch: &mut Vec<Listed>,
        plan: &Plan,
        keep: &(dyn Fn(&Path) -> bool + Sync),
        results: &(dyn Fn(&FileHits, usize) -> usize + Sync),
        deadline: &WalkDeadline,
    ) -> bool {
        if self.need.is_some_and(|need| self.results >= need) {
            batch.clear();
            return false;
        }
        let (hits, results) = search_in_order(
            root,
            batch,
            plan,
            self.need,
            keep,
            results,
            deadline,
            (self.hits.len(), self.results),
        );
        batch.clear();
        self.hits.extend(hits);
        self.results = results;
        self.need.is_none_or(|need| self.results < need) && deadline.outcome().is_ok()
    }
}

/// Lists the files under `root` that Grep searches (regular files the type and glob
/// filters admit, under the ignore policy) with their modification times, newest first,
/// then by path; and the number of entries the ignore rules skipped.
#[cfg(target_os = "linux")]
fn list_tree(
    root: &Path,
    plan: &Plan,
    policy: IgnorePolicy,
    deadline: &WalkDeadline,
) -> (Vec<Listed>, u64) {
    use std::os::unix::ffi::OsStrExt;

    use crate::walk::{FileEntry, Kind, Visitor, mtime_at, walk};

    struct Lister<'a> {
        plan: &'a Plan,
        files: Vec<Listed>,
    }

    impl Visitor for Lister<'_> {
        fn visit(&mut self, entry: &mut FileEntry<'_>) {
            if entry.kind() != Kind::File || !self.plan.admits_name(entry.name()) {
                return;
            }
            if !self.plan.admits_rel(entry.rel_path()) {
                return;
            }
            let mtime = mtime_at(entry.dir(), entry.name(), false)
                .map_or(SystemTime::UNIX_EPOCH, |(t, _)| t);
            let rel = entry.rel_path().as_os_str().as_bytes().to_vec();
            self.files.push((rel, mtime));
        }
    }

    let (threads, stats) = walk(root, policy.walk_options(), deadline, 128, || Lister {
        plan,
        files: Vec::new(),
    });
    let mut files: Vec<Listed> = threads.into_iter().flat_map(|t| t.files).collect();
    files.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    (files, stats.skipped())
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

/// Content mode's lines, each with the index of its file in `hits`: `path:N:text` (or
/// without the path for a single file, without numbers when `numbers` is off), context
/// lines with `-`, `--` between files when context is shown and between a file's groups.
fn content_lines(
    hits: &[FileHits],
    single: bool,
    numbers: bool,
    has_context: bool,
    shown: &dyn Fn(&Path) -> String,
) -> Vec<(usize, String)> {
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
    all
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
                    tool_core::plural(page.len(), "file", "files"),
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
                    tool_core::plural(page.len(), "file", "files")
                )
            }
        }
        OutputMode::Content => {
            let numbers = input.line_numbers.unwrap_or(true);
            let all = content_lines(hits, single, numbers, separates_files(input), &shown);
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
            "\n\n({} skipped by .gitignore/.ignore rules; set include_ignored: true to search them.)",
            tool_core::plural(usize::try_from(ignored).unwrap_or(usize::MAX), "path was", "paths were")
        ));
    }
    ToolResult::ok(output).with_text(text)
}

// ---- The search of a known list of files, in the order results are shown (Linux) ----
//
// The files come with their modification times, from a walk that read only metadata or
// from the search index's kept list. Threads take the files in order; results are merged
// in that order as they complete, and once the files merged so far hold `need` results
// (the page after the offset, plus one to know whether there is more) the threads stop: at
// most one file per thread is searched beyond what the page needs, and only the hits of
// the files merged before the stop are kept.

/// One file to search: its path relative to the root, and its modification time.
#[cfg(target_os = "linux")]
pub(crate) type Listed = (Vec<u8>, SystemTime);

/// What the merge keeps: hits in order, and how many results they hold.
#[cfg(target_os = "linux")]
struct Merged {
    /// Index of the next file to merge.
    next: usize,
    /// Results of files searched ahead of `next`.
    pending: std::collections::HashMap<usize, Option<FileHits>>,
    hits: Vec<FileHits>,
    results: usize,
}

/// Searches `files` (relative to `root`, already in the order results are shown) with
/// `plan` on up to `threads` threads; returns the hits of the files in that order, cut
/// after the file whose results reach `need` (all of them when `need` is `None`), and the
/// results counted. `keep` says whether a file with hits may be shown (read-deny rules);
/// `results` counts what one file adds to the page given how many files came before it;
/// `before` is how many files and results earlier batches already hold.
#[cfg(target_os = "linux")]
#[allow(clippy::too_many_arguments)]
fn search_in_order(
    root: &Path,
    files: &[Listed],
    plan: &Plan,
    need: Option<usize>,
    keep: &(dyn Fn(&Path) -> bool + Sync),
    results: &(dyn Fn(&FileHits, usize) -> usize + Sync),
    deadline: &WalkDeadline,
    before: (usize, usize),
) -> (Vec<FileHits>, usize) {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use rustix::fs::{Mode, OFlags};

    let Ok(dir) = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return (Vec::new(), before.1);
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get().min(12))
        .min(files.len().max(1));
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let merged = std::sync::Mutex::new(Merged {
        next: 0,
        pending: std::collections::HashMap::new(),
        hits: Vec::new(),
        results: before.1,
    });
    let work = || {
        let mut searcher = plan.searcher();
        let mut check = deadline.worker(16);
        loop {
            if stop.load(Ordering::Relaxed) || check.should_quit() {
                stop.store(true, Ordering::Relaxed);
                return;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some((rel, mtime)) = files.get(i) else {
                return;
            };
            // The index's time of the file is the one results are ordered by.
            let found = crate::beneath::open_beneath(&dir, rel).and_then(|fd| {
                let file = std::fs::File::from(fd);
                plan.search_file(&mut searcher, &file, Some(*mtime), || {
                    root.join(OsStr::from_bytes(rel))
                })
            });
            let Ok(mut m) = merged.lock() else {
                stop.store(true, Ordering::Relaxed);
                return;
            };
            m.pending.insert(i, found);
            loop {
                let at = m.next;
                let Some(found) = m.pending.remove(&at) else {
                    break;
                };
                m.next += 1;
                let Some(hits) = found else { continue };
                if !keep(&hits.path) {
                    continue;
                }
                let shown_before = before.0 + m.hits.len();
                m.results += results(&hits, shown_before);
                m.hits.push(hits);
                if need.is_some_and(|need| m.results >= need) {
                    stop.store(true, Ordering::Relaxed);
                    m.pending.clear();
                    break;
                }
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
        }
        work();
    });
    merged
        .into_inner()
        .map(|m| (m.hits, m.results))
        .unwrap_or((Vec::new(), before.1))
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
