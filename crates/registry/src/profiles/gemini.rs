//! The gemini profile: Gemini CLI's tool vocabulary for Gemini models.

use std::sync::Arc;

use tool_core::Tool;

/// Built-ins the gemini profile replaces.
pub(crate) const REPLACED: &[&str] = &[];

/// The gemini profile's own tools, over the built-ins of `builtins`.
pub(crate) fn tools(_builtins: &[Arc<dyn Tool>]) -> Vec<Arc<dyn Tool>> {
    Vec::new()
}
