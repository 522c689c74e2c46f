//! Web tools for agent-tools: WebFetch (with an SSRF guard, size caps and HTML to Markdown)
//! and WebSearch over pluggable providers.
//!
//! Nothing is implemented here yet: the tools arrive with the tools-web issue. The crate
//! exists so the workspace layout and the registry's `web` feature are in place; it exports
//! no tools, and the registry registers none from it.
