//! Agent (alias Task): runs a sub-agent through a runner service — the Anthropic Messages
//! API runner (a tool-use loop over the session's tools) or a command runner — in the
//! foreground or as a background task (reference §4.14).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::{
    CancellationToken, PermissionMode, PermissionPrompter, RuleBehavior, SettingsLayer, TaskFinish,
    TaskKind, TaskRun, TaskSpec, TaskStatus, Tool, ToolCall, ToolCategory, ToolContext, ToolError,
    ToolPool, ToolResult, TypedTool, ValidationResult,
};

use crate::runs::RunStore;
use crate::search::ToolCatalog;
use crate::store::AgentIdentity;
use crate::store::blocking;
use crate::team::{InboxMessage, TeamFile, TeamMember, TeamMessage, TeamStore, TeammateIdentity};
use crate::worktree::ActiveWorktree;
use crate::{frontmatter, store, team};

/// Tools no sub-agent gets (the reference's `ALL_AGENT_DISALLOWED_TOOLS`; no nesting).
pub const AGENT_DISALLOWED_TOOLS: &[&str] = &[
    "TaskOutput",
    "ExitPlanMode",
    "EnterPlanMode",
    "AskUserQuestion",
    "TaskStop",
    "Agent",
];
/// The only built-in tools a background sub-agent gets (MCP tools are always allowed).
pub const ASYNC_AGENT_ALLOWED_TOOLS: &[&str] = &[
    "Read",
    "WebSearch",
    "TodoWrite",
    "Grep",
    "WebFetch",
    "Glob",
    "Bash",
    "Edit",
    "Write",
    "MultiEdit",
    "NotebookEdit",
    "Skill",
    "ToolSearch",
    "EnterWorktree",
    "ExitWorktree",
];
/// What a sub-agent that said nothing returns.
pub const NO_OUTPUT: &str = "(Subagent completed but returned no output.)";
/// The most model turns of one API sub-agent run.
pub const MAX_TURNS: usize = 100;
/// A command runner's output is cut to this many characters (head and tail).
pub const MAX_COMMAND_OUTPUT: usize = 100_000;

/// A kind of sub-agent: built in, or from a markdown file with front matter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentDefinition {
    /// The `subagent_type` that selects it
    pub name: String,
    /// When to use it
    pub description: String,
    /// Tools it may use (`None`: every tool)
    pub tools: Option<Vec<String>>,
    /// Tools it may not use
    pub disallowed_tools: Vec<String>,
    /// `sonnet`, `opus`, `haiku` or a model id; `None` inherits
    pub model: Option<String>,
    /// The permission mode its tools run in (`None`: the session's)
    pub permission_mode: Option<PermissionMode>,
    /// Its system prompt
    pub system_prompt: String,
    /// One-shot agents (Explore, Plan) get no agentId/usage trailer
    pub one_shot: bool,
    /// Where it came from: `built-in` or the file
    pub source: String,
}

const READ_ONLY_DISALLOWED: &[&str] = &[
    "Agent",
    "ExitPlanMode",
    "Edit",
    "Write",
    "NotebookEdit",
    "MultiEdit",
];

/// The built-in agents: general-purpose, Explore and Plan.
pub fn builtin_agents() -> Vec<AgentDefinition> {
    let builtin = |name: &str,
                   description: &str,
                   disallowed: &[&str],
                   model: Option<&str>,
                   prompt: &str,
                   one_shot: bool| AgentDefinition {
        name: name.to_owned(),
        description: description.to_owned(),
        tools: None,
        disallowed_tools: disallowed.iter().map(|s| (*s).to_owned()).collect(),
        model: model.map(str::to_owned),
        permission_mode: None,
        system_prompt: prompt.to_owned(),
        one_shot,
        source: "built-in".to_owned(),
    };
    vec![
        builtin(
            "general-purpose",
            "General-purpose agent for researching complex questions, searching for code, and executing multi-step tasks.",
            &[],
            None,
            "You are an agent for a coding assistant. Given the user's message, use the tools available to complete the task fully: do what has been asked, nothing more and nothing less. When you are done, reply with a concise report of what you did and found; the caller relays it to the user. Use absolute file paths in your report.",
            false,
        ),
        builtin(
            "Explore",
            "Fast agent specialised in exploring codebases: find files by patterns, search code for keywords, answer questions about the codebase. Read-only.",
            READ_ONLY_DISALLOWED,
            Some("haiku"),
            "You are a file search specialist. Explore the codebase with Glob, Grep and Read to answer the question you are given. You are read-only: never create, modify or delete files. Be fast: run searches in parallel where you can. Reply with your findings and the absolute paths of the relevant files.",
            true,
        ),
        builtin(
            "Plan",
            "Software architect agent for designing implementation plans: explores the codebase read-only and returns a step-by-step plan, the critical files and the trade-offs.",
            READ_ONLY_DISALLOWED,
            None,
            "You are a software architect. Explore the codebase read-only (never modify files) and design an implementation plan for the task you are given: the steps in order, the files to change, the risks and trade-offs. End with the list of the files most critical to the plan.",
            true,
        ),
    ]
}

