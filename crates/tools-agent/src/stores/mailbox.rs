//! Inboxes: one `inboxes/<name>.json` per team member, a list of [`InboxMessage`]s appended
//! and marked read under the inbox's lock file; the protocol messages in them
//! ([`TeamMessage`]); how a model reads them ([`render_messages`]); and the teammate's side
//! of the mailbox — taking its mail between turns, idling until mail arrives, telling the
//! lead it is idle.

use std::fs::File;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_core::{CancellationToken, PermissionMode, ToolContext, ToolError};

use crate::stores::state::{blocking, lock_file, now_ms, read_json, safe_component, write_json};
use crate::stores::team_files::{TEAM_LEAD_NAME, TeamStore, TeammateIdentity, sender};

/// One message in an inbox file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxMessage {
    /// The sender's name
    pub from: String,
    /// A plain string, or a structured message (`{"type": "shutdown_request", ...}`)
    pub message: Value,
    /// The sender's preview
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// When it was sent (ms since the epoch)
    pub timestamp: u64,
    /// Whether its recipient has taken it
    #[serde(default)]
    pub read: bool,
}

impl InboxMessage {
    /// A new unread message (null fields of a structured message are left out).
    pub fn new(from: impl Into<String>, mut message: Value, summary: Option<String>) -> Self {
        if let Value::Object(map) = &mut message {
            map.retain(|_, v| !v.is_null());
        }
        InboxMessage {
            from: from.into(),
            message,
            summary,
            timestamp: now_ms(),
            read: false,
        }
    }

    /// A new unread plain-text message.
    pub(crate) fn text(from: impl Into<String>, text: String, summary: Option<String>) -> Self {
        InboxMessage::new(from, Value::String(text), summary)
    }

    /// A new unread protocol message.
    pub(crate) fn typed(from: impl Into<String>, message: TeamMessage) -> Self {
        let body = serde_json::to_value(&message).unwrap_or_default();
        InboxMessage::new(from, body, None)
    }

    /// The structured message's `type`, if it is one.
    pub fn kind(&self) -> Option<&str> {
        self.message.get("type").and_then(Value::as_str)
    }

    /// The protocol message, when this is one this library knows.
    pub(crate) fn typed_message(&self) -> Option<TeamMessage> {
        match &self.message {
            Value::Object(_) => serde_json::from_value(self.message.clone()).ok(),
            _ => None,
        }
    }
}

/// A protocol message in an inbox: the `message` field of an [`InboxMessage`], tagged by
/// `type`. Every structured message the teams write or read goes through this enum; the
/// field order is the order on disk. Fields missing from a file read as their defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum TeamMessage {
    /// The lead asks a teammate to finish.
    ShutdownRequest {
        #[serde(default)]
        request_id: String,
        #[serde(default)]
        from: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A teammate's answer to a shutdown request.
    ShutdownResponse {
        #[serde(default)]
        request_id: String,
        #[serde(default)]
        approve: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default)]
        from: String,
    },
    /// A teammate in plan mode asks the lead to approve its plan.
    PlanApprovalRequest {
        #[serde(default)]
        request_id: String,
        #[serde(default)]
        from: String,
        #[serde(default)]
        plan_file_path: PathBuf,
        #[serde(default)]
        plan: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        allowed_prompts: Option<Value>,
    },
    /// The lead's answer to a plan approval request.
    PlanApprovalResponse {
        #[serde(default)]
        request_id: String,
        #[serde(default)]
        approve: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
        #[serde(default)]
        from: String,
    },
    /// A teammate ended its turn and waits for messages.
    IdleNotification {
        #[serde(default)]
        idle_reason: String,
        #[serde(default)]
        summary: String,
    },
    /// A teammate's run ended.
    TeammateTerminated {
        #[serde(default)]
        message: String,
    },
}

