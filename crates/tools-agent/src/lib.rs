//! Agent tools for agent-tools: sub-agents, skills, todos and task lists, questions, tool
//! search, config, plan mode, worktrees, teams and (feature `cron`) scheduled triggers.
//!
//! Nothing is implemented here yet: the tools arrive with the tools-agent issue. The crate
//! exists so the workspace layout and the registry's `agent`, `agent-triggers` and `v2-todo`
//! features are in place; it exports no tools, and the registry registers none from it.
