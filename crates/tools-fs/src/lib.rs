//! File tools for agent-tools.
//!
//! This crate will hold Read, Edit, MultiEdit, Write, Glob, Grep and NotebookEdit; today it
//! provides [`Glob`], the tool that proves tool-core's contracts end to end, and the
//! [`IgnorePolicy`] that Glob and (later) Grep share.
//!
//! # Overview
//!
//! - [`Glob`] (a [`tool_core::TypedTool`]) finds files by glob pattern, newest first, at
//!   most [`MAX_RESULTS`], under the shared [`IgnorePolicy`].
//! - [`tools`] returns this crate's tools ready for a pool.
//!
//! It depends only on `tool-core`; permission checks go through the context's
//! `PermissionEngine` (`check_read_path`).
//!
//! # Example
//!
//! ```
//! use serde_json::json;
//! use tool_core::{ToolContext, ToolPool};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("a.rs"), "fn main() {}")?;
//! let ctx = ToolContext::builder(dir.path()).build();
//! let pool = ToolPool::new(tools_fs::tools());
//! let result = pool.call("Glob", json!({"pattern": "*.rs"}), &ctx).await;
//! assert_eq!(result.text(), "a.rs");
//! # Ok(())
//! # }
//! ```

mod atomic;
mod common;
mod diff;
mod edit;
mod glob;
mod grep;
mod ignore_policy;
mod image_read;
mod matching;
mod notebook;
mod pdf;
mod read;
mod text;
mod write;

use std::sync::Arc;

pub use diff::Hunk;
pub use edit::{
    AppliedEdit, Edit, EditInput, EditOperation, EditOutput, MAX_EDIT_FILE, MultiEdit,
    MultiEditInput,
};
pub use glob::{Glob, GlobInput, GlobOutput, MAX_RESULTS, TIMEOUT};
pub use grep::{DEFAULT_HEAD_LIMIT, Grep, GrepInput, GrepOutput, MAX_COLUMNS, OutputMode};
pub use ignore_policy::{IgnorePolicy, VCS_DIRS, suggest_similar};
pub use image_read::{MAX_IMAGE_BYTES, MAX_IMAGE_SIDE};
pub use matching::MatchKind;
pub use notebook::{
    NotebookCellType, NotebookEdit, NotebookEditInput, NotebookEditMode, NotebookEditOutput,
};
pub use pdf::MAX_PAGES_WITHOUT_RANGE;
pub use read::{
    DEFAULT_LIMIT, EMPTY_FILE, FILE_UNCHANGED, ImageDimensions, MAX_LINE_CHARS, MAX_OUTPUT_CHARS,
    MAX_PDF_PAGES, NotebookCellView, Read, ReadInput, ReadOutput,
};
pub use write::{Write, WriteInput, WriteOutput};

/// Every tool of this crate, ready for a pool.
pub fn tools() -> Vec<Arc<dyn tool_core::Tool>> {
    vec![
        Arc::new(tool_core::Typed::new(Glob)),
        Arc::new(tool_core::Typed::new(Read)),
        Arc::new(tool_core::Typed::new(Edit)),
        Arc::new(tool_core::Typed::new(MultiEdit)),
        Arc::new(tool_core::Typed::new(Write)),
        Arc::new(tool_core::Typed::new(Grep)),
        Arc::new(tool_core::Typed::new(NotebookEdit)),
    ]
}
