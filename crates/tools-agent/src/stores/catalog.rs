//! The session's tool catalog: the service through which ToolSearch and the sub-agent
//! runners see every tool of the session.

use std::fmt;
use std::sync::Arc;

use tool_core::{Tool, ToolPool};

/// The tools of the session, as ToolSearch and sub-agents see them. Hosts put a
/// `ToolCatalog` in the context's services (the registry does for its built-ins; a host with
/// MCP tools replaces it with one over its whole pool).
#[derive(Clone)]
pub struct ToolCatalog(Arc<dyn Fn() -> Vec<Arc<dyn Tool>> + Send + Sync>);
impl tool_core::Service for ToolCatalog {}

impl fmt::Debug for ToolCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ToolCatalog(..)")
    }
}

impl ToolCatalog {
    /// A catalog computed by `f` on every use.
    pub fn new(f: impl Fn() -> Vec<Arc<dyn Tool>> + Send + Sync + 'static) -> Self {
        ToolCatalog(Arc::new(f))
    }

    /// A catalog over a pool.
    pub fn from_pool(pool: ToolPool) -> Self {
        ToolCatalog::new(move || pool.tools().to_vec())
    }

    /// The tools.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        (self.0)()
    }
}
