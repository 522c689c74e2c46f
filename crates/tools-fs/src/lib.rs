//! File tools for agent-tools: Read, Edit, MultiEdit, Write, Glob, Grep and NotebookEdit.
//!
//! # Overview
//!
//! - [`Read`] pages through text files as `N<TAB>line` (2000 lines by default, with a hint
//!   where to continue; long lines cut; streamed, so a huge file is never held in memory),
//!   and reads images (as image blocks, scaled to 2000 px), PDFs (text by page) and
//!   notebooks (cells with outputs). It refuses binary files, devices and FIFOs.
//! - [`Edit`] and [`MultiEdit`] replace strings in a file read earlier in the session:
//!   exactly, else modulo line endings, curly quotes, or indentation style and trailing
//!   whitespace (unique candidates only); staleness is decided by content through the
//!   context's read ledger; the encoding (UTF-8, UTF-16 with BOM), BOM, line endings and mode
//!   are kept and the write is atomic. The output carries a unified diff ([`Hunk`]).
//! - [`Write`] creates files, or replaces files read earlier, keeping their encoding, BOM,
//!   CRLF and mode.
//! - [`Glob`] and [`Grep`] walk in parallel under one ignore policy (hidden files listed,
//!   gitignore respected unless `include_ignored`), with the crate's own walker on Linux
//!   (directories opened relative to their parent, `getdents64`, the ignore rules of
//!   ripgrep's `ignore` crate) and `ignore`'s walker elsewhere; Grep searches in process
//!   with ripgrep's `grep` crates.
//! - [`NotebookEdit`] replaces, inserts or deletes one notebook cell.
//! - The writing tools resolve the target once, in their permission check, and write
//!   exactly that path: its directory is opened without following symbolic links
//!   (`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, or `O_NOFOLLOW` per component) and
//!   every later step is relative to it, so a link swapped onto the path meanwhile fails the
//!   call instead of redirecting it.
//! - [`ApplyPatch`] is codex's `apply_patch` (a model-family profile's tool, not in
//!   [`tools`]): one patch adds, deletes, updates and moves files, all or nothing.
//! - [`tools`] returns every tool ready for a pool.
//!
//! It depends only on `tool-core`: permission checks go through the context's
//! `PermissionEngine` (`check_read_path`, `check_write_path`), the read ledger is
//! `ToolContext::ledger`, and changes are announced to `ToolContext::lsp`.
//!
//! # Example
//!
//! ```
//! use serde_json::json;
//! use tool_core::{PermissionMode, ToolContext, ToolPool};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("a.rs"), "fn main() {}\n")?;
//! let ctx = ToolContext::builder(dir.path())
//!     .mode(PermissionMode::AcceptEdits)
//!     .state_dir(dir.path().join(".state"))
//!     .build();
//! let pool = ToolPool::new(tools_fs::tools());
//! let found = pool.call("Glob", json!({"pattern": "*.rs"}), &ctx).await;
//! assert_eq!(found.text(), "a.rs");
//! let read = pool.call("Read", json!({"file_path": "a.rs"}), &ctx).await;
//! assert_eq!(read.text(), "1\tfn main() {}");
//! let edit = json!({"file_path": "a.rs", "old_string": "main", "new_string": "start"});
//! assert!(!pool.call("Edit", edit, &ctx).await.is_error);
//! assert_eq!(std::fs::read_to_string(dir.path().join("a.rs"))?, "fn start() {}\n");
//! # Ok(())
//! # }
//! ```

mod apply_patch;
mod atomic;
#[cfg(target_os = "linux")]
mod beneath;
mod common;
mod diff;
mod edit;
mod glob;
mod grep;
mod host_limits;
mod ignore_policy;
mod image_read;
#[cfg(target_os = "linux")]
mod index;
mod index_settings;
mod large_edit;
mod matching;
mod notebook;
mod pdf;
mod read;
mod read_output;
mod target;
mod text;
#[cfg(target_os = "linux")]
mod walk;
mod whole_file;
mod write;

use std::sync::Arc;

pub use apply_patch::{
    APPLY_PATCH_DESCRIPTION, APPLY_PATCH_FREEFORM_DESCRIPTION, APPLY_PATCH_GRAMMAR, ApplyPatch,
    ApplyPatchInput, ApplyPatchOutput,
};
pub use diff::Hunk;
pub use edit::{
    AppliedEdit, Edit, EditInput, EditOperation, EditOutput, MultiEdit, MultiEditInput,
};
pub use glob::{Glob, GlobInput, GlobOutput};
pub use grep::{Grep, GrepInput, GrepOutput, OutputMode};
pub use host_limits::{FsLimits, install};
#[cfg(target_os = "linux")]
pub use index::{drop_index, index_status, install_index, rebuild_index, saved_index_status};
pub use index_settings::{IndexMode, IndexSettings, IndexStatus, index_file};
#[cfg(not(target_os = "linux"))]
pub use index_settings::{
    drop_index, index_status, install_index, rebuild_index, saved_index_status,
};
pub use matching::MatchKind;
pub use notebook::{
    NotebookCellType, NotebookEdit, NotebookEditInput, NotebookEditMode, NotebookEditOutput,
};
pub use read::{EMPTY_FILE, FILE_UNCHANGED, Read, ReadInput};
pub use read_output::{ImageDimensions, NotebookCellView, ReadOutput};
pub use write::{Write, WriteInput, WriteKind, WriteOutput};

/// The fixed limits of the file tools, each named for the tool it bounds.
pub mod limits {
    pub use crate::edit::MAX_EDIT_FILE as EDIT_MAX_FILE_BYTES;
    pub use crate::glob::{MAX_RESULTS as GLOB_MAX_RESULTS, TIMEOUT as GLOB_TIMEOUT};
    pub use crate::grep::{
        DEFAULT_HEAD_LIMIT as GREP_DEFAULT_HEAD_LIMIT, MAX_COLUMNS as GREP_MAX_COLUMNS,
    };
    pub use crate::image_read::{
        MAX_IMAGE_BYTES as READ_MAX_IMAGE_BYTES, MAX_IMAGE_SIDE as READ_MAX_IMAGE_SIDE,
    };
    pub use crate::pdf::{
        MAX_PAGES_WITHOUT_RANGE as READ_PDF_PAGES_WITHOUT_RANGE,
        MAX_PDF_PAGES as READ_MAX_PDF_PAGES,
    };
    pub use crate::read::{
        DEFAULT_LIMIT as READ_DEFAULT_LINES, MAX_LINE_CHARS as READ_MAX_LINE_CHARS,
    };
    pub use crate::read_output::MAX_OUTPUT_CHARS as READ_MAX_OUTPUT_CHARS;
}

/// Every tool of this crate's default vocabulary, ready for a pool ([`ApplyPatch`] is
/// offered by the codex profile, not here).
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
