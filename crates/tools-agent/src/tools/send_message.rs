//! SendMessage: plain text or a protocol message to a teammate's inbox (or to every
//! teammate), or a message to a sub-agent this session launched — queued for its next tool
//! round while it runs, or resuming it in the background from its transcript.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    CancellationToken, PermissionDecision, TaskKind, TaskRun, TaskSpec, ToolCategory, ToolContext,
    ToolError, ToolMeta, ToolResult, TypedTool, ValidationResult,
};

use crate::runners::agent_types::{load_agents, tools_for_agent};
use crate::runners::{
    AgentRequest, AgentRunner, available_tools, finish_task, subagent_context_in,
};
use crate::stores::mailbox::{InboxMessage, TeamMessage};
use crate::stores::state::{blocking, now_ms};
use crate::stores::team_files::{TEAM_LEAD_NAME, TeamFile, TeamStore, sender, teammate};
use crate::stores::transcripts::{AgentRun, RunStore, resumable};
use crate::tools::agent::{CheckedDir, check_agent_dir};
use crate::tools::team::with_inbox;

/// What a resumed agent's working directory is called in its permission question.
const RESUMED_DIR: &str = "the stopped agent's working directory";

/// SendMessage with an empty `to` (validation error code 9, as all of SendMessage's).
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
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub to: String,
    /// A 5-10 word preview of the message; required when message is a string
    #[serde(default)]
    pub summary: Option<String>,
    /// A plain-text message, or a structured message: {"type": "shutdown_request",
    /// "reason"?}, {"type": "shutdown_response", "request_id", "approve", "reason"?} or
    /// {"type": "plan_approval_response", "request_id", "approve", "feedback"?}
    pub message: MessageBody,
    /// The working directory of a stopped agent this message resumes, as the permission
    /// check approved it
    #[serde(skip)]
    #[schemars(skip)]
    checked_dir: CheckedDir,
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
    const META: ToolMeta = ToolMeta::new("SendMessage")
        .describe("Send a message to a teammate of your team, or to an agent you launched.\n\n- `to`: a teammate's name, \"*\" to broadcast to every teammate (not yourself; use it sparingly: it costs every teammate a turn), or the agentId an Agent result gave (the agent continues with your message, in the background if it had finished).\n- `message`: plain text with a short `summary` (5-10 words, shown as a preview), or a structured message: {\"type\": \"shutdown_request\", \"reason\"} asks a teammate to finish; a teammate answers {\"type\": \"shutdown_response\", \"request_id\", \"approve\", \"reason\"} to \"team-lead\" (approving ends it; rejecting needs a reason); a teammate in plan mode asks the lead to approve its plan (a plan_approval_request in the lead's messages), and the lead answers {\"type\": \"plan_approval_response\", \"request_id\", \"approve\", \"feedback\"} to that teammate (approving lets it implement; rejecting needs feedback and keeps it planning).\n\nYour plain text output is not visible to your teammates: to reach them you must call this tool. Messages from teammates arrive automatically; you do not need to poll.")
        .hint("send messages to agent teammates (swarm protocol)")
        .category(ToolCategory::AgentSwarm)
        .deferred();

    fn is_concurrency_safe(&self, input: &SendMessageInput) -> bool {
        matches!(input.message, MessageBody::Text(_))
    }
    fn is_read_only(&self, input: &SendMessageInput) -> bool {
        matches!(input.message, MessageBody::Text(_))
    }
    /// Resuming a stopped sub-agent is checked like starting one in its working directory:
    /// outside the caller's working directories it asks.
    async fn check_permission(
        &self,
        input: &SendMessageInput,
        ctx: &ToolContext,
    ) -> PermissionDecision {
        if !matches!(input.message, MessageBody::Text(_)) {
            return PermissionDecision::Allow;
        }
        let (runs, to, session) = (
            RunStore::for_context(ctx),
            input.to.trim().to_owned(),
            ctx.session_id().to_owned(),
        );
        let found = blocking(move || {
            Ok(runs
                .resolve(&to)
                .and_then(|id| runs.load(&id).ok().flatten()))
        })
        .await
        .ok()
        .flatten()
        .filter(|r| r.parent_session_id == session && !r.is_running());
        let Some(run) = found else {
            return PermissionDecision::Allow;
        };
        let decision = check_agent_dir(&run.cwd, RESUMED_DIR, ctx);
        input.checked_dir.set(run.cwd);
        decision
    }
    async fn validate(&self, input: &SendMessageInput, _ctx: &ToolContext) -> ValidationResult {
        let to = input.to.trim();
        if to.is_empty() {
            return ValidationResult::invalid_code(EMPTY_RECIPIENT, 9);
        }
        // These targets need a transport between sessions (a Unix socket or a remote bridge)
        // that this library does not have; refuse them plainly rather than reading them as a
        // teammate's name.
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
            if let Some(result) = send_to_agent(&to, &input, ctx).await? {
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
    let recipient = team.member(to).map(|m| m.name.clone());
    match input.message {
        MessageBody::Text(text) => {
            let summary = input.summary.map(|s| s.trim().to_owned());
            deliver_text(store, team, from, to, recipient, text, summary).await
        }
        MessageBody::Structured(structured) => {
            let name = recipient.unwrap_or_else(|| to.to_owned());
            deliver_structured(store, team, from, name, structured, ctx).await
        }
    }
}

/// Plain text to one member's inbox, or to every member but the sender (`*`).
async fn deliver_text(
    store: &TeamStore,
    team: &TeamFile,
    from: &str,
    to: &str,
    recipient: Option<String>,
    text: String,
    summary: Option<String>,
) -> Result<ToolResult<SendMessageOutput>, ToolError> {
    let send = |member: String, message: InboxMessage| {
        let (store, team_name) = (store.clone(), team.name.clone());
        blocking(move || store.deliver(&team_name, &member, message))
    };
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

/// A protocol message: a shutdown request or response, or the lead's answer to a plan.
async fn deliver_structured(
    store: &TeamStore,
    team: &TeamFile,
    from: &str,
    name: String,
    structured: StructuredMessage,
    ctx: &ToolContext,
) -> Result<ToolResult<SendMessageOutput>, ToolError> {
    let send = |member: String, message: InboxMessage| {
        let (store, team_name) = (store.clone(), team.name.clone());
        blocking(move || store.deliver(&team_name, &member, message))
    };
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
        } => answer_plan(store, team, from, name, request_id, approve, feedback).await,
    }
}

