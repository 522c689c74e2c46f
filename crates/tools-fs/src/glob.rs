//! Glob: find files by name pattern, newest first, with one ignore policy shared with Grep.

use std::path::{Path, PathBuf};
#[cfg(not(target_os = "linux"))]
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
#[cfg(target_os = "linux")]
use ignore::overrides::Override;
#[cfg(not(target_os = "linux"))]
use ignore::{WalkBuilder, WalkState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    PermissionDecision, RuleBehavior, ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult,
    TypedTool, ValidationResult, path,
};

use crate::ignore_policy::{IgnorePolicy, WalkDeadline, newest_first, suggest_similar};

/// At most this many paths are returned (the reference's `globLimits.maxResults`).
pub const MAX_RESULTS: usize = crate::host_limits::DEFAULT_GLOB_MAX_RESULTS;
/// The walk gives up after this long (the reference's ripgrep timeout).
pub const TIMEOUT: Duration = Duration::from_secs(20);

const DESCRIPTION: &str = "Fast file pattern matching tool that works with any codebase size.
- Supports glob patterns like \"**/*.js\" or \"src/**/*.ts\"; a pattern without a slash (\"*.rs\") matches files at any depth
- Returns matching file paths sorted by modification time, newest first, at most 100
- Lists hidden files and respects .gitignore, .ignore and .agent-toolsignore files; set include_ignored to true to also list ignored files (version-control folders such as .git are always skipped)
- Use this tool when you need to find files by name patterns
- When you are doing an open ended search that may require multiple rounds of globbing and grepping, use the Agent tool instead
- You can call multiple tools in a single response. It is always better to speculatively perform multiple searches in parallel if they are potentially useful.";

/// Input of Glob.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobInput {
    /// The glob pattern to match files against
    #[schemars(length(max = tool_core::MAX_PATTERN_CHARS))]
    pub pattern: String,
    /// The directory to search in. If not specified, the current working directory will be
    /// used. IMPORTANT: Omit this field to use the default directory. DO NOT enter
    /// "undefined" or "null" - simply omit it for the default behavior. Must be a valid
    /// directory path if provided.
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    pub path: Option<String>,
    /// Also list files that .gitignore / .ignore rules exclude (default false)
    #[serde(default)]
    pub include_ignored: Option<bool>,
}

/// Output of Glob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GlobOutput {
    /// How long the search took
    pub duration_ms: u64,
    /// How many paths are listed
    pub num_files: usize,
    /// The paths, relative to the working directory when inside it, newest first
    pub filenames: Vec<String>,
    /// Whether more files matched than are listed
    pub truncated: bool,
}

/// The Glob tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Glob;

/// Splits an absolute pattern into its static base directory and the rest.
fn split_absolute(pattern: &str) -> Option<(PathBuf, String)> {
    if !pattern.starts_with('/') {
        return None;
    }
    let first_meta = pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len());
    let base_end = pattern[..first_meta].rfind('/').unwrap_or(0);
    let base = if base_end == 0 {
        "/"
    } else {
        &pattern[..base_end]
    };
    let rest = &pattern[base_end + 1..];
    // Anchored to the base: `/abs/src/*.rs` must not match `/abs/src/x/b.rs`, as a relative
    // pattern without a slash would.
    let rest = if rest.is_empty() {
        "/**".to_owned()
    } else {
        format!("/{rest}")
    };
    Some((PathBuf::from(base), rest))
}

impl Glob {
    fn search_root(input: &GlobInput, ctx: &ToolContext) -> (PathBuf, String) {
        let base = match input.path.as_deref().map(str::trim) {
            Some(p) if !p.is_empty() => ctx.resolve_path(p),
            _ => ctx.cwd(),
        };
        match split_absolute(&input.pattern) {
            Some((abs_base, rest)) => (path::normalize(&abs_base), rest),
            None => (base, input.pattern.clone()),
        }
    }
}

