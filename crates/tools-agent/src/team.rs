//! SendMessage, TeamCreate and TeamDelete (reference §4.24, §4.25): teams and mailboxes on
//! disk under `<state>/teams/<team>/` — one team file (`config.json`) and one inbox file per
//! member (`inboxes/<name>.json`), every change written atomically under a file lock, so
//! several processes share them.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_core::{
    CancellationToken, ToolCategory, ToolContext, ToolError, ToolResult, TypedTool,
    ValidationResult,
};

use crate::store::{blocking, lock_file, read_json, safe_component, write_json};

/// The name of every team's lead in its team file and mailboxes.
pub const TEAM_LEAD_NAME: &str = "team-lead";
/// SendMessage with an empty `to` (reference error code 9, as all of SendMessage's).
pub const EMPTY_RECIPIENT: &str =
    "to must not be empty: name a teammate, \"*\" for every teammate, or an agentId";
/// SendMessage to a cross-session target (`uds:` or `bridge:`), which needs a transport
/// between sessions this library does not have.
pub const NO_CROSS_SESSION: &str = "cross-session targets (uds:, bridge:) are not supported here: send to a teammate name, \"*\" or an agentId of this session";
/// SendMessage with a string message and no summary.
pub const SUMMARY_REQUIRED: &str = "summary is required when message is a string";
/// SendMessage broadcasting a structured message.
pub const NO_STRUCTURED_BROADCAST: &str =
    "structured messages cannot be broadcast: send them to one teammate";
/// A shutdown_response sent to someone other than the lead.
pub const SHUTDOWN_RESPONSE_TO_LEAD: &str = "shutdown_response must be sent to \"team-lead\"";
/// A shutdown_response rejecting without a reason.
pub const REJECTION_NEEDS_REASON: &str = "reason is required when rejecting a shutdown request";
/// A plan_approval_response rejecting without feedback.
pub const PLAN_REJECTION_NEEDS_FEEDBACK: &str =
    "feedback is required when rejecting a plan: say what the teammate should change";
/// A plan_approval_response with an empty request_id.
pub const PLAN_REQUEST_ID_REQUIRED: &str =
    "request_id must not be empty: copy it from the teammate's plan_approval_request";
/// The first line of a teammate's ExitPlanMode result (reference §4.26).
pub const PLAN_SUBMITTED: &str = "Your plan has been submitted to the team lead for approval.";
const LOCK_FILE: &str = ".lock";

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Whether process `pid` still runs. Where `/proc` is not available every process counts as
/// alive (the safe answer for TeamDelete).
pub(crate) fn process_alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return true;
    }
    proc.join(pid.to_string()).exists()
}

/// One member of a team as the team file records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamMember {
    /// `name@team`
    pub agent_id: String,
    /// The name messages are addressed to
    pub name: String,
    /// The agent type it runs as
    pub agent_type: String,
    /// When it joined (ms since the epoch)
    pub joined_at: u64,
    /// Its working directory
    pub cwd: PathBuf,
    /// Whether it is running
    pub is_active: bool,
    /// The process it runs in; a member whose process is gone is not active whatever
    /// `isActive` says (a crashed host cannot block TeamDelete forever)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Its background task, for a teammate
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

impl TeamMember {
    /// Active and its process alive.
    pub fn is_running(&self) -> bool {
        self.is_active && self.pid.is_none_or(process_alive)
    }
}

/// A team file, `<state>/teams/<team>/config.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamFile {
    /// The team's name (its directory)
    pub name: String,
    /// What the team is for
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// When it was created (ms since the epoch)
    pub created_at: u64,
    /// `team-lead@<team>`
    pub lead_agent_id: String,
    /// The session that leads it
    pub lead_session_id: String,
    /// The lead first, then the teammates
    pub members: Vec<TeamMember>,
}

impl TeamFile {
    /// The member called `name` or with agent id `name`.
    pub fn member(&self, name: &str) -> Option<&TeamMember> {
        self.members
            .iter()
            .find(|m| m.name == name || m.agent_id == name)
    }

    /// Teammates (not the lead) that are running.
    pub fn active_teammates(&self) -> Vec<&TeamMember> {
        self.members
            .iter()
            .filter(|m| m.name != TEAM_LEAD_NAME && m.is_running())
            .collect()
    }
}

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

/// The teams of a state directory: `<state>/teams/`. Every operation takes a lock file
/// (the root's to create or delete a team, the team's for its team file, one per inbox),
/// and every write replaces the file atomically, so processes sharing the directory never
/// lose a message or a member.
#[derive(Debug, Clone)]
pub struct TeamStore {
    dir: PathBuf,
}

