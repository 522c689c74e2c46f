//! `agent-tools mcp login | logout | status`: OAuth for the hosted MCP servers of
//! `.mcp.json`, and each server's state. The flows live in tools-mcp; this module finds the
//! server, talks to the person (the browser, or a pasted address with `--no-browser`) and
//! prints the outcome. Tokens are never printed. Built with the `mcp` feature only.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use registry::build_context;
use registry::mcp::{
    AuthStatus, LOGIN_TIMEOUT, LoginPrompt, McpManager, ServerConfig, Transport, auth_status,
    load_project_config, login, logout, open_browser,
};
use serde_json::json;
use tool_core::{ToolContext, async_trait};

use crate::{McpAction, SessionArgs, session_error, session_options, usage};

/// Runs one `mcp` action.
pub async fn run(args: &SessionArgs, action: McpAction) -> Result<ExitCode> {
    let options = session_options(args)?;
    let ctx = build_context(&options).map_err(session_error)?;
    match action {
        McpAction::Login { name, no_browser } => {
            let server = find(&ctx, &name)?;
            let prompt = Terminal { no_browser };
            let outcome = login(
                &server,
                ctx.state_dir(),
                ctx.original_cwd(),
                &prompt,
                LOGIN_TIMEOUT,
            )
            .await
            .map_err(failure)?;
            let expiry = match outcome.expires_in {
                Some(secs) => format!("; the token expires in {}", minutes(secs)),
                None => String::new(),
            };
            let scopes = if outcome.scopes.is_empty() {
                String::new()
            } else {
                format!(" with scope \"{}\"", outcome.scopes.join(" "))
            };
            eprintln!(
                "agent-tools: logged in to \"{name}\"{scopes}: it lists {} tools{expiry}{}; the tokens are in {}",
                outcome.tools,
                if outcome.refreshable {
                    " and is refreshed as needed"
                } else {
                    " (no refresh token: log in again when it expires)"
                },
                outcome.token_file.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        McpAction::Logout { name } => {
            let server = find(&ctx, &name)?;
            let outcome = logout(&server, ctx.state_dir()).await.map_err(failure)?;
            let revoked = match outcome.revoked {
                Some(Ok(())) => " and revoked them at the authorization server",
                Some(Err(_)) => {
                    "; the authorization server did not confirm revoking them (revoke agent-tools' access in the provider's settings)"
                }
                None if outcome.removed => {
                    "; the authorization server offers no revocation (revoke agent-tools' access in the provider's settings)"
                }
                None => "",
            };
            if let Some(Err(why)) = &outcome.revoked {
                eprintln!("agent-tools: revocation: {why}");
            }
            if outcome.removed {
                eprintln!("agent-tools: forgot the tokens of \"{name}\"{revoked}");
            } else {
                eprintln!("agent-tools: \"{name}\" had no stored tokens");
            }
            Ok(ExitCode::SUCCESS)
        }
        McpAction::Status { json } => status(&ctx, args.mcp_wait, json).await,
    }
}

/// A login's failure: a mistake in what was asked (a server with no login) is a usage error
/// (exit status 2), anything else a failure (1).
fn failure(e: tool_core::ToolError) -> anyhow::Error {
    if e.is_retryable() {
        usage(e.to_string())
    } else {
        anyhow::anyhow!(e.to_string())
    }
}

/// "42 min" for people.
fn minutes(secs: u64) -> String {
    if secs < 120 {
        format!("{secs} s")
    } else {
        format!("{} min", secs / 60)
    }
}

/// The approved server `name` of the project's `.mcp.json`.
fn find(ctx: &ToolContext, name: &str) -> Result<ServerConfig> {
    let entries = registry::project_mcp_servers(ctx)?;
    let Some(entries) = entries else {
        return Err(usage(format!(
            "there is no .mcp.json in {}; `mcp login` logs in to a server it names",
            ctx.original_cwd().display()
        )));
    };
    let Some(entry) = entries.iter().find(|e| e.name == name) else {
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        return Err(usage(format!(
            "no server \"{name}\" in .mcp.json (it names: {})",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        )));
    };
    if !entry.approved {
        let approve = registry::trust_report(ctx)
            .map_or_else(|| "agent-tools trust".to_owned(), |r| r.approve_command());
        return Err(usage(format!(
            "the server \"{name}\" of .mcp.json is not approved; review and approve the file with `{approve}` first"
        )));
    }
    let config = load_project_config(ctx)?;
    if let Some(skipped) = config.skipped.iter().find(|s| s.name == name) {
        return Err(usage(format!(
            "the server \"{name}\" cannot be used: {}",
            skipped.reason
        )));
    }
    config
        .servers
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| {
            usage(format!(
                "the server \"{name}\" is turned off by the settings (disabledMcpjsonServers)"
            ))
        })
}

/// The person at this terminal.
struct Terminal {
    no_browser: bool,
}

#[async_trait]
impl LoginPrompt for Terminal {
    fn show(&self, url: &str) {
        if self.no_browser {
            eprintln!(
                "agent-tools: open this address in a browser and authorize agent-tools:\n\n  {url}\n\nThen paste here the address the browser ends on (it starts with http://localhost) and press Enter:"
            );
            return;
        }
        match open_browser(url) {
            Ok(program) => eprintln!(
                "agent-tools: opened the authorization page with {program}; if no browser appeared, open this address:\n\n  {url}\n"
            ),
            Err(why) => eprintln!(
                "agent-tools: cannot open a browser ({why}); open this address and authorize agent-tools:\n\n  {url}\n"
            ),
        }
        eprintln!("agent-tools: waiting for the authorization (Ctrl-C to give up)");
    }

    async fn pasted_redirect(&self) -> Option<String> {
        if !self.no_browser {
            return std::future::pending().await;
        }
        let read = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).ok().map(|_| line)
        });
        match read.await {
            Ok(Some(line)) if !line.trim().is_empty() => Some(line.trim().to_owned()),
            // End of input: the loopback listener may still receive the redirect.
            _ => std::future::pending().await,
        }
    }
}