fn read_agent_file(path: &Path) -> Result<AgentDefinition, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc = frontmatter::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = doc
        .get("name")
        .filter(|n| !n.trim().is_empty())
        .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let tools = doc
        .keys
        .get("tools")
        .map(|v| v.list())
        .filter(|t| !(t.len() == 1 && t[0] == "*"));
    let permission_mode = match doc.get("permissionMode") {
        Some(m) if !m.is_empty() => Some(
            m.parse::<PermissionMode>()
                .map_err(|e| format!("{}: permissionMode: {e}", path.display()))?,
        ),
        _ => None,
    };
    Ok(AgentDefinition {
        name,
        description: doc.get("description").unwrap_or_default(),
        tools,
        disallowed_tools: doc
            .keys
            .get("disallowedTools")
            .map(|v| v.list())
            .unwrap_or_default(),
        model: doc.get("model").filter(|m| !m.is_empty() && m != "inherit"),
        permission_mode,
        system_prompt: doc.body.trim().to_owned(),
        one_shot: false,
        source: path.display().to_string(),
    })
}

/// Every agent of the session: built-ins, then user agents (`<state>/agents/*.md`), then
/// project agents (`.agent-tools/agents/*.md`); a later one replaces an earlier one of the
/// same name. Files that cannot be read are returned as errors beside the list.
pub fn load_agents(ctx: &ToolContext) -> (Vec<AgentDefinition>, Vec<String>) {
    let mut agents = builtin_agents();
    let mut errors = Vec::new();
    for dir in [
        ctx.state_dir().join("agents"),
        ctx.original_cwd().join(".agent-tools").join("agents"),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        files.sort();
        for file in files {
            match read_agent_file(&file) {
                Ok(def) => {
                    agents.retain(|a| a.name != def.name);
                    agents.push(def);
                }
                Err(e) => errors.push(e),
            }
        }
    }
    (agents, errors)
}

/// The tools a sub-agent gets from `all`: never the ones in [`AGENT_DISALLOWED_TOOLS`];
/// in the background only [`ASYNC_AGENT_ALLOWED_TOOLS`]; then the definition's `tools` and
/// `disallowedTools`. MCP tools pass the first two filters.
pub fn tools_for_agent(
    def: &AgentDefinition,
    all: &[Arc<dyn Tool>],
    background: bool,
) -> Vec<Arc<dyn Tool>> {
    let named = |list: &[String], t: &dyn Tool| {
        list.iter().any(|n| {
            n == t.name()
                || t.aliases().contains(&n.as_str())
                || n.split('(').next() == Some(t.name())
        })
    };
    all.iter()
        .filter(|t| {
            let mcp = t.name().starts_with("mcp__") || t.category() == ToolCategory::Mcp;
            if AGENT_DISALLOWED_TOOLS.contains(&t.name()) {
                return false;
            }
            if background && !mcp && !ASYNC_AGENT_ALLOWED_TOOLS.contains(&t.name()) {
                return false;
            }
            if let Some(allowed) = &def.tools
                && !named(allowed, t.as_ref())
            {
                return false;
            }
            !named(&def.disallowed_tools, t.as_ref())
        })
        .cloned()
        .collect()
}

/// What a runner is asked to do.
#[derive(Clone)]
pub struct AgentRequest {
    /// The sub-agent's id
    pub agent_id: String,
    /// Its definition
    pub definition: AgentDefinition,
    /// The task
    pub prompt: String,
    /// The model name asked for (`sonnet`, `opus`, `haiku` or an id), if any
    pub model: Option<String>,
    /// The tools it may use
    pub tools: Vec<Arc<dyn Tool>>,
    /// The context its tools run in (its own session state, the parent's rules)
    pub context: ToolContext,
    /// Fires when the run must stop
    pub cancel: CancellationToken,
    /// The conversation to continue (Messages API form); empty for a new agent. The prompt
    /// is added to it as the next user message.
    pub history: Vec<Value>,
    /// The session that launched the agent (only it may continue the agent)
    pub parent_session_id: String,
}

impl std::fmt::Debug for AgentRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRequest")
            .field("agent_id", &self.agent_id)
            .field("definition", &self.definition.name)
            .finish_non_exhaustive()
    }
}

/// What a run produced.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentOutcome {
    /// The final answer
    pub output: String,
    /// Input plus output tokens, when the runner knows them
    pub total_tokens: u64,
    /// How many tool calls the sub-agent made
    pub tool_uses: u64,
}

/// Runs sub-agents. Hosts put an `Arc<dyn AgentRunner>` in the context's services;
/// [`runner_from_settings`] builds one of the two real runners.
#[async_trait]
pub trait AgentRunner: Send + Sync {
    /// Runs one sub-agent to its final answer.
    async fn run(&self, request: AgentRequest) -> Result<AgentOutcome, ToolError>;
}

/// The `agent` settings section: `{"command": [...], "models": {"sonnet": "..."},
/// "model": "...", "maxTokens": N}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentSettings {
    /// A command that takes the prompt on standard input and prints the answer
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// Model names to ids
    #[serde(default)]
    pub models: BTreeMap<String, String>,
    /// The default model
    #[serde(default)]
    pub model: Option<String>,
    /// The most tokens per response
    #[serde(default)]
    pub max_tokens: Option<u32>,
}

impl AgentSettings {
    /// Merges the `agent` sections (and the top-level `model`) of the layers, lowest first.
    pub fn from_layers(layers: &[SettingsLayer]) -> Result<Self, ToolError> {
        let mut out = AgentSettings::default();
        for layer in layers {
            if let Some(Value::String(m)) = layer.settings.other.get("model") {
                out.model = Some(m.clone());
            }
            let Some(section) = layer.settings.other.get("agent") else {
                continue;
            };
            let s: AgentSettings =
                serde_json::from_value(section.clone()).map_err(|e| ToolError::Settings {
                    path: layer.path.clone(),
                    message: format!("invalid `agent` section: {e}"),
                })?;
            if s.command.is_some() {
                out.command = s.command;
            }
            out.models.extend(s.models);
            if s.model.is_some() {
                out.model = s.model;
            }
            if s.max_tokens.is_some() {
                out.max_tokens = s.max_tokens;
            }
        }
        if out.command.as_ref().is_some_and(|c| c.is_empty()) {
            return Err(ToolError::respond(
                "agent.command must name a program: [\"program\", \"arg\", ...]",
            ));
        }
        Ok(out)
    }

