//! `agent-tools`: run any tool of the pool from a shell (`list`, `schema`, `call`, `batch`),
//! serve the whole pool as an MCP server (`serve`), approve the project's own settings
//! and MCP servers (`trust`), or check what works on this machine (`doctor`).
//!
//! The binary is thin: it parses arguments, loads settings through the registry, runs calls
//! through tool-core's one execution path and prints results as JSON lines. Exit status of
//! `call` and `batch`: 0 success, 1 a tool returned an error, 2 the command line was wrong.

use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use clap::{Args, Parser, Subcommand};
use registry::{SessionOptions, ToolRegistry, build_context};
use serde_json::{Value, json};
mod doctor;
#[cfg(feature = "fs")]
mod index;
#[cfg(feature = "mcp")]
mod mcp_cmd;
#[cfg(not(feature = "mcp"))]
#[path = "mcp_absent.rs"]
mod mcp_startup;
#[cfg(feature = "mcp")]
mod mcp_startup;
mod mcp_wait;
#[cfg(feature = "mcp")]
mod serve;
mod serve_limits;
#[cfg(feature = "mcp")]
mod serve_token;
mod trust;

use mcp_startup::McpManager;
use registry::LivePool;
use tool_core::{
    CallResult, Dialect, PermissionMode, ToolCall, ToolContext, ToolError, ToolPool, error_result,
};

/// Run agent tools from a shell.
#[derive(Debug, Parser)]
#[command(name = "agent-tools", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    session: SessionArgs,
}

/// Options every command takes.
#[derive(Debug, Args)]
struct SessionArgs {
    /// Working directory of the session (default: the current directory)
    #[arg(long, global = true, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Permission mode: default, acceptEdits, plan, bypassPermissions, dontAsk
    #[arg(long, global = true, value_name = "MODE", value_parser = parse_mode)]
    mode: Option<PermissionMode>,
    /// Allow calls matching RULE, such as 'Bash(npm test)' (repeatable)
    #[arg(long, global = true, value_name = "RULE")]
    allow: Vec<String>,
    /// Deny calls matching RULE (repeatable)
    #[arg(long, global = true, value_name = "RULE")]
    deny: Vec<String>,
    /// Ask before calls matching RULE; without a person this denies them (repeatable)
    #[arg(long, global = true, value_name = "RULE")]
    ask: Vec<String>,
    /// Tool vocabulary: claude (Read, Edit, Bash, ...: the default), codex (exec_command,
    /// write_stdin, update_plan, view_image, ...) or gemini (read_file, replace,
    /// run_shell_command, ...); overrides the toolProfile setting
    #[arg(long, global = true, value_name = "PROFILE", value_parser = parse_profile)]
    profile: Option<registry::Profile>,
    /// Extra settings file, read after the user and project settings
    #[arg(long, global = true, value_name = "FILE")]
    settings: Option<PathBuf>,
    /// How long call, list, schema and batch wait for the MCP servers of .mcp.json to start
    /// (serve never waits: their tools join when they are ready)
    #[arg(long, global = true, value_name = "SECONDS", value_parser = mcp_wait::parse_wait,
          default_value = mcp_wait::DEFAULT_WAIT)]
    mcp_wait: std::time::Duration,
}

fn parse_mode(s: &str) -> std::result::Result<PermissionMode, String> {
    s.parse()
}

