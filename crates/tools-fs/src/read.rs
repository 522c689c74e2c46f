//! Read: a page of a text file as `N<TAB>line`, streamed so a huge file is never held in
//! memory; images as image blocks; PDF text by page; notebooks cell by cell.

use std::fs::File;
use std::io::Read as _;
use std::path::Path;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tool_core::{
    PermissionDecision, ReadRecord, ReadSource, ToolCategory, ToolContext, ToolError, ToolMeta,
    ToolResult, TypedTool, ValidationResult, path,
};

use crate::common::{self, HASH_LIMIT, StreamHash};
use crate::read_output::{MAX_OUTPUT_CHARS, ReadOutput};
use crate::{image_read, notebook, pdf};

/// Lines shown when no `limit` is given (the reference's documented default).
pub const DEFAULT_LIMIT: u64 = crate::host_limits::DEFAULT_READ_LINES;
/// Characters of one line shown; the rest is cut with a marker.
pub const MAX_LINE_CHARS: usize = 2000;

/// The reply to an identical re-read of an unchanged file.
pub const FILE_UNCHANGED: &str = "File unchanged since last read. The content from the earlier Read tool_result in this conversation is still current — refer to that instead of re-reading.";
/// The reminder for an empty file.
pub const EMPTY_FILE: &str =
    "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>";

// What the description says about images and PDFs follows the build: a tool's declaration
// promises only what the build can do (tools-fs's `images` and `pdf` features).
#[cfg(feature = "images")]
macro_rules! images_usage {
    () => {
        "- This tool allows reading images (PNG, JPEG, GIF, WEBP); the image is shown to you (scaled down to at most 2000 pixels a side)\n"
    };
}
#[cfg(not(feature = "images"))]
macro_rules! images_usage {
    () => {
        ""
    };
}
#[cfg(feature = "pdf")]
macro_rules! pdf_usage {
    () => {
        "- This tool can read PDF files (.pdf) as text, page by page. For large PDFs (more than 10 pages), you MUST provide the pages parameter to read specific page ranges (e.g., pages: \"1-5\"). Maximum 20 pages per request.\n"
    };
}
#[cfg(not(feature = "pdf"))]
macro_rules! pdf_usage {
    () => {
        ""
    };
}
#[cfg(all(feature = "images", feature = "pdf"))]
macro_rules! binary_usage {
    () => {
        "- Binary files other than images and PDFs are refused.\n"
    };
}
#[cfg(all(feature = "images", not(feature = "pdf")))]
macro_rules! binary_usage {
    () => {
        "- Binary files other than images are refused, PDFs included (this build does not read them).\n"
    };
}
#[cfg(all(not(feature = "images"), feature = "pdf"))]
macro_rules! binary_usage {
    () => {
        "- Binary files other than PDFs are refused, images included (this build does not show them).\n"
    };
}
#[cfg(not(any(feature = "images", feature = "pdf")))]
macro_rules! binary_usage {
    () => {
        "- Binary files are refused, images and PDFs included (this build does not read them).\n"
    };
}
#[cfg(all(feature = "images", feature = "pdf"))]
macro_rules! search_hint {
    () => {
        "read files, images, PDFs, notebooks"
    };
}
#[cfg(all(feature = "images", not(feature = "pdf")))]
macro_rules! search_hint {
    () => {
        "read files, images, notebooks"
    };
}
#[cfg(all(not(feature = "images"), feature = "pdf"))]
macro_rules! search_hint {
    () => {
        "read files, PDFs, notebooks"
    };
}
#[cfg(not(any(feature = "images", feature = "pdf")))]
macro_rules! search_hint {
    () => {
        "read files and notebooks"
    };
}

