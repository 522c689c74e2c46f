//! Stores: the agent tools' data and its persistence under the state directory and the
//! project, with no tool logic — teams and their mailboxes, transcripts, plan requests, task
//! records, git worktrees, project definitions and what a person approved of them, the cron
//! jobs and their scheduler, the tool catalog and the small file helpers they share.

pub(crate) mod catalog;
#[cfg(feature = "cron")]
pub(crate) mod cron_jobs;
pub(crate) mod frontmatter;
pub(crate) mod git_worktrees;
pub(crate) mod mailbox;
pub(crate) mod plan_requests;
pub(crate) mod project;
pub(crate) mod state;
#[cfg(feature = "v2-todo")]
pub(crate) mod task_records;
pub(crate) mod team_files;
pub(crate) mod transcripts;