#[async_trait]
impl TypedTool for Glob {
    type Input = GlobInput;
    type Output = GlobOutput;
    const META: ToolMeta = ToolMeta::new("Glob")
        .describe(DESCRIPTION)
        .hint("find files by name pattern or wildcard")
        .category(ToolCategory::FileSystem)
        .read_only()
        .read_only_hint()
        .idempotent_hint();

    async fn validate(&self, input: &GlobInput, ctx: &ToolContext) -> ValidationResult {
        if input.pattern.trim().is_empty() {
            return ValidationResult::invalid_code("The pattern must not be empty.", 1);
        }
        if let Err(e) =
            IgnorePolicy::glob_override(Path::new("/"), &Glob::search_root(input, ctx).1)
        {
            return ValidationResult::invalid_code(
                format!("Invalid glob pattern \"{}\": {e}", input.pattern),
                1,
            );
        }
        let (root, _) = Glob::search_root(input, ctx);
        match std::fs::metadata(&root) {
            Ok(meta) if meta.is_dir() => ValidationResult::Valid,
            Ok(_) => ValidationResult::invalid_code(
                format!("Path is not a directory: {}", root.display()),
                2,
            ),
            Err(_) => {
                let cwd = ctx.cwd();
                let mut message = format!(
                    "Directory does not exist: {}. Note: your current working directory is {}.",
                    root.display(),
                    cwd.display()
                );
                if let Some(similar) = suggest_similar(&root, &cwd) {
                    message.push_str(&format!(" Did you mean {}?", similar.display()));
                }
                ValidationResult::invalid_code(message, 1)
            }
        }
    }

    async fn check_permission(&self, input: &GlobInput, ctx: &ToolContext) -> PermissionDecision {
        let (root, _) = Glob::search_root(input, ctx);
        ctx.permissions().check_read_path(&root, ctx)
    }

    async fn call(
        &self,
        input: GlobInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<GlobOutput>, ToolError> {
        let started = Instant::now();
        let (root, pattern) = Glob::search_root(&input, ctx);
        let policy = IgnorePolicy {
            include_ignored: input.include_ignored.unwrap_or(false),
        };
        let cwd = ctx.cwd();
        let cancel = ctx.cancel_token().clone();
        let max = crate::host_limits::limits(ctx).glob_max_results;
        let deny_ctx = ctx.clone();
        #[cfg(target_os = "linux")]
        let index = crate::index::service(ctx).filter(|_| !policy.include_ignored);
        let walk = tokio::task::spawn_blocking(move || {
            // Read-deny rules hide files, as the reference passes them to rg as exclusions.
            let any_deny = deny_ctx
                .permissions()
                .has_content_rules("Read", RuleBehavior::Deny);
            let denied = |p: &Path| {
                matches!(
                    deny_ctx.permissions().check_read_path(p, &deny_ctx),
                    PermissionDecision::Deny { .. }
                )
            };
            let denied: Option<&Denied> = if any_deny { Some(&denied) } else { None };
            // Newest first, then by name: the reference sorted oldest first while its prompt
            // promised "sorted by modification time"; we do what the prompt says.
            #[cfg(target_os = "linux")]
            if let Some(view) = index.as_ref().and_then(|s| s.view(&root))
                && let Some(found) = listed_matches(&root, &pattern, &view, denied, max)?
            {
                view.answered();
                return Ok(found);
            }
            walk_matches(&root, &pattern, policy, &cancel, started, denied, max)
        });
        let (found, total) = walk.await.map_err(|e| {
            ToolError::fatal(format!("internal error: the Glob walk failed: {e}"))
        })??;
        let truncated = total > max;
        let filenames: Vec<String> = found
            .iter()
            .take(max)
            .map(|(p, _)| path::display_path(p, &cwd))
            .collect();
        let text = if filenames.is_empty() {
            "No files found".to_owned()
        } else if truncated {
            format!(
                "{}\n(Results are truncated. Consider using a more specific path or pattern.)",
                filenames.join("\n")
            )
        } else {
            filenames.join("\n")
        };
        let output = GlobOutput {
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            num_files: filenames.len(),
            filenames,
            truncated,
        };
        Ok(ToolResult::ok(output).with_text(text))
    }
}

/// Whether a read-deny rule hides a path.
type Denied<'a> = dyn Fn(&Path) -> bool + Sync + 'a;

/// The newest matches (path and time) and how many matched.
type Matches = (Vec<(PathBuf, SystemTime)>, usize);

/// Walks `root` in parallel; returns the newest `max` files matching `pattern`
/// and not `denied`, newest first, with their mtimes, and how many there are in all.
#[cfg(target_os = "linux")]
fn walk_matches(
    root: &Path,
    pattern: &str,
    policy: IgnorePolicy,
    cancel: &tool_core::CancellationToken,
    started: Instant,
    denied: Option<&Denied<'_>>,
    max: usize,
) -> Result<Matches, ToolError> {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    use crate::walk::{FileEntry, Kind, Visitor, mtime_at, walk};

    /// One thread's matches: how many, and the newest [`MAX_RESULTS`] of them (paths
    /// relative to the root), kept without a path for every match.
    struct Matches<'a> {
        overrides: &'a Override,
        by_name: bool,
        denied: Option<&'a Denied<'a>>,
        max: usize,
        total: usize,
        best: Vec<(Vec<u8>, SystemTime)>,
        /// The last kept of `best` after it was last cut: anything older is never listed.
        worst: Option<(SystemTime, Vec<u8>)>,
    }

