//! What Read returns: [`ReadOutput`] with its parts, and how much text one call returns.
//! Shared by the text reader (`read`) and the readers of images, PDFs and notebooks.

use serde::Serialize;

/// Characters of numbered text one call returns (about the reference's 25,000 tokens); a
/// longer page stops early with a hint where to continue.
pub const MAX_OUTPUT_CHARS: usize = 100_000;

/// Image dimensions: as stored and as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageDimensions {
    /// Width of the file
    pub original_width: u32,
    /// Height of the file
    pub original_height: u32,
    /// Width of the image sent
    pub display_width: u32,
    /// Height of the image sent
    pub display_height: u32,
}

/// One notebook cell as Read returns it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotebookCellView {
    /// `cell_id` (or `cell-N` when the notebook has no ids)
    pub cell_id: String,
    /// `code`, `markdown` or `raw`
    pub cell_type: String,
    /// The source
    pub source: String,
    /// The execution count of a code cell
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_count: Option<i64>,
    /// The text of its outputs (as the model sees them)
    pub outputs: Vec<String>,
}

/// Output of Read.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReadOutput {
    /// A page of a text file
    #[serde(rename_all = "camelCase")]
    Text {
        /// The file
        file_path: String,
        /// The lines shown, without numbers (each cut at 2000 characters)
        content: String,
        /// How many lines are shown
        num_lines: u64,
        /// The number of the first line shown
        start_line: u64,
        /// Lines in the file; a lower bound when `totalLinesPartial` is true
        total_lines: u64,
        /// Set when the file is too large to count all its lines for one page (over 64 MiB):
        /// `totalLines` is then the lines up to the page plus one
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        total_lines_partial: bool,
        /// Whether the file continues past the lines shown
        truncated: bool,
    },
    /// An image (the data is in the image block)
    #[serde(rename_all = "camelCase")]
    Image {
        /// The file
        file_path: String,
        /// The MIME type sent
        media_type: String,
        /// Bytes of the file
        original_size: u64,
        /// Dimensions
        dimensions: ImageDimensions,
    },
    /// A notebook
    #[serde(rename_all = "camelCase")]
    Notebook {
        /// The file
        file_path: String,
        /// Its cells
        cells: Vec<NotebookCellView>,
    },
    /// Text of PDF pages
    #[serde(rename_all = "camelCase")]
    Pdf {
        /// The file
        file_path: String,
        /// Bytes of the file
        original_size: u64,
        /// Pages in the document
        total_pages: u32,
        /// The pages shown (1-based)
        pages: Vec<u32>,
    },
    /// The file has not changed since the same read
    #[serde(rename_all = "camelCase")]
    FileUnchanged {
        /// The file
        file_path: String,
    },
}
