//! `agent-tools serve`: the pool as an MCP server over stdio or streamable HTTP. The server
//! itself lives in tools-mcp; this module only turns the command line into its options.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Result, anyhow};
use registry::{SessionOptions, build_context};
use tool_core::{CancellationToken, ToolContext, ToolPool};
use tools_mcp::{
    HttpOptions, McpManager, SessionFactory, parse_listen_addr, serve_http, serve_stdio,
};

/// Serves `pool`: over stdio with `ctx` as the one session, or over HTTP at `http` with a
/// fresh context per MCP session built from `options` (sharing the `.mcp.json` servers of
/// `mcp`).
pub async fn serve(
    pool: ToolPool,
    ctx: ToolContext,
    options: SessionOptions,
    mcp: Option<Arc<McpManager>>,
    http: Option<String>,
    allowed_hosts: Vec<String>,
) -> Result<ExitCode> {
    let Some(addr) = http else {
        serve_stdio(pool, ctx).await?;
        return Ok(ExitCode::SUCCESS);
    };
    let addr = parse_listen_addr(&addr).map_err(|e| crate::usage(e.to_string()))?;
    // Every HTTP session gets its own context; the MCP servers of `.mcp.json` are shared.
    let factory: SessionFactory = Arc::new(move || {
        let ctx = build_context(&options)?;
        if let Some(manager) = &mcp {
            ctx.services().insert(Arc::clone(manager));
        }
        Ok(ctx)
    });
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            stop.cancel();
        }
    });
    serve_http(
        pool,
        factory,
        HttpOptions {
            addr,
            allowed_hosts,
        },
        shutdown,
        |bound| eprintln!("agent-tools: serving MCP at http://{bound}/mcp"),
    )
    .await
    .map_err(|e| anyhow!(e))?;
    Ok(ExitCode::SUCCESS)
}