    /// Newest first, then by path.
    fn order(a: &(Vec<u8>, SystemTime), b: &(Vec<u8>, SystemTime)) -> std::cmp::Ordering {
        b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0))
    }

    impl Matches<'_> {
        fn keep(&mut self, entry: &mut FileEntry<'_>, mtime: SystemTime) {
            if let Some(denied) = self.denied
                && denied(&entry.path())
            {
                return;
            }
            self.total += 1;
            let rel = entry.rel_path().as_os_str().as_bytes();
            if let Some((time, path)) = &self.worst
                && (mtime < *time || (mtime == *time && rel > path.as_slice()))
            {
                return;
            }
            self.best.push((rel.to_vec(), mtime));
            if self.best.len() >= 2 * self.max {
                self.best.select_nth_unstable_by(self.max - 1, order);
                self.best.truncate(self.max);
                self.worst = self.best.get(self.max - 1).map(|(p, t)| (*t, p.clone()));
            }
        }
    }

    impl Visitor for Matches<'_> {
        fn visit(&mut self, entry: &mut FileEntry<'_>) {
            // Regular files, and symlinks whose target is a regular file; never directories
            // or links to them.
            if entry.kind() == Kind::Other {
                return;
            }
            let matched = if self.by_name {
                self.overrides.matched(entry.name(), false)
            } else {
                self.overrides.matched(entry.rel_path(), false)
            };
            if !matched.is_whitelist() {
                return;
            }
            // The mtime (of the target, for a symlink) relative to the open directory.
            let Some((mtime, ty)) = mtime_at(entry.dir(), entry.name(), true) else {
                if entry.kind() == Kind::File {
                    self.keep(entry, SystemTime::UNIX_EPOCH);
                }
                return;
            };
            if entry.kind() == Kind::Symlink && ty != rustix::fs::FileType::RegularFile {
                return;
            }
            self.keep(entry, mtime);
        }
    }

    // Matched with paths relative to the root: a root of "." strips nothing.
    let overrides = IgnorePolicy::glob_override(Path::new("."), pattern)
        .map_err(|e| ToolError::respond(format!("Invalid glob pattern \"{pattern}\": {e}")))?;
    // The pattern is matched here, not given to the walker as an override: overrides take
    // precedence over ignore rules (as `rg -g` does), which would list ignored and hidden
    // files whenever their names match.
    let deadline = WalkDeadline::new("Glob", cancel, started, TIMEOUT);
    let (threads, _) = walk(root, policy.walk_options(), &deadline, 256, || Matches {
        overrides: &overrides,
        by_name: matches_names_only(pattern),
        denied,
        max,
        total: 0,
        best: Vec::new(),
        worst: None,
    });
    deadline.outcome()?;
    let mut total = 0;
    let mut found = Vec::new();
    for t in threads {
        total += t.total;
        found.extend(
            t.best
                .into_iter()
                .map(|(rel, mtime)| (root.join(OsStr::from_bytes(&rel)), mtime)),
        );
    }
    newest_first(&mut found, max, |(p, t)| (*t, p.as_path()));
    Ok((found, total))
}