/// The transport of a server, as `.mcp.json` names it, and its address.
fn transport(server: &ServerConfig) -> (String, String) {
    match &server.transport {
        Transport::Stdio { command, args, .. } => {
            let mut line = command.clone();
            for arg in args {
                line.push(' ');
                line.push_str(arg);
            }
            ("stdio".to_owned(), line)
        }
        Transport::Http { url, kind, .. } => (kind.name().to_owned(), url.clone()),
    }
}

/// `mcp status`: every server of `.mcp.json`, with its auth and connection.
async fn status(ctx: &ToolContext, wait: Duration, as_json: bool) -> Result<ExitCode> {
    let Some(entries) = registry::project_mcp_servers(ctx)? else {
        eprintln!(
            "agent-tools: no .mcp.json in {}",
            ctx.original_cwd().display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    let config = if entries.iter().any(|e| e.approved) {
        load_project_config(ctx)?
    } else {
        registry::mcp::McpConfig::default()
    };
    let manager = if config.servers.is_empty() {
        None
    } else {
        Some(McpManager::start(config.clone(), ctx)?)
    };
    if let Some(manager) = &manager {
        manager.wait_started(Some(wait)).await;
    }
    let statuses = manager.as_ref().map(|m| m.statuses()).unwrap_or_default();
    let mut out = String::new();
    let mut any_problem = false;
    for entry in &entries {
        let server = config.servers.iter().find(|s| s.name == entry.name);
        let skipped = config.skipped.iter().find(|s| s.name == entry.name);
        let (kind, address) = server.map(transport).unwrap_or_default();
        let auth = server.map(|s| auth_status(s, ctx.state_dir()));
        let state = server.and_then(|_| statuses.iter().find(|s| s.name == entry.name));
        let connection = if entry.disabled {
            "turned off by the settings (disabledMcpjsonServers)".to_owned()
        } else if !entry.approved {
            "not approved: run agent-tools trust".to_owned()
        } else if let Some(skipped) = skipped {
            format!("not started: {}", skipped.reason)
        } else {
            match state {
                Some(s) if s.starting => format!("still connecting after {}s", wait.as_secs_f64()),
                Some(s) => match &s.error {
                    Some(e) => e.clone(),
                    None => format!(
                        "connected ({} tools{})",
                        s.tools,
                        s.protocol_version
                            .as_deref()
                            .map(|v| format!(", protocol {v}"))
                            .unwrap_or_default()
                    ),
                },
                None => "not started".to_owned(),
            }
        };
        let connected = state.is_some_and(|s| !s.starting && s.error.is_none());
        any_problem |= entry.approved && !entry.disabled && !connected;
        let AuthStatus {
            kind: auth_kind,
            detail: auth_detail,
            ..
        } = auth.unwrap_or(AuthStatus {
            kind: "unknown".into(),
            detail: String::new(),
            needs_login: false,
        });
        if as_json {
            let line = json!({
                "name": entry.name,
                "transport": kind,
                "address": address,
                "approved": entry.approved,
                "auth": {"kind": auth_kind, "detail": auth_detail},
                "connected": connected,
                "state": connection,
            });
            out.push_str(&format!("{line}\n"));
        } else {
            out.push_str(&format!("{}\n", entry.name));
            if !kind.is_empty() {
                out.push_str(&format!("  transport:  {kind} {address}\n"));
                out.push_str(&format!("  auth:       {auth_kind}: {auth_detail}\n"));
            }
            out.push_str(&format!("  state:      {connection}\n"));
        }
    }
    std::io::stdout().write_all(out.as_bytes())?;
    if let Some(manager) = manager {
        manager.shutdown().await;
    }
    Ok(if any_problem {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
