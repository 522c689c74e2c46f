//! Files Read takes whole (images, PDFs, notebooks): read under a size cap, and recorded in
//! the read ledger as a whole-file read.

use std::fs::File;
use std::io::Read as _;
use std::path::Path;

use tool_core::{ReadRecord, ReadSource, ToolContext, ToolError};

use crate::common;

/// Records a whole-file read of `bytes` (images, PDFs, notebooks).
pub(crate) fn record_whole(ctx: &ToolContext, key: &Path, meta: &std::fs::Metadata, bytes: &[u8]) {
    ctx.ledger().record(
        key,
        ReadRecord {
            content_hash: common::ledger_hash(bytes),
            mtime: meta.modified().ok(),
            len: meta.len(),
            offset: None,
            limit: None,
            partial_view: false,
            source: ReadSource::Read,
        },
    );
}

/// Reads a whole file of at most `cap` bytes.
pub(crate) fn read_capped(target: &Path, cap: u64, what: &str) -> Result<Vec<u8>, ToolError> {
    let file = File::open(target).map_err(|e| ToolError::io(target, e))?;
    let len = file.metadata().map_err(|e| ToolError::io(target, e))?.len();
    read_capped_file(file, len, target, cap, what)
}

/// [`read_capped`] of an open `file` of `len` bytes (`target` names it in messages).
pub(crate) fn read_capped_file(
    file: File,
    len: u64,
    target: &Path,
    cap: u64,
    what: &str,
) -> Result<Vec<u8>, ToolError> {
    if len > cap {
        return Err(ToolError::respond(format!(
            "{what} {} is {len} bytes, more than the {cap} bytes Read accepts for this kind of file.",
            target.display()
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io(target, e))?;
    Ok(bytes)
}
