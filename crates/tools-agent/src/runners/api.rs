//! The Anthropic Messages API runner: a tool-use loop over the request's tools. It keeps a
//! plain sub-agent's transcript (so SendMessage can continue it) and hands a teammate its
//! inbox between turns, idling until mail arrives when it ends a turn.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{ToolCall, ToolContext, ToolError, ToolPool};

use crate::runners::{AgentOutcome, AgentRequest, AgentRunner, AgentSettings};
use crate::stores::mailbox::{
    InboxMessage, TeamMessage, notify_idle, render_messages, take_mail, wait_for_mail,
};
use crate::stores::plan_requests::plan_file;
use crate::stores::state::blocking;
use crate::stores::team_files::{TEAM_LEAD_NAME, TeammateIdentity, teammate};
use crate::stores::transcripts::{AgentRun, RunStore};

/// The most model turns of one API sub-agent run.
pub const MAX_TURNS: usize = 100;

/// The Anthropic Messages API runner: a tool-use loop over the request's tools.
#[derive(Debug, Clone)]
pub struct ApiRunner {
    client: reqwest::Client,
    base_url: String,
    api_key: String,
    settings: AgentSettings,
}

impl ApiRunner {
    /// A runner for `base_url` (such as `https://api.anthropic.com`) with `api_key`.
    pub fn new(
        base_url: impl Into<String>,
        api_key: impl Into<String>,
        settings: AgentSettings,
    ) -> Result<Self, ToolError> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(600))
            .build()
            .map_err(|e| ToolError::fatal(format!("cannot build the HTTP client: {e}")))?;
        Ok(ApiRunner {
            client,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: api_key.into(),
            settings,
        })
    }

    async fn send(&self, body: &Value) -> Result<Value, ToolError> {
        let url = format!("{}/v1/messages", self.base_url);
        let response = self
            .client
            .post(&url)
            .header("x-api-key", &self.api_key)
            .header("anthropic-version", "2023-06-01")
            .json(body)
            .send()
            .await
            .map_err(|e| {
                ToolError::respond(format!("The sub-agent's request to {url} failed: {e}"))
            })?;
        let status = response.status();
        let value: Value = response.json().await.map_err(|e| {
            ToolError::respond(format!(
                "The Messages API at {url} answered {status} with a body that is not JSON: {e}"
            ))
        })?;
        if !status.is_success() {
            let message = value["error"]["message"].as_str().unwrap_or("no message");
            return Err(ToolError::respond(format!(
                "The Messages API answered {status}: {message}"
            )));
        }
        Ok(value)
    }
}

#[async_trait]
impl AgentRunner for ApiRunner {
    async fn run(&self, request: AgentRequest) -> Result<AgentOutcome, ToolError> {
        let model_name = request
            .model
            .clone()
            .or_else(|| request.definition.model.clone())
            .or_else(|| self.settings.model.clone())
            .unwrap_or_else(|| "sonnet".to_owned());
        let model = self.settings.model_id(&model_name);
        let mut declarations = Vec::new();
        for tool in &request.tools {
            declarations.push(json!({"name": tool.name(), "description": tool.description(None).await, "input_schema": tool.input_schema()}));
        }
        let pool = ToolPool::new(request.tools.clone());
        let mut system = format!(
            "{}\n\nWorking directory: {}",
            request.definition.system_prompt,
            request.context.cwd().display()
        );
        let mate = teammate(&request.context);
        if let Some(m) = &mate {
            system.push_str(&format!(
                "\n\nYou are \"{}\", a teammate in team \"{}\" led by \"{}\". Nobody sees your plain text: use SendMessage to reach the lead or another teammate. Messages from your team arrive as <teammate-message> blocks. When you have nothing left to do, end your turn: a new message wakes you up. Answer a shutdown_request with SendMessage to \"{}\" and message {{\"type\": \"shutdown_response\", \"request_id\": ..., \"approve\": true}} when your work is done (approving ends you), or approve: false with a reason.",
                m.name,
                m.team_name,
                TEAM_LEAD_NAME,
                TEAM_LEAD_NAME
            ));
        }
        let mut messages = if request.history.is_empty() {
            vec![json!({"role": "user", "content": request.prompt})]
        } else {
            let mut m = request.history.clone();
            push_user(
                &mut m,
                vec![json!({"type": "text", "text": request.prompt})],
            );
            m
        };
        // Teammates are continued through their mailbox; other agents keep a transcript.
        let runs = mate
            .is_none()
            .then(|| RunStore::for_context(&request.context));
        if let Some(runs) = &runs {
            let start = AgentRun {
                agent_id: request.agent_id.clone(),
                agent_type: request.definition.name.clone(),
                model: request.model.clone(),
                parent_session_id: request.parent_session_id.clone(),
                cwd: request.context.cwd(),
                mode: request.context.permission_mode(),
                running: true,
                pid: std::process::id(),
                messages: messages.clone(),
                queued: Vec::new(),
            };
            let runs = runs.clone();
            blocking(move || runs.begin(start)).await?;
        }
        let turn = Turn {
            model: &model,
            system: &system,
            declarations: &declarations,
            pool: &pool,
            mate: mate.as_deref(),
            runs: runs.as_ref(),
        };
        let result = self.run_loop(&request, &mut messages, turn).await;
        if result.is_err()
            && let Some(runs) = runs
        {
            let id = request.agent_id.clone();
            let _ = blocking(move || runs.stop(&id, &messages)).await;
        }
        result
    }
}