    /// The model id for a name: the settings' map, else the built-in aliases.
    pub fn model_id(&self, name: &str) -> String {
        if let Some(id) = self.models.get(name) {
            return id.clone();
        }
        match name {
            "sonnet" => "claude-sonnet-4-5".to_owned(),
            "opus" => "claude-opus-4-1".to_owned(),
            "haiku" => "claude-haiku-4-5".to_owned(),
            other => other.to_owned(),
        }
    }
}

/// The runner the settings and environment ask for: the command runner when
/// `agent.command` is set, else the Messages API runner when `ANTHROPIC_API_KEY` is set
/// (with `ANTHROPIC_BASE_URL`), else none.
pub fn runner_from_settings(
    layers: &[SettingsLayer],
) -> Result<Option<Arc<dyn AgentRunner>>, ToolError> {
    let settings = AgentSettings::from_layers(layers)?;
    if let Some(command) = settings.command.clone() {
        return Ok(Some(Arc::new(CommandRunner::new(command))));
    }
    match std::env::var("ANTHROPIC_API_KEY") {
        Ok(key) if !key.trim().is_empty() => {
            let base = std::env::var("ANTHROPIC_BASE_URL")
                .ok()
                .filter(|b| !b.trim().is_empty())
                .unwrap_or_else(|| "https://api.anthropic.com".to_owned());
            Ok(Some(Arc::new(ApiRunner::new(base, key, settings)?)))
        }
        _ => Ok(None),
    }
}

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
        let mate = team::teammate(&request.context);
        if let Some(m) = &mate {
            system.push_str(&format!(
                "\n\nYou are \"{}\", a teammate in team \"{}\" led by \"{}\". Nobody sees your plain text: use SendMessage to reach the lead or another teammate. Messages from your team arrive as <teammate-message> blocks. When you have nothing left to do, end your turn: a new message wakes you up. Answer a shutdown_request with SendMessage to \"{}\" and message {{\"type\": \"shutdown_response\", \"request_id\": ..., \"approve\": true}} when your work is done (approving ends you), or approve: false with a reason.",
                m.name,
                m.team_name,
                team::TEAM_LEAD_NAME,
                team::TEAM_LEAD_NAME
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
            let (runs, request2, m) = (runs.clone(), request.clone(), messages.clone());
            blocking(move || runs.begin(&request2, &m)).await?;
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
            let text = text.join("\n").trim().to_owned();
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
            let ids: Vec<Option<String>> = calls.iter().map(|c| c.id.clone()).collect();
            let results = tokio::select! {
                r = pool.batch(calls, &request.context) => r,
                () = request.cancel.cancelled() => {
                    request.context.cancel_token().cancel();
                    return Err(ToolError::Cancelled { tool: "Agent".to_owned() });
                }
            };
            let blocks: Vec<Value> = results
                .iter()
                .zip(ids)
                .map(|(r, id)| json!({"type": "tool_result", "tool_use_id": id, "content": r.text(), "is_error": r.is_error}))
                .collect();
            push_user(messages, blocks);
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
    let mut blocks = vec![json!({"type": "text", "text": team::render_messages(mail)})];
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
                crate::plan::plan_file(ctx).display()
            )
        };
        blocks.push(json!({"type": "text", "text": text}));
    }
    blocks
}

