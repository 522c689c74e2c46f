//! Plans: the plan file of a session, and a team's plan approval requests — pending in
//! `<team>/plan_requests.json` under a lock until the lead answers them; the request goes to
//! the lead's inbox as a `plan_approval_request`, the answer to the teammate's.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_core::{ToolContext, ToolError};

use crate::stores::mailbox::{InboxMessage, TeamMessage};
use crate::stores::state::{agent_id, lock_file, now_ms, read_json, safe_component, write_json};
use crate::stores::team_files::{TEAM_LEAD_NAME, TeamStore};

/// The plan file of this context's session (or sub-agent):
/// `<state>/plans/<session>.md` or `<state>/plans/<session>-agent-<id>.md`.
pub fn plan_file(ctx: &ToolContext) -> PathBuf {
    let session_id = safe_component(ctx.session_id());
    let name = match agent_id(ctx) {
        Some(agent) => format!("{session_id}-agent-{}.md", safe_component(&agent)),
        None => format!("{session_id}.md"),
    };
    ctx.private_state_dir().join("plans").join(name)
}

/// A teammate's plan waiting for the lead's answer, kept in the team's
/// `plan_requests.json` until the lead sends a plan_approval_response for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanRequest {
    /// `plan-<ms>@<teammate>`
    pub request_id: String,
    /// The teammate that asked
    pub from: String,
    /// Its plan file
    pub plan_file_path: PathBuf,
    /// When it asked (ms since the epoch)
    pub timestamp: u64,
}

impl TeamStore {
    fn plan_requests_file(&self, team: &str) -> PathBuf {
        self.team_dir(team).join("plan_requests.json")
    }

    fn plan_requests_lock(&self, team: &str) -> Result<File, ToolError> {
        lock_file(&self.team_dir(team).join(".plan_requests.lock"))
    }

    #[cfg(any(test, feature = "testing"))]
    /// The plans waiting for the lead's answer.
    pub fn pending_plan_requests(&self, team: &str) -> Result<Vec<PlanRequest>, ToolError> {
        let _lock = self.plan_requests_lock(team)?;
        Ok(read_json(&self.plan_requests_file(team))?.unwrap_or_default())
    }

    /// Records a plan approval request of teammate `from` and delivers it to the lead's
    /// inbox as a `plan_approval_request` message; returns its id. An earlier request of
    /// the same teammate still waiting is replaced (its plan changed since).
    pub fn request_plan_approval(
        &self,
        team: &str,
        from: &str,
        plan: &str,
        plan_file: &Path,
        allowed_prompts: Option<Value>,
    ) -> Result<String, ToolError> {
        let _lock = self.plan_requests_lock(team)?;
        let path = self.plan_requests_file(team);
        let mut pending: Vec<PlanRequest> = read_json(&path)?.unwrap_or_default();
        let mut timestamp = now_ms();
        let mut request_id = format!("plan-{timestamp}@{from}");
        while pending.iter().any(|p| p.request_id == request_id) {
            timestamp += 1;
            request_id = format!("plan-{timestamp}@{from}");
        }
        pending.retain(|p| p.from != from);
        pending.push(PlanRequest {
            request_id: request_id.clone(),
            from: from.to_owned(),
            plan_file_path: plan_file.to_path_buf(),
            timestamp,
        });
        let body = TeamMessage::PlanApprovalRequest {
            request_id: request_id.clone(),
            from: from.to_owned(),
            plan_file_path: plan_file.to_path_buf(),
            plan: plan.to_owned(),
            allowed_prompts,
        };
        // The request is recorded only once the lead can read it.
        self.deliver(team, TEAM_LEAD_NAME, InboxMessage::typed(from, body))?;
        write_json(&path, &pending)?;
        Ok(request_id)
    }

    /// Delivers the lead's answer to the plan approval request `request_id` of teammate
    /// `to` and removes the request; refuses, naming the id, when `to` has no such request
    /// waiting (an unknown id, another teammate's, or one already answered or replaced).
    pub fn answer_plan_request(
        &self,
        team: &str,
        to: &str,
        request_id: &str,
        message: InboxMessage,
    ) -> Result<(), ToolError> {
        let _lock = self.plan_requests_lock(team)?;
        let path = self.plan_requests_file(team);
        let mut pending: Vec<PlanRequest> = read_json(&path)?.unwrap_or_default();
        let Some(index) = pending
            .iter()
            .position(|p| p.request_id == request_id && p.from == to)
        else {
            let hint = match (
                pending.iter().find(|p| p.request_id == request_id),
                pending.iter().find(|p| p.from == to),
            ) {
                (Some(other), _) => format!(
                    "it is {}'s request, not {to}'s: send the response to {}",
                    other.from, other.from
                ),
                (None, Some(theirs)) => format!(
                    "{to}'s plan waiting for approval is \"{}\": answer that one",
                    theirs.request_id
                ),
                (None, None) => format!(
                    "{to} has no plan waiting for approval (it was answered already, or {to} has not called ExitPlanMode)"
                ),
            };
            return Err(ToolError::respond(format!(
                "request_id \"{request_id}\" does not match a pending plan approval request: {hint}"
            )));
        };
        self.deliver(team, to, message)?;
        pending.remove(index);
        write_json(&path, &pending)
    }
}