/// The body of a message as the model reads it. A plan approval request shows the plan as
/// text and how to answer it, rather than as one line of escaped JSON.
fn message_body(m: &InboxMessage) -> String {
    if let Some(TeamMessage::PlanApprovalRequest {
        request_id: id,
        plan_file_path,
        plan,
        ..
    }) = m.typed_message()
    {
        return format!(
            "Plan approval request {id} from {from} (plan file: {file}):\n\n{plan}\n\nAnswer with SendMessage {{\"to\": \"{from}\", \"message\": {{\"type\": \"plan_approval_response\", \"request_id\": \"{id}\", \"approve\": true}}}} to let {from} start implementing, or with \"approve\": false and \"feedback\" saying what to change.",
            from = m.from,
            file = plan_file_path.display(),
            plan = plan.trim_end(),
        );
    }
    match &m.message {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Renders messages the way a model reads them: one
/// `<teammate-message teammate_id="..." summary="...">` block per message.
pub fn render_messages(messages: &[InboxMessage]) -> String {
    messages
        .iter()
        .map(|m| {
            let body = message_body(m);
            match &m.summary {
                Some(s) => format!(
                    "<teammate-message teammate_id=\"{}\" summary=\"{}\">\n{body}\n</teammate-message>",
                    m.from,
                    s.replace('"', "'")
                ),
                None => format!(
                    "<teammate-message teammate_id=\"{}\">\n{body}\n</teammate-message>",
                    m.from
                ),
            }
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

impl TeamStore {
    fn inbox_lock(&self, team: &str, member: &str) -> Result<File, ToolError> {
        lock_file(
            &self
                .team_dir(team)
                .join("inboxes")
                .join(format!(".{}.lock", safe_component(member))),
        )
    }

    /// Appends a message to a member's inbox.
    pub fn deliver(
        &self,
        team: &str,
        member: &str,
        message: InboxMessage,
    ) -> Result<(), ToolError> {
        let _lock = self.inbox_lock(team, member)?;
        let path = self.inbox_file(team, member);
        let mut inbox: Vec<InboxMessage> = read_json(&path)?.unwrap_or_default();
        inbox.push(message);
        write_json(&path, &inbox)
    }

    /// Every message of a member's inbox, read or not.
    pub fn inbox(&self, team: &str, member: &str) -> Result<Vec<InboxMessage>, ToolError> {
        let _lock = self.inbox_lock(team, member)?;
        Ok(read_json(&self.inbox_file(team, member))?.unwrap_or_default())
    }

    /// The unread messages of a member's inbox, marked read.
    pub fn take_unread(&self, team: &str, member: &str) -> Result<Vec<InboxMessage>, ToolError> {
        let _lock = self.inbox_lock(team, member)?;
        let path = self.inbox_file(team, member);
        let Some(mut inbox) = read_json::<Vec<InboxMessage>>(&path)? else {
            return Ok(Vec::new());
        };
        let unread: Vec<InboxMessage> = inbox.iter().filter(|m| !m.read).cloned().collect();
        if !unread.is_empty() {
            for m in &mut inbox {
                m.read = true;
            }
            write_json(&path, &inbox)?;
        }
        Ok(unread)
    }
}

/// Takes the unread messages addressed to this context — the lead's inbox for the main
/// session of a team lead, the teammate's own inbox in a teammate's context — and marks them
/// read. Hosts call it between turns to show the lead what its teammates sent (render them
/// with [`render_messages`]); SendMessage, TeamCreate and TeamDelete also attach them to
/// their results. Empty when the context is in no team.
pub fn take_inbox(ctx: &ToolContext) -> Result<Vec<InboxMessage>, ToolError> {
    match sender(ctx) {
        Some((team, name)) => TeamStore::for_context(ctx).take_unread(&team, &name),
        None => Ok(Vec::new()),
    }
}

/// Takes a teammate's unread messages. An approved plan takes it out of plan mode (into
/// [`TeammateIdentity::after_plan`]).
pub(crate) async fn take_mail(
    ctx: &ToolContext,
    mate: &TeammateIdentity,
) -> Result<Vec<InboxMessage>, ToolError> {
    let store = TeamStore::for_context(ctx);
    let (team_name, name) = (mate.team_name.clone(), mate.name.clone());
    let mail = blocking(move || store.take_unread(&team_name, &name)).await?;
    if ctx.permission_mode() == PermissionMode::Plan
        && mail.iter().any(|m| {
            matches!(
                m.typed_message(),
                Some(TeamMessage::PlanApprovalResponse { approve: true, .. })
            )
        })
    {
        ctx.set_permission_mode(mate.after_plan);
    }
    Ok(mail)
}

/// Waits for a teammate's next messages; `None` when it was shut down meanwhile.
pub(crate) async fn wait_for_mail(
    ctx: &ToolContext,
    mate: &TeammateIdentity,
    cancel: &CancellationToken,
) -> Result<Option<Vec<InboxMessage>>, ToolError> {
    loop {
        let mail = take_mail(ctx, mate).await?;
        if !mail.is_empty() {
            return Ok(Some(mail));
        }
        tokio::select! {
            () = tokio::time::sleep(MAIL_POLL) => {}
            () = mate.exit.cancelled() => return Ok(None),
            () = cancel.cancelled() => return Err(ToolError::Cancelled { tool: "Agent".to_owned() }),
        }
    }
}

/// How often an idle teammate looks at its inbox (other processes may write it).
const MAIL_POLL: Duration = Duration::from_millis(100);

/// Tells the lead that a teammate ended its turn, with the turn's last words.
pub(crate) async fn notify_idle(ctx: &ToolContext, mate: &TeammateIdentity, last: &str) {
    let store = TeamStore::for_context(ctx);
    let (team_name, name) = (mate.team_name.clone(), mate.name.clone());
    let body = TeamMessage::IdleNotification {
        idle_reason: "available".to_owned(),
        summary: tool_core::cut_middle(last, 500),
    };
    let _ = blocking(move || {
        store.deliver(&team_name, TEAM_LEAD_NAME, InboxMessage::typed(name, body))
    })
    .await;
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::{Value, json};

    use super::{InboxMessage, TeamMessage};

    fn body(message: TeamMessage) -> String {
        InboxMessage::typed("alice", message).message.to_string()
    }

    /// The inbox files keep the field names and order the messages had when they were
    /// written as JSON literals; absent optional fields are left out.
    #[test]
    fn protocol_messages_keep_their_wire_form() {
        let cases = [
            (
                TeamMessage::ShutdownRequest {
                    request_id: "shutdown-1@bob".to_owned(),
                    from: "team-lead".to_owned(),
                    reason: Some("done".to_owned()),
                },
                json!({"type": "shutdown_request", "request_id": "shutdown-1@bob", "from": "team-lead", "reason": "done"}),
            ),
            (
                TeamMessage::ShutdownResponse {
                    request_id: "shutdown-1@bob".to_owned(),
                    approve: true,
                    reason: None,
                    from: "bob".to_owned(),
                },
                json!({"type": "shutdown_response", "request_id": "shutdown-1@bob", "approve": true, "from": "bob"}),
            ),
            (
                TeamMessage::PlanApprovalRequest {
                    request_id: "plan-1@bob".to_owned(),
                    from: "bob".to_owned(),
                    plan_file_path: PathBuf::from("/s/plans/p.md"),
                    plan: "1. Parse".to_owned(),
                    allowed_prompts: None,
                },
                json!({"type": "plan_approval_request", "request_id": "plan-1@bob", "from": "bob", "plan_file_path": "/s/plans/p.md", "plan": "1. Parse"}),
            ),
            (
                TeamMessage::PlanApprovalResponse {
                    request_id: "plan-1@bob".to_owned(),
                    approve: false,
                    feedback: Some("add tests".to_owned()),
                    from: "team-lead".to_owned(),
                },
                json!({"type": "plan_approval_response", "request_id": "plan-1@bob", "approve": false, "feedback": "add tests", "from": "team-lead"}),
            ),
            (
                TeamMessage::IdleNotification {
                    idle_reason: "available".to_owned(),
                    summary: "Done.".to_owned(),
                },
                json!({"type": "idle_notification", "idle_reason": "available", "summary": "Done."}),
            ),
            (
                TeamMessage::TeammateTerminated {
                    message: "bob finished".to_owned(),
                },
                json!({"type": "teammate_terminated", "message": "bob finished"}),
            ),
        ];
        for (message, expected) in cases {
            assert_eq!(body(message.clone()), expected.to_string());
            let read = InboxMessage::new("alice", expected, None);
            assert_eq!(read.typed_message(), Some(message));
        }
    }

    #[test]
    fn text_and_unknown_messages_are_not_protocol_messages() {
        let text = InboxMessage::text("alice", "hi".to_owned(), Some("greeting".to_owned()));
        assert_eq!(text.message, Value::String("hi".to_owned()));
        assert_eq!(text.typed_message(), None);
        let other = InboxMessage::new("alice", json!({"type": "something_else"}), None);
        assert_eq!(other.kind(), Some("something_else"));
        assert_eq!(other.typed_message(), None);
    }
}