const DESCRIPTION: &str = concat!(
    "Reads a file from the local filesystem. You can access any file directly by using this tool.
Assume this tool is able to read all files on the machine. If the User provides a path to a file assume that path is valid. It is okay to read a file that does not exist; an error will be returned.

Usage:
- The file_path parameter should be an absolute path (relative paths are resolved against the working directory)
- By default, it reads up to 2000 lines starting from the beginning of the file; when there is more, the result says which offset to use to continue
- You can optionally specify a line offset and limit (especially handy for long files), but it's recommended to read the whole file by not providing these parameters
- Any lines longer than 2000 characters will be truncated
- Results are returned using cat -n format, with line numbers starting at 1: the line number, a tab, then the line exactly as in the file
",
    images_usage!(),
    pdf_usage!(),
    "- This tool can read Jupyter notebooks (.ipynb files) and returns all cells with their outputs
- This tool can only read files, not directories. To list a directory, use Glob or ls via the Bash tool.
",
    binary_usage!(),
    "- You can call multiple tools in a single response. It is always better to speculatively read multiple potentially useful files in parallel.
- If you read a file that exists but has empty contents you will receive a system reminder warning in place of file contents."
);

/// Input of Read.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// The absolute path to the file to read
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    pub file_path: String,
    /// The line number to start reading from (1-based). Only provide if the file is too
    /// large to read at once
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub offset: Option<u64>,
    /// The number of lines to read. Only provide if the file is too large to read at once.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
    /// Page range for PDF files (e.g., "1-5", "3", "10-20"). Only applicable to PDF files.
    /// Maximum 20 pages per request.
    // Left out of the schema without the `pdf` feature: a build that reads no PDFs offers
    // no page range (and the schema check refuses one).
    #[serde(default)]
    #[cfg_attr(not(feature = "pdf"), schemars(skip))]
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub pages: Option<String>,
}

/// The Read tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Read;

/// Extensions of binary formats Read refuses (images and PDFs have their own readers).
const BINARY_EXTENSIONS: &[&str] = &[
    "exe", "dll", "so", "dylib", "o", "a", "lib", "obj", "bin", "class", "jar", "war", "ear",
    "zip", "tar", "gz", "tgz", "bz2", "xz", "zst", "7z", "rar", "iso", "dmg", "img", "mp3", "mp4",
    "wav", "avi", "mov", "mkv", "flac", "ogg", "webm", "m4a", "aac", "doc", "docx", "xls", "xlsx",
    "ppt", "pptx", "odt", "ods", "pyc", "pyo", "wasm", "ttf", "otf", "woff", "woff2", "eot", "ico",
    "bmp", "tif", "tiff", "psd", "sqlite", "sqlite3", "db", "deb", "rpm", "apk", "msi", "pdb",
    "rlib", "node",
];

/// Image extensions read as images.
const IMAGE_EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "gif", "webp"];

fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default()
}

#[async_trait]
impl TypedTool for Read {
    type Input = ReadInput;
    type Output = ReadOutput;
    const META: ToolMeta = ToolMeta::new("Read")
        .describe(DESCRIPTION)
        .hint(search_hint!())
        .category(ToolCategory::FileSystem)
        .read_only()
        // Never spilled: Read bounds its own output (lines, line length, characters).
        .max_result_chars(usize::MAX)
        .read_only_hint()
        .idempotent_hint();

    async fn validate(&self, input: &ReadInput, ctx: &ToolContext) -> ValidationResult {
        if input.file_path.trim().is_empty() {
            return ValidationResult::invalid_code("file_path must not be empty.", 1);
        }
        if let Some(pages) = &input.pages
            && let Err(invalid) = pdf::parse_pages(pages)
        {
            return invalid;
        }
        let target = common::resolve(ctx, &input.file_path);
        let ext = extension(&target);
        if BINARY_EXTENSIONS.contains(&ext.as_str()) {
            return ValidationResult::invalid_code(
                format!(
                    "This tool cannot read binary files. The file appears to be a binary .{ext} file. Please use appropriate tools for binary file analysis."
                ),
                4,
            );
        }
        // Devices and FIFOs are refused here, before anything opens them.
        if let Err(e) = path::check_regular_or_dir(&target) {
            return ValidationResult::invalid_code(e.to_string(), 9);
        }
        ValidationResult::Valid
    }

    async fn check_permission(&self, input: &ReadInput, ctx: &ToolContext) -> PermissionDecision {
        let target = common::resolve(ctx, &input.file_path);
        ctx.permissions().check_read_path(&target, ctx)
    }

