//! Limits a host may set for the file tools: how much Read, Glob and Grep return when the
//! call itself does not say.

use std::sync::Arc;

use tool_core::{ToolContext, ToolContextBuilder};

/// What Read, Glob and Grep return at most when the call does not say. The defaults are
/// the tools' documented ones; a host with a smaller context window lowers them with
/// [`install`]. A value of 0 counts as 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsLimits {
    /// Lines Read returns when the call gives no `limit` (default 2,000)
    pub read_lines: u64,
    /// Files Glob lists, newest first (default 100)
    pub glob_max_results: usize,
    /// Lines, files or counts Grep returns when the call gives no `head_limit` (default 250)
    pub grep_head_limit: usize,
}

/// Read's default page, in lines.
pub(crate) const DEFAULT_READ_LINES: u64 = 2000;
/// Glob's default result count.
pub(crate) const DEFAULT_GLOB_MAX_RESULTS: usize = 100;
/// Grep's default `head_limit`.
pub(crate) const DEFAULT_GREP_HEAD_LIMIT: usize = 250;

impl Default for FsLimits {
    fn default() -> Self {
        FsLimits {
            read_lines: DEFAULT_READ_LINES,
            glob_max_results: DEFAULT_GLOB_MAX_RESULTS,
            grep_head_limit: DEFAULT_GREP_HEAD_LIMIT,
        }
    }
}

impl tool_core::ServiceType for FsLimits {}

/// Sets the file tools' limits for a session being built.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let limits = tools_fs::FsLimits { read_lines: 500, ..Default::default() };
/// let ctx = tools_fs::install(tool_core::ToolContext::builder(dir.path()), limits).build();
/// # let _ = ctx;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn install(builder: ToolContextBuilder, limits: FsLimits) -> ToolContextBuilder {
    builder.service(Arc::new(limits))
}

/// The session's limits: the host's, else the defaults.
pub(crate) fn limits(ctx: &ToolContext) -> FsLimits {
    let l = ctx
        .services()
        .get::<Arc<FsLimits>>()
        .map(|l| *l)
        .unwrap_or_default();
    FsLimits {
        read_lines: l.read_lines.max(1),
        glob_max_results: l.glob_max_results.max(1),
        grep_head_limit: l.grep_head_limit.max(1),
    }
}
