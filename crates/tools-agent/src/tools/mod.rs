//! The tools: one `TypedTool` (or a family of them, such as the cron and task-list tools)
//! per file, each with its input and output types and the messages it answers with.

pub(crate) mod agent;
pub(crate) mod ask_user_question;
pub(crate) mod config;
#[cfg(feature = "cron")]
pub(crate) mod cron;
pub(crate) mod plan_mode;
pub(crate) mod send_message;
pub(crate) mod send_user_message;
pub(crate) mod skill;
#[cfg(feature = "v2-todo")]
pub(crate) mod task_list;
pub(crate) mod team;
pub(crate) mod todo_write;
pub(crate) mod tool_search;
pub(crate) mod worktree;