/// Takes a teammate's unread messages. An approved plan takes it out of plan mode (into
/// [`TeammateIdentity::after_plan`]).
async fn take_mail(
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
async fn wait_for_mail(
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
async fn notify_idle(ctx: &ToolContext, mate: &TeammateIdentity, last: &str) {
    let store = TeamStore::for_context(ctx);
    let (team_name, name) = (mate.team_name.clone(), mate.name.clone());
    let body = TeamMessage::IdleNotification {
        idle_reason: "available".to_owned(),
        summary: tool_core::cut_middle(last, 500),
    };
    let _ = blocking(move || {
        store.deliver(
            &team_name,
            team::TEAM_LEAD_NAME,
            InboxMessage::typed(name, body),
        )
    })
    .await;
}

/// The command runner: hands the prompt (with the agent's system prompt) to a configured
/// command on standard input and returns what it prints.
#[derive(Debug, Clone)]
pub struct CommandRunner {
    argv: Vec<String>,
}

impl CommandRunner {
    /// A runner for `argv` (program and arguments).
    pub fn new(argv: Vec<String>) -> Self {
        CommandRunner { argv }
    }
}

#[async_trait]
impl AgentRunner for CommandRunner {
    async fn run(&self, request: AgentRequest) -> Result<AgentOutcome, ToolError> {
        use tokio::io::AsyncWriteExt;
        let Some((program, args)) = self.argv.split_first() else {
            return Err(ToolError::respond("agent.command is empty"));
        };
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .current_dir(request.context.cwd())
            .env("AGENT_TOOLS_AGENT_ID", &request.agent_id)
            .env("AGENT_TOOLS_AGENT_TYPE", &request.definition.name)
            .envs(
                team::teammate(&request.context)
                    .map(|m| {
                        [
                            ("AGENT_TOOLS_TEAM_NAME", m.team_name.clone()),
                            ("AGENT_TOOLS_AGENT_NAME", m.name.clone()),
                        ]
                    })
                    .into_iter()
                    .flatten(),
            )
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        if let Some(model) = request
            .model
            .clone()
            .or_else(|| request.definition.model.clone())
        {
            command.env("AGENT_TOOLS_AGENT_MODEL", model);
        }
        let mut child = command.spawn().map_err(|e| {
            ToolError::respond(format!("Cannot start the agent command `{program}`: {e}"))
        })?;
        let input = format!("{}\n\n{}", request.definition.system_prompt, request.prompt);
        if let Some(mut stdin) = child.stdin.take() {
            // Written from its own task, so a command that prints before reading all of a
            // long prompt cannot deadlock against us; one that never reads it is no error.
            tokio::spawn(async move {
                let _ = stdin.write_all(input.as_bytes()).await;
            });
        }
        // The command runs in its own process group; stopping it (cancelled, or this future
        // dropped) kills the whole group, so nothing it started survives.
        let mut group = GroupGuard(child.id());
        let waited = tokio::select! {
            out = child.wait_with_output() => out.map_err(|e| ToolError::respond(format!("The agent command `{program}` failed: {e}")))?,
            () = request.cancel.cancelled() => {
                group.kill();
                return Err(ToolError::Cancelled { tool: "Agent".to_owned() });
            }
        };
        group.disarm();
        let stdout = String::from_utf8_lossy(&waited.stdout).trim().to_owned();
        if !waited.status.success() {
            let stderr = String::from_utf8_lossy(&waited.stderr);
            return Err(ToolError::respond(format!(
                "The agent command `{program}` exited with {}: {}",
                waited.status,
                tool_core::cut_middle(stderr.trim(), 4_000)
            )));
        }
        Ok(AgentOutcome {
            output: tool_core::cut_middle(&stdout, MAX_COMMAND_OUTPUT),
            total_tokens: 0,
            tool_uses: 0,
        })
    }
}

/// Kills a process group when dropped, unless disarmed (its leader exited by itself).
struct GroupGuard(Option<u32>);

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pgid}")])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }

    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Input of Agent.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentInput {
    /// A short (3-5 word) description of the task
    #[schemars(length(min = 1))]
    pub description: String,
    /// The task for the agent to perform
    #[schemars(length(min = 1))]
    pub prompt: String,
    /// The type of agent to use (default "general-purpose")
    #[serde(default)]
    pub subagent_type: Option<String>,
    /// The model for this agent; overrides the agent definition's
    #[serde(default)]
    pub model: Option<AgentModel>,
    /// Run the agent in the background; you will be notified when it completes
    #[serde(default)]
    pub run_in_background: Option<bool>,
    /// A name for the agent. With team_name (or inside the team you lead) it is spawned as a
    /// teammate that others reach with SendMessage
    #[serde(default)]
    pub name: Option<String>,
    /// The team to spawn the agent into as a teammate (default: the team you lead)
    #[serde(default)]
    pub team_name: Option<String>,
    /// The permission mode the agent's tools run in (no more permissive than yours)
    #[serde(default)]
    pub mode: Option<AgentMode>,
    /// "worktree": the agent works in a fresh git worktree of the repository; kept (and
    /// reported) when it changed something, removed otherwise
    #[serde(default)]
    pub isolation: Option<Isolation>,
    /// The agent's working directory (absolute, or relative to yours); not with isolation
    #[serde(default)]
    pub cwd: Option<String>,
}

/// Permission modes a sub-agent may be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AgentMode {
    /// Ask on first use of anything not allowed by a rule
    Default,
    /// File writes inside the working directories are allowed
    AcceptEdits,
    /// Read-only exploration
    Plan,
    /// Everything allowed except deny rules and protected paths
    BypassPermissions,
    /// Anything that would ask is denied
    DontAsk,
}

impl AgentMode {
    /// The permission mode.
    pub fn permission_mode(self) -> PermissionMode {
        match self {
            AgentMode::Default => PermissionMode::Default,
            AgentMode::AcceptEdits => PermissionMode::AcceptEdits,
            AgentMode::Plan => PermissionMode::Plan,
            AgentMode::BypassPermissions => PermissionMode::BypassPermissions,
            AgentMode::DontAsk => PermissionMode::DontAsk,
        }
    }
}

/// How much a mode allows without asking: plan and dontAsk least, bypassPermissions most.
fn permissiveness(mode: PermissionMode) -> u8 {
    match mode {
        PermissionMode::Plan | PermissionMode::DontAsk => 0,
        PermissionMode::Default => 1,
        PermissionMode::AcceptEdits => 2,
        PermissionMode::BypassPermissions => 3,
    }
}

/// Where a sub-agent works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// A fresh git worktree on its own branch
    Worktree,
}

/// Model names Agent accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AgentModel {
    /// Balanced
    Sonnet,
    /// Most capable
    Opus,
    /// Fastest
    Haiku,
}

impl AgentModel {
    fn as_str(self) -> &'static str {
        match self {
            AgentModel::Sonnet => "sonnet",
            AgentModel::Opus => "opus",
            AgentModel::Haiku => "haiku",
        }
    }
}

/// Output of Agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentOutput {
    /// The sub-agent's id (the task id when in the background)
    pub agent_id: String,
    /// The agent type
    pub agent_type: String,
    /// "completed" or "async_launched"
    pub status: String,
    /// The final answer (empty when launched in the background)
    pub content: String,
    /// Tokens used
    pub total_tokens: u64,
    /// Tool calls made
    pub tool_uses: u64,
    /// How long it ran
    pub duration_ms: u64,
    /// The background task's output file
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_file: Option<PathBuf>,
    /// The worktree the agent changed (kept for you to review or merge)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<PathBuf>,
}