fn parse_profile(s: &str) -> std::result::Result<registry::Profile, String> {
    s.parse()
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the tools of the pool, in pool order
    List {
        /// Print JSON objects with name, aliases, category and flags
        #[arg(long)]
        json: bool,
    },
    /// Print tool declarations (name, description, input schema) for a model provider
    Schema {
        /// Tools to print (default: all)
        tools: Vec<String>,
        /// anthropic, openai (Chat Completions), openai-responses (Responses API), gemini or
        /// mcp
        #[arg(long, default_value = "anthropic", value_parser = parse_dialect)]
        dialect: Dialect,
    },
    /// Run one tool call and print its result as one JSON line
    Call {
        /// The tool's name or alias
        tool: String,
        /// The input as JSON, or - to read it from standard input (default: {})
        input: Option<String>,
    },
    /// A live session: read calls as JSON lines {"tool": .., "input": ..} from standard
    /// input, run each as soon as its line arrives and print its result line as soon as it
    /// is done; all calls share one session until the end of input
    Batch,
    /// Serve the pool as an MCP server: over stdio, or over streamable HTTP with --http
    ///
    /// Legacy clients (protocol 2025-11-25 and earlier) get one context per MCP session.
    /// On protocol 2026-07-28, which has no sessions, a request runs in its principal's
    /// context (one per bearer token, or one for the local client), or in the context its
    /// `_meta` names under "agent-tools/context" ("new" starts one; results name theirs).
    /// SIGTERM or Ctrl-C: calls in flight get --grace seconds, then are cancelled, and
    /// background commands are stopped.
    Serve {
        /// Listen for streamable HTTP at ADDR (PORT, :PORT or HOST:PORT; a bare port listens
        /// on 127.0.0.1 only); the endpoint is /mcp, and /healthz answers without auth
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Host names accepted in the HTTP Host header (repeatable; default: loopback names,
        /// or any host when tokens are required; '*' accepts any, only with a token)
        #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
        allowed_hosts: Vec<String>,
        /// Browser origins accepted in the Origin header, such as https://app.example.com or
        /// http://localhost:* (repeatable; default: loopback origins); others get 403
        // The text is the option's help on a terminal, where a bare URL is what reads right.
        #[allow(rustdoc::bare_urls)]
        #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "http")]
        allowed_origins: Vec<String>,
        /// Require a bearer token: read the accepted tokens from FILE, one per line
        /// (repeatable; each token is its own principal with its own context)
        #[arg(long = "token-file", value_name = "FILE", requires = "http")]
        token_files: Vec<PathBuf>,
        /// Require a bearer token: read the accepted tokens from the environment variable
        /// VAR (comma- or newline-separated; repeatable)
        #[arg(long = "token-env", value_name = "VAR", requires = "http")]
        token_envs: Vec<String>,
        /// Serve without any token (with a warning): every account on the machine can then
        /// use the server as you. Without this, --token-file or --token-env, a token is
        /// generated in the state directory (serve-token, mode 0600) and required
        #[arg(
            long = "no-auth",
            requires = "http",
            conflicts_with_all = ["token_files", "token_envs"]
        )]
        no_auth: bool,
        /// The largest HTTP request body accepted, in bytes (default: 64 MiB)
        #[arg(long = "max-request-bytes", value_name = "N", requires = "http")]
        max_request_bytes: Option<usize>,
        /// Seconds that calls in flight get to finish after SIGTERM before they are
        /// cancelled (default: 10)
        #[arg(long, value_name = "SECONDS")]
        grace: Option<u64>,
        // Boxed: the limits would make `serve` the largest variant by far.
        #[command(flatten)]
        limits: Box<serve_limits::ServeLimits>,
    },
    /// Review and approve the project's own settings, MCP servers, skills, agents and cron
    /// jobs
    ///
    /// The files are .agent-tools/settings.json, .agent-tools/settings.local.json,
    /// .mcp.json, .agent-tools/skills/*/SKILL.md, .agent-tools/agents/*.md and
    /// .agent-tools/scheduled_tasks.json. Until a person approves their exact content,
    /// sessions ignore what they would widen (allow rules, wider modes, sandbox changes,
    /// programs to run, hosts to contact, a skill's allowed-tools and model, an agent's
    /// permissionMode and model, scheduled jobs) and start none of their servers; approvals
    /// are kept in the state directory (trust.json), and a changed file needs approval again.
    Trust {
        /// Approve without asking (for scripts)
        #[arg(long, conflicts_with_all = ["revoke", "show"])]
        yes: bool,
        /// Forget this project's approvals
        #[arg(long, conflicts_with = "show")]
        revoke: bool,
        /// Only show the files, whether they are approved and what they would add
        #[arg(long)]
        show: bool,
    },
    /// Show, build or remove the search index of the project (--cwd)
    ///
    /// Long-lived sessions (batch, serve) answer Grep and Glob from a trigram index of the
    /// project, built in the background on the first search (search.index "auto", for
    /// trees above search.autoThresholdMB) or at start ("eager"), kept fresh by
    /// file-system notifications, saved in the state directory (search-index/) and validated
    /// by the next session with one walk; one-shot calls use a valid saved index. The
    /// answers are those of the scan, byte for byte.
    Index {
        /// Validate the saved index with one walk and show it (the default)
        #[arg(long, conflicts_with_all = ["rebuild", "drop"])]
        status: bool,
        /// Build the index now and save it (whatever the tree's size)
        #[arg(long, conflicts_with = "drop")]
        rebuild: bool,
        /// Remove the saved index
        #[arg(long)]
        drop: bool,
        /// Print one JSON object
        #[arg(long)]
        json: bool,
    },
    /// The MCP servers of .mcp.json: log in to hosted ones, log out, show their state
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
    /// Check what works here and say what to do about what does not
    ///
    /// The sandbox (its mechanism, seccomp, and a trial command through Bash), the language
    /// servers, the MCP servers of .mcp.json (approved, and whether each starts and lists
    /// its tools within --mcp-wait seconds), the settings files, the tool profile and the
    /// pool. Each line is ok, warning or problem; exit status 0 when nothing is a problem,
    /// 1 otherwise.
    Doctor {
        /// Print one JSON object {"ok": .., "checks": [{name, status, detail, fix}]}
        #[arg(long)]
        json: bool,
    },
}

