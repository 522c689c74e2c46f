//! Shell tools for agent-tools: Bash with background tasks, a sandbox and shell-aware
//! permissions; TaskOutput and TaskStop; Monitor behind the `monitor` feature.
//!
//! Nothing is implemented here yet: the tools arrive with the tools-shell issue. The crate
//! exists so the workspace layout and the registry's `shell` feature are in place; it
//! exports no tools, and the registry registers none from it.
