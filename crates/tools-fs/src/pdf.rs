//! PDFs for Read: the text of each page (with `lopdf`), at most 20 pages per call; more than
//! 10 pages need the `pages` parameter.

use std::path::Path;

use tool_core::{ToolContext, ToolError, ToolResult, ValidationResult};

#[cfg(feature = "pdf")]
use crate::read_output::MAX_OUTPUT_CHARS;
use crate::read_output::ReadOutput;
#[cfg(feature = "pdf")]
use crate::whole_file::{read_capped, record_whole};

/// A PDF with more pages than this needs `pages`.
pub const MAX_PAGES_WITHOUT_RANGE: u32 = 10;
/// PDFs above this size are refused.
#[cfg(feature = "pdf")]
const MAX_PDF_FILE: u64 = 256 * 1024 * 1024;

/// A parsed `pages` value: a 1-based inclusive range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageRange {
    pub first: u32,
    pub last: u32,
}

/// At most this many PDF pages per call.
pub const MAX_PDF_PAGES: u32 = 20;

pub(crate) fn parse_pages(text: &str) -> Result<PageRange, ValidationResult> {
    let invalid = || {
        ValidationResult::invalid_code(
            format!(
                "Invalid pages parameter: \"{text}\". Use formats like \"1-5\", \"3\", or \"10-20\". Pages are 1-indexed."
            ),
            7,
        )
    };
    let t = text.trim();
    let (first, last) = match t.split_once('-') {
        Some((a, b)) => (a.trim().parse::<u32>(), b.trim().parse::<u32>()),
        None => (t.parse::<u32>(), t.parse::<u32>()),
    };
    let (Ok(first), Ok(last)) = (first, last) else {
        return Err(invalid());
    };
    if first == 0 || last < first {
        return Err(invalid());
    }
    if last - first + 1 > MAX_PDF_PAGES {
        return Err(ValidationResult::invalid_code(
            format!(
                "Page range \"{text}\" exceeds maximum of {MAX_PDF_PAGES} pages per request. Please use a smaller range."
            ),
            8,
        ));
    }
    Ok(PageRange { first, last })
}

/// Without the `pdf` feature: the model hears that this build reads no PDFs.
#[cfg(not(feature = "pdf"))]
pub(crate) fn read_pdf(
    _target: &Path,
    shown: &str,
    _meta: &std::fs::Metadata,
    pages: Option<&str>,
    _key: &Path,
    _ctx: &ToolContext,
) -> Result<ToolResult<ReadOutput>, ToolError> {
    if let Some(Err(ValidationResult::Invalid { message, .. })) = pages.map(parse_pages) {
        return Err(ToolError::respond(message));
    }
    Err(ToolError::respond(format!(
        "Cannot read the PDF {shown}: this build of the file tools has no PDF support (tools-fs's `pdf` feature is off). Extract its text with a command instead, such as `pdftotext {shown} -`."
    )))
}

#[cfg(feature = "pdf")]
pub(crate) fn read_pdf(
    target: &Path,
    shown: &str,
    meta: &std::fs::Metadata,
    pages: Option<&str>,
    key: &Path,
    ctx: &ToolContext,
) -> Result<ToolResult<ReadOutput>, ToolError> {
    let range = match pages.map(parse_pages) {
        Some(Ok(range)) => Some(range),
        Some(Err(tool_core::ValidationResult::Invalid { message, .. })) => {
            return Err(ToolError::respond(message));
        }
        Some(Err(tool_core::ValidationResult::Valid)) | None => None,
    };
    let bytes = read_capped(target, MAX_PDF_FILE, "The PDF")?;
    if bytes.is_empty() {
        return Err(ToolError::respond(format!("PDF file is empty: {shown}")));
    }
    // lopdf may panic on malformed files; a bad PDF is an error, not a crash.
    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lopdf::Document::load_mem(&bytes)
    }));
    let doc = match parsed {
        Ok(Ok(doc)) => doc,
        Ok(Err(e)) => {
            return Err(ToolError::respond(format!(
                "Cannot read the PDF {shown}: {e}. It may be damaged or encrypted."
            )));
        }
        Err(_) => {
            return Err(ToolError::respond(format!(
                "Cannot read the PDF {shown}: the file is malformed."
            )));
        }
    };
    let page_ids = doc.get_pages();
    let total = u32::try_from(page_ids.len()).unwrap_or(u32::MAX);
    let range = match range {
        Some(r) => {
            if r.first > total {
                return Err(ToolError::respond(format!(
                    "Page range \"{}\" is beyond the end of the PDF: {shown} has {total} pages.",
                    pages.unwrap_or_default()
                )));
            }
            PageRange {
                first: r.first,
                last: r.last.min(total),
            }
        }
        None if total > MAX_PAGES_WITHOUT_RANGE => {
            return Err(ToolError::respond(format!(
                "This PDF has {total} pages, which is too many to read at once. Use the pages parameter to read specific page ranges (e.g., pages: \"1-5\"). Maximum {MAX_PDF_PAGES} pages per request."
            )));
        }
        None => PageRange {
            first: 1,
            last: total.max(1),
        },
    };
    record_whole(ctx, key, meta, &bytes);
    let mut text = format!(
        "PDF {shown}: {total} pages; pages {}-{} follow.\n",
        range.first, range.last
    );
    let mut shown_pages = Vec::new();
    let mut any_text = false;
    for page in range.first..=range.last.min(total) {
        let extracted =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| doc.extract_text(&[page])))
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
        let body = extracted.trim();
        any_text |= !body.is_empty();
        let block = format!("\n--- Page {page} ---\n{body}\n");
        if text.len() + block.len() > MAX_OUTPUT_CHARS {
            text.push_str(&format!(
                "\n[Stopped before page {page}: the output reached {MAX_OUTPUT_CHARS} characters. Call Read with pages: \"{page}-{}\" to continue.]",
                range.last.min(page + MAX_PDF_PAGES - 1)
            ));
            break;
        }
        text.push_str(&block);
        shown_pages.push(page);
    }
    if !any_text && !shown_pages.is_empty() {
        text.push_str("\n(No extractable text on these pages: the PDF may be scanned images.)");
    }
    let output = ReadOutput::Pdf {
        file_path: shown.to_owned(),
        original_size: meta.len(),
        total_pages: total,
        pages: shown_pages,
    };
    Ok(ToolResult::ok(output).with_text(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_ranges() {
        assert_eq!(parse_pages("3"), Ok(PageRange { first: 3, last: 3 }));
        assert_eq!(parse_pages("1-5"), Ok(PageRange { first: 1, last: 5 }));
        assert_eq!(
            parse_pages("10-29"),
            Ok(PageRange {
                first: 10,
                last: 29
            })
        );
        for bad in ["0", "a", "5-3", "", "1-", "-2"] {
            assert!(
                matches!(
                    parse_pages(bad),
                    Err(ValidationResult::Invalid {
                        error_code: Some(7),
                        ..
                    })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            parse_pages("1-21"),
            Err(ValidationResult::Invalid {
                error_code: Some(8),
                ..
            })
        ));
    }
}
