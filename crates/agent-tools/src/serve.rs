//! `agent-tools serve`: the pool as an MCP server over stdio or streamable HTTP. The server
//! itself lives in tools-mcp; this module turns the command line into its options, loads
//! the bearer tokens, stops the server on SIGTERM or Ctrl-C, and has the registry install
//! the host's services in each context (AskUserQuestion's questions through elicitation for
//! legacy sessions, a form asked before the call on protocol 2026-07-28). Built with the
//! `mcp` feature only.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use registry::mcp::{
    HttpOptions, McpManager, SessionFactory, StdioOptions, Token, install_host_services,
    parse_listen_addr, serve_http, serve_stdio_with, tokens_from_text,
};
use registry::{LivePool, SessionOptions, build_context};
use tool_core::{CancellationToken, Retention, ToolContext};

use crate::serve_limits::ServeLimits;

/// The `serve` options of the command line.
#[derive(Debug, Clone, Default)]
pub struct ServeArgs {
    /// `--http ADDR`
    pub http: Option<String>,
    /// `--allowed-host HOST`
    pub allowed_hosts: Vec<String>,
    /// `--allowed-origin ORIGIN`
    pub allowed_origins: Vec<String>,
    /// `--token-file FILE`
    pub token_files: Vec<PathBuf>,
    /// `--token-env VAR`
    pub token_envs: Vec<String>,
    /// `--no-auth`: no token at all
    pub no_auth: bool,
    /// `--max-request-bytes N`
    pub max_request_bytes: Option<usize>,
    /// `--grace SECONDS`
    pub grace: Option<u64>,
    /// Connection deadlines, the connection cap, session idle time, output retention
    pub limits: ServeLimits,
}

