//! What every sub-agent runner shares: the [`AgentRunner`] service and its request and
//! outcome, the `agent` settings section, the context a sub-agent's tools run in, the tools
//! it may be given, and the end of a background agent's task; the runners themselves (the
//! Messages API loop, a configured command) and the kinds of sub-agents they run.

pub(crate) mod agent_types;
pub(crate) mod api;
pub(crate) mod command;
pub(crate) mod from_settings;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_core::{
    CancellationToken, PermissionMode, PermissionPrompter, SettingsLayer, TaskFinish, TaskStatus,
    Tool, ToolContext, ToolError,
};

use self::agent_types::AgentDefinition;
use crate::stores::catalog::ToolCatalog;
use crate::stores::state::{AgentIdentity, safe_component};

/// What a sub-agent that said nothing returns.
pub const NO_OUTPUT: &str = "(Subagent completed but returned no output.)";

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
/// [`runner_from_settings`](crate::runner_from_settings) builds one of the two real runners.
#[async_trait]
pub trait AgentRunner: Send + Sync {
    /// Runs one sub-agent to its final answer.
    async fn run(&self, request: AgentRequest) -> Result<AgentOutcome, ToolError>;
}
impl tool_core::ServiceType for dyn AgentRunner {}

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

#[cfg(any(test, feature = "testing"))]
/// The context a sub-agent's tools run in: the parent's working directory, rules, managers,
/// state directories and host services (permission prompter, settings, catalog), its own
/// session (todos, plan file, mode), and an [`AgentIdentity`]. Its mode (`mode`, else the
/// parent's) is capped by the parent's mode in effect at every call: a parent that enters
/// plan mode takes its running sub-agents and teammates with it.
pub fn subagent_context(
    ctx: &ToolContext,
    agent_id: &str,
    mode: Option<PermissionMode>,
) -> ToolContext {
    subagent_context_in(ctx, agent_id, mode, &ctx.cwd())
}

/// [`subagent_context`] rooted in another working directory (`cwd`, or a worktree).
pub(crate) fn subagent_context_in(
    ctx: &ToolContext,
    agent_id: &str,
    mode: Option<PermissionMode>,
    cwd: &Path,
) -> ToolContext {
    let own = ctx.permission_mode();
    let mut builder = ToolContext::builder(cwd)
        .mode(mode.map_or(own, |m| m.capped_at(own)))
        .mode_ceiling(ctx)
        .additional_dirs(ctx.additional_dirs())
        .permissions(tool_core::PermissionEngine::new(ctx.permissions().rules()))
        .lsp(Arc::clone(ctx.lsp()))
        .tasks(Arc::clone(ctx.tasks()))
        .state_dir(ctx.state_dir())
        .private_state_dir(ctx.private_state_dir())
        .session_id(format!("{}-{}", ctx.session_id(), safe_component(agent_id)))
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
    if let Some(hint) = ctx.services().get::<Arc<dyn tool_core::AllowHint>>() {
        builder = builder.service(hint);
    }
    builder.build()
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