/// The lead's `plan_approval_response`: it answers a pending request of the teammate.
async fn answer_plan(
    store: &TeamStore,
    team: &TeamFile,
    from: &str,
    name: String,
    request_id: String,
    approve: bool,
    feedback: Option<String>,
) -> Result<ToolResult<SendMessageOutput>, ToolError> {
    let team_name = team.name.clone();
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
        blocking(move || store.answer_plan_request(&team_name, &name, &id, message)).await?;
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

/// SendMessage to a sub-agent's id (or its background task's id): queues the message while
/// it runs, resumes it in the background when it has stopped. `Ok(None)` when `to` is not
/// a sub-agent this session launched with a transcript.
pub(crate) async fn send_to_agent(
    to: &str,
    input: &SendMessageInput,
    ctx: &ToolContext,
) -> Result<Option<ToolResult<SendMessageOutput>>, ToolError> {
    let runs = RunStore::for_context(ctx);
    let session = ctx.session_id().to_owned();
    let lookup = {
        let (runs, to) = (runs.clone(), to.to_owned());
        blocking(move || match runs.resolve(&to) {
            Some(id) => runs.load(&id),
            None => Ok(None),
        })
        .await?
    };
    let Some(found) = lookup.filter(|r| r.parent_session_id == session) else {
        return Ok(None);
    };
    let MessageBody::Text(text) = &input.message else {
        return Err(ToolError::respond(format!(
            "{to} is a sub-agent, not a teammate: structured messages go to teammates. Send it plain text to continue it."
        )));
    };
    let id = found.agent_id.clone();
    // Under the run's lock: queue to a running agent, or claim a stopped one for resuming.
    let claimed = {
        let (runs, id, text) = (runs.clone(), id.clone(), text.clone());
        blocking(move || {
            runs.update(&id, |run| match run {
                Some(r) if r.is_running() => {
                    r.queued.push(text);
                    None
                }
                Some(r) => {
                    r.running = true;
                    r.pid = std::process::id();
                    Some(r.clone())
                }
                None => None,
            })
        })
        .await?
    };
    let Some(run) = claimed else {
        return Ok(Some(sent(
            format!("Message queued for delivery to {to} at its next tool round."),
            vec![id],
            None,
        )));
    };
    match resume(run, text.clone(), input.checked_dir.get(), ctx).await {
        Ok(result) => Ok(Some(result)),
        Err(e) => {
            let runs2 = runs.clone();
            let _ = blocking(move || {
                runs2.update(&id, |run| {
                    if let Some(r) = run {
                        r.running = false;
                    }
                })
            })
            .await;
            Err(e)
        }
    }
}

async fn resume(
    run: AgentRun,
    text: String,
    approved: Option<std::path::PathBuf>,
    ctx: &ToolContext,
) -> Result<ToolResult<SendMessageOutput>, ToolError> {
    let runner = ctx.services().require::<Arc<dyn AgentRunner>>(
        "No sub-agent runner is configured, so the agent cannot be continued",
    )?;
    let (agents, _) = load_agents(ctx);
    let definition = agents
        .into_iter()
        .find(|a| a.name == run.agent_type)
        .ok_or_else(|| {
            ToolError::respond(format!(
                "The agent's type '{}' no longer exists, so it cannot be continued",
                run.agent_type
            ))
        })?;
    if !Path::new(&run.cwd).is_dir() {
        return Err(ToolError::respond(format!(
            "The agent's working directory {} no longer exists, so it cannot be continued: launch a new agent",
            run.cwd.display()
        )));
    }
    // It goes on in the background, with a background agent's tools, in the mode it had
    // capped at the caller's mode now (and following the caller's from here on), with the
    // caller's rules as they are now, where the caller may work now (the permission check
    // asked about a directory outside; one that changed since is refused).
    if approved.as_ref() != Some(&run.cwd)
        && let PermissionDecision::Deny { reason } | PermissionDecision::Ask { reason, .. } =
            check_agent_dir(&run.cwd, RESUMED_DIR, ctx)
    {
        return Err(ToolError::PermissionDenied {
            tool: "SendMessage".to_owned(),
            reason,
        });
    }
    let tools = tools_for_agent(&definition, &available_tools(ctx), true);
    let context = subagent_context_in(
        ctx,
        &run.agent_id,
        Some(run.mode.capped_at(ctx.permission_mode())),
        &run.cwd,
    );
    let request = AgentRequest {
        agent_id: run.agent_id.clone(),
        definition,
        prompt: text,
        model: run.model.clone(),
        tools,
        context,
        cancel: CancellationToken::new(),
        history: resumable(run.messages.clone()),
        parent_session_id: run.parent_session_id.clone(),
    };
    let started = Instant::now();
    let spec = TaskSpec {
        kind: TaskKind::LocalAgent,
        description: format!("continue agent {}", run.agent_id),
        run: TaskRun::Future(Box::new(move |token: CancellationToken| {
            Box::pin(async move {
                let request = AgentRequest {
                    cancel: token,
                    ..request
                };
                let result = runner.run(request).await;
                finish_task(result, started, &None)
            })
        })),
    };
    let info = ctx.tasks().start(spec).await?;
    let message = format!(
        "Agent \"{}\" had stopped; resumed it in the background with your message. You will be notified when it finishes.\ntask_id: {}\noutput_file: {}",
        run.agent_id,
        info.id,
        info.output_path.display()
    );
    Ok(sent(message, vec![run.agent_id], None))
}