    async fn call(
        &self,
        input: ReadInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<ReadOutput>, ToolError> {
        let target = common::resolve(ctx, &input.file_path);
        let meta = match path::check_regular_or_dir(&target)? {
            None => return Err(common::not_found(ctx, &target)),
            Some(meta) if meta.is_dir() => {
                return Err(ToolError::respond(format!(
                    "EISDIR: illegal operation on a directory, read '{}'. Read only reads files; use Glob or `ls` (Bash) to list a directory.",
                    target.display()
                )));
            }
            Some(meta) => meta,
        };
        let ext = extension(&target);
        if input.pages.is_some() && ext != "pdf" {
            return Err(ToolError::respond(format!(
                "The pages parameter applies only to PDF files; {} is not a PDF. Use offset and limit for text files.",
                target.display()
            )));
        }
        let key = common::ledger_key(&target);
        let shown = target.display().to_string();
        let text = !IMAGE_EXTENSIONS.contains(&ext.as_str()) && ext != "pdf" && ext != "ipynb";
        if text && meta.len() <= INLINE_READ_BYTES {
            // A small text file is read here: handing it to a blocking thread and back cost
            // more than reading it.
            return read_text(&target, &shown, &meta, &input, &key, ctx);
        }
        let ctx2 = ctx.clone();
        let result = tokio::task::spawn_blocking(move || -> Result<_, ToolError> {
            if IMAGE_EXTENSIONS.contains(&ext.as_str()) {
                return image_read::read_image(&target, &shown, &meta, &key, &ctx2);
            }
            if ext == "pdf" {
                return pdf::read_pdf(&target, &shown, &meta, input.pages.as_deref(), &key, &ctx2);
            }
            if ext == "ipynb" {
                return notebook::read_notebook(&target, &shown, &meta, &key, &ctx2);
            }
            read_text(&target, &shown, &meta, &input, &key, &ctx2)
        })
        .await
        .map_err(|e| ToolError::fatal(format!("internal error: Read failed: {e}")))??;
        Ok(result)
    }
}

/// Text files up to this size are read on the calling task rather than a blocking thread.
const INLINE_READ_BYTES: u64 = 64 * 1024;

/// What one streamed pass over a text file found.
#[derive(Debug, Default)]
pub(crate) struct Page {
    /// The lines in the window, each cut to [`MAX_LINE_CHARS`], with how many characters
    /// were cut
    pub lines: Vec<(String, usize)>,
    /// Lines in the file; a lower bound when `total_partial`
    pub total_lines: u64,
    /// Whether the scan stopped after the page (a file too large to hash: counting its
    /// remaining lines would read the rest of it for one number)
    pub total_partial: bool,
    /// Whether the output cap stopped the page before its limit
    pub capped: bool,
    /// The whole file's hash, when it was small enough to hash
    pub hash: Option<u64>,
    /// Whether a NUL byte was seen in the first 8 KiB
    pub binary: bool,
}

/// One line being collected: the first bytes (enough for [`MAX_LINE_CHARS`] characters) and
/// the number of characters beyond them.
#[derive(Default)]
struct LineBuf {
    bytes: Vec<u8>,
    extra_chars: usize,
}

impl LineBuf {
    const KEEP_BYTES: usize = MAX_LINE_CHARS * 4;

    fn push(&mut self, part: &[u8]) {
        let room = Self::KEEP_BYTES.saturating_sub(self.bytes.len());
        let (kept, rest) = part.split_at(room.min(part.len()));
        self.bytes.extend_from_slice(kept);
        // Characters beyond the kept bytes: count the bytes that start a UTF-8 character.
        self.extra_chars += rest.iter().filter(|&&b| (b as i8) >= -0x40).count();
    }