/// What `agent-tools mcp` does.
#[derive(Debug, Subcommand)]
enum McpAction {
    /// Log in to an HTTP server of .mcp.json that requires OAuth
    ///
    /// Opens the authorization page in the browser ($BROWSER, else xdg-open or open, else
    /// the URL is printed) and receives the result on a loopback address; the tokens are
    /// kept in the state directory (mcp-oauth/, readable by you only) and refreshed by
    /// every session. Run it again when a server asks for more access.
    Login {
        /// The server's name under mcpServers
        name: String,
        /// Print the URL instead of opening a browser, and read the address the browser
        /// ends on (pasted) from standard input
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget the tokens of a server (and revoke them when its authorization server can)
    Logout {
        /// The server's name under mcpServers
        name: String,
    },
    /// Each server of .mcp.json: transport, authentication, token expiry, and whether it
    /// connects (waiting at most --mcp-wait seconds)
    Status {
        /// Print one JSON object per server
        #[arg(long)]
        json: bool,
    },
}

fn parse_dialect(s: &str) -> std::result::Result<Dialect, String> {
    s.parse()
}

/// A command-line mistake: reported on stderr with exit status 2.
#[derive(Debug)]
struct UsageError(String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

pub(crate) fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// jemalloc, not the C library's allocator: it returns the pages of freed memory to the
/// system after a delay, where glibc keeps them in its arenas, so `serve`'s resident memory
/// falls back near its baseline once a load ends (see [`ALLOCATOR_ENV`]).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    // This binary is also the persistent sandbox's supervisor, run inside bubblewrap.
    #[cfg(feature = "shell")]
    if let Some(code) = registry::sandbox_supervisor_entry() {
        return code;
    }
    let cli = Cli::parse();
    // One call, then the process ends: a persistent sandbox supervisor would cost more to
    // start than it saves, and what a command leaves is found among this process's children.
    #[cfg(feature = "shell")]
    if matches!(cli.command, Command::Call { .. }) {
        registry::one_call_process();
    }
    // A server's memory returns near its idle size after sessions end only when the
    // allocator gives free pages back promptly (see docs/deploy.md, "Memory").
    #[cfg(target_os = "linux")]
    if matches!(cli.command, Command::Serve { .. }) {
        set_allocator_options();
    }
    // One call runs on this thread alone: worker threads would cost more to start than the
    // call gains from them, and each hand-over between threads waits for the scheduler
    // (blocking work still goes to the blocking pool).
    let serving = matches!(cli.command, Command::Serve { .. });
    let mut builder = if matches!(cli.command, Command::Call { .. }) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agent-tools: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    // The command runs as a task on a worker thread, not on this one: each tool call is a
    // task too, and a worker that spawns one and waits for it keeps both on one thread,
    // where `block_on` here would hand every call to a worker and back (with one thread,
    // `call`'s, both are this thread).
    let outcome = runtime.block_on(async {
        tokio::spawn(run(cli))
            .await
            .unwrap_or_else(|e| Err(anyhow::anyhow!("the command stopped unexpectedly: {e}")))
    });
    // `serve` is done: what still runs on the runtime stops here, without waiting for the
    // blocking read of standard input, which after a SIGTERM over stdio would keep the
    // server alive for as long as its client keeps the pipe open. (Other commands still
    // wait for their blocking work.)
    if serving {
        runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    }
    // Sandboxes that ended release their placeholders from threads the exit would stop.
    #[cfg(feature = "shell")]
    registry::settle_sandboxes(std::time::Duration::from_secs(3));
    match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("agent-tools: {err:#}");
            if err.downcast_ref::<UsageError>().is_some()
                || err.downcast_ref::<ToolError>().is_some()
            {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// What `serve` asks of the allocator, unless the environment sets it: two arenas (the
/// default, four per core, keeps more memory per ended session), a background thread that
/// returns free pages without waiting for the next allocation, and freed pages given back
/// to the system after one second instead of ten. jemalloc reads it only when it starts.
/// Measured with the bench soak (100 clients for five minutes): resident memory 30 s after
/// the load was 1.6 times the idle baseline, against 1.9 with jemalloc's defaults and 2.3
/// with glibc's allocator tuned as far as its variables go.
#[cfg(target_os = "linux")]
const ALLOCATOR_ENV: [(&str, &str); 1] = [(
    "_RJEM_MALLOC_CONF",
    "background_thread:true,narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0",
)];

/// Starts this process again, with the same pid, arguments and descriptors, with
/// [`ALLOCATOR_ENV`] where the environment does not set it: jemalloc reads its configuration
/// only when it starts. Returns only when that cannot be done (the server then runs without
/// them), or when the environment sets them all.
#[cfg(target_os = "linux")]
fn set_allocator_options() {
    use std::os::unix::process::CommandExt as _;
    let missing: Vec<(&str, &str)> = ALLOCATOR_ENV
        .into_iter()
        .filter(|(name, _)| std::env::var_os(name).is_none())
        .collect();
    if missing.is_empty() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .envs(missing)
        .exec();
    eprintln!("agent-tools: cannot set the allocator's options ({err}); serving without");
}

/// What a command runs in: the context, the pool (which follows the tool lists of the MCP
/// servers), the options it was built from, and the MCP servers of `.mcp.json` (started in
/// the background, shut down when the command ends) with their reporter.
struct Session {
    ctx: ToolContext,
    pool: LivePool,
    options: SessionOptions,
    mcp: Option<std::sync::Arc<McpManager>>,
    reporter: Option<std::sync::Arc<mcp_startup::Reporter>>,
}

fn session_options(args: &SessionArgs) -> Result<SessionOptions> {
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    Ok(SessionOptions {
        cwd,
        mode: args.mode,
        allow: args.allow.clone(),
        deny: args.deny.clone(),
        ask: args.ask.clone(),
        settings_file: args.settings.clone(),
        state_dir: None,
        profile: args.profile,
        long_lived: false,
        alone_on_runtime: false,
        private_state_dir: None,
    })
}

/// A session error as the command line reports it: a bad `--cwd` is a usage error.
fn session_error(e: ToolError) -> anyhow::Error {
    match e {
        ToolError::Io { path, source } => usage(format!("--cwd {}: {source}", path.display())),
        other => anyhow::Error::new(other),
    }
}

/// How this program's refusals say what would allow a call: its flags, its settings files
/// and `agent-tools trust`.
struct CommandLineHint;

impl tool_core::AllowHint for CommandLineHint {
    fn how_to_allow(&self, rule: &tool_core::PermissionRule, kind: &tool_core::AskKind) -> String {
        const SETTINGS: &str = "~/.agent-tools/settings.json, or the project's .agent-tools/settings.json once approved with `agent-tools trust`";
        match kind {
            tool_core::AskKind::Mode(mode) => format!(
                "To allow it, use --mode {mode}, pass --allow '{rule}', or add \"{rule}\" to permissions.allow in your settings ({SETTINGS})."
            ),
            _ => format!(
                "To allow it, pass --allow '{rule}', add \"{rule}\" to permissions.allow in your settings ({SETTINGS}), or use --mode bypassPermissions."
            ),
        }
    }
}

/// Makes `ctx`'s refusals name this program's flags and files.
pub(crate) fn install_command_line_hint(ctx: &ToolContext) {
    let hint: std::sync::Arc<dyn tool_core::AllowHint> = std::sync::Arc::new(CommandLineHint);
    ctx.services().insert(hint);
}

/// The session of a command; `serving` for `serve`, whose MCP client answers the
/// questions and sampling requests of the `.mcp.json` servers; `long_lived` for the
/// commands that answer many calls (`batch`, `serve`: the search index is kept fresh).
async fn session(args: &SessionArgs, serving: bool, long_lived: bool) -> Result<Session> {
    let mut options = session_options(args)?;
    options.long_lived = long_lived;
    // `batch` serves one agent: its session has the runtime to itself (`serve` shares it
    // among its clients' sessions).
    options.alone_on_runtime = long_lived && !serving;
    let ctx = build_context(&options).map_err(session_error)?;
    install_command_line_hint(&ctx);
    #[cfg(feature = "mcp")]
    if serving {
        registry::mcp::offer_client_requests(&ctx);
    }
    #[cfg(not(feature = "mcp"))]
    let _ = serving;
    // Once per session: what of the project's own files was ignored, and how to approve it.
    if let Some(notice) = registry::trust_report(&ctx).and_then(|r| r.notice()) {
        eprintln!("agent-tools: {notice}");
    }
    // The servers start in the background; their problems are reported as they happen.
    let (mcp, reporter) = match mcp_startup::start(&ctx) {
        Some((manager, reporter)) => (Some(manager), Some(reporter)),
        None => (None, None),
    };
    // The pool is assembled again whenever an MCP server's tool list changes (a server that
    // finished starting included).
    let tools = ToolRegistry::for_profile(registry::session_profile(&ctx));
    #[cfg(feature = "mcp")]
    let pool = tools.live_pool(&ctx, mcp.clone());
    #[cfg(not(feature = "mcp"))]
    let pool = tools.live_pool(&ctx);
    // ToolSearch and sub-agents see the whole pool as it is now, MCP tools included (the
    // registry's default catalog only knows the built-ins).
    registry::install_catalog(&ctx, &pool);
    Ok(Session {
        ctx,
        pool,
        options,
        mcp,
        reporter,
    })
}

/// `agent-tools index`: the project's saved search index, shown, rebuilt or dropped.
#[cfg(feature = "fs")]
fn index_command(session: &SessionArgs, rebuild: bool, drop: bool, json: bool) -> Result<ExitCode> {
    let action = if drop {
        index::Action::Drop
    } else if rebuild {
        index::Action::Rebuild
    } else {
        index::Action::Status
    };
    tokio::task::block_in_place(|| index::run(session, action, json))
}

/// `agent-tools index` without the `fs` feature: a usage error.
#[cfg(not(feature = "fs"))]
fn index_command(_: &SessionArgs, _: bool, _: bool, _: bool) -> Result<ExitCode> {
    Err(usage(
        "`index` needs the `fs` feature; this agent-tools was built without it",
    ))
}

/// What a command that waits for the MCP servers says of one still starting (`None`: it
/// does not wait).
fn mcp_wait_note(command: &Command) -> Option<&'static str> {
    match command {
        Command::Serve { .. }
        | Command::Trust { .. }
        | Command::Doctor { .. }
        | Command::Index { .. }
        | Command::Mcp { .. } => None,
        Command::Batch => Some("its tools join the session when it is ready"),
        _ => Some("its tools are not included (give --mcp-wait SECONDS to wait longer)"),
    }
}

async fn run(cli: Cli) -> Result<ExitCode> {
    // `trust` reviews the project's files; it starts no session and no server.
    if let Command::Trust { yes, revoke, show } = cli.command {
        return tokio::task::block_in_place(|| trust::run(&cli.session, yes, revoke, show));
    }
    // `index` works on the saved index; it answers no call.
    if let Command::Index {
        status: _,
        rebuild,
        drop,
        json,
    } = cli.command
    {
        return index_command(&cli.session, rebuild, drop, json);
    }
    // `doctor` makes its own sessions: a settings file that does not load is a finding.
    if let Command::Doctor { json } = cli.command {
        return doctor::run(&cli.session, json).await;
    }
    // `mcp` reads .mcp.json itself and starts only what it checks.
    if let Command::Mcp { action } = cli.command {
        #[cfg(feature = "mcp")]
        return mcp_cmd::run(&cli.session, action).await;
        #[cfg(not(feature = "mcp"))]
        {
            let _ = action;
            return Err(usage(
                "`mcp` needs the `mcp` feature; this agent-tools was built without it",
            ));
        }
    }
    let serving = matches!(cli.command, Command::Serve { .. });
    let Session {
        ctx,
        pool,
        options,
        mcp,
        reporter,
    } = session(
        &cli.session,
        serving,
        matches!(cli.command, Command::Batch | Command::Serve { .. }),
    )
    .await?;
    // Every command but `serve` waits a little for the MCP servers (`serve` answers its
    // client at once; their tools join when they are ready).
    let waited = cli.session.mcp_wait;
    if let (Some(manager), Some(reporter)) = (&mcp, &reporter)
        && let Some(later) = mcp_wait_note(&cli.command)
    {
        mcp_startup::wait(manager, reporter, waited, later).await;
    }
    let outcome = match cli.command {
        Command::List { json } => list(&pool.settled().await, json).await,
        Command::Schema { tools, dialect } => schema(&pool.settled().await, &tools, dialect).await,
        Command::Call { tool, input } => {
            call_command(&pool, &ctx, mcp.as_deref(), &tool, input.as_deref(), waited).await
        }
        Command::Batch => batch(&pool, &ctx, mcp.as_ref()).await,
        Command::Serve {
            http,
            allowed_hosts,
            allowed_origins,
            token_files,
            token_envs,
            no_auth,
            max_request_bytes,
            grace,
            limits,
        } => {
            #[cfg(feature = "mcp")]
            {
                let args = serve::ServeArgs {
                    http,
                    allowed_hosts,
                    allowed_origins,
                    token_files,
                    token_envs,
                    no_auth,
                    max_request_bytes,
                    grace,
                    limits: *limits,
                };
                serve::serve(pool, ctx, options, mcp.clone(), args).await
            }
            #[cfg(not(feature = "mcp"))]
            {
                let _ = (
                    http,
                    allowed_hosts,
                    allowed_origins,
                    token_files,
                    token_envs,
                    no_auth,
                    max_request_bytes,
                    grace,
                    limits,
                    options,
                );
                Err(usage(
                    "`serve` needs the `mcp` feature; this agent-tools was built without it",
                ))
            }
        }
        Command::Trust { .. } => Err(anyhow!("`trust` runs without a session")),
        Command::Doctor { .. } => Err(anyhow!("`doctor` runs without a session")),
        Command::Index { .. } => Err(anyhow!("`index` runs without a session")),
        Command::Mcp { .. } => Err(anyhow!("`mcp` runs without a session")),
    };
    if let Some(reporter) = reporter {
        reporter.finish();
    }
    if let Some(manager) = mcp {
        manager.shutdown().await;
    }
    outcome
}

fn print_line(value: &impl serde::Serialize) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

async fn list(pool: &ToolPool, as_json: bool) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    for tool in pool.tools() {
        if as_json {
            let line = json!({
                "name": tool.name(),
                "aliases": tool.aliases(),
                "category": tool.category(),
                "deferred": tool.is_deferred(),
                "read_only": tool.annotations().read_only,
            });
            writeln!(out, "{line}")?;
        } else {
            writeln!(out, "{}", tool.name())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn schema(pool: &ToolPool, names: &[String], dialect: Dialect) -> Result<ExitCode> {
    let selected: Vec<_> = if names.is_empty() {
        pool.tools().to_vec()
    } else {
        names
            .iter()
            .map(|n| pool.get(n).cloned().ok_or_else(|| unknown_tool(pool, n)))
            .collect::<Result<_>>()?
    };
    let decls = tool_core::declarations(&selected, dialect).await;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &decls)?;
    out.write_all(b"\n")?;
    Ok(ExitCode::SUCCESS)
}

fn unknown_tool(pool: &ToolPool, name: &str) -> anyhow::Error {
    if pool.is_empty() {
        return usage(format!(
            "unknown tool `{name}`; no tools are available (deny rules may hide them, or the build has no tool features)"
        ));
    }
    usage(format!(
        "unknown tool `{name}`; available tools: {} (see `agent-tools list`)",
        pool.names().join(", ")
    ))
}

/// Cancels the session's calls on Ctrl-C so they still return well-formed results.
fn cancel_on_interrupt(ctx: &ToolContext) {
    let token = ctx.cancel_token().clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            token.cancel();
        }
    });
}