/// The Agent tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Agent;

fn agent_type(input: &AgentInput) -> String {
    input
        .subagent_type
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or("general-purpose")
        .to_owned()
}

fn new_agent_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "a{:x}{:x}{}",
        std::process::id(),
        nanos,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The context a sub-agent's tools run in: the parent's working directory, rules, managers,
/// state directory and host services (permission prompter, settings, catalog), its own
/// session (todos, plan file, mode), and an [`AgentIdentity`].
pub fn subagent_context(
    ctx: &ToolContext,
    agent_id: &str,
    mode: Option<PermissionMode>,
) -> ToolContext {
    subagent_context_in(ctx, agent_id, mode, &ctx.cwd())
}

/// [`subagent_context`] rooted in another working directory (`cwd`, or a worktree).
pub fn subagent_context_in(
    ctx: &ToolContext,
    agent_id: &str,
    mode: Option<PermissionMode>,
    cwd: &Path,
) -> ToolContext {
    let mut builder = ToolContext::builder(cwd)
        .mode(mode.unwrap_or_else(|| ctx.permission_mode()))
        .additional_dirs(ctx.additional_dirs())
        .permissions(tool_core::PermissionEngine::new(ctx.permissions().rules()))
        .lsp(Arc::clone(ctx.lsp()))
        .tasks(Arc::clone(ctx.tasks()))
        .state_dir(ctx.state_dir())
        .session_id(format!(
            "{}-{}",
            ctx.session_id(),
            store::safe_component(agent_id)
        ))
        .call_timeout(ctx.call_timeout())
        .service(Arc::new(AgentIdentity {
            agent_id: agent_id.to_owned(),
        }));
    if let Some(p) = ctx.services().get::<Arc<dyn PermissionPrompter>>() {
        builder = builder.service(p);
    }
    if let Some(layers) = ctx.services().get::<Arc<Vec<SettingsLayer>>>() {
        builder = builder.service(layers);
    }
    if let Some(catalog) = ctx.services().get::<ToolCatalog>() {
        builder = builder.service(catalog);
    }
    builder.build()
}

#[async_trait]
impl TypedTool for Agent {
    type Input = AgentInput;
    type Output = AgentOutput;

