//! What the binary needs of the category crates beyond the pool, so it depends on the
//! registry and tool-core only: the session's live pool (which follows the MCP servers with
//! the `mcp` feature, and is fixed without it), the ToolSearch catalogue over it (`agent`),
//! the sandbox supervisor's entry point (`shell`), and the MCP server with the host services
//! it installs in each context (`mcp`).

#[cfg(feature = "mcp")]
pub use tools_mcp::LivePool;

/// The pool of a session. Without the `mcp` feature there are no MCP servers to follow,
/// so it never changes.
#[cfg(not(feature = "mcp"))]
#[derive(Clone, Default)]
pub struct LivePool {
    pool: tool_core::ToolPool,
}

#[cfg(not(feature = "mcp"))]
impl std::fmt::Debug for LivePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LivePool")
            .field("tools", &self.pool.tools().len())
            .finish()
    }
}

#[cfg(not(feature = "mcp"))]
impl LivePool {
    /// A pool that never changes.
    pub fn fixed(pool: tool_core::ToolPool) -> Self {
        LivePool { pool }
    }

    /// The pool as it is now.
    pub fn current(&self) -> tool_core::ToolPool {
        self.pool.clone()
    }

    /// The pool once it is up to date: here, as it is now.
    pub async fn settled(&self) -> tool_core::ToolPool {
        self.current()
    }
}

#[cfg(not(feature = "mcp"))]
impl crate::ToolRegistry {
    /// The pool of a session: without the `mcp` feature, the pool of
    /// [`crate::ToolRegistry::pool`] under `ctx`'s permission rules, which never changes.
    pub fn live_pool(&self, ctx: &tool_core::ToolContext) -> LivePool {
        LivePool::fixed(self.pool(ctx.permissions(), Vec::new()))
    }
}

/// Makes ToolSearch and sub-agents of `ctx` see `pool` as it is at the time of the search,
/// MCP tools included (the default catalogue only knows the built-ins). Without the
/// `agent` feature there is no ToolSearch, and nothing is installed.
pub fn install_catalog(ctx: &tool_core::ToolContext, pool: &LivePool) {
    #[cfg(all(feature = "agent", feature = "mcp"))]
    {
        let pools = pool.subscribe();
        ctx.services()
            .insert(tools_agent::ToolCatalog::new(move || {
                pools.borrow().tools().to_vec()
            }));
    }
    #[cfg(all(feature = "agent", not(feature = "mcp")))]
    {
        let pool = pool.current();
        ctx.services()
            .insert(tools_agent::ToolCatalog::new(move || pool.tools().to_vec()));
    }
    #[cfg(not(feature = "agent"))]
    let _ = (ctx, pool);
}

/// The persistent sandbox's supervisor, when this process was started as one (inside
/// bubblewrap): its exit status. `None` for an ordinary start.
#[cfg(feature = "shell")]
pub fn sandbox_supervisor_entry() -> Option<std::process::ExitCode> {
    tools_shell::sandbox_supervisor_entry()
}

/// The MCP server (`agent-tools serve`) and the MCP servers of `.mcp.json`: tools-mcp's
/// pieces the binary uses, and the host services each served context gets.
#[cfg(feature = "mcp")]
pub mod mcp {
    pub use tools_mcp::{
        AuthStatus, ClientOffers, DEFAULT_GRACE, HttpKind, HttpOptions, LOGIN_TIMEOUT,
        LoginOutcome, LoginPrompt, LogoutOutcome, McpConfig, McpManager, ServerConfig,
        SessionFactory, StdioOptions, Token, Transport, auth_status, load_project_config, login,
        logout, open_browser, parse_listen_addr, serve_http, serve_stdio_with, tokens_from_text,
    };

    /// Marks `ctx` as the context of an MCP server (`agent-tools serve`), before its
    /// `.mcp.json` servers start: they are told the client answers elicitation and sampling,
    /// which the server adapter forwards to the MCP client whose call the request belongs to.
    pub fn offer_client_requests(ctx: &tool_core::ToolContext) {
        ctx.services().insert(tools_mcp::ClientOffers {
            elicitation: true,
            sampling: true,
        });
    }

    /// What every context of the MCP server gets from the host: with the `agent` feature,
    /// AskUserQuestion's questions asked through elicitation (legacy sessions, whose client
    /// may be asked during a call: tools-mcp's question prompter) or as a form before the
    /// call (protocol 2026-07-28).
    pub fn install_host_services(ctx: &tool_core::ToolContext) {
        #[cfg(feature = "agent")]
        {
            use std::sync::Arc;
            ctx.services().insert(tools_mcp::question_hook());
            let upfront: Arc<dyn tools_mcp::UpfrontInput> = Arc::new(tools_mcp::QuestionForm::new(
                "AskUserQuestion",
                tools_agent::DECLINED,
            ));
            ctx.services().insert(upfront);
        }
        #[cfg(not(feature = "agent"))]
        let _ = ctx;
    }
}
