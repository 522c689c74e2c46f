//! The one error type of tool-core, shared by every tool call.

use std::path::PathBuf;

/// Why a tool call failed.
///
/// Errors are split in two classes (see [`ToolError::is_retryable`]): problems the model caused
/// and can fix by calling again differently (bad input, a denied permission, a missing file),
/// and failures that abort the call (cancellation, a timeout, an I/O or internal fault). Both
/// reach the model as an `is_error` result; the class tells hosts whether a retry makes sense.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// A problem the model can fix; the message says what to do
    #[error("{message}")]
    Respond {
        /// What went wrong and what to do about it
        message: String,
    },
    /// The input did not match the tool's schema
    #[error("InputValidationError: {tool} failed due to the following issue(s):\n{}", problems.join("\n"))]
    InvalidInput {
        /// The tool whose input was rejected
        tool: String,
        /// One line per missing, unexpected or mistyped parameter
        problems: Vec<String>,
    },
    /// No tool of that name or alias is in the pool
    #[error("Error: No such tool available: {name}")]
    UnknownTool {
        /// The name the caller asked for
        name: String,
    },
    /// The permission engine refused the call
    #[error("{reason}")]
    PermissionDenied {
        /// The tool that was refused
        tool: String,
        /// Why, and what would allow it
        reason: String,
    },
    /// The call was cancelled before it finished
    #[error("{tool} was cancelled before it completed")]
    Cancelled {
        /// The tool that was running
        tool: String,
    },
    /// The call ran past its time limit
    #[error("{tool} timed out after {limit:?}")]
    TimedOut {
        /// The tool that was running
        tool: String,
        /// The limit that was reached
        limit: std::time::Duration,
    },
    /// An I/O operation failed
    #[error("{path}: {source}")]
    Io {
        /// The file or directory the operation was about
        path: PathBuf,
        /// The underlying error
        #[source]
        source: std::io::Error,
    },
    /// A settings file could not be read
    #[error("invalid settings file {path}: {message}")]
    Settings {
        /// The file
        path: PathBuf,
        /// What is wrong, with line and column when known
        message: String,
    },
    /// A permission rule's content could not be compiled
    #[error("invalid permission rule `{rule}`: {message}")]
    InvalidRule {
        /// The rule or pattern as written
        rule: String,
        /// What is wrong
        message: String,
    },
    /// Something the model cannot fix went wrong
    #[error("{message}")]
    Fatal {
        /// What went wrong
        message: String,
    },
}

impl ToolError {
    /// An error the model should read and act on.
    pub fn respond(message: impl Into<String>) -> Self {
        ToolError::Respond {
            message: message.into(),
        }
    }

    /// An error that aborts the call.
    pub fn fatal(message: impl Into<String>) -> Self {
        ToolError::Fatal {
            message: message.into(),
        }
    }

    /// An I/O error about `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ToolError::Io {
            path: path.into(),
            source,
        }
    }

    /// True when the model caused the error and can retry with a different call; false when
    /// the call was aborted (cancellation, timeout, I/O or internal failure).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ToolError::Respond { .. }
                | ToolError::InvalidInput { .. }
                | ToolError::UnknownTool { .. }
                | ToolError::PermissionDenied { .. }
        )
    }
}