    fn finish(&mut self) -> (String, usize) {
        let mut bytes = std::mem::take(&mut self.bytes);
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        let text = String::from_utf8_lossy(&bytes);
        let total_kept = text.chars().count();
        let extra = std::mem::take(&mut self.extra_chars);
        if total_kept <= MAX_LINE_CHARS && extra == 0 {
            return (text.into_owned(), 0);
        }
        let cut: String = text.chars().take(MAX_LINE_CHARS).collect();
        (cut, total_kept - MAX_LINE_CHARS.min(total_kept) + extra)
    }
}

/// Newlines in `bytes` (memchr's vectorised search; measured faster than a plain counting
/// loop on 200-byte lines).
fn count_newlines(bytes: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', bytes).count() as u64
}

/// Blocks of a large file counted in parallel to find a far line.
const SKIP_BLOCK: u64 = 4 << 20;

/// Where line `start` (0-based, at least 1) of a large file begins, to the block: the offset
/// of the block where it begins (or of the last block, when the file has fewer lines) and
/// how many newlines come before that block.
///
/// Counting newlines is a copy out of the page cache and a vectorised search, so the file
/// is cut into blocks that every core counts at once, in order of offset; the first block
/// whose running count passes `start` ends the search. On one core this is the plain scan.
fn skip_lines(file: &File, size: u64, start: u64) -> std::io::Result<(u64, u64)> {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let blocks = size.div_ceil(SKIP_BLOCK);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::channel::<(u64, std::io::Result<u64>)>();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || {
                let mut buf = vec![0_u8; SKIP_BLOCK as usize];
                while !stop.load(Ordering::Relaxed) {
                    let block = next.fetch_add(1, Ordering::Relaxed);
                    if block >= blocks {
                        break;
                    }
                    let at = block * SKIP_BLOCK;
                    let want = (size - at).min(SKIP_BLOCK) as usize;
                    let counted =
                        read_full_at(file, &mut buf[..want], at).map(|n| count_newlines(&buf[..n]));
                    if tx.send((block, counted)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        // Running totals in block order.
        let mut pending: BTreeMap<u64, u64> = BTreeMap::new();
        let (mut block, mut lines) = (0_u64, 0_u64);
        // The last block counted, to scan again when the file has fewer lines: its last
        // line may lack a newline.
        let mut last = (0_u64, 0_u64);
        let found = loop {
            if block >= blocks {
                break Ok(last);
            }
            if let Some(n) = pending.remove(&block) {
                // Line `start` begins after newline number `start`: in this block, or at
                // its end. The partial line the block opens with is not in the page.
                if lines + n >= start {
                    break Ok((block * SKIP_BLOCK, lines));
                }
                last = (block * SKIP_BLOCK, lines);
                lines += n;
                block += 1;
                continue;
            }
            match rx.recv() {
                Ok((b, Ok(n))) => {
                    pending.insert(b, n);
                }
                Ok((_, Err(e))) => break Err(e),
                // Every worker ended before this block was counted (the file shrank).
                Err(_) => break Ok((block * SKIP_BLOCK, lines)),
            }
        };
        stop.store(true, Ordering::Relaxed);
        found
    })
}

/// Fills `buf` from `at` unless the file ends first; the bytes read.
fn read_full_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt as _;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], at + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Streams `file` once: counts every line, keeps lines `start..start + limit` (0-based),
/// stops keeping when their numbered form would pass `max_chars`, and hashes the file when
/// it is at most [`HASH_LIMIT`] bytes.
pub(crate) fn scan_page(
    file: impl std::io::Read,
    size: u64,
    start: u64,
    limit: u64,
    max_chars: usize,
) -> std::io::Result<Page> {
    scan_page_from(file, size, start, limit, max_chars, None)
}

/// [`scan_page`] of a reader that starts `skipped` lines into the file, past its first
/// block (`binary` says what that block showed).
fn scan_page_from(
    mut file: impl std::io::Read,
    size: u64,
    start: u64,
    limit: u64,
    max_chars: usize,
    skipped: Option<(u64, bool)>,
) -> std::io::Result<Page> {
    let mut page = Page::default();
    let mut hash = (size <= HASH_LIMIT && skipped.is_none()).then(StreamHash::default);
    // A buffer the size of the file (plus the byte that shows its end), at most 1 MiB:
    // zeroing a whole MiB for a small file cost more than reading it.
    let capacity = usize::try_from(size)
        .unwrap_or(usize::MAX)
        .saturating_add(1)
        .clamp(8192, 1 << 20);
    let mut buf = vec![0_u8; capacity];
    // 0-based index of the line being read
    let mut line_no: u64 = skipped.map_or(0, |(lines, _)| lines);
    page.binary = skipped.is_some_and(|(_, binary)| binary);
    let mut current = LineBuf::default();
    let mut chars_out = 0_usize;
    let end = start.saturating_add(limit);
    let mut first_chunk = skipped.is_none();
    let mut saw_any = false;
    let mut last_byte_newline = false;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if (page.capped || line_no >= end) && hash.is_none() {
            // Past the page of a file too large to hash, with more bytes to come: at least
            // one more line. sed stops here too; reading on would only count lines.
            page.total_partial = true;
            line_no += 1;
            break;
        }
        let mut chunk = &buf[..n];
        if let Some(h) = hash.as_mut() {
            h.update(chunk);
        }
        if first_chunk {
            first_chunk = false;
            page.binary = memchr::memchr(0, &chunk[..chunk.len().min(8192)]).is_some();
            chunk = chunk.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(chunk);
        }
        if chunk.is_empty() {
            continue;
        }
        saw_any = true;
        last_byte_newline = chunk.last() == Some(&b'\n');
        let keeping = |line_no: u64, page: &Page| line_no >= start && line_no < end && !page.capped;
        if page.capped || line_no >= end {
            // Past the window: only count lines.
            line_no += count_newlines(chunk);
            continue;
        }
        if line_no < start {
            // Before the window: skip whole chunks that end before it.
            let newlines = count_newlines(chunk);
            if line_no + newlines < start {
                line_no += newlines;
                continue;
            }
        }
        let mut pos = 0;
        for nl in memchr::memchr_iter(b'\n', chunk) {
            if keeping(line_no, &page) {
                current.push(&chunk[pos..nl]);
                let (text, cut) = current.finish();
                let cost = text.len() + 12;
                if chars_out + cost > max_chars && !page.lines.is_empty() {
                    page.capped = true;
                } else {
                    chars_out += cost;
                    page.lines.push((text, cut));
                }
            }
            line_no += 1;
            pos = nl + 1;
        }
        if keeping(line_no, &page) {
            current.push(&chunk[pos..]);
        }
    }
    // The last line, when the file does not end with a newline.
    if saw_any && !last_byte_newline && !page.total_partial {
        if line_no >= start && line_no < end && !page.capped {
            let (text, cut) = current.finish();
            let cost = text.len() + 12;
            if chars_out + cost > max_chars && !page.lines.is_empty() {
                page.capped = true;
            } else {
                page.lines.push((text, cut));
            }
        }
        line_no += 1;
    }
    page.total_lines = line_no;
    page.hash = hash.map(StreamHash::finish);
    Ok(page)
}

