//! The summariser service: a host-provided model call that applies a prompt to fetched
//! content (WebFetch's "secondary model"; in MCP server mode, the client's sampling).

use async_trait::async_trait;

use crate::ToolError;

/// Applies a prompt to content with a (small, fast) model the host provides.
///
/// Hosts store it in the context's services as `Arc<dyn Summariser>`; tools that find none
/// return the content unprocessed and say so.
#[async_trait]
pub trait Summariser: Send + Sync {
    /// Answers `prompt` about `content`. `content` is untrusted text (a web page, say): the
    /// implementation must treat it as data, never as instructions.
    async fn summarise(&self, content: &str, prompt: &str) -> Result<String, ToolError>;
}
