//! Sub-agent transcripts: the Messages API runner keeps each sub-agent's conversation in
//! `<state>/agent-runs/<id>.json`, with the messages queued for it while it runs, so
//! SendMessage can queue to a running agent or resume a stopped one. Data and persistence
//! only; every change is a read-modify-write under the agent's lock file.

use std::fs::File;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::{PermissionMode, ToolContext, ToolError};

use crate::stores::state::{lock_file, process_alive, read_json, safe_component, write_json};

/// One sub-agent's run as the runner records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentRun {
    /// The sub-agent's id
    pub agent_id: String,
    /// Its agent type
    pub agent_type: String,
    /// The model name it was asked to use
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The session that launched it (only that session continues it)
    pub parent_session_id: String,
    /// Its working directory
    pub cwd: PathBuf,
    /// Its permission mode
    pub mode: PermissionMode,
    /// Whether a run is under way
    pub running: bool,
    /// The process running it
    pub pid: u32,
    /// The conversation in the Messages API's form
    pub messages: Vec<Value>,
    /// Messages sent to it while it runs, for its next tool round
    #[serde(default)]
    pub queued: Vec<String>,
}

impl AgentRun {
    /// Running, in a process that is still alive.
    pub fn is_running(&self) -> bool {
        self.running && process_alive(self.pid)
    }
}

/// The transcripts of a state directory, `<state>/agent-runs/`; every change is a
/// read-modify-write under the agent's lock file.
#[derive(Debug, Clone)]
pub(crate) struct RunStore {
    dir: PathBuf,
}

impl RunStore {
    pub(crate) fn for_context(ctx: &ToolContext) -> Self {
        RunStore {
            dir: ctx.private_state_dir().join("agent-runs"),
        }
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{}.json", safe_component(id)))
    }

    fn lock(&self, id: &str) -> Result<File, ToolError> {
        lock_file(&self.dir.join(format!(".{}.lock", safe_component(id))))
    }

    /// Whether the agent has a transcript (so SendMessage can continue it).
    pub(crate) fn exists(&self, id: &str) -> bool {
        self.path(id).is_file()
    }

    /// Records that background task `task_id` runs agent `agent_id`, so SendMessage accepts
    /// the task id the launch result gave.
    pub(crate) fn alias(&self, task_id: &str, agent_id: &str) -> Result<(), ToolError> {
        crate::stores::state::write_atomic(
            &self.dir.join(format!("{}.alias", safe_component(task_id))),
            agent_id.as_bytes(),
        )
    }

    /// The agent id of `id`, which may be an agent id or a background task's id.
    pub(crate) fn resolve(&self, id: &str) -> Option<String> {
        if self.exists(id) {
            return Some(id.to_owned());
        }
        std::fs::read_to_string(self.dir.join(format!("{}.alias", safe_component(id))))
            .ok()
            .map(|a| a.trim().to_owned())
            .filter(|a| self.exists(a))
    }

    pub(crate) fn load(&self, id: &str) -> Result<Option<AgentRun>, ToolError> {
        let _lock = self.lock(id)?;
        read_json(&self.path(id))
    }

    /// Changes a run under its lock; `f` gets `None` when there is no record yet.
    pub(crate) fn update<T>(
        &self,
        id: &str,
        f: impl FnOnce(&mut Option<AgentRun>) -> T,
    ) -> Result<T, ToolError> {
        let _lock = self.lock(id)?;
        let path = self.path(id);
        let mut run: Option<AgentRun> = read_json(&path)?;
        let out = f(&mut run);
        if let Some(run) = &run {
            write_json(&path, run)?;
        }
        Ok(out)
    }

    /// Records the start of a run (keeping messages already queued for it).
    pub(crate) fn begin(&self, start: AgentRun) -> Result<(), ToolError> {
        let id = start.agent_id.clone();
        self.update(&id, |run| {
            let queued = run.take().map(|r| r.queued).unwrap_or_default();
            *run = Some(AgentRun { queued, ..start });
        })
    }

    /// Saves the conversation so far and takes the messages queued for the agent. With
    /// `finish` (the agent ended its turn) the run ends too — unless messages were queued
    /// meanwhile: then the run goes on with them (so no message sent while it ran is lost).
    pub(crate) fn save_and_take(
        &self,
        id: &str,
        messages: &[Value],
        finish: bool,
    ) -> Result<Vec<String>, ToolError> {
        self.update(id, |run| match run {
            Some(r) => {
                r.messages = messages.to_vec();
                let queued = std::mem::take(&mut r.queued);
                if finish && queued.is_empty() {
                    r.running = false;
                }
                queued
            }
            None => Vec::new(),
        })
    }

    /// Marks a run stopped (failed or cancelled) with its conversation so far.
    pub(crate) fn stop(&self, id: &str, messages: &[Value]) -> Result<(), ToolError> {
        self.update(id, |run| {
            if let Some(r) = run {
                r.messages = messages.to_vec();
                r.running = false;
            }
        })
    }
}

/// The conversation of a stopped run made valid to continue: a last assistant turn whose
/// tool calls never got results (the run was stopped in the middle) gets error results.
pub(crate) fn resumable(mut messages: Vec<Value>) -> Vec<Value> {
    let pending: Vec<Value> = match messages.last() {
        Some(last) if last["role"] == "assistant" => last["content"]
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b["type"] == "tool_use")
                    .map(|b| json!({"type": "tool_result", "tool_use_id": b["id"], "content": "The agent was stopped before this tool call finished.", "is_error": true}))
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    if !pending.is_empty() {
        messages.push(json!({"role": "user", "content": pending}));
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupted_tool_calls_get_results() {
        let messages = vec![
            json!({"role": "user", "content": "go"}),
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}),
        ];
        let fixed = resumable(messages.clone());
        assert_eq!(fixed.len(), 3);
        assert_eq!(fixed[2]["content"][0]["tool_use_id"], "t1");
        assert_eq!(fixed[2]["content"][0]["is_error"], true);
        let done = vec![json!({"role": "user", "content": "go"})];
        assert_eq!(resumable(done.clone()), done);
    }
}