/// A page this far into a file over [`HASH_LIMIT`] is found by [`skip_lines`].
const SKIP_AFTER_LINES: u64 = 100_000;

/// The page at line `start` (0-based) of a file too large to hash, found by counting its
/// blocks in parallel, then streamed from the block that holds it.
fn far_page(mut file: File, size: u64, start: u64, limit: u64) -> std::io::Result<Page> {
    use std::io::{Seek as _, SeekFrom};
    let mut head = vec![0_u8; 8192];
    let n = read_full_at(&file, &mut head, 0)?;
    let binary = memchr::memchr(0, &head[..n]).is_some();
    let (offset, lines) = skip_lines(&file, size, start)?;
    if offset == 0 {
        // Not hashed, whatever the size says (a file this function gets is too large).
        return scan_page(
            file,
            size.max(HASH_LIMIT + 1),
            start,
            limit,
            MAX_OUTPUT_CHARS,
        );
    }
    file.seek(SeekFrom::Start(offset))?;
    scan_page_from(
        file,
        size,
        start,
        limit,
        MAX_OUTPUT_CHARS,
        Some((lines, binary)),
    )
}

/// The page of `limit` lines from line `start_line` (1-based) of the text file at
/// `target`, `len` bytes long: UTF-16 files decoded whole (and hashed), a far page of a file
/// too large to hash found in parallel, others scanned.
fn read_page(target: &Path, len: u64, start_line: u64, limit: u64) -> Result<Page, ToolError> {
    let file = File::open(target).map_err(|e| ToolError::io(target, e))?;
    let head = peek_utf16(target)?;
    let page = match head {
        Some(text) => scan_page(
            std::io::Cursor::new(text.into_bytes()),
            0,
            start_line - 1,
            limit,
            MAX_OUTPUT_CHARS,
        )
        .map(|mut p| {
            p.hash = std::fs::read(target)
                .ok()
                .map(|b| tool_core::content_hash(&b));
            p
        }),
        // A far page of a file too large to hash: find its block in parallel.
        None if len > HASH_LIMIT && start_line > SKIP_AFTER_LINES => {
            far_page(file, len, start_line - 1, limit)
        }
        None => scan_page(file, len, start_line - 1, limit, MAX_OUTPUT_CHARS),
    }
    .map_err(|e| ToolError::io(target, e))?;
    Ok(page)
}