/// Serves `pool`: over stdio with `ctx` as the connection's context, or over HTTP with a
/// context per legacy session and per principal built from `options` (sharing the
/// `.mcp.json` servers of `mcp`). When an MCP server's tool list changes, the pool is
/// assembled again and every client is told.
pub async fn serve(
    pool: LivePool,
    ctx: ToolContext,
    options: SessionOptions,
    mcp: Option<Arc<McpManager>>,
    args: ServeArgs,
) -> Result<ExitCode> {
    let shutdown = CancellationToken::new();
    stop_on_signals(shutdown.clone())?;
    let limits = &args.limits;
    let retention = Retention {
        max_age: seconds("--output-retention", limits.output_retention)?
            .unwrap_or(tool_core::DEFAULT_RETENTION),
        budget: limits
            .output_budget
            .unwrap_or(tool_core::DEFAULT_OUTPUT_BUDGET),
    };
    prune_outputs_periodically(ctx.state_dir().to_path_buf(), retention);
    let grace = args
        .grace
        .map_or(registry::mcp::DEFAULT_GRACE, Duration::from_secs);
    // Every further context (legacy HTTP sessions, principals, minted handles) gets the
    // same services; the `.mcp.json` servers are shared, and ToolSearch sees the whole
    // pool as it is now.
    let catalog_pool = pool.clone();
    // The state directory the session was built with (the options' or the default one).
    let state_dir = ctx.state_dir().to_path_buf();
    let factory: SessionFactory = Arc::new(move |principal| {
        // Each bearer token keeps its plans, todos, task lists, inboxes, transcripts and
        // output in its own part of the state directory.
        let options = SessionOptions {
            private_state_dir: principal
                .state_dir_name()
                .map(|name| state_dir.join(tool_core::PRINCIPALS_DIR).join(name)),
            ..options.clone()
        };
        let ctx = build_context(&options)?;
        install_host_services(&ctx);
        crate::install_command_line_hint(&ctx);
        registry::install_catalog(&ctx, &catalog_pool);
        if let Some(manager) = &mcp {
            ctx.services().insert(Arc::clone(manager));
        }
        Ok(ctx)
    });
    let Some(addr) = args.http.clone() else {
        install_host_services(&ctx);
        crate::install_command_line_hint(&ctx);
        // The one session of stdio runs the scheduler (agent-triggers): its due prompts
        // reach the client as events (one that fires before the client has initialized
        // waits in the session until it has). Over HTTP, contexts come and go and several would
        // each fire the project's durable jobs, so none runs it.
        let _events = registry::start_session_events(&ctx)
            .map_err(|e| anyhow!(e.to_string()))?
            .drop_guard();
        let stdio = StdioOptions {
            factory: Some(factory),
            shutdown,
            grace,
        };
        serve_stdio_with(pool, ctx, stdio).await?;
        return Ok(ExitCode::SUCCESS);
    };
    let addr = parse_listen_addr(&addr).map_err(|e| crate::usage(e.to_string()))?;
    let mut tokens = load_tokens(&args.token_files, &args.token_envs)?;
    // Without a token named, a generated one (see serve_token.rs), unless a person opts out.
    // Listening beyond loopback, or for any host, still needs a token a person chose and
    // handed out (the server refuses to start without one).
    let local = addr.ip().is_loopback() && !args.allowed_hosts.iter().any(|h| h == "*");
    let mut token_note = String::new();
    if tokens.is_empty() && !args.no_auth && local {
        let (secret, path) =
            crate::serve_token::token(ctx.state_dir()).map_err(|e| crate::usage(e.to_string()))?;
        tokens =
            tokens_from_text(&secret, "the serve token", 1).map_err(|e| anyhow!(e.to_string()))?;
        token_note = format!(
            "; the token is in {} (clients send `Authorization: Bearer <token>`)",
            path.display()
        );
    } else if args.no_auth {
        eprintln!(
            "agent-tools: warning: --no-auth: every account on this machine can use this server as you (read your files, run commands as you); use it only where no one else can connect"
        );
    }
    let http = http_options(addr, args, tokens, grace)?;
    let authenticated = !http.tokens.is_empty();
    serve_http(pool, factory, http, shutdown, |bound| {
        let auth = if authenticated {
            " (bearer token required)"
        } else {
            ""
        };
        eprintln!("agent-tools: serving MCP at http://{bound}/mcp{auth}{token_note}");
    })
    .await
    .map_err(|e| {
        if e.is_retryable() {
            crate::usage(e.to_string())
        } else {
            anyhow!(e)
        }
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The HTTP server's options from the command line.
fn http_options(
    addr: std::net::SocketAddr,
    args: ServeArgs,
    tokens: Vec<Token>,
    grace: Duration,
) -> Result<HttpOptions> {
    let mut http = HttpOptions::new(addr);
    http.allowed_hosts = args.allowed_hosts;
    http.allowed_origins = args.allowed_origins;
    http.tokens = tokens;
    http.grace = grace;
    if let Some(max) = args.max_request_bytes {
        http.max_body_bytes = max;
    }
    if let Some(t) = seconds("--header-timeout", args.limits.header_timeout)? {
        http.header_timeout = t;
    }
    if let Some(t) = seconds("--idle-timeout", args.limits.idle_timeout)? {
        http.idle_timeout = t;
    }
    if let Some(n) = args.limits.max_connections {
        if n == 0 {
            return Err(crate::usage("--max-connections must be at least 1"));
        }
        http.max_connections = n;
    }
    if let Some(t) = seconds("--session-idle", args.limits.session_idle)? {
        http.session_idle = t;
    }
    Ok(http)
}

/// A duration option given in seconds (fractions allowed): positive and finite.
fn seconds(option: &str, value: Option<f64>) -> Result<Option<Duration>> {
    match value {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s <= 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(crate::usage(format!(
            "{option} {s}: expected a number of seconds above 0"
        ))),
    }
}

/// Prunes the state directory's output files now and every so often (a tenth of the
/// retention time, between one second and a minute), on a blocking thread.
fn prune_outputs_periodically(state_dir: PathBuf, retention: Retention) {
    let period = (retention.max_age / 10).clamp(Duration::from_secs(1), Duration::from_secs(60));
    tokio::spawn(async move {
        loop {
            let (dir, r) = (state_dir.clone(), retention);
            let _ = tokio::task::spawn_blocking(move || tool_core::prune_outputs(&dir, &r)).await;
            tokio::time::sleep(period).await;
        }
    });
}

/// Cancels `shutdown` on SIGTERM or Ctrl-C.
fn stop_on_signals(shutdown: CancellationToken) -> Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("cannot watch for SIGTERM")?;
        let stop = shutdown.clone();
        tokio::spawn(async move {
            if term.recv().await.is_some() {
                eprintln!("agent-tools: SIGTERM: finishing the calls in flight, then stopping");
                stop.cancel();
            }
        });
    }
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            shutdown.cancel();
        }
    });
    Ok(())
}

/// The tokens of `--token-file` and `--token-env`, in that order.
fn load_tokens(files: &[PathBuf], envs: &[String]) -> Result<Vec<Token>> {
    let mut tokens = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| crate::usage(format!("--token-file {}: {e}", file.display())))?;
        let source = format!("--token-file {}", file.display());
        tokens.extend(
            tokens_from_text(&text, &source, tokens.len() + 1)
                .map_err(|e| crate::usage(e.to_string()))?,
        );
    }
    for var in envs {
        let text = std::env::var(var).map_err(|_| {
            crate::usage(format!(
                "--token-env {var}: the variable is not set (or not UTF-8)"
            ))
        })?;
        let source = format!("--token-env {var}");
        tokens.extend(
            tokens_from_text(&text, &source, tokens.len() + 1)
                .map_err(|e| crate::usage(e.to_string()))?,
        );
    }
    Ok(tokens)
}