    fn name(&self) -> &'static str {
        "Agent"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["Task"]
    }
    fn search_hint(&self) -> Option<&'static str> {
        Some("delegate a task to a sub-agent")
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Agent
    }
    async fn description(&self, _input: Option<&AgentInput>) -> String {
        let mut text = String::from(
            "Launch a new agent to handle complex, multi-step tasks autonomously. The agent works with its own context and tools and returns one final report, which the user does not see: summarise it for them.\n\nAvailable agent types (subagent_type):",
        );
        for a in builtin_agents() {
            text.push_str(&format!("\n- {}: {}", a.name, a.description));
        }
        text.push_str("\nCustom agents from .agent-tools/agents/*.md are available by their name too.\n\nUsage notes:\n- Give the agent a complete, self-contained task: it does not see this conversation. Say exactly what it should return.\n- Launch several agents at once (several calls in one message) when the tasks are independent.\n- Set run_in_background to true to keep working while it runs; you will be notified when it completes.\n- Do not use it for a task you can do with one or two direct tool calls.\n- isolation: \"worktree\" runs the agent in a new git worktree (kept and reported only if it changed something); cwd runs it in another directory; mode gives it a stricter permission mode.\n- With name (and team_name, after TeamCreate) the agent joins your team as a teammate: it runs in the background, talks through SendMessage, and stays until you send it a shutdown_request.");
        text
    }
    fn is_concurrency_safe(&self, _input: &AgentInput) -> bool {
        true
    }
    // Read-only: the sub-agent's tools go through the permission engine themselves.
    fn is_read_only(&self, _input: &AgentInput) -> bool {
        true
    }
    async fn validate(&self, input: &AgentInput, ctx: &ToolContext) -> ValidationResult {
        let wants_teammate = input.name.is_some() || input.team_name.is_some();
        if team::teammate(ctx).is_some() && wants_teammate {
            return ValidationResult::invalid(TEAMMATES_CANNOT_SPAWN);
        }
        if store::agent_id(ctx).is_some() {
            return ValidationResult::invalid(
                "Sub-agents cannot launch other agents: do the work yourself or return to the caller",
            );
        }
        if input.cwd.is_some() && input.isolation.is_some() {
            return ValidationResult::invalid(CWD_WITH_ISOLATION);
        }
        if let Some(dir) = &input.cwd {
            let path = ctx.resolve_path(dir);
            if !path.is_dir() {
                return ValidationResult::invalid(format!(
                    "cwd: {} is not a directory: give an existing directory for the agent to work in",
                    path.display()
                ));
            }
        }
        if let Some(mode) = input.mode {
            let (asked, own) = (mode.permission_mode(), ctx.permission_mode());
            if permissiveness(asked) > permissiveness(own) {
                return ValidationResult::invalid(format!(
                    "mode: \"{asked}\" allows more than this session's mode \"{own}\": a sub-agent cannot get more permissions than its caller. Leave mode out, or choose {own} or a stricter mode."
                ));
            }
        }
        if wants_teammate && let Err(message) = resolve_team(input, ctx) {
            return ValidationResult::invalid(message);
        }
        let wanted = agent_type(input);
        let (agents, errors) = load_agents(ctx);
        if !agents.iter().any(|a| a.name == wanted) {
            let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
            let mut message = format!(
                "Agent type '{wanted}' not found. Available agents: {}",
                names.join(", ")
            );
            if !errors.is_empty() {
                message.push_str(&format!(
                    " (agent files with errors: {})",
                    errors.join("; ")
                ));
            }
            return ValidationResult::invalid(message);
        }
        if let Some(rule) = ctx.permissions().match_content("Agent", |content, r| {
            r.behavior == RuleBehavior::Deny && content == wanted
        }) {
            return ValidationResult::invalid(format!(
                "Agent type '{wanted}' has been denied by permission rule 'Agent({wanted})' from {}.",
                rule.source
            ));
        }
        if ctx.services().get::<Arc<dyn AgentRunner>>().is_none() {
            return ValidationResult::invalid(
                "No sub-agent runner is configured: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another endpoint), or set `agent.command` in .agent-tools/settings.json to a command that reads the prompt on standard input.",
            );
        }
        ValidationResult::Valid
    }
    async fn call(
        &self,
        input: AgentInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<AgentOutput>, ToolError> {
        let runner = ctx
            .services()
            .get::<Arc<dyn AgentRunner>>()
            .ok_or_else(|| ToolError::respond("No sub-agent runner is configured"))?;
        let wanted = agent_type(&input);
        let (agents, _) = load_agents(ctx);
        let definition = agents
            .into_iter()
            .find(|a| a.name == wanted)
            .ok_or_else(|| ToolError::respond(format!("Agent type '{wanted}' not found")))?;
        let team = resolve_team(&input, ctx).map_err(ToolError::respond)?;
        let background = input.run_in_background.unwrap_or(false) || team.is_some();
        let all = available_tools(ctx);
        let mut tools = tools_for_agent(&definition, &all, background);
        // A definition's mode never widens the caller's: project agent files may have been
        // written by anyone, and `mode` in the input is held to the same rule.
        let mode = input.mode.map(AgentMode::permission_mode).or(definition
            .permission_mode
            .filter(|m| permissiveness(*m) <= permissiveness(ctx.permission_mode())));
        if team.is_some() {
            // Teammates also talk to the team and share its task list; one that starts in
            // plan mode sends its plan to the lead with ExitPlanMode.
            let plans = mode.unwrap_or_else(|| ctx.permission_mode()) == PermissionMode::Plan;
            let extra: Vec<Arc<dyn Tool>> = all
                .iter()
                .filter(|t| {
                    TEAMMATE_TOOLS.contains(&t.name()) || (plans && t.name() == "ExitPlanMode")
                })
                .filter(|t| !tools.iter().any(|have| have.name() == t.name()))
                .filter(|t| !definition.disallowed_tools.iter().any(|d| d == t.name()))
                .cloned()
                .collect();
            tools.extend(extra);
        }
        let agent_id = match &team {
            Some((t, name)) => format!("{name}@{}", t.name),
            None => new_agent_id(),
        };
        let worktree = match input.isolation {
            Some(Isolation::Worktree) => {
                let (cwd, name) = (
                    ctx.cwd(),
                    format!("agent-{}", store::safe_component(&agent_id)),
                );
                Some(
                    blocking(move || {
                        crate::worktree::create_worktree(&cwd, &name, "isolation: \"worktree\"")
                            .map_err(ToolError::respond)
                    })
                    .await?,
                )
            }
            None => None,
        };
        let cwd = match (&worktree, &input.cwd) {
            (Some(wt), _) => wt.path.clone(),
            (None, Some(dir)) => tool_core::path::canonicalize_lenient(&ctx.resolve_path(dir)),
            (None, None) => ctx.cwd(),
        };
        let sub_ctx = subagent_context_in(ctx, &agent_id, mode, &cwd);
        let request = AgentRequest {
            agent_id: agent_id.clone(),
            definition: definition.clone(),
            prompt: input.prompt.clone(),
            model: input.model.map(|m| m.as_str().to_owned()),
            tools,
            context: sub_ctx,
            cancel: ctx.cancel_token().child_token(),
            history: Vec::new(),
            parent_session_id: ctx.session_id().to_owned(),
        };
        if let Some((team, name)) = team {
            return spawn_teammate(runner, request, team, name, worktree, &input, ctx).await;
        }
        if background {
            let started = Instant::now();
            let spec = TaskSpec {
                kind: TaskKind::LocalAgent,
                description: input.description.clone(),
                run: TaskRun::Future(Box::new(move |token: CancellationToken| {
                    Box::pin(async move {
                        let request = AgentRequest {
                            cancel: token.clone(),
                            ..request
                        };
                        let result = runner.run(request).await;
                        let trailer = finish_worktree(worktree).await;
                        finish_task(result, started, &trailer)
                    })
                })),
            };
            let info = ctx.tasks().start(spec).await?;
            let runs = RunStore::for_context(ctx);
            let (task_id, id) = (info.id.clone(), agent_id.clone());
            blocking(move || runs.alias(&task_id, &id)).await?;
            let text = format!(
                "Async agent launched successfully.\nagentId: {} (an internal id: use it with TaskOutput or TaskStop, do not mention it to the user)\nThe agent is working in the background. You will be notified automatically when it completes.\noutput_file: {}\nIf asked, you can check its progress by reading the output file or with TaskOutput.",
                info.id,
                info.output_path.display()
            );
            return Ok(ToolResult::ok(AgentOutput {
                agent_id: info.id,
                agent_type: definition.name,
                status: "async_launched".to_owned(),
                content: String::new(),
                total_tokens: 0,
                tool_uses: 0,
                duration_ms: 0,
                output_file: Some(info.output_path),
                worktree: None,
            })
            .with_text(text));
        }
        let started = Instant::now();
        let result = runner.run(request).await;
        let worktree_trailer = finish_worktree(worktree).await;
        let outcome = result?;
        let duration_ms = started.elapsed().as_millis() as u64;
        let content = if outcome.output.is_empty() {
            NO_OUTPUT.to_owned()
        } else {
            outcome.output.clone()
        };
        let mut text = content.clone();
        if !definition.one_shot || worktree_trailer.is_some() {
            text.push('\n');
        }
        if !definition.one_shot {
            // SendMessage continues an agent whose runner kept its transcript (the API
            // runner); the trailer offers it only then.
            if RunStore::for_context(ctx).exists(&agent_id) {
                text.push_str(&format!(
                    "\nagentId: {agent_id} (use SendMessage with to: '{agent_id}' to continue this agent)"
                ));
            } else {
                text.push_str(&format!("\nagentId: {agent_id}"));
            }
        }
        if let Some((path, branch)) = &worktree_trailer {
            text.push_str(&format!(
                "\nworktreePath: {}\nworktreeBranch: {branch}",
                path.display()
            ));
        }
        if !definition.one_shot {
            text.push_str(&format!(
                "\n<usage>total_tokens: {}\ntool_uses: {}\nduration_ms: {duration_ms}</usage>",
                outcome.total_tokens, outcome.tool_uses
            ));
        }
        Ok(ToolResult::ok(AgentOutput {
            agent_id,
            agent_type: definition.name,
            status: "completed".to_owned(),
            content,
            total_tokens: outcome.total_tokens,
            tool_uses: outcome.tool_uses,
            duration_ms,
            output_file: None,
            worktree: worktree_trailer.map(|(path, _)| path),
        })
        .with_text(text))
    }
}