fn read_text(
    target: &Path,
    shown: &str,
    meta: &std::fs::Metadata,
    input: &ReadInput,
    key: &Path,
    ctx: &ToolContext,
) -> Result<ToolResult<ReadOutput>, ToolError> {
    let offset = input.offset;
    // Lines are numbered from 1; the schema refuses offset 0 (`minimum: 1`).
    let start_line = offset.unwrap_or(1).max(1);
    let limit = input
        .limit
        .unwrap_or_else(|| crate::host_limits::limits(ctx).read_lines);
    let previous = ctx.ledger().get(key);
    let same_request = previous.as_ref().is_some_and(|r| {
        r.source == ReadSource::Read && r.offset == input.offset && r.limit == input.limit
    });
    let mtime = meta.modified().ok();
    // Huge files carry no hash: an identical re-read is recognised by time and size.
    if same_request
        && let Some(r) = &previous
        && r.content_hash.is_none()
        && r.mtime == mtime
        && mtime.is_some()
        && r.len == meta.len()
    {
        return Ok(unchanged(shown));
    }
    let page = read_page(target, meta.len(), start_line, limit)?;
    if page.binary {
        return Err(ToolError::respond(format!(
            "This tool cannot read binary files. {shown} appears to be binary ({} bytes, NUL bytes in its first block). Please use appropriate tools for binary file analysis.",
            meta.len()
        )));
    }
    if same_request
        && let (Some(r), Some(hash)) = (&previous, page.hash)
        && r.content_hash == Some(hash)
    {
        return Ok(unchanged(shown));
    }
    ctx.ledger().record(
        key,
        ReadRecord {
            content_hash: page.hash,
            mtime,
            len: meta.len(),
            offset: input.offset,
            limit: input.limit,
            partial_view: false,
            source: ReadSource::Read,
        },
    );
    let num_lines = page.lines.len() as u64;
    let last_shown = start_line + num_lines.saturating_sub(1);
    let truncated = num_lines > 0 && last_shown < page.total_lines;
    let mut text = String::new();
    let mut content = String::new();
    for (i, (line, cut)) in page.lines.iter().enumerate() {
        let n = start_line + i as u64;
        text.push_str(&n.to_string());
        text.push('\t');
        text.push_str(line);
        if *cut > 0 {
            text.push_str(&format!("… [line truncated: {cut} more characters]"));
        }
        text.push('\n');
        content.push_str(line);
        content.push('\n');
    }
    let text = if page.total_lines == 0 {
        EMPTY_FILE.to_owned()
    } else if num_lines == 0 {
        format!(
            "<system-reminder>Warning: the file exists but is shorter than the provided offset ({start_line}). The file has {} lines.</system-reminder>",
            page.total_lines
        )
    } else if truncated {
        let why = if page.capped {
            format!(" (the page stopped at {MAX_OUTPUT_CHARS} characters)")
        } else {
            String::new()
        };
        let of = if page.total_partial {
            format!(
                "at least {} (a file of {} bytes; the lines after this page were not counted)",
                page.total_lines,
                meta.len()
            )
        } else {
            page.total_lines.to_string()
        };
        format!(
            "{text}\n[Showing lines {start_line}-{last_shown} of {of}{why}. To read more, call Read with offset: {}.]",
            last_shown + 1
        )
    } else {
        text.trim_end_matches('\n').to_owned()
    };
    let output = ReadOutput::Text {
        file_path: shown.to_owned(),
        content,
        num_lines,
        start_line,
        total_lines: page.total_lines,
        total_lines_partial: page.total_partial,
        truncated,
    };
    Ok(ToolResult::ok(output).with_text(text))
}

