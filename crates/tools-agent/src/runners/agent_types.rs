//! Kinds of sub-agents: the built-in types (general-purpose, Explore, Plan) and
//! `.agent-tools/agents/*.md` files with front matter, and which tools a sub-agent gets.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use tool_core::{Approval, PermissionMode, Tool, ToolCategory, ToolContext};

use crate::stores::frontmatter;
use crate::stores::project::{self, Kind, PROJECT_PREFIX};

/// Tools no sub-agent gets: no nesting, no questions or plan mode of its own.
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

/// An agent definition from the text of its file. `approved`: a person approved the file
/// (the person's own files always are); otherwise the keys that widen a session are
/// dropped first ([`project::narrow`]).
fn parse_agent(path: &Path, text: &str, approved: bool) -> Result<AgentDefinition, String> {
    let mut doc = frontmatter::parse(text).map_err(|e| format!("{}: {e}", path.display()))?;
    if !approved {
        project::narrow(Kind::Agent, &mut doc);
    }
    let name = doc
        .get("name")
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
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

/// Every agent of the session: the built-ins, then the person's own agents
/// (`<state>/agents/*.md`, which may replace a built-in of the same name), then the
/// project's (`.agent-tools/agents/*.md`). A project agent never takes a name already
/// taken (compared without case): it is listed as `project:<name>` instead, so
/// `subagent_type: "Explore"` and an `Agent(Explore)` rule always mean the built-in (or the
/// person's own). A project file a person has not approved (`agent-tools trust`) loads
/// without the keys that widen a session (`permissionMode`, `model`, hooks, ...); one
/// reached through a symbolic link is not loaded. Files that cannot be read are returned
/// as errors beside the list.
pub fn load_agents(ctx: &ToolContext) -> (Vec<AgentDefinition>, Vec<String>) {
    let mut agents = builtin_agents();
    let mut errors = Vec::new();
    for file in project::agent_files(&ctx.state_dir().join("agents")) {
        let parsed = std::fs::read_to_string(&file)
            .map_err(|e| format!("{}: {e}", file.display()))
            .and_then(|text| parse_agent(&file, &text, true));
        match parsed {
            Ok(def) => {
                agents.retain(|a| a.name != def.name);
                agents.push(def);
            }
            Err(e) => errors.push(e),
        }
    }
    let root = project::project_root(ctx);
    let dir = root.join(project::PROJECT_DIR).join("agents");
    let files = project::agent_files(&dir);
    if files.is_empty() {
        return (agents, errors);
    }
    let approvals = project::approvals(&root, ctx.state_dir());
    for file in files {
        let parsed = project::read(&root, &file, &approvals).and_then(|f| {
            let text = String::from_utf8(f.bytes)
                .map_err(|e| format!("{}: not UTF-8 text: {e}", file.display()))?;
            parse_agent(&file, &text, f.status == Approval::Approved)
        });
        let mut def = match parsed {
            Ok(def) => def,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if def.name.contains(':') {
            errors.push(format!(
                "{}: name \"{}\": ':' is reserved for {PROJECT_PREFIX}<name>, the name a project agent gets when its own is taken",
                file.display(),
                def.name
            ));
            continue;
        }
        if project::is_taken(&def.name, agents.iter().map(|a| a.name.as_str())) {
            def.name = format!("{PROJECT_PREFIX}{}", def.name);
            if project::is_taken(&def.name, agents.iter().map(|a| a.name.as_str())) {
                errors.push(format!(
                    "{}: another project agent already has the name {}",
                    file.display(),
                    def.name
                ));
                continue;
            }
        }
        agents.push(def);
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
