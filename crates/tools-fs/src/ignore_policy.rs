//! The one ignore policy Glob and Grep share, and "did you mean" suggestions for missing
//! paths.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

#[cfg(any(not(target_os = "linux"), test))]
use ignore::WalkBuilder;
use ignore::overrides::{Override, OverrideBuilder};
use tool_core::{CancellationToken, ToolError};

/// Version-control folders that are never searched.
pub const VCS_DIRS: &[&str] = &[".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

/// Which files a walk sees.
///
/// By default: `.gitignore` (in a git repository), `.ignore` and `.agent-toolsignore` rules
/// are respected, and hidden files are listed (ripgrep's `--hidden`, as the reference's
/// Grep and Glob run it), so `.github/workflows/*.yml`, `.env.example` or
/// `.cargo/config.toml` are found. `include_ignored` also lists what the ignore rules
/// exclude. Version-control folders ([`VCS_DIRS`]) are never listed, whatever their type
/// (the reference passes `--glob '!.git'`). The reference's Glob ignored `.gitignore` while
/// its Grep respected it; one policy for both is the fix its users asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IgnorePolicy {
    /// Also list what the ignore files exclude
    pub include_ignored: bool,
}

impl IgnorePolicy {
    /// Applies the policy to `ignore`'s walker. The crate's own walker (Linux) applies the
    /// same policy; its tests compare the two.
    #[cfg(any(not(target_os = "linux"), test))]
    pub fn configure(self, builder: &mut WalkBuilder) {
        if self.include_ignored {
            builder.standard_filters(false);
        } else {
            builder.standard_filters(true);
            builder.add_custom_ignore_filename(".agent-toolsignore");
        }
        builder.hidden(false);
        builder.filter_entry(|entry| {
            !entry
                .file_name()
                .to_str()
                .is_some_and(|n| VCS_DIRS.contains(&n))
        });
    }

    /// The options of the crate's own walker that apply this policy as [`configure`]
    /// does.
    ///
    /// [`configure`]: IgnorePolicy::configure
    #[cfg(target_os = "linux")]
    pub(crate) fn walk_options(self) -> WalkOptions {
        WalkOptions {
            ignore_files: !self.include_ignored,
            recurse: true,
        }
    }

    /// The whitelist override for a glob pattern, with ripgrep's `--glob` semantics: a
    /// pattern without a slash matches at any depth.
    pub fn glob_override(root: &Path, pattern: &str) -> Result<Override, ignore::Error> {
        let mut builder = OverrideBuilder::new(root);
        builder.add(pattern)?;
        builder.build()
    }
}

/// Which entries the crate's own walker (Linux) keeps: [`IgnorePolicy`] in its terms.
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WalkOptions {
    /// Apply ignore files (`.agent-toolsignore`, `.ignore`, git's).
    pub(crate) ignore_files: bool,
    /// Enter subdirectories (otherwise only the root's entries are judged).
    pub(crate) recurse: bool,
}

/// Stops a parallel walk when the call is cancelled or runs past its time limit. Each
/// worker takes a [`WalkCheck`]; after the walk, [`WalkDeadline::outcome`] says why it
/// stopped early, if it did.
#[derive(Debug, Clone)]
pub(crate) struct WalkDeadline {
    tool: &'static str,
    cancel: CancellationToken,
    started: Instant,
    limit: Duration,
    timed_out: Arc<AtomicBool>,
}

/// One worker's view of a [`WalkDeadline`]: looks at the clock and the token every `every`
/// entries, so the check stays off the hot path.
#[derive(Debug)]
pub(crate) struct WalkCheck {
    deadline: WalkDeadline,
    every: u32,
    visited: u32,
}

impl WalkDeadline {
    pub(crate) fn new(
        tool: &'static str,
        cancel: &CancellationToken,
        started: Instant,
        limit: Duration,
    ) -> Self {
        WalkDeadline {
            tool,
            cancel: cancel.clone(),
            started,
            limit,
            timed_out: Arc::default(),
        }
    }

    /// A check for one worker thread.
    pub(crate) fn worker(&self, every: u32) -> WalkCheck {
        WalkCheck {
            deadline: self.clone(),
            every,
            visited: 0,
        }
    }