/// What one run's loop needs besides the request.
struct Turn<'a> {
    model: &'a str,
    system: &'a str,
    declarations: &'a [Value],
    pool: &'a ToolPool,
    mate: Option<&'a TeammateIdentity>,
    runs: Option<&'a RunStore>,
}

/// A reply's tool calls, and its text blocks joined.
fn calls_and_text(content: &[Value]) -> (Vec<ToolCall>, String) {
    let calls: Vec<ToolCall> = content
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| ToolCall {
            tool: b["name"].as_str().unwrap_or_default().to_owned(),
            input: b["input"].clone(),
            id: b["id"].as_str().map(str::to_owned),
        })
        .collect();
    let text: Vec<&str> = content
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    (calls, text.join("\n").trim().to_owned())
}

/// Runs a turn's tool calls in the sub-agent's context; their `tool_result` blocks. A
/// cancelled run cancels the calls too.
async fn run_calls(
    pool: &ToolPool,
    calls: Vec<ToolCall>,
    request: &AgentRequest,
) -> Result<Vec<Value>, ToolError> {
    let ids: Vec<Option<String>> = calls.iter().map(|c| c.id.clone()).collect();
    let results = tokio::select! {
        r = pool.batch(calls, &request.context) => r,
        () = request.cancel.cancelled() => {
            request.context.cancel_token().cancel();
            return Err(ToolError::Cancelled { tool: "Agent".to_owned() });
        }
    };
    Ok(results
        .iter()
        .zip(ids)
        .map(|(r, id)| json!({"type": "tool_result", "tool_use_id": id, "content": r.text(), "is_error": r.is_error}))
        .collect())
}

/// Messages sent to a running sub-agent, as user content.
fn queued_blocks(queued: Vec<String>) -> Vec<Value> {
    queued
        .into_iter()
        .map(|text| json!({"type": "text", "text": format!("Message from the agent that launched you:\n{text}")}))
        .collect()
}