/// A UTF-16 file (with a BOM) decoded whole, or `None` for anything else. UTF-16 files are
/// rare and small; above 64 MiB they are refused.
fn peek_utf16(target: &Path) -> Result<Option<String>, ToolError> {
    let mut head = [0_u8; 2];
    let mut file = File::open(target).map_err(|e| ToolError::io(target, e))?;
    let n = file.read(&mut head).map_err(|e| ToolError::io(target, e))?;
    if n < 2 || !(head == [0xFF, 0xFE] || head == [0xFE, 0xFF]) {
        return Ok(None);
    }
    let len = file.metadata().map_err(|e| ToolError::io(target, e))?.len();
    if len > HASH_LIMIT {
        return Err(ToolError::respond(format!(
            "{} is a UTF-16 file of {len} bytes; Read pages through UTF-16 files only up to {HASH_LIMIT} bytes. Use Bash (iconv) to convert it.",
            target.display()
        )));
    }
    let bytes = std::fs::read(target).map_err(|e| ToolError::io(target, e))?;
    Ok(Some(crate::text::decode_lossy(&bytes)))
}

fn unchanged(shown: &str) -> ToolResult<ReadOutput> {
    ToolResult::ok(ReadOutput::FileUnchanged {
        file_path: shown.to_owned(),
    })
    .with_text(FILE_UNCHANGED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str, start: u64, limit: u64) -> Page {
        scan_page(
            text.as_bytes(),
            text.len() as u64,
            start,
            limit,
            MAX_OUTPUT_CHARS,
        )
        .unwrap()
    }

    fn lines(p: &Page) -> Vec<&str> {
        p.lines.iter().map(|(l, _)| l.as_str()).collect()
    }

    /// The feature set of this build, as the snapshot's name says it.
    fn features() -> &'static str {
        match (cfg!(feature = "images"), cfg!(feature = "pdf")) {
            (true, true) => "images-pdf",
            (true, false) => "images",
            (false, true) => "pdf",
            (false, false) => "none",
        }
    }

    /// Read's declaration promises only what this build does: one snapshot per feature set
    /// (CI runs this test under each).
    #[test]
    fn the_declaration_says_what_this_build_reads() {
        use tool_core::Tool as _;
        let tool = tool_core::Typed::new(Read);
        let schema = tool.input_schema();
        let hint = tool.search_hint().unwrap_or_default();
        let pages = schema["properties"].get("pages").is_some();
        assert_eq!(pages, cfg!(feature = "pdf"), "{schema}");
        for (feature, words) in [
            (cfg!(feature = "images"), ["PNG", "image"]),
            (cfg!(feature = "pdf"), ["PDF files (.pdf) as text", "PDF"]),
        ] {
            assert_eq!(DESCRIPTION.contains(words[0]), feature, "{DESCRIPTION}");
            assert_eq!(hint.contains(words[1]), feature, "{hint}");
        }
        insta::assert_json_snapshot!(
            format!("read_declaration_{}", features()),
            serde_json::json!({"description": DESCRIPTION, "hint": hint, "input_schema": schema})
        );
    }

    #[test]
    fn pages_of_lines() {
        let p = scan("a\nb\r\nc", 0, 10);
        assert_eq!(lines(&p), ["a", "b", "c"]);
        assert_eq!(p.total_lines, 3);
        let p = scan("a\nb\nc\n", 1, 1);
        assert_eq!(lines(&p), ["b"]);
        assert_eq!(p.total_lines, 3);
        let p = scan("\u{FEFF}x\n", 0, 5);
        assert_eq!(lines(&p), ["x"]);
        assert_eq!(scan("", 0, 5).total_lines, 0);
        assert_eq!(scan("\n", 0, 5).total_lines, 1);
        assert_eq!(scan("a\nb\n", 5, 5).lines.len(), 0);
        assert_eq!(
            scan("a\n", 0, 5).hash,
            Some(tool_core::content_hash(b"a\n"))
        );
    }

    #[test]
    fn long_lines_are_cut() {
        let long = "é".repeat(MAX_LINE_CHARS + 10);
        let p = scan(&format!("{long}\nshort\n"), 0, 10);
        assert_eq!(p.lines[0].0.chars().count(), MAX_LINE_CHARS);
        assert_eq!(p.lines[0].1, 10);
        assert_eq!(p.lines[1], ("short".to_owned(), 0));
        let huge = "x".repeat(5 * 1024 * 1024);
        let p = scan(&huge, 0, 10);
        assert_eq!(p.lines[0].1, huge.len() - MAX_LINE_CHARS);
    }

    #[test]
    fn windows_across_chunks() {
        let text: String = (1..=300_000).map(|i| format!("line {i}\n")).collect();
        let p = scan(&text, 250_000, 3);
        assert_eq!(lines(&p), ["line 250001", "line 250002", "line 250003"]);
        assert_eq!(p.total_lines, 300_000);
        let p = scan_page(text.as_bytes(), text.len() as u64, 0, 100_000, 1000).unwrap();
        assert!(p.capped);
        assert!(p.lines.len() < 100);
    }

    #[test]
    fn files_too_large_to_hash_stop_after_the_page() {
        // 300 000 lines of ~12 bytes: about 3.5 chunks of 1 MiB.
        let text: String = (1..=300_000).map(|i| format!("line {i:06}\n")).collect();
        let big = HASH_LIMIT + 1;
        let p = scan_page(text.as_bytes(), big, 10, 2, MAX_OUTPUT_CHARS).unwrap();
        assert_eq!(lines(&p), ["line 000011", "line 000012"]);
        assert!(p.total_partial);
        // The first chunk's lines were counted, then one more for the bytes that follow.
        let first_chunk_lines = (1 << 20) / 12;
        assert_eq!(p.total_lines, first_chunk_lines + 1);
        assert_eq!(p.hash, None);
        // A page that reaches the end counts exactly.
        let p = scan_page(text.as_bytes(), big, 299_998, 5, MAX_OUTPUT_CHARS).unwrap();
        assert_eq!(lines(&p), ["line 299999", "line 300000"]);
        assert!(!p.total_partial);
        assert_eq!(p.total_lines, 300_000);
        // An offset past the end counts every line to say how many there are.
        let p = scan_page(text.as_bytes(), big, 400_000, 5, MAX_OUTPUT_CHARS).unwrap();
        assert!(p.lines.is_empty() && !p.total_partial);
        assert_eq!(p.total_lines, 300_000);
        // Small files are hashed, so they are read to the end and counted exactly.
        let p = scan(&text, 10, 2);
        assert!(!p.total_partial);
        assert_eq!(p.total_lines, 300_000);
    }

    #[test]
    fn far_pages_match_the_plain_scan() {
        // ~10 MiB of lines of varying length: block boundaries fall inside lines, and the
        // file does not end with a newline.
        let mut text = String::new();
        let mut starts = vec![0_u64];
        let mut i = 0_u64;
        while text.len() < 10 << 20 {
            text.push_str(&format!("{i} {}\n", "x".repeat((i % 97) as usize)));
            starts.push(text.len() as u64);
            i += 1;
        }
        text.push_str("last line without a newline");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.txt");
        std::fs::write(&path, &text).unwrap();
        let size = text.len() as u64;
        let big = HASH_LIMIT + 1;
        // Lines that begin right at a block boundary, or just before or after one.
        let at_block = |b: u64| starts.partition_point(|&s| s < b * SKIP_BLOCK) as u64;
        let mut cases = vec![1, 2, 1000, i - 1, i, i + 1, i + 50];
        for b in 1..3 {
            let l = at_block(b);
            cases.extend([l - 1, l, l + 1]);
        }
        for start in cases {
            let expected = scan_page(text.as_bytes(), big, start, 3, MAX_OUTPUT_CHARS).unwrap();
            let file = File::open(&path).unwrap();
            let got = far_page(file, size, start, 3).unwrap();
            assert_eq!(lines(&got), lines(&expected), "start {start}");
            assert_eq!(got.total_partial, expected.total_partial, "start {start}");
            // A partial count is a lower bound that depends on where reading began.
            if !got.total_partial {
                assert_eq!(got.total_lines, expected.total_lines, "start {start}");
            }
            assert!(!got.binary);
        }
    }
}