/// A team name as a directory name: lower case letters, digits and `-`.
pub(crate) fn team_slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_owned();
    if out.is_empty() {
        "team".to_owned()
    } else {
        out
    }
}

impl TeamStore {
    /// The store in `dir`.
    pub fn open(dir: impl Into<PathBuf>) -> Self {
        TeamStore { dir: dir.into() }
    }

    /// The store of this context's state directory.
    pub fn for_context(ctx: &ToolContext) -> Self {
        TeamStore::open(ctx.state_dir().join("teams"))
    }

    /// The directory of one team.
    pub fn team_dir(&self, team: &str) -> PathBuf {
        self.dir.join(safe_component(team))
    }

    /// The team file.
    pub fn team_file(&self, team: &str) -> PathBuf {
        self.team_dir(team).join("config.json")
    }

    /// A member's inbox file.
    pub fn inbox_file(&self, team: &str, member: &str) -> PathBuf {
        self.team_dir(team)
            .join("inboxes")
            .join(format!("{}.json", safe_component(member)))
    }

    fn inbox_lock(&self, team: &str, member: &str) -> Result<File, ToolError> {
        lock_file(
            &self
                .team_dir(team)
                .join("inboxes")
                .join(format!(".{}.lock", safe_component(member))),
        )
    }

    /// Every team (files that cannot be read are skipped).
    pub fn teams(&self) -> Vec<TeamFile> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut teams: Vec<TeamFile> = entries
            .flatten()
            .filter_map(|e| {
                read_json::<TeamFile>(&e.path().join("config.json"))
                    .ok()
                    .flatten()
            })
            .collect();
        teams.sort_by(|a, b| a.name.cmp(&b.name));
        teams
    }

    /// The team `session_id` leads, if any.
    pub fn led_by(&self, session_id: &str) -> Option<TeamFile> {
        self.teams()
            .into_iter()
            .find(|t| t.lead_session_id == session_id)
    }

    /// One team.
    pub fn load(&self, team: &str) -> Result<Option<TeamFile>, ToolError> {
        let _lock = lock_file(&self.team_dir(team).join(LOCK_FILE))?;
        read_json(&self.team_file(team))
    }

    /// Creates a team led by `lead_session_id`. Refuses when that session already leads
    /// one; when the name is taken, the team gets the next free `<name>-N`.
    pub fn create(
        &self,
        name: &str,
        description: Option<String>,
        lead_session_id: &str,
        lead_agent_type: &str,
        cwd: &Path,
    ) -> Result<TeamFile, ToolError> {
        let _root = lock_file(&self.dir.join(LOCK_FILE))?;
        if let Some(existing) = self.led_by(lead_session_id) {
            return Err(ToolError::respond(format!(
                "Already leading team \"{}\". A leader can only manage one team at a time. Use TeamDelete to end the current team before creating a new one.",
                existing.name
            )));
        }
        let base = team_slug(name);
        let mut slug = base.clone();
        let mut n = 2;
        while self.team_dir(&slug).exists() {
            slug = format!("{base}-{n}");
            n += 1;
        }
        let team = TeamFile {
            name: slug.clone(),
            description,
            created_at: now_ms(),
            lead_agent_id: format!("{TEAM_LEAD_NAME}@{slug}"),
            lead_session_id: lead_session_id.to_owned(),
            members: vec![TeamMember {
                agent_id: format!("{TEAM_LEAD_NAME}@{slug}"),
                name: TEAM_LEAD_NAME.to_owned(),
                agent_type: lead_agent_type.to_owned(),
                joined_at: now_ms(),
                cwd: cwd.to_path_buf(),
                is_active: true,
                pid: Some(std::process::id()),
                task_id: None,
            }],
        };
        let _lock = lock_file(&self.team_dir(&slug).join(LOCK_FILE))?;
        write_json(&self.team_file(&slug), &team)?;
        Ok(team)
    }

    /// Changes a team file under its lock; `f` may refuse with an error (nothing is written).
    pub fn update<T>(
        &self,
        team: &str,
        f: impl FnOnce(&mut TeamFile) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let _lock = lock_file(&self.team_dir(team).join(LOCK_FILE))?;
        let mut file: TeamFile = read_json(&self.team_file(team))?.ok_or_else(|| {
            ToolError::respond(format!(
                "Team \"{team}\" does not exist: create it with TeamCreate"
            ))
        })?;
        let out = f(&mut file)?;
        write_json(&self.team_file(team), &file)?;
        Ok(out)
    }

    /// Marks a member active or not.
    pub fn set_active(&self, team: &str, member: &str, active: bool) -> Result<(), ToolError> {
        self.update(team, |t| {
            if let Some(m) = t.members.iter_mut().find(|m| m.name == member) {
                m.is_active = active;
            }
            Ok(())
        })
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

    fn plan_requests_file(&self, team: &str) -> PathBuf {
        self.team_dir(team).join("plan_requests.json")
    }

    fn plan_requests_lock(&self, team: &str) -> Result<File, ToolError> {
        lock_file(&self.team_dir(team).join(".plan_requests.lock"))
    }

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

    /// Deletes a team and its mailboxes; refuses while teammates run.
    pub fn delete(&self, team: &str) -> Result<usize, ToolError> {
        let _root = lock_file(&self.dir.join(LOCK_FILE))?;
        let inboxes = {
            let _lock = lock_file(&self.team_dir(team).join(LOCK_FILE))?;
            let Some(file) = read_json::<TeamFile>(&self.team_file(team))? else {
                return Ok(0);
            };
            let active = file.active_teammates();
            if !active.is_empty() {
                let names: Vec<&str> = active.iter().map(|m| m.name.as_str()).collect();
                return Err(ToolError::respond(format!(
                    "Cannot cleanup team with {} active member(s): {}. Use requestShutdown to gracefully terminate teammates first.",
                    active.len(),
                    names.join(", ")
                )));
            }
            std::fs::read_dir(self.team_dir(team).join("inboxes"))
                .map(|d| {
                    d.flatten()
                        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                        .count()
                })
                .unwrap_or(0)
        };
        let dir = self.team_dir(team);
        std::fs::remove_dir_all(&dir).map_err(|e| ToolError::io(&dir, e))?;
        Ok(inboxes)
    }
}