/// `agent-tools call`: one call, waiting for the MCP server of an MCP tool; a tool of a
/// server that did not start is a tool error, not a usage one.
async fn call_command(
    pool: &LivePool,
    ctx: &ToolContext,
    mcp: Option<&McpManager>,
    tool: &str,
    input: Option<&str>,
    waited: std::time::Duration,
) -> Result<ExitCode> {
    let pool = session_pool(pool, mcp, [tool]).await;
    match mcp
        .filter(|_| pool.get(tool).is_none())
        .and_then(|m| mcp_startup::unavailable(m, tool, waited))
    {
        Some(why) => {
            print_line(&error_result(tool, &ToolError::fatal(why)))?;
            Ok(ExitCode::from(1))
        }
        None => call(&pool, ctx, tool, input).await,
    }
}

async fn call(
    pool: &ToolPool,
    ctx: &ToolContext,
    tool: &str,
    input: Option<&str>,
) -> Result<ExitCode> {
    if pool.get(tool).is_none() {
        return Err(unknown_tool(pool, tool));
    }
    let text = match input {
        Some("-") => {
            let mut buf = String::new();
            // Nothing else runs before the input is read: a blocking read on the runtime's
            // one thread holds up nothing.
            std::io::stdin()
                .read_to_string(&mut buf)
                .context("cannot read the input from standard input")?;
            buf
        }
        Some(text) => text.to_owned(),
        None => "{}".to_owned(),
    };
    let input: Value = if text.trim().is_empty() {
        json!({})
    } else {
        // A repeated key is marked, and the call refused naming it.
        tool_core::parse_input_text(&text)
            .map_err(|e| usage(format!("the input is not valid JSON: {e}")))?
    };
    cancel_on_interrupt(ctx);
    let result = pool.call(tool, input, ctx).await;
    print_line(&result)?;
    Ok(if result.is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One line of `batch` input, or the result that replaces it when it cannot be read.
fn parse_batch_line(number: usize, line: &str) -> std::result::Result<ToolCall, Box<CallResult>> {
    let invalid = |message: String| {
        Box::new(error_result(
            "",
            &ToolError::respond(format!("line {number}: {message}")),
        ))
    };
    let value: Value =
        serde_json::from_str(line).map_err(|e| invalid(format!("not valid JSON: {e}")))?;
    let repeated = tool_core::duplicate_key(line);
    if let Some(key) = repeated.as_deref()
        && !key.starts_with("input.")
        && !key.starts_with("input[")
    {
        return Err(invalid(format!(
            "the field \"{key}\" appears more than once; send each field once"
        )));
    }
    let Value::Object(mut obj) = value else {
        return Err(invalid(
            "expected an object {\"tool\": .., \"input\": ..}".to_owned(),
        ));
    };
    let tool = match obj.remove("tool") {
        Some(Value::String(t)) => t,
        _ => {
            return Err(invalid(
                "the \"tool\" field is missing or not a string".to_owned(),
            ));
        }
    };
    let mut input = obj.remove("input").unwrap_or(Value::Null);
    if let Some(key) = repeated.as_deref().and_then(|k| k.strip_prefix("input.")) {
        tool_core::mark_duplicate_key(&mut input, key);
    }
    let id = match obj.remove("id") {
        Some(Value::String(id)) => Some(id),
        Some(other) => Some(other.to_string()),
        None => None,
    };
    if let Some(key) = obj.keys().next() {
        return Err(invalid(format!(
            "unexpected field \"{key}\"; a line has tool, input and optional id"
        )));
    }
    Ok(ToolCall { tool, input, id })
}

/// The pool to run calls of `tools` in: settled, once the MCP servers still starting that
/// own any of them are ready (each bounded by its start-up timeout).
async fn session_pool<'a>(
    pool: &LivePool,
    mcp: Option<&McpManager>,
    tools: impl IntoIterator<Item = &'a str>,
) -> ToolPool {
    let current = pool.settled().await;
    match mcp {
        Some(manager) if mcp_startup::wait_for_tools(manager, &current, tools).await => {
            pool.settled().await
        }
        _ => current,
    }
}

async fn batch(
    pool: &LivePool,
    ctx: &ToolContext,
    mcp: Option<&Arc<McpManager>>,
) -> Result<ExitCode> {
    if std::io::stdin().is_terminal() {
        eprintln!("agent-tools batch: reading JSON lines from standard input; end with Ctrl-D");
    }
    cancel_on_interrupt(ctx);
    // Events between results: fired cron prompts, Monitor lines, background tasks that
    // ended. An event line has "event" where a result line has "tool".
    ctx.set_event_sink(tool_core::EventSink::new(|event| {
        let _ = print_line(&event);
    }));
    let events = registry::start_session_events(ctx).map_err(|e| anyhow!(e.to_string()))?;
    let _stop_events = events.drop_guard();
    // Standard input is read on a thread of its own, a line at a time, so that a driver can
    // send a call, read its result and only then decide the next one.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Result<Slot, String>>();
    std::thread::Builder::new()
        .name("agent-tools-batch-input".into())
        .spawn(move || {
            for (i, line) in std::io::stdin().lock().lines().enumerate() {
                let item = match line {
                    Ok(line) if line.trim().is_empty() => continue,
                    Ok(line) => Ok(parse_batch_line(i + 1, &line)),
                    Err(e) => Err(format!("cannot read standard input: {e}")),
                };
                let stop = item.is_err();
                if tx.send(item).is_err() || stop {
                    break;
                }
            }
        })
        .context("cannot start the thread that reads standard input")?;
    // Each call starts as soon as its line arrives and the concurrency rule allows (a
    // TaskStop sent while a TaskOutput waits runs beside the wait); results come back in
    // input order. Each call takes the pool afresh when it may start: a call after one that
    // changed an MCP server's tool list sees the new list, and a call of a tool of an MCP
    // server still starting waits for that server.
    let source: tool_core::PoolSource = {
        let pool = pool.clone();
        let mcp = mcp.cloned();
        Arc::new(move |call: &ToolCall| -> tool_core::PoolFuture {
            let (pool, mcp, tool) = (pool.clone(), mcp.clone(), call.tool.clone());
            Box::pin(async move { session_pool(&pool, mcp.as_deref(), [tool.as_str()]).await })
        })
    };
    let mut live = tool_core::LiveBatch::new(ctx, source);
    let mut any_error = false;
    let mut emit = |result: &CallResult| -> Result<()> {
        any_error |= result.is_error;
        print_line(result)
    };
    let mut input_open = true;
    while input_open || !live.is_empty() {
        tokio::select! {
            // Results first: what is done is printed before more input is taken.
            biased;
            result = live.next(), if !live.is_empty() => {
                if let Some(result) = result {
                    emit(&result)?;
                }
            }
            item = rx.recv(), if input_open => match item {
                // A line that could not be read answers in its place.
                Some(Ok(Err(result))) => live.push_result(*result),
                Some(Ok(Ok(call))) => live.push(call),
                Some(Err(e)) => return Err(anyhow!(e)),
                None => input_open = false,
            },
        }
    }
    Ok(if any_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One line of `batch` input: a call, or the result that answers a line that is not one.
type Slot = std::result::Result<ToolCall, Box<CallResult>>;