/// The newest `max` files of the index's kept list under `root` that match `pattern` and
/// not `denied`, as [`walk_matches`] finds them (regular files with their times, symbolic
/// links whose target is a regular file with the target's time), and how many matched, counted
/// up to `max + 1` (all that "truncated" needs): the files come newest first, so the search
/// stops there.
#[cfg(target_os = "linux")]
fn listed_matches(
    root: &Path,
    pattern: &str,
    view: &crate::index::View,
    denied: Option<&Denied<'_>>,
    max: usize,
) -> Result<Option<Matches>, ToolError> {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    use crate::index::DocKind;

    let overrides = IgnorePolicy::glob_override(Path::new("."), pattern)
        .map_err(|e| ToolError::respond(format!("Invalid glob pattern \"{pattern}\": {e}")))?;
    let by_name = matches_names_only(pattern);
    let matches = |rel: &[u8]| {
        let matched = if by_name {
            let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
            overrides.matched(Path::new(OsStr::from_bytes(name)), false)
        } else {
            overrides.matched(Path::new(OsStr::from_bytes(rel)), false)
        };
        matched.is_whitelist()
    };
    // Links first (a link's target may change without the index hearing of it: its time is
    // read now), then the files in order, merged.
    let mut links: Vec<(PathBuf, SystemTime)> = Vec::new();
    let mut files: Vec<(PathBuf, SystemTime)> = Vec::new();
    let answered = view.glob_ordered(&mut |rel, mtime, kind| {
        if !matches(rel) {
            return true;
        }
        let path = root.join(OsStr::from_bytes(rel));
        match kind {
            DocKind::Symlink => {
                if let Some((t, rustix::fs::FileType::RegularFile)) =
                    crate::walk::mtime_at(rustix::fs::CWD, &path, true)
                    && !denied.is_some_and(|denied| denied(&path))
                {
                    links.push((path, t));
                }
                true
            }
            DocKind::File => {
                if denied.is_some_and(|denied| denied(&path)) {
                    return true;
                }
                files.push((path, mtime));
                // Enough files for the page, plus one to know there is more, plus as many
                // as links could push out of it.
                files.len() <= max + links.len()
            }
        }
    });
    if answered.is_none() {
        return Ok(None);
    }
    let total = files.len() + links.len();
    let mut found = files;
    found.extend(links);
    newest_first(&mut found, max, |(p, t)| (*t, p.as_path()));
    Ok(Some((found, total)))
}

/// Whether `pattern` (a gitignore-style glob) decides by the file name alone: it has no
/// slash, or only a leading `**/`, so it matches at any depth exactly when the name does.
#[cfg(target_os = "linux")]
fn matches_names_only(pattern: &str) -> bool {
    let rest = pattern.strip_prefix("**/").unwrap_or(pattern);
    !rest.contains('/') && !rest.starts_with('!') && !rest.starts_with('\\')
}

/// One worker's matches, merged into the shared list when the worker ends.
#[cfg(not(target_os = "linux"))]
struct Local {
    items: Vec<(PathBuf, SystemTime)>,
    shared: Arc<Mutex<Vec<(PathBuf, SystemTime)>>>,
}

#[cfg(not(target_os = "linux"))]
impl Drop for Local {
    fn drop(&mut self) {
        if let Ok(mut all) = self.shared.lock() {
            all.append(&mut self.items);
        }
    }
}