/// Marks a context as a teammate's: the Agent tool puts an `Arc<TeammateIdentity>` in the
/// services of a teammate's context.
#[derive(Debug, Clone)]
pub struct TeammateIdentity {
    /// The team
    pub team_name: String,
    /// Its name in the team
    pub name: String,
    /// `name@team`
    pub agent_id: String,
    /// Fired when the teammate approved a shutdown request: its run ends after the current
    /// tool round
    pub exit: CancellationToken,
    /// The mode a teammate in plan mode switches to when the lead approves its plan (the
    /// lead's mode when it spawned the teammate; default when that was plan)
    pub after_plan: tool_core::PermissionMode,
}

pub(crate) fn teammate(ctx: &ToolContext) -> Option<Arc<TeammateIdentity>> {
    ctx.services().get::<Arc<TeammateIdentity>>()
}

/// Who sends from this context: `(team, name)`. A teammate is itself; the main session is
/// `team-lead` of the team it leads.
pub(crate) fn sender(ctx: &ToolContext) -> Option<(String, String)> {
    if let Some(t) = teammate(ctx) {
        return Some((t.team_name.clone(), t.name.clone()));
    }
    if crate::store::agent_id(ctx).is_some() {
        return None;
    }
    TeamStore::for_context(ctx)
        .led_by(ctx.session_id())
        .map(|t| (t.name, TEAM_LEAD_NAME.to_owned()))
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

/// Attaches the lead's unread messages to a result as one side message; `me` is the
/// context's [`sender`], which the caller has looked up already.
async fn with_inbox<T>(
    result: ToolResult<T>,
    ctx: &ToolContext,
    me: Option<(String, String)>,
) -> ToolResult<T> {
    // A teammate's runner delivers its inbox between turns.
    let (Some((team, name)), None) = (me, teammate(ctx)) else {
        return result;
    };
    let store = TeamStore::for_context(ctx);
    match blocking(move || store.take_unread(&team, &name)).await {
        Ok(messages) if !messages.is_empty() => result.with_side_message(format!(
            "New messages from your teammates:\n{}",
            render_messages(&messages)
        )),
        _ => result,
    }
}

/// A structured message of SendMessage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum StructuredMessage {
    /// Ask a teammate to finish and exit
    ShutdownRequest {
        /// Why
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A teammate's answer to a shutdown request (to "team-lead" only)
    ShutdownResponse {
        /// The request's id
        request_id: String,
        /// true to exit now, false to keep working
        approve: bool,
        /// Why; required when rejecting
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The lead's answer to a teammate's plan approval request
    PlanApprovalResponse {
        /// The request_id of the teammate's plan_approval_request
        request_id: String,
        /// true to approve the plan (the teammate leaves plan mode)
        approve: bool,
        /// What to change; required when rejecting
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
    },
}

/// What SendMessage sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MessageBody {
    /// Plain text
    Text(String),
    /// A protocol message
    Structured(StructuredMessage),
}

/// Input of SendMessage.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessageInput {
    /// The recipient: a teammate's name, "*" for every teammate, or the agentId an Agent
    /// result gave (to continue that agent)
    pub to: String,
    /// A 5-10 word preview of the message; required when message is a string
    #[serde(default)]
    pub summary: Option<String>,
    /// A plain-text message, or a structured message: {"type": "shutdown_request",
    /// "reason"?}, {"type": "shutdown_response", "request_id", "approve", "reason"?} or
    /// {"type": "plan_approval_response", "request_id", "approve", "feedback"?}
    pub message: MessageBody,
}

