//! The tool registry of agent-tools: assembles the pool from the category crates and MCP
//! tools, and builds a session context from settings files and command-line options.
//!
//! # Overview
//!
//! - [`ToolRegistry`] builds the built-in tools once (sorted by ordinal name, for prompt-cache
//!   stability) and assembles a [`tool_core::ToolPool`]: built-ins first, then MCP tools
//!   sorted by name; an MCP tool can never take a built-in's name or alias; tools with a
//!   blanket deny rule and disabled tools are left out.
//! - [`SessionOptions`] and [`build_context`] load the settings files (user
//!   `<state dir>/settings.json`, project `.agent-tools/settings.json`, local
//!   `.agent-tools/settings.local.json`, `--settings`) plus command-line rules and mode into
//!   a [`tool_core::ToolContext`].
//! - Project files are inert until a person approves them: until then only the parts of
//!   `.agent-tools/settings*.json` that restrict the session apply, and `.mcp.json` servers
//!   do not start (unless the user settings enable them). [`trust_report`] says what a
//!   session ignored, [`review_project`] and [`approve_project`] are `agent-tools trust`.
//! - For `agent-tools doctor`, the category crates' probes pass through here:
//!   `probe_sandbox` and `try_sandbox` (shell), `language_servers` (lsp),
//!   [`project_mcp_servers`].
//! - The binary depends on this crate and tool-core only, so the rest of what it needs of the
//!   category crates passes through here too: [`LivePool`] (fixed without `mcp`),
//!   [`install_catalog`] (ToolSearch over the live pool), `sandbox_supervisor_entry`
//!   (shell) and the `mcp` module (the MCP server's pieces and the host services each served
//!   context gets).
//!
//! # Features
//!
//! | feature | what it adds | default |
//! | --- | --- | --- |
//! | `fs` | file tools (`tools-fs`) | yes |
//! | `shell` | Bash and background tasks (`tools-shell`) | yes |
//! | `web` | WebFetch, WebSearch (`tools-web`) | yes |
//! | `lsp` | LSP tool (`tools-lsp`) | yes |
//! | `agent` | agents, skills, todos, plan mode, worktrees, teams (`tools-agent`) | yes |
//! | `mcp` | MCP client tools (`tools-mcp`) | yes |
//! | `v2-todo` | TaskCreate/Get/Update/List and TaskStop | yes |
//! | `agent-triggers` | Cron tools and Monitor | no |
//!
//! A category crate contributes tools once its issue has landed; today `fs` brings Glob.
//!
//! # Example
//!
//! ```
//! use registry::{SessionOptions, ToolRegistry, build_context};
//!
//! # fn main() -> Result<(), tool_core::ToolError> {
//! let dir = tempfile::tempdir().map_err(|e| tool_core::ToolError::io("tempdir", e))?;
//! let options = SessionOptions { cwd: dir.path().to_path_buf(), state_dir: Some(dir.path().join("state")), ..SessionOptions::default() };
//! let ctx = build_context(&options)?;
//! let pool = ToolRegistry::new().pool(ctx.permissions(), Vec::new());
//! # #[cfg(feature = "fs")]
//! assert!(pool.get("Glob").is_some());
//! # Ok(())
//! # }
//! ```

mod checks;
mod host;
/// The code of `docs/library.md`, compiled and run with the doc tests, so the guide's
/// examples keep building against the crates they show.
#[cfg(all(doctest, feature = "fs", feature = "shell"))]
#[doc = include_str!("../../../docs/library.md")]
mod library_md {}
mod profiles;
mod session;

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use tool_core::{PermissionEngine, Tool, ToolPool};

#[cfg(feature = "lsp")]
pub use checks::{LanguageServerCheck, language_servers};
pub use checks::{McpEntry, project_mcp_servers};
#[cfg(feature = "shell")]
pub use checks::{SandboxProbe, SandboxTrial, probe_sandbox, try_sandbox};
#[cfg(feature = "mcp")]
pub use host::mcp;
pub use host::{LivePool, install_catalog};
#[cfg(feature = "shell")]
pub use host::{one_call_process, sandbox_supervisor_entry, settle_sandboxes};
pub use profiles::Profile;
pub use session::{
    SessionOptions, approve_project, build_context, review_project, revoke_project,
    session_profile, session_state_dir, settings_paths, trust_report,
};
#[cfg(feature = "fs")]
pub use tools_fs::{
    IndexSettings, IndexStatus, drop_index, index_status, rebuild_index, saved_index_status,
};

/// Starts what produces a live session's events outside calls (see
/// [`tool_core::SessionEvent`]): with the `agent-triggers` feature, the cron scheduler,
/// whose due prompts become `cron` events passed to the context's [`tool_core::EventSink`].
/// Monitor lines and background-task endings are emitted by the shell tools themselves.
/// Cancel the returned token to stop it; without the feature nothing runs.
pub fn start_session_events(
    ctx: &tool_core::ToolContext,
) -> Result<tool_core::CancellationToken, tool_core::ToolError> {
    // It stops with the session, or when the token is cancelled.
    let stop = ctx.cancel_token().child_token();
    #[cfg(feature = "agent-triggers")]
    {
        let scheduler = tools_agent::cron_scheduler(ctx)?;
        let session = ctx.clone();
        tokio::spawn(scheduler.run(stop.clone(), move |fire| {
            let job = &fire.job;
            session.emit_event(tool_core::SessionEvent {
                event: "cron".to_owned(),
                id: Some(job.id.clone()),
                text: job.prompt.clone(),
                data: serde_json::json!({
                    "cron": job.cron,
                    "schedule": job.human_schedule(),
                    "recurring": job.recurring,
                    "last": fire.last,
                }),
            });
        }));
    }
    #[cfg(not(feature = "agent-triggers"))]
    let _ = ctx;
    Ok(stop)
}

