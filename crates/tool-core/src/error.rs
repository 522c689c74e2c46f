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

    /// A file the model named does not exist: retryable, and the message gives the working
    /// directory so the model can fix a relative path (the file tools' own wording).
    pub fn not_found(cwd: &std::path::Path) -> Self {
        ToolError::respond(format!(
            "File does not exist. Note: your current working directory is {}.",
            cwd.display()
        ))
    }

    /// An I/O error about a path the model named, sorted as the built-in tools sort them:
    /// a missing file, a directory where a file was expected or a permission the process
    /// lacks is the model's to fix (retryable, [`ToolError::Respond`]); anything else aborts
    /// the call ([`ToolError::Io`]).
    pub fn from_io(path: &std::path::Path, cwd: &std::path::Path, source: std::io::Error) -> Self {
        use std::io::ErrorKind;
        match source.kind() {
            ErrorKind::NotFound => ToolError::not_found(cwd),
            ErrorKind::IsADirectory => {
                ToolError::respond(format!("{} is a directory, not a file.", path.display()))
            }
            ErrorKind::PermissionDenied => ToolError::respond(format!(
                "{} cannot be opened: permission denied.",
                path.display()
            )),
            _ => ToolError::io(path, source),
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

#[cfg(test)]
mod tests {
    use std::io::{Error, ErrorKind};
    use std::path::Path;

    use super::ToolError;

    #[track_caller]
    fn check(kind: ErrorKind, retryable: bool, text: &str) {
        let err = ToolError::from_io(Path::new("/p/f.txt"), Path::new("/p"), Error::from(kind));
        assert_eq!(err.is_retryable(), retryable, "{kind:?}: {err}");
        assert!(err.to_string().contains(text), "{kind:?}: {err}");
    }

    #[test]
    fn io_errors_the_model_can_fix_are_retryable() {
        check(
            ErrorKind::NotFound,
            true,
            "File does not exist. Note: your current working directory is /p.",
        );
        check(ErrorKind::IsADirectory, true, "/p/f.txt is a directory");
        check(ErrorKind::PermissionDenied, true, "permission denied");
        check(ErrorKind::Interrupted, false, "/p/f.txt");
        check(ErrorKind::StorageFull, false, "/p/f.txt");
        assert!(ToolError::not_found(Path::new("/w")).is_retryable());
    }
}