    /// After the walk: an error when it stopped for the time limit or a cancellation.
    pub(crate) fn outcome(&self) -> Result<(), ToolError> {
        if self.timed_out.load(Ordering::Relaxed) {
            return Err(ToolError::respond(format!(
                "{} timed out after {} seconds. Try searching a more specific path or pattern.",
                self.tool,
                self.limit.as_secs()
            )));
        }
        if self.cancel.is_cancelled() {
            return Err(ToolError::Cancelled {
                tool: self.tool.to_owned(),
            });
        }
        Ok(())
    }
}

impl WalkCheck {
    /// Counts one entry; true when the walk must stop.
    pub(crate) fn should_quit(&mut self) -> bool {
        self.visited = self.visited.wrapping_add(1);
        if !self.visited.is_multiple_of(self.every) {
            return false;
        }
        if self.deadline.cancel.is_cancelled() {
            return true;
        }
        if self.deadline.started.elapsed() > self.deadline.limit {
            self.deadline.timed_out.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }
}

/// Orders `items` newest first, then by path bytes, and keeps the first `keep` of them.
///
/// Only the kept items are sorted: with many matches (a tree whose files share one mtime,
/// as an unpacked tarball's do) a full sort by path components cost a fifth of a Glob.
pub(crate) fn newest_first<T>(
    items: &mut Vec<T>,
    keep: usize,
    key: impl Fn(&T) -> (SystemTime, &Path),
) {
    let order = |a: &T, b: &T| {
        let (ta, pa) = key(a);
        let (tb, pb) = key(b);
        tb.cmp(&ta).then_with(|| {
            pa.as_os_str()
                .as_encoded_bytes()
                .cmp(pb.as_os_str().as_encoded_bytes())
        })
    };
    if keep == 0 {
        items.clear();
        return;
    }
    if items.len() > keep {
        items.select_nth_unstable_by(keep - 1, order);
        items.truncate(keep);
    }
    items.sort_unstable_by(order);
}

/// The edit distance of two short strings (for suggestions).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// A likely intended path for a missing one: a sibling whose name differs only in case, in
/// extension, or by a typo or two; else the same relative tail under the working directory
/// (a dropped or doubled folder).
pub fn suggest_similar(missing: &Path, cwd: &Path) -> Option<PathBuf> {
    let name = missing.file_name()?.to_str()?;
    if let Some(parent) = missing.parent().filter(|p| p.is_dir()) {
        let stem = Path::new(name)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or(name);
        let mut best: Option<(usize, PathBuf)> = None;
        for entry in std::fs::read_dir(parent).ok()?.flatten().take(10_000) {
            let Some(candidate) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let cand_stem = Path::new(&candidate)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or(&candidate)
                .to_owned();
            let score = if candidate.eq_ignore_ascii_case(name) {
                0
            } else if cand_stem == stem {
                1
            } else {
                let d = distance(&candidate.to_lowercase(), &name.to_lowercase());
                if d <= 2 && name.len() > 3 {
                    d + 1
                } else {
                    continue;
                }
            };
            if best.as_ref().is_none_or(|(s, _)| score < *s) {
                best = Some((score, entry.path()));
            }
        }
        if let Some((_, path)) = best {
            return Some(path);
        }
    }
    // A path that repeats or drops a folder of the working directory.
    let rel = missing.strip_prefix("/").ok()?;
    let mut tail = rel;
    while let Some(rest) = tail
        .iter()
        .next()
        .and_then(|first| tail.strip_prefix(first).ok())
    {
        let candidate = cwd.join(rest);
        if !rest.as_os_str().is_empty() && candidate != missing && candidate.exists() {
            return Some(candidate);
        }
        tail = rest;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        std::fs::create_dir_all(root.join("src"))?;
        std::fs::write(root.join("src/main.rs"), "")?;
        assert_eq!(
            suggest_similar(&root.join("src/Main.rs"), root),
            Some(root.join("src/main.rs"))
        );
        assert_eq!(
            suggest_similar(&root.join("src/main.py"), root),
            Some(root.join("src/main.rs"))
        );
        assert_eq!(
            suggest_similar(&root.join("src/mian.rs"), root),
            Some(root.join("src/main.rs"))
        );
        assert_eq!(
            suggest_similar(&root.join("srcs"), root),
            Some(root.join("src"))
        );
        assert_eq!(suggest_similar(&root.join("zzzzzz/qqq"), root), None);
        assert_eq!(distance("kitten", "sitting"), 3);
        Ok(())
    }
}