/// The tools of the session's catalog a sub-agent may be given: enabled, not hidden by a
/// blanket deny rule.
pub(crate) fn available_tools(ctx: &ToolContext) -> Vec<Arc<dyn Tool>> {
    ctx.services()
        .get::<ToolCatalog>()
        .map(|c| c.tools())
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.is_enabled() && !ctx.permissions().is_hidden(t.as_ref()))
        .collect()
}

/// The error of a teammate that tries to spawn one (the reference's rule: the roster is flat).
pub const TEAMMATES_CANNOT_SPAWN: &str = "Teammates cannot spawn other teammates: the team roster is flat. Leave out name and team_name, or ask the team lead to spawn one.";
/// Agent with both `cwd` and `isolation`.
pub const CWD_WITH_ISOLATION: &str = "cwd and isolation cannot be used together: with isolation: \"worktree\" the agent works in a new worktree. Leave out cwd or isolation.";
/// Tools a teammate gets beyond a background agent's.
pub const TEAMMATE_TOOLS: &[&str] = &[
    "SendMessage",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskUpdate",
];

/// The team and name an Agent call spawns a teammate as, `None` for a plain sub-agent.
fn resolve_team(
    input: &AgentInput,
    ctx: &ToolContext,
) -> Result<Option<(TeamFile, String)>, String> {
    if input.name.is_none() && input.team_name.is_none() {
        return Ok(None);
    }
    let store = TeamStore::for_context(ctx);
    let team = match input.team_name.as_deref().map(str::trim) {
        Some(wanted) => {
            let loaded = match store.load(wanted).map_err(|e| e.to_string())? {
                Some(t) => Some(t),
                None => store
                    .load(&team::team_slug(wanted))
                    .map_err(|e| e.to_string())?,
            };
            let Some(team) = loaded else {
                return Err(format!(
                    "team_name: team \"{wanted}\" does not exist: create it with TeamCreate first"
                ));
            };
            if team.lead_session_id != ctx.session_id() {
                return Err(format!(
                    "team_name: team \"{}\" is led by another session: only its lead spawns teammates into it",
                    team.name
                ));
            }
            team
        }
        None => store.led_by(ctx.session_id()).ok_or_else(|| {
            "name makes the agent a teammate, and this session leads no team: create one with TeamCreate first (or leave out name)".to_owned()
        })?,
    };
    let Some(name) = input
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
    else {
        return Err(
            "name is required to spawn a teammate: it is how SendMessage reaches the teammate"
                .to_owned(),
        );
    };
    if name == team::TEAM_LEAD_NAME
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "name: \"{name}\" is not a valid teammate name: use up to 64 letters, digits, \"-\" and \"_\" (and not \"{}\")",
            team::TEAM_LEAD_NAME
        ));
    }
    if team.member(name).is_some_and(|m| m.is_running()) {
        return Err(format!(
            "name: a teammate named \"{name}\" is already running in team \"{}\": choose another name",
            team.name
        ));
    }
    Ok(Some((team, name.to_owned())))
}

/// Removes an agent's worktree when it changed nothing; otherwise keeps it and returns its
/// path and branch for the result.
async fn finish_worktree(wt: Option<ActiveWorktree>) -> Option<(PathBuf, String)> {
    let wt = wt?;
    blocking(move || {
        Ok(match crate::worktree::pending_work(&wt) {
            Ok((0, 0)) if crate::worktree::remove_worktree(&wt).is_ok() => None,
            // Changes, or a state that cannot be verified: keep it.
            _ => Some((wt.path.clone(), wt.branch.clone())),
        })
    })
    .await
    .ok()
    .flatten()
}

