//! What a tool returns: structured data plus the content blocks the model reads.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One block of model-facing content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ContentBlock {
    /// Plain text
    Text {
        /// The text
        text: String,
    },
    /// An image, base64-encoded
    Image {
        /// MIME type, such as `image/png`
        media_type: String,
        /// Base64 data
        data: String,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// The text of a text block, `None` for other blocks.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text { text } => Some(text),
            ContentBlock::Image { .. } => None,
        }
    }
}

/// The result of a tool call: its data, whether it failed, the error message and side
/// messages, plus the content blocks the model reads.
///
/// When `content` is empty the execution path renders `data` as JSON text for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult<T> {
    /// Structured output
    pub data: T,
    /// Whether the call failed
    pub is_error: bool,
    /// The failure, when `is_error`
    pub error_message: Option<String>,
    /// Extra messages for the conversation (reminders, notices), shown after the content
    pub side_messages: Vec<String>,
    /// What the model reads
    pub content: Vec<ContentBlock>,
}

impl<T> ToolResult<T> {
    /// A successful result with no explicit rendering.
    pub fn ok(data: T) -> Self {
        ToolResult {
            data,
            is_error: false,
            error_message: None,
            side_messages: Vec::new(),
            content: Vec::new(),
        }
    }

    /// A failed result that still carries data; the message is what the model reads.
    pub fn error(data: T, message: impl Into<String>) -> Self {
        let message = message.into();
        ToolResult {
            data,
            is_error: true,
            content: vec![ContentBlock::text(message.clone())],
            error_message: Some(message),
            side_messages: Vec::new(),
        }
    }

    /// Appends a text block.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.content.push(ContentBlock::text(text));
        self
    }

    /// Appends a content block.
    pub fn with_block(mut self, block: ContentBlock) -> Self {
        self.content.push(block);
        self
    }

    /// Appends a side message.
    pub fn with_side_message(mut self, message: impl Into<String>) -> Self {
        self.side_messages.push(message.into());
        self
    }

    /// Converts the data, keeping everything else.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> ToolResult<U> {
        ToolResult {
            data: f(self.data),
            is_error: self.is_error,
            error_message: self.error_message,
            side_messages: self.side_messages,
            content: self.content,
        }
    }
}

/// A finished call as the binary, the MCP server and library users see it: the result line
/// `{"tool", "is_error", "content", "data"}` (one JSON object per call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallResult {
    /// The tool's canonical name (or the name asked for, when no tool matched)
    pub tool: String,
    /// Whether the call failed
    pub is_error: bool,
    /// What the model reads
    pub content: Vec<ContentBlock>,
    /// Structured output; `null` when the call failed before the tool produced any
    pub data: Value,
    /// Whether a failure can be fixed by calling again differently
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retryable: bool,
}

impl CallResult {
    /// All text blocks joined by newlines.
    pub fn text(&self) -> String {
        let parts: Vec<&str> = self
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        parts.join("\n")
    }
}