/// Output of SendMessage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageOutput {
    /// Whether it was delivered
    pub success: bool,
    /// What happened
    pub message: String,
    /// Who received it
    pub recipients: Vec<String>,
    /// The id of a shutdown request
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// The SendMessage tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct SendMessage;

/// A delivered SendMessage result whose text is `message`.
pub(crate) fn sent(
    message: String,
    recipients: Vec<String>,
    request_id: Option<String>,
) -> ToolResult<SendMessageOutput> {
    ToolResult::ok(SendMessageOutput {
        success: true,
        message: message.clone(),
        recipients,
        request_id,
    })
    .with_text(message)
}

#[async_trait]
impl TypedTool for SendMessage {
    type Input = SendMessageInput;
    type Output = SendMessageOutput;

    fn name(&self) -> &'static str {
        "SendMessage"
    }
    fn search_hint(&self) -> Option<&'static str> {
        Some("send messages to agent teammates (swarm protocol)")
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::AgentSwarm
    }
    fn is_deferred(&self) -> bool {
        true
    }
    async fn description(&self, _input: Option<&SendMessageInput>) -> String {
        "Send a message to a teammate of your team, or to an agent you launched.\n\n- `to`: a teammate's name, \"*\" to broadcast to every teammate (not yourself; use it sparingly: it costs every teammate a turn), or the agentId an Agent result gave (the agent continues with your message, in the background if it had finished).\n- `message`: plain text with a short `summary` (5-10 words, shown as a preview), or a structured message: {\"type\": \"shutdown_request\", \"reason\"} asks a teammate to finish; a teammate answers {\"type\": \"shutdown_response\", \"request_id\", \"approve\", \"reason\"} to \"team-lead\" (approving ends it; rejecting needs a reason); a teammate in plan mode asks the lead to approve its plan (a plan_approval_request in the lead's messages), and the lead answers {\"type\": \"plan_approval_response\", \"request_id\", \"approve\", \"feedback\"} to that teammate (approving lets it implement; rejecting needs feedback and keeps it planning).\n\nYour plain text output is not visible to your teammates: to reach them you must call this tool. Messages from teammates arrive automatically; you do not need to poll.".to_owned()
    }
    fn is_concurrency_safe(&self, input: &SendMessageInput) -> bool {
        matches!(input.message, MessageBody::Text(_))
    }
    fn is_read_only(&self, input: &SendMessageInput) -> bool {
        matches!(input.message, MessageBody::Text(_))
    }
    async fn validate(&self, input: &SendMessageInput, _ctx: &ToolContext) -> ValidationResult {
        let to = input.to.trim();
        if to.is_empty() {
            return ValidationResult::invalid_code(EMPTY_RECIPIENT, 9);
        }
        // The reference delivers these over a Unix socket or a remote bridge (and asks before
        // a bridge message, which arrives as a user prompt elsewhere); refuse them plainly
        // rather than reading them as a teammate's name.
        if to.starts_with("uds:") || to.starts_with("bridge:") {
            return ValidationResult::invalid_code(NO_CROSS_SESSION, 9);
        }
        match &input.message {
            MessageBody::Text(_) => {
                if input.summary.as_deref().is_none_or(|s| s.trim().is_empty()) {
                    return ValidationResult::invalid_code(SUMMARY_REQUIRED, 9);
                }
            }
            MessageBody::Structured(structured) => {
                if to == "*" {
                    return ValidationResult::invalid_code(NO_STRUCTURED_BROADCAST, 9);
                }
                match structured {
                    StructuredMessage::ShutdownResponse {
                        approve, reason, ..
                    } => {
                        if to != TEAM_LEAD_NAME {
                            return ValidationResult::invalid_code(SHUTDOWN_RESPONSE_TO_LEAD, 9);
                        }
                        if !approve && reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                            return ValidationResult::invalid_code(REJECTION_NEEDS_REASON, 9);
                        }
                    }
                    StructuredMessage::PlanApprovalResponse {
                        request_id,
                        approve,
                        feedback,
                    } => {
                        if request_id.trim().is_empty() {
                            return ValidationResult::invalid_code(PLAN_REQUEST_ID_REQUIRED, 9);
                        }
                        if !approve && feedback.as_deref().is_none_or(|f| f.trim().is_empty()) {
                            return ValidationResult::invalid_code(
                                PLAN_REJECTION_NEEDS_FEEDBACK,
                                9,
                            );
                        }
                    }
                    StructuredMessage::ShutdownRequest { .. } => {}
                }
            }
        }
        ValidationResult::Valid
    }
    async fn call(
        &self,
        input: SendMessageInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<SendMessageOutput>, ToolError> {
        let to = input.to.trim().to_owned();
        let store = TeamStore::for_context(ctx);
        let me = {
            let ctx = ctx.clone();
            blocking(move || Ok(sender(&ctx))).await?
        };
        let team = match &me {
            Some((team, _)) => {
                let (store, team) = (store.clone(), team.clone());
                blocking(move || store.load(&team)).await?
            }
            None => None,
        };
        let is_member = team
            .as_ref()
            .is_some_and(|t| to == "*" || t.member(&to).is_some());
        if !is_member {
            if let Some(result) = crate::runs::send_to_agent(&to, &input, ctx).await? {
                return Ok(with_inbox(result, ctx, me).await);
            }
            return Err(ToolError::respond(match &team {
                Some(t) => format!(
                    "\"{to}\" is not a member of team \"{}\" nor an agent id of this session. Members: {}",
                    t.name,
                    t.members
                        .iter()
                        .map(|m| m.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => format!(
                    "\"{to}\" is not an agent id of this session, and this session is in no team: create a team with TeamCreate and spawn teammates with Agent (name, team_name), or use the agentId an Agent result gave."
                ),
            }));
        }
        let (Some((_, from)), Some(team)) = (&me, team) else {
            return Err(ToolError::fatal("internal error: team vanished"));
        };
        let result = deliver(&store, &team, from, &to, input, ctx).await?;
        Ok(with_inbox(result, ctx, me).await)
    }
}

async fn deliver(
    store: &TeamStore,
    team: &TeamFile,
    from: &str,
    to: &str,
    input: SendMessageInput,
    ctx: &ToolContext,
) -> Result<ToolResult<SendMessageOutput>, ToolError> {
    let team_name = team.name.clone();
    let recipient = team.member(to).map(|m| m.name.clone());
    let send = |member: String, message: InboxMessage| {
        let (store, team_name) = (store.clone(), team_name.clone());
        blocking(move || store.deliver(&team_name, &member, message))
    };
    match input.message {
        MessageBody::Text(text) => {
            let summary = input.summary.map(|s| s.trim().to_owned());
            if to == "*" {
                let recipients: Vec<String> = team
                    .members
                    .iter()
                    .filter(|m| m.name != from)
                    .map(|m| m.name.clone())
                    .collect();
                if recipients.is_empty() {
                    return Ok(sent(
                        "No teammates to broadcast to (you are the only team member)".to_owned(),
                        Vec::new(),
                        None,
                    ));
                }
                for r in &recipients {
                    send(
                        r.clone(),
                        InboxMessage::text(from, text.clone(), summary.clone()),
                    )
                    .await?;
                }
                let message = format!(
                    "Message broadcast to {} teammate(s): {}",
                    recipients.len(),
                    recipients.join(", ")
                );
                return Ok(sent(message, recipients, None));
            }
            let name = recipient.unwrap_or_else(|| to.to_owned());
            if name == from {
                return Err(ToolError::respond(
                    "You cannot send a message to yourself: name another teammate",
                ));
            }
            send(name.clone(), InboxMessage::text(from, text, summary)).await?;
            let stopped = team
                .member(&name)
                .is_some_and(|m| m.name != TEAM_LEAD_NAME && !m.is_running());
            let text = if stopped {
                format!(
                    "Message sent to {name}'s inbox. {name} is not running: it reads the message only if you spawn it again with the same name and team."
                )
            } else {
                format!("Message sent to {name}'s inbox")
            };
            Ok(sent(text, vec![name], None))
        }
        MessageBody::Structured(structured) => {
            let name = recipient.unwrap_or_else(|| to.to_owned());
            match structured {
                StructuredMessage::ShutdownRequest { reason } => {
                    if name == from || name == TEAM_LEAD_NAME {
                        return Err(ToolError::respond(format!(
                            "A shutdown_request goes to a teammate, not to {name}: name the teammate that should finish"
                        )));
                    }
                    let request_id = format!("shutdown-{}@{name}", now_ms());
                    let body = TeamMessage::ShutdownRequest {
                        request_id: request_id.clone(),
                        from: from.to_owned(),
                        reason,
                    };
                    send(name.clone(), InboxMessage::typed(from, body)).await?;
                    Ok(sent(
                        format!("Shutdown request sent to {name}. Request ID: {request_id}"),
                        vec![name],
                        Some(request_id),
                    ))
                }
                StructuredMessage::ShutdownResponse {
                    request_id,
                    approve,
                    reason,
                } => {
                    let Some(me) = teammate(ctx) else {
                        return Err(ToolError::respond(
                            "Only a teammate answers a shutdown request: the team lead ends teammates with shutdown_request",
                        ));
                    };
                    let body = TeamMessage::ShutdownResponse {
                        request_id: request_id.clone(),
                        approve,
                        reason: reason.clone(),
                        from: from.to_owned(),
                    };
                    send(TEAM_LEAD_NAME.to_owned(), InboxMessage::typed(from, body)).await?;
                    if approve {
                        me.exit.cancel();
                        Ok(sent(
                            format!(
                                "Shutdown approved. Sent confirmation to {TEAM_LEAD_NAME}. Agent {from} is now exiting."
                            ),
                            vec![TEAM_LEAD_NAME.to_owned()],
                            Some(request_id),
                        ))
                    } else {
                        Ok(sent(
                            format!(
                                "Shutdown rejected. Reason: \"{}\". Continuing to work.",
                                reason.unwrap_or_default().trim()
                            ),
                            vec![TEAM_LEAD_NAME.to_owned()],
                            Some(request_id),
                        ))
                    }
                }
                StructuredMessage::PlanApprovalResponse {
                    request_id,
                    approve,
                    feedback,
                } => {
                    if from != TEAM_LEAD_NAME {
                        return Err(ToolError::respond(
                            "Only the team lead can approve or reject a teammate's plan",
                        ));
                    }
                    if name == TEAM_LEAD_NAME {
                        return Err(ToolError::respond(
                            "A plan_approval_response goes to the teammate that asked for approval",
                        ));
                    }
                    let request_id = request_id.trim().to_owned();
                    let feedback = feedback
                        .map(|f| f.trim().to_owned())
                        .filter(|f| !f.is_empty());
                    let body = TeamMessage::PlanApprovalResponse {
                        request_id: request_id.clone(),
                        approve,
                        feedback: feedback.clone(),
                        from: from.to_owned(),
                    };
                    {
                        let (store, team_name, name, id) = (
                            store.clone(),
                            team_name.clone(),
                            name.clone(),
                            request_id.clone(),
                        );
                        let message = InboxMessage::typed(from, body);
                        blocking(move || {
                            store.answer_plan_request(&team_name, &name, &id, message)
                        })
                        .await?;
                    }
                    let text = if approve {
                        format!(
                            "Plan approved for {name}. They will receive the approval and can proceed with implementation."
                        )
                    } else {
                        format!(
                            "Plan rejected for {name} with feedback: \"{}\". They stay in plan mode, revise the plan and send a new request.",
                            feedback.unwrap_or_default()
                        )
                    };
                    Ok(sent(text, vec![name], Some(request_id)))
                }
            }
        }
    }
}

/// Input of TeamCreate.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeamCreateInput {
    /// A name for the team (letters, digits and "-"; another team's name gets a suffix)
    #[schemars(length(min = 1))]
    pub team_name: String,
    /// What the team is for
    #[serde(default)]
    pub description: Option<String>,
    /// The lead's agent type (default "team-lead")
    #[serde(default)]
    pub agent_type: Option<String>,
}

/// Output of TeamCreate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TeamCreateOutput {
    /// The team's name (a new slug when the one asked for was taken)
    pub team_name: String,
    /// The team file
    pub team_file_path: PathBuf,
    /// The lead's agent id
    pub lead_agent_id: String,
}