/// Walks `root` in parallel; returns the newest `max` files matching `pattern`
/// and not `denied`, newest first, with their mtimes, and how many there are in all.
#[cfg(not(target_os = "linux"))]
fn walk_matches(
    root: &Path,
    pattern: &str,
    policy: IgnorePolicy,
    cancel: &tool_core::CancellationToken,
    started: Instant,
    denied: Option<&Denied<'_>>,
    max: usize,
) -> Result<Matches, ToolError> {
    let overrides = IgnorePolicy::glob_override(root, pattern)
        .map_err(|e| ToolError::respond(format!("Invalid glob pattern \"{pattern}\": {e}")))?;
    let mut builder = WalkBuilder::new(root);
    policy.configure(&mut builder);
    // The pattern is matched here, not given to the walker as an override: overrides take
    // precedence over ignore rules (as `rg -g` does), which would list ignored and hidden
    // files whenever their names match.
    let found: Arc<Mutex<Vec<(PathBuf, SystemTime)>>> = Arc::default();
    let deadline = WalkDeadline::new("Glob", cancel, started, TIMEOUT);
    builder.build_parallel().run(|| {
        // Each worker collects alone and hands its list over when it ends.
        let mut local = Local {
            items: Vec::new(),
            shared: Arc::clone(&found),
        };
        let mut check = deadline.worker(256);
        let overrides = overrides.clone();
        Box::new(move |entry| {
            if check.should_quit() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            // Regular files, and symlinks whose target is a regular file; never directories
            // or links to them.
            let is_file = entry.file_type().is_some_and(|t| {
                t.is_file()
                    || (t.is_symlink()
                        && std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file()))
            });
            if is_file && overrides.matched(entry.path(), false).is_whitelist() {
                let mtime = std::fs::metadata(entry.path())
                    .and_then(|m| m.modified())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                local.items.push((entry.into_path(), mtime));
            }
            WalkState::Continue
        })
    });
    deadline.outcome()?;
    let mut found = std::mem::take(
        &mut *found
            .lock()
            .map_err(|_| ToolError::fatal("internal error: Glob results lock poisoned"))?,
    );
    if let Some(denied) = denied {
        found.retain(|(p, _)| !denied(p));
    }
    let total = found.len();
    newest_first(&mut found, max, |(p, t)| (*t, p.as_path()));
    Ok((found, total))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn patterns_decided_by_the_name() {
        for pattern in [
            "*.rs",
            "**/*.c",
            "Cargo.toml",
            "**/*.{rs,toml}",
            "a[0-9].tx?",
            "**",
        ] {
            assert!(matches_names_only(pattern), "{pattern}");
        }
        for pattern in ["src/*.rs", "/a.rs", "**/src/*.rs", "!*.rs", "{a,b/c}", "x/"] {
            assert!(!matches_names_only(pattern), "{pattern}");
        }
    }

    #[test]
    fn name_and_relative_path_agree_for_name_patterns() {
        // What the walker relies on: for these patterns the override says the same of a
        // file's name as of its path relative to the root.
        let paths = [
            "a.rs",
            "src/b.rs",
            "src/x/Cargo.toml",
            "a1.txt",
            "d/a1.txt",
            "d/e.c",
        ];
        for pattern in [
            "*.rs",
            "**/*.c",
            "Cargo.toml",
            "**/*.{rs,toml}",
            "a[0-9].tx?",
            "**",
        ] {
            let o = IgnorePolicy::glob_override(Path::new("."), pattern).unwrap_or_else(|e| {
                panic!("{pattern}: {e}");
            });
            for path in paths {
                let name = Path::new(path)
                    .file_name()
                    .map(Path::new)
                    .unwrap_or(Path::new(""));
                assert_eq!(
                    o.matched(name, false).is_whitelist(),
                    o.matched(Path::new(path), false).is_whitelist(),
                    "{pattern} {path}"
                );
            }
        }
    }
}