impl ApiRunner {
    async fn run_loop(
        &self,
        request: &AgentRequest,
        messages: &mut Vec<Value>,
        turn: Turn<'_>,
    ) -> Result<AgentOutcome, ToolError> {
        let Turn {
            model,
            system,
            declarations,
            pool,
            mate,
            runs,
        } = turn;
        // Only a run with a transcript saves (a teammate's conversation is not copied).
        let save = |messages: &Vec<Value>, finish: bool| {
            let job = runs.cloned().map(|runs| {
                let (id, m) = (request.agent_id.clone(), messages.clone());
                move || runs.save_and_take(&id, &m, finish)
            });
            async move {
                match job {
                    Some(job) => blocking(job).await,
                    None => Ok(Vec::new()),
                }
            }
        };
        if let Some(m) = mate {
            // Messages that arrived before the teammate started.
            let mail = take_mail(&request.context, m).await?;
            push_user(messages, mail_blocks(&request.context, &mail));
        }
        let mut outcome = AgentOutcome::default();
        let mut turns = 0;
        loop {
            if turns == MAX_TURNS {
                return Err(ToolError::respond(format!(
                    "The sub-agent did not finish within {MAX_TURNS} turns"
                )));
            }
            turns += 1;
            let body = json!({
                "model": model,
                "max_tokens": self.settings.max_tokens.unwrap_or(8192),
                "system": system,
                "messages": messages,
                "tools": declarations,
            });
            let reply = tokio::select! {
                r = self.send(&body) => r?,
                () = request.cancel.cancelled() => return Err(ToolError::Cancelled { tool: "Agent".to_owned() }),
            };
            outcome.total_tokens += reply["usage"]["input_tokens"].as_u64().unwrap_or(0)
                + reply["usage"]["output_tokens"].as_u64().unwrap_or(0);
            let content = reply["content"].as_array().cloned().unwrap_or_default();
            let (calls, text) = calls_and_text(&content);
            if calls.is_empty() || reply["stop_reason"] != "tool_use" {
                outcome.output = text;
                if !content.is_empty() {
                    messages.push(json!({"role": "assistant", "content": content.clone()}));
                }
                let Some(m) = mate else {
                    // Messages sent while it ran keep it going; otherwise it is done.
                    let queued = save(messages, true).await?;
                    if queued.is_empty() {
                        return Ok(outcome);
                    }
                    push_user(messages, queued_blocks(queued));
                    continue;
                };
                if m.exit.is_cancelled() {
                    return Ok(outcome);
                }
                // A teammate idles until a message wakes it, it is shut down or stopped.
                notify_idle(&request.context, m, &outcome.output).await;
                match wait_for_mail(&request.context, m, &request.cancel).await? {
                    Some(mail) => {
                        push_user(messages, mail_blocks(&request.context, &mail));
                        continue;
                    }
                    None => return Ok(outcome),
                }
            }
            messages.push(json!({"role": "assistant", "content": content}));
            outcome.tool_uses += calls.len() as u64;
            push_user(messages, run_calls(pool, calls, request).await?);
            let queued = save(messages, false).await?;
            push_user(messages, queued_blocks(queued));
            if let Some(m) = mate {
                if m.exit.is_cancelled() {
                    // It approved a shutdown request.
                    outcome.output = text;
                    return Ok(outcome);
                }
                let mail = take_mail(&request.context, m).await?;
                push_user(messages, mail_blocks(&request.context, &mail));
            }
        }
    }
}

/// Appends content blocks to the conversation as the user: to the last message when it is
/// the user's already (the API wants roles to alternate).
fn push_user(messages: &mut Vec<Value>, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = messages.last_mut()
        && last["role"] == "user"
    {
        let mut content = match last["content"].take() {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) => a,
            _ => Vec::new(),
        };
        content.extend(blocks);
        last["content"] = Value::Array(content);
        return;
    }
    messages.push(json!({"role": "user", "content": blocks}));
}

/// A teammate's messages as user content: the messages, then what the lead's answers to its
/// plan mean for it (taken out of plan mode, or still planning with feedback).
fn mail_blocks(ctx: &ToolContext, mail: &[InboxMessage]) -> Vec<Value> {
    if mail.is_empty() {
        return Vec::new();
    }
    let mut blocks = vec![json!({"type": "text", "text": render_messages(mail)})];
    for (id, approve, feedback) in mail.iter().filter_map(|m| match m.typed_message() {
        Some(TeamMessage::PlanApprovalResponse {
            request_id,
            approve,
            feedback,
            ..
        }) => Some((request_id, approve, feedback)),
        _ => None,
    }) {
        let text = if approve {
            format!(
                "The team lead approved your plan ({id}). You are out of plan mode (permission mode: {}): implement the plan now.",
                ctx.permission_mode()
            )
        } else {
            format!(
                "The team lead rejected your plan ({id}). Feedback: {}\nYou are still in plan mode: revise the plan in {} and call ExitPlanMode again.",
                feedback.as_deref().unwrap_or("(none)"),
                plan_file(ctx).display()
            )
        };
        blocks.push(json!({"type": "text", "text": text}));
    }
    blocks
}