/// The TeamCreate tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TeamCreate;

#[async_trait]
impl TypedTool for TeamCreate {
    type Input = TeamCreateInput;
    type Output = TeamCreateOutput;

    fn name(&self) -> &'static str {
        "TeamCreate"
    }
    fn search_hint(&self) -> Option<&'static str> {
        Some("create a team of agents that message each other")
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::AgentSwarm
    }
    fn is_deferred(&self) -> bool {
        true
    }
    async fn description(&self, _input: Option<&TeamCreateInput>) -> String {
        "Create a team that you lead, for work that several agents do in parallel and coordinate by messages. Then spawn teammates with the Agent tool (give `name` and `team_name`): each runs in the background with its own mailbox; talk to them with SendMessage, and their messages reach you automatically. One team per leader: use TeamDelete when the work is done (after every teammate has shut down) before creating another. The result gives the team's name (changed when the name was taken), its team file and your agent id.".to_owned()
    }
    fn is_concurrency_safe(&self, _input: &TeamCreateInput) -> bool {
        false
    }
    fn is_read_only(&self, _input: &TeamCreateInput) -> bool {
        false
    }
    async fn validate(&self, input: &TeamCreateInput, ctx: &ToolContext) -> ValidationResult {
        if input.team_name.trim().is_empty() {
            return ValidationResult::invalid("team_name must not be empty: name the team");
        }
        if crate::store::agent_id(ctx).is_some() {
            return ValidationResult::invalid(
                "Only the main session can create a team: teammates and sub-agents cannot lead one",
            );
        }
        ValidationResult::Valid
    }
    async fn call(
        &self,
        input: TeamCreateInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<TeamCreateOutput>, ToolError> {
        let store = TeamStore::for_context(ctx);
        let session = ctx.session_id().to_owned();
        let cwd = ctx.cwd();
        let team = {
            let store = store.clone();
            blocking(move || {
                store.create(
                    &input.team_name,
                    input.description.filter(|d| !d.trim().is_empty()),
                    &session,
                    input.agent_type.as_deref().unwrap_or(TEAM_LEAD_NAME),
                    &cwd,
                )
            })
            .await?
        };
        let out = TeamCreateOutput {
            team_file_path: store.team_file(&team.name),
            team_name: team.name,
            lead_agent_id: team.lead_agent_id,
        };
        let text = serde_json::to_string(&out)
            .map_err(|e| ToolError::fatal(format!("internal error: {e}")))?;
        let me = Some((out.team_name.clone(), TEAM_LEAD_NAME.to_owned()));
        Ok(with_inbox(ToolResult::ok(out).with_text(text), ctx, me).await)
    }
}