/// Assembles tool pools in one [`Profile`]'s vocabulary.
#[derive(Default)]
pub struct ToolRegistry {
    profile: Profile,
    base: OnceLock<Vec<Arc<dyn Tool>>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("profile", &self.profile)
            .field("base", &self.base.get().map(Vec::len))
            .finish()
    }
}

impl ToolRegistry {
    /// A registry of the default profile (`claude`); the built-in tools are built on first
    /// use and cached.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry whose built-ins speak `profile`'s vocabulary.
    pub fn for_profile(profile: Profile) -> Self {
        ToolRegistry {
            profile,
            base: OnceLock::new(),
        }
    }

    /// The profile of this registry.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The built-in tools compiled in, in the registry's profile, sorted by name (ordinal),
    /// built once.
    pub fn base_tools(&self) -> &[Arc<dyn Tool>] {
        self.base.get_or_init(|| {
            let mut tools = profiles::apply(self.profile, compiled_tools());
            tools.sort_by(|a, b| a.name().cmp(b.name()));
            tools
        })
    }

    /// The pool for a session: enabled built-ins without a blanket deny, then the MCP tools
    /// that pass the same filters, sorted by name, with any that would take a built-in's
    /// name or alias dropped.
    pub fn pool(&self, permissions: &PermissionEngine, mcp_tools: Vec<Arc<dyn Tool>>) -> ToolPool {
        assemble_pool(self.base_tools(), mcp_tools, permissions)
    }
}

/// The tools of every category compiled in. Each category crate adds its `tools()` here
/// when its issue lands.
fn compiled_tools() -> Vec<Arc<dyn Tool>> {
    #[allow(unused_mut)]
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    #[cfg(feature = "fs")]
    tools.extend(tools_fs::tools());
    #[cfg(feature = "shell")]
    tools.extend(tools_shell::tools());
    #[cfg(feature = "web")]
    tools.extend(tools_web::tools());
    #[cfg(feature = "lsp")]
    tools.extend(tools_lsp::tools());
    #[cfg(feature = "mcp")]
    tools.extend(tools_mcp::tools());
    #[cfg(feature = "agent")]
    tools.extend(tools_agent::tools());
    tools
}

/// Starts the MCP servers of the session's `.mcp.json` that a person approved (see
/// [`tools_mcp::load_project_config`]) in the background and returns their manager at once
/// (also stored in the context's services, where the MCP resource tools find it). Each
/// server's tools join [`tools_mcp::McpManager::tools`] when it is ready, so a pool that
/// follows them ([`ToolRegistry::live_pool`]) gains them then;
/// [`tools_mcp::McpManager::wait_started`] waits for them. A server whose `.mcp.json` entry
/// has a problem is not started and is listed with it. Without a `.mcp.json`, or without an
/// approved server, nothing starts. Needs a tokio runtime.
#[cfg(feature = "mcp")]
pub fn start_mcp_servers(
    ctx: &tool_core::ToolContext,
) -> Result<Option<Arc<tools_mcp::McpManager>>, tool_core::ToolError> {
    tools_mcp::start_project_servers(ctx)
}

#[cfg(feature = "mcp")]
impl ToolRegistry {
    /// The pool of a session that follows its MCP servers: assembled now by the rule of
    /// [`ToolRegistry::pool`], and assembled again by the same rule (built-ins win,
    /// blanket-denied and disabled tools hidden, MCP tools sorted) whenever a server's tool
    /// list changes; `ctx` supplies the permission rules. Without a manager the pool never
    /// changes.
    pub fn live_pool(
        &self,
        ctx: &tool_core::ToolContext,
        manager: Option<Arc<tools_mcp::McpManager>>,
    ) -> tools_mcp::LivePool {
        match manager {
            None => tools_mcp::LivePool::fixed(self.pool(ctx.permissions(), Vec::new())),
            Some(manager) => {
                let base = self.base_tools().to_vec();
                let ctx = ctx.clone();
                tools_mcp::LivePool::following(manager, move |mcp_tools| {
                    assemble_pool(&base, mcp_tools, ctx.permissions())
                })
            }
        }
    }
}

/// The assembly rule, on explicit inputs: built-ins sorted by name, then MCP tools sorted by
/// name; an MCP tool never takes a built-in's name or alias; tools under a blanket deny rule
/// and disabled tools are left out.
pub fn assemble_pool(
    base: &[Arc<dyn Tool>],
    mcp_tools: Vec<Arc<dyn Tool>>,
    permissions: &PermissionEngine,
) -> ToolPool {
    let visible = |t: &Arc<dyn Tool>| t.is_enabled() && !permissions.is_hidden(t.as_ref());
    let mut builtins: Vec<Arc<dyn Tool>> = base.iter().filter(|t| visible(t)).cloned().collect();
    builtins.sort_by(|a, b| a.name().cmp(b.name()));
    // Names and aliases of every compiled built-in, hidden or not: an MCP tool may never
    // stand in for a built-in, even one the rules hide.
    let reserved: HashSet<&str> = base
        .iter()
        .flat_map(|t| std::iter::once(t.name()).chain(t.aliases().iter().copied()))
        .collect();
    let mut mcp: Vec<Arc<dyn Tool>> = mcp_tools
        .into_iter()
        .filter(|t| !reserved.contains(t.name()) && visible(t))
        .collect();
    mcp.sort_by(|a, b| a.name().cmp(b.name()));
    mcp.dedup_by(|a, b| a.name() == b.name());
    builtins.extend(mcp);
    ToolPool::new(builtins)
}