/// The background task's end: the answer with the usage trailer, or why it stopped.
pub(crate) fn finish_task(
    result: Result<AgentOutcome, ToolError>,
    started: Instant,
    worktree: &Option<(PathBuf, String)>,
) -> TaskFinish {
    let duration = started.elapsed().as_millis();
    let worktree = match worktree {
        Some((path, branch)) => format!(
            "worktreePath: {}\nworktreeBranch: {branch}\n",
            path.display()
        ),
        None => String::new(),
    };
    match result {
        Ok(o) => TaskFinish {
            status: TaskStatus::Completed,
            exit_code: Some(0),
            output: format!(
                "{}\n{worktree}<usage>total_tokens: {}\ntool_uses: {}\nduration_ms: {duration}</usage>\n",
                if o.output.is_empty() {
                    NO_OUTPUT
                } else {
                    &o.output
                },
                o.total_tokens,
                o.tool_uses
            ),
        },
        Err(ToolError::Cancelled { .. }) => TaskFinish {
            status: TaskStatus::Killed,
            exit_code: None,
            output: format!("The agent was stopped.\n{worktree}"),
        },
        Err(e) => TaskFinish {
            status: TaskStatus::Failed,
            exit_code: Some(1),
            output: format!("The agent failed: {e}\n{worktree}"),
        },
    }
}

/// Registers a teammate as an active member of its team and runs it in the background; when
/// it ends (its run finished, failed, was stopped, or it approved a shutdown request) it is
/// marked inactive and the lead is told.
async fn spawn_teammate(
    runner: Arc<dyn AgentRunner>,
    request: AgentRequest,
    team: TeamFile,
    name: String,
    worktree: Option<ActiveWorktree>,
    input: &AgentInput,
    ctx: &ToolContext,
) -> Result<ToolResult<AgentOutput>, ToolError> {
    let store = TeamStore::for_context(ctx);
    let team_name = team.name.clone();
    let identity = Arc::new(TeammateIdentity {
        team_name: team_name.clone(),
        name: name.clone(),
        agent_id: request.agent_id.clone(),
        exit: CancellationToken::new(),
        after_plan: match ctx.permission_mode() {
            PermissionMode::Plan => PermissionMode::Default,
            mode => mode,
        },
    });
    request.context.services().insert(Arc::clone(&identity));
    let member = TeamMember {
        agent_id: request.agent_id.clone(),
        name: name.clone(),
        agent_type: request.definition.name.clone(),
        joined_at: team::now_ms(),
        cwd: request.context.cwd(),
        is_active: true,
        pid: Some(std::process::id()),
        task_id: None,
    };
    {
        let (store, team_name, name) = (store.clone(), team_name.clone(), name.clone());
        blocking(move || {
            store.update(&team_name, |t| {
                if t.member(&name).is_some_and(TeamMember::is_running) {
                    return Err(ToolError::respond(format!(
                        "name: a teammate named \"{name}\" is already running in team \"{team_name}\": choose another name"
                    )));
                }
                t.members.retain(|m| m.name != name);
                t.members.push(member);
                Ok(())
            })
        })
        .await?;
    }
    let started = Instant::now();
    let agent_type = request.definition.name.clone();
    let agent_id = request.agent_id.clone();
    let (end_store, end_team, end_name) = (store.clone(), team_name.clone(), name.clone());
    let spec = TaskSpec {
        kind: TaskKind::LocalAgent,
        description: input.description.clone(),
        run: TaskRun::Future(Box::new(move |token: CancellationToken| {
            Box::pin(async move {
                let request = AgentRequest {
                    cancel: token.clone(),
                    ..request
                };
                let result = runner.run(request).await;
                let trailer = finish_worktree(worktree).await;
                let notice = match &result {
                    Ok(_) => "finished".to_owned(),
                    Err(ToolError::Cancelled { .. }) => "was stopped".to_owned(),
                    Err(e) => format!("failed: {e}"),
                };
                let _ = blocking(move || {
                    let _ = end_store.set_active(&end_team, &end_name, false);
                    end_store.deliver(
                        &end_team,
                        team::TEAM_LEAD_NAME,
                        InboxMessage::typed(
                            end_name.clone(),
                            TeamMessage::TeammateTerminated {
                                message: format!("{end_name} {notice}"),
                            },
                        ),
                    )
                })
                .await;
                finish_task(result, started, &trailer)
            })
        })),
    };
    let info = match ctx.tasks().start(spec).await {
        Ok(info) => info,
        Err(e) => {
            let (store, team_name, name) = (store.clone(), team_name.clone(), name.clone());
            let _ = blocking(move || store.set_active(&team_name, &name, false)).await;
            return Err(e);
        }
    };
    {
        let (store, team_name, name, id) =
            (store, team_name.clone(), name.clone(), info.id.clone());
        let _ = blocking(move || {
            store.update(&team_name, |t| {
                if let Some(m) = t.members.iter_mut().find(|m| m.name == name) {
                    m.task_id = Some(id);
                }
                Ok(())
            })
        })
        .await;
    }
    let text = format!(
        "Spawned successfully.\nagent_id: {agent_id}\nname: {name}\nteam_name: {team_name}\nThe agent is now running in the background (task {}) and will receive instructions via its mailbox: use SendMessage to talk to it, and send it a shutdown_request when its work is done.",
        info.id
    );
    Ok(ToolResult::ok(AgentOutput {
        agent_id,
        agent_type,
        status: "teammate_spawned".to_owned(),
        content: String::new(),
        total_tokens: 0,
        tool_uses: 0,
        duration_ms: 0,
        output_file: Some(info.output_path),
        worktree: None,
    })
    .with_text(text))
}