/// Input of TeamDelete (none).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeamDeleteInput {}

/// Output of TeamDelete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TeamDeleteOutput {
    /// Whether a team was deleted
    pub success: bool,
    /// What happened
    pub message: String,
    /// The team, if there was one
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_name: Option<String>,
}

/// The TeamDelete tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TeamDelete;

#[async_trait]
impl TypedTool for TeamDelete {
    type Input = TeamDeleteInput;
    type Output = TeamDeleteOutput;

    fn name(&self) -> &'static str {
        "TeamDelete"
    }
    fn search_hint(&self) -> Option<&'static str> {
        Some("delete the team and its mailboxes when the work is done")
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::AgentSwarm
    }
    fn is_deferred(&self) -> bool {
        true
    }
    async fn description(&self, _input: Option<&TeamDeleteInput>) -> String {
        "Delete the team you lead: its team file and every mailbox. It refuses while teammates are still running: first ask each to finish with SendMessage {\"type\": \"shutdown_request\"} and wait for their shutdown_response.".to_owned()
    }
    fn is_concurrency_safe(&self, _input: &TeamDeleteInput) -> bool {
        false
    }
    fn is_read_only(&self, _input: &TeamDeleteInput) -> bool {
        false
    }
    async fn validate(&self, _input: &TeamDeleteInput, ctx: &ToolContext) -> ValidationResult {
        if crate::store::agent_id(ctx).is_some() {
            return ValidationResult::invalid(
                "Only the team lead can delete the team: teammates and sub-agents cannot",
            );
        }
        ValidationResult::Valid
    }
    async fn call(
        &self,
        _input: TeamDeleteInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<TeamDeleteOutput>, ToolError> {
        let store = TeamStore::for_context(ctx);
        let session = ctx.session_id().to_owned();
        let Some(team) = ({
            let store = store.clone();
            blocking(move || Ok(store.led_by(&session))).await?
        }) else {
            let message = "No team to delete: this session does not lead a team.".to_owned();
            return Ok(ToolResult::ok(TeamDeleteOutput {
                success: true,
                message: message.clone(),
                team_name: None,
            })
            .with_text(message));
        };
        // The lead's unread messages are shown before they are deleted with the team. They
        // are read, not taken: when the deletion is refused they stay unread for later.
        let pending = {
            let (store, name) = (store.clone(), team.name.clone());
            blocking(move || store.inbox(&name, TEAM_LEAD_NAME))
                .await
                .unwrap_or_default()
                .into_iter()
                .filter(|m| !m.read)
                .collect::<Vec<_>>()
        };
        let name = team.name.clone();
        let tasks = ctx
            .state_dir()
            .join("tasks")
            .join(safe_component(&team.name));
        let inboxes = blocking(move || {
            let inboxes = store.delete(&name)?;
            // The team's shared task list goes with it.
            if tasks.is_dir() {
                std::fs::remove_dir_all(&tasks).map_err(|e| ToolError::io(&tasks, e))?;
            }
            Ok(inboxes)
        })
        .await?;
        let message = format!(
            "Cleaned up team \"{}\": its team file, {inboxes} mailbox(es) and its task list were deleted.",
            team.name
        );
        let mut result = ToolResult::ok(TeamDeleteOutput {
            success: true,
            message: message.clone(),
            team_name: Some(team.name),
        })
        .with_text(message);
        if !pending.is_empty() {
            result = result.with_side_message(format!(
                "New messages from your teammates:\n{}",
                render_messages(&pending)
            ));
        }
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slugs() {
        assert_eq!(team_slug("My Team!"), "my-team");
        assert_eq!(team_slug("  "), "team");
        assert_eq!(team_slug("a__b"), "a-b");
    }

    #[test]
    fn create_collides_and_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let store = TeamStore::open(dir.path());
        let a = store
            .create("alpha", None, "s1", "lead", dir.path())
            .unwrap();
        assert_eq!(a.name, "alpha");
        let err = store
            .create("beta", None, "s1", "lead", dir.path())
            .unwrap_err();
        assert!(
            err.to_string().contains("Already leading team \"alpha\""),
            "{err}"
        );
        let b = store
            .create("alpha", None, "s2", "lead", dir.path())
            .unwrap();
        assert_eq!(b.name, "alpha-2");
        store
            .deliver(
                "alpha",
                "team-lead",
                InboxMessage::new("x", json!("hi"), None),
            )
            .unwrap();
        assert_eq!(store.take_unread("alpha", "team-lead").unwrap().len(), 1);
        assert!(store.take_unread("alpha", "team-lead").unwrap().is_empty());
        assert_eq!(store.inbox("alpha", "team-lead").unwrap().len(), 1);
        assert_eq!(store.delete("alpha").unwrap(), 1);
        assert!(!store.team_dir("alpha").exists());
    }

    #[test]
    fn plan_requests_are_answered_once_and_replaced_by_newer_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = TeamStore::open(dir.path());
        store.create("t", None, "s", "lead", dir.path()).unwrap();
        let file = Path::new("/plans/a.md");
        let answer = |id: &str| {
            store.answer_plan_request(
                "t",
                "a",
                id,
                InboxMessage::new(
                    TEAM_LEAD_NAME,
                    json!({"type": "plan_approval_response"}),
                    None,
                ),
            )
        };
        let check = |id: &str, expected: &str| {
            let err = answer(id).unwrap_err().to_string();
            assert!(
                err.contains(&format!(
                    "request_id \"{id}\" does not match a pending plan approval request: {expected}"
                )),
                "{err}"
            );
        };
        check("plan-0@a", "a has no plan waiting for approval");
        let first = store
            .request_plan_approval("t", "a", "p1", file, None)
            .unwrap();
        let second = store
            .request_plan_approval("t", "a", "p2", file, None)
            .unwrap();
        assert_ne!(first, second);
        // The newer request replaces the older one; the lead got both messages.
        assert_eq!(store.pending_plan_requests("t").unwrap().len(), 1);
        assert_eq!(store.inbox("t", TEAM_LEAD_NAME).unwrap().len(), 2);
        check(
            &first,
            &format!("a's plan waiting for approval is \"{second}\""),
        );
        let b = store
            .request_plan_approval("t", "b", "pb", file, None)
            .unwrap();
        check(&b, "it is b's request, not a's: send the response to b");
        assert!(store.inbox("t", "a").unwrap().is_empty());
        answer(&second).unwrap();
        assert_eq!(store.inbox("t", "a").unwrap().len(), 1);
        check(&second, "a has no plan waiting for approval");
        assert_eq!(store.pending_plan_requests("t").unwrap()[0].from, "b");
    }

    #[test]
    fn dead_processes_are_not_active() {
        let member = TeamMember {
            agent_id: "a@t".into(),
            name: "a".into(),
            agent_type: "general-purpose".into(),
            joined_at: 0,
            cwd: PathBuf::from("/"),
            is_active: true,
            pid: Some(u32::MAX - 1),
            task_id: None,
        };
        assert!(!member.is_running() || !Path::new("/proc/self").exists());
        let alive = TeamMember {
            pid: Some(std::process::id()),
            ..member
        };
        assert!(alive.is_running());
    }
}
