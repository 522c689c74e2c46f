//! `agent-tools doctor`: what works on this machine and in this project, and what to do
//! about what does not. Each check is a line (ok, warning or problem) with what was found
//! and, for what is not ok, the one thing to do. Exit status 0 when nothing is a problem,
//! 1 otherwise. The probes are the crates' own, reached through the registry; a check of
//! what the build leaves out (the sandbox without `shell`, language servers without `lsp`,
//! MCP servers without `mcp`) is skipped.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
#[cfg(feature = "mcp")]
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;
use tool_core::{
    Approval, RuleSourceKind, SettingsLayer, ToolContext, ToolError, TrustReport, default_state_dir,
};

use crate::{SessionArgs, session_error, session_options};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warning,
    Problem,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warning => "warning",
            Status::Problem => "problem",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked: `sandbox`, `settings.project`, `mcp.github`, ...
    pub name: String,
    pub status: Status,
    /// What was found
    pub detail: String,
    /// The one thing to do, when the check is not ok
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn check(name: impl Into<String>, status: Status, detail: impl Into<String>) -> Check {
    Check {
        name: name.into(),
        status,
        detail: detail.into(),
        fix: None,
    }
}

impl Check {
    fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// Runs every check and prints the report.
pub async fn run(args: &SessionArgs, as_json: bool) -> Result<ExitCode> {
    let options = session_options(args)?;
    let state_dir = options
        .state_dir
        .clone()
        .map_or_else(default_state_dir, Ok)
        .map_err(session_error)?;
    // A missing --cwd is a usage error; a settings file that does not load is a finding.
    let session = match registry::build_context(&options) {
        Ok(ctx) => Ok(ctx),
        Err(e @ ToolError::Io { .. }) => return Err(session_error(e)),
        Err(e) => Err(e),
    };
    let mut checks = Vec::new();
    let report = session.as_ref().ok().and_then(registry::trust_report);
    for (kind, path) in registry::settings_paths(&options, &state_dir) {
        checks.push(settings_check(kind, &path, report.as_deref()));
    }
    let ctx = match session {
        Ok(ctx) => ctx,
        Err(e) => {
            checks.push(
                check(
                    "session",
                    Status::Problem,
                    format!("the session cannot start: {e}"),
                )
                .fix("correct the settings file named above"),
            );
            // The machine's checks still run, with default settings.
            ToolContext::builder(&options.cwd)
                .state_dir(&state_dir)
                .build()
        }
    };
    let loaded = checks.iter().all(|c| c.name != "session");
    #[cfg(feature = "shell")]
    checks.extend(sandbox_checks(&ctx).await);
    #[cfg(feature = "lsp")]
    checks.extend(lsp_checks(&ctx));
    if loaded {
        #[cfg(feature = "mcp")]
        checks.extend(mcp_checks(&ctx, args.mcp_wait).await);
        let profile = registry::session_profile(&ctx);
        let pool = registry::ToolRegistry::for_profile(profile).pool(ctx.permissions(), Vec::new());
        checks.push(check(
            "tools",
            Status::Ok,
            format!(
                "profile {profile}; {} built-in tools in the pool (MCP tools aside)",
                pool.tools().len()
            ),
        ));
    }
    let mut out = std::io::stdout().lock();
    if as_json {
        serde_json::to_writer(&mut out, &report_json(&checks))?;
        writeln!(out)?;
    } else {
        for c in &checks {
            write!(out, "{}", format_check(c))?;
        }
    }
    out.flush()?;
    Ok(if checks.iter().any(|c| c.status == Status::Problem) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The report as one JSON object: `ok` (no problem) and the checks.
pub fn report_json(checks: &[Check]) -> serde_json::Value {
    serde_json::json!({
        "ok": !checks.iter().any(|c| c.status == Status::Problem),
        "checks": checks,
    })
}

/// One check as lines: `status  name: detail`, then `fix:` indented below.
pub fn format_check(c: &Check) -> String {
    let mut text = format!("{:<8} {}: {}\n", c.status.label(), c.name, c.detail);
    if let Some(fix) = &c.fix {
        text.push_str(&format!("{:<8} fix: {fix}\n", ""));
    }
    text
}

fn kind_name(kind: RuleSourceKind) -> &'static str {
    match kind {
        RuleSourceKind::UserSettings => "user",
        RuleSourceKind::ProjectSettings => "project",
        RuleSourceKind::LocalSettings => "local",
        RuleSourceKind::FlagSettings => "flag",
        RuleSourceKind::CliArg | RuleSourceKind::Session | RuleSourceKind::Host => "other",
    }
}

/// A settings file: present or not, parsed or not, and for a project file whether a person
/// approved it.
fn settings_check(kind: RuleSourceKind, path: &Path, report: Option<&TrustReport>) -> Check {
    let name = format!("settings.{}", kind_name(kind));
    let shown = path.display();
    match SettingsLayer::load(kind, path) {
        Ok(None) if kind == RuleSourceKind::FlagSettings => {
            check(name, Status::Problem, format!("{shown} does not exist"))
                .fix("give --settings an existing file")
        }
        Ok(None) => check(name, Status::Ok, format!("{shown} not present")),
        Err(e) => check(name, Status::Problem, e.to_string())
            .fix(format!("correct {shown} (or move it away)")),
        Ok(Some(_)) => {
            let review = report.and_then(|r| {
                let canonical = path.canonicalize().ok();
                r.files
                    .iter()
                    .find(|f| Some(&f.path) == canonical.as_ref() || f.path == path)
                    .map(|f| (r, f))
            });
            match review {
                None => check(name, Status::Ok, format!("{shown} parsed")),
                Some((_, f)) if f.status == Approval::Approved => {
                    check(name, Status::Ok, format!("{shown} parsed; approved"))
                }
                Some((_, f)) if f.withheld.is_empty() => check(
                    name,
                    Status::Ok,
                    format!(
                        "{shown} parsed; {} (adds nothing beyond what always applies)",
                        f.status.describe()
                    ),
                ),
                Some((r, f)) => {
                    let parts: Vec<String> = f.withheld.iter().map(ToString::to_string).collect();
                    check(
                        name,
                        Status::Warning,
                        format!(
                            "{shown} parsed; {}: ignored until approved: {}",
                            f.status.describe(),
                            parts.join("; ")
                        ),
                    )
                    .fix(format!(
                        "review and approve it with `{} --yes`",
                        r.approve_command()
                    ))
                }
            }
        }
    }
}

/// The sandbox's mechanism, seccomp, and a trial command through Bash's own path.
#[cfg(feature = "shell")]
async fn sandbox_checks(ctx: &ToolContext) -> Vec<Check> {
    let probe = tokio::task::block_in_place(registry::probe_sandbox);
    let trial = registry::try_sandbox(ctx).await;
    sandbox_report(&probe, &trial)
}

#[cfg(feature = "shell")]
const NO_MECHANISM_FIX: &str = "install bubblewrap (`apt-get install bubblewrap`) and enable unprivileged user namespaces (`sysctl -w kernel.unprivileged_userns_clone=1`, or `kernel.apparmor_restrict_unprivileged_userns=0` on Ubuntu), or set sandbox.allowDegraded to true in the settings to run commands unsandboxed";

/// The sandbox lines from what was probed and tried.
#[cfg(feature = "shell")]
pub fn sandbox_report(
    probe: &registry::SandboxProbe,
    trial: &registry::SandboxTrial,
) -> Vec<Check> {
    let landlock = match probe.landlock_abi {
        Some(abi) => format!("Landlock ABI {abi}; resource limits by {}", probe.limits),
        None => format!("no Landlock; resource limits by {}", probe.limits),
    };
    let mechanism = match (&probe.bubblewrap, probe.user_namespaces) {
        (Some(path), true) => check(
            "sandbox",
            Status::Ok,
            format!(
                "bubblewrap with user namespaces ({}); {landlock}",
                path.display()
            ),
        ),
        (Some(path), false) => check(
            "sandbox",
            Status::Warning,
            format!(
                "bubblewrap without user namespaces ({}): files keep their host owners; {landlock}",
                path.display()
            ),
        )
        .fix("enable unprivileged user namespaces (`sysctl -w kernel.unprivileged_userns_clone=1`)"),
        (None, _) if probe.landlock_abi.is_some() => check(
            "sandbox",
            Status::Warning,
            format!("no working bubblewrap; {landlock} and seccomp (no `git commit` inside, no new entries at the top of a working directory)"),
        )
        .fix("install bubblewrap (`apt-get install bubblewrap`)"),
        (None, _) if trial.allow_degraded || !trial.enabled => check(
            "sandbox",
            Status::Warning,
            "no sandbox mechanism (neither bubblewrap nor Landlock); commands run unsandboxed as the settings allow",
        )
        .fix(NO_MECHANISM_FIX),
        (None, _) => check(
            "sandbox",
            Status::Problem,
            "no sandbox mechanism (neither bubblewrap nor Landlock): Bash refuses every command",
        )
        .fix(NO_MECHANISM_FIX),
    };
    let seccomp = if probe.seccomp {
        check(
            "seccomp",
            Status::Ok,
            "the sandbox's seccomp filter applies",
        )
    } else {
        check(
            "seccomp",
            Status::Warning,
            "the kernel refuses the sandbox's seccomp filter",
        )
        .fix("use a kernel with seccomp filters (CONFIG_SECCOMP_FILTER)")
    };
    let run = match &trial.ran {
        Ok(description) if !trial.enabled => check(
            "sandbox.run",
            Status::Warning,
            format!("a command ran unsandboxed: {description}"),
        )
        .fix("set sandbox.enabled to true in the settings to sandbox commands"),
        Ok(description) if description.starts_with("none") => check(
            "sandbox.run",
            Status::Warning,
            format!("a command ran unsandboxed: {description}"),
        )
        .fix(NO_MECHANISM_FIX),
        Ok(description) => check(
            "sandbox.run",
            Status::Ok,
            format!("a command ran in {description}"),
        ),
        Err(e) => check(
            "sandbox.run",
            Status::Problem,
            format!("a trial command failed: {}", first_line(e)),
        )
        .fix(NO_MECHANISM_FIX),
    };
    let mut checks = vec![mechanism, seccomp, run];
    if let Err(e) = &trial.planned {
        checks.push(
            check(
                "sandbox.session",
                Status::Problem,
                format!("Bash would refuse commands here: {}", first_line(e)),
            )
            .fix(NO_MECHANISM_FIX),
        );
    }
    checks
}

#[cfg(feature = "shell")]
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

/// One line per language server: found on PATH (ok) or not (a warning: LSP is optional).
#[cfg(feature = "lsp")]
fn lsp_checks(ctx: &ToolContext) -> Vec<Check> {
    match registry::language_servers(ctx) {
        Err(e) => vec![
            check("lsp", Status::Problem, e.to_string())
                .fix("correct the `lsp` section of the settings file named"),
        ],
        Ok(servers) => servers
            .into_iter()
            .map(|s| {
                let name = format!("lsp.{}", s.language);
                let exts = s.extensions.join(",");
                match s.found {
                    Some(path) => check(
                        name,
                        Status::Ok,
                        format!("{} ({}) for {exts}", s.command, path.display()),
                    ),
                    None => check(
                        name,
                        Status::Warning,
                        format!("{} not found for {exts}; LSP is optional", s.command),
                    )
                    .fix(s.install),
                }
            })
            .collect(),
    }
}

/// One line per `.mcp.json` server: approved or not and, if approved, whether it started
/// and listed its tools within `wait`.
#[cfg(feature = "mcp")]
async fn mcp_checks(ctx: &ToolContext, wait: Duration) -> Vec<Check> {
    let entries = match registry::project_mcp_servers(ctx) {
        Ok(None) => return vec![check("mcp", Status::Ok, "no .mcp.json in the project")],
        Ok(Some(entries)) => entries,
        Err(e) => {
            return vec![check("mcp", Status::Problem, e.to_string()).fix("correct .mcp.json")];
        }
    };
    if entries.is_empty() {
        return vec![check("mcp", Status::Ok, ".mcp.json names no server")];
    }
    let approve = registry::trust_report(ctx)
        .map_or_else(|| "agent-tools trust".to_owned(), |r| r.approve_command());
    let manager = if entries.iter().any(|e| e.approved) {
        match registry::start_mcp_servers(ctx) {
            Ok(manager) => manager,
            Err(e) => {
                return vec![
                    check(
                        "mcp",
                        Status::Problem,
                        format!("cannot start the servers: {e}"),
                    )
                    .fix("correct .mcp.json"),
                ];
            }
        }
    } else {
        None
    };
    if let Some(manager) = &manager {
        manager.wait_started(Some(wait)).await;
    }
    let statuses = manager.as_ref().map(|m| m.statuses()).unwrap_or_default();
    // How each started server authenticates (a login's tokens, their expiry).
    let configs = if manager.is_some() {
        registry::mcp::load_project_config(ctx)
            .map(|c| c.servers)
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let auth = |name: &str| {
        configs
            .iter()
            .find(|s| s.name == name)
            .map(|s| registry::mcp::auth_status(s, ctx.state_dir()))
            .filter(|a| a.kind != "none")
    };
    let login = |name: &str| format!("run: agent-tools mcp login {name}");
    let mut checks = Vec::new();
    for entry in entries {
        let name = format!("mcp.{}", entry.name);
        if entry.disabled {
            checks.push(check(
                name,
                Status::Ok,
                "turned off by the settings (disabledMcpjsonServers)",
            ));
            continue;
        }
        if !entry.approved {
            checks.push(
                check(name, Status::Warning, "not approved: it does not start")
                    .fix(format!("review and approve .mcp.json with `{approve}`")),
            );
            continue;
        }
        let status = statuses.iter().find(|s| s.name == entry.name);
        checks.push(match status {
            None => check(name, Status::Problem, "approved, but it was not started")
                .fix("correct its entry in .mcp.json"),
            Some(s) if s.starting => check(
                name,
                Status::Problem,
                format!(
                    "approved, but it did not start and list its tools within {}s",
                    wait.as_secs_f64()
                ),
            )
            .fix("check that its command answers MCP on stdio, or give --mcp-wait SECONDS"),
            Some(s) => {
                let auth = auth(&entry.name);
                let auth_note = auth
                    .as_ref()
                    .map(|a| format!("; auth: {}: {}", a.kind, a.detail))
                    .unwrap_or_default();
                match &s.error {
                    Some(error) if error.contains("agent-tools mcp login") => {
                        check(name, Status::Problem, format!("approved; {error}"))
                            .fix(login(&entry.name))
                    }
                    Some(error) => check(
                        name,
                        Status::Problem,
                        format!("approved; {error}{auth_note}"),
                    )
                    .fix("correct its entry in .mcp.json or the server"),
                    None if auth.as_ref().is_some_and(|a| a.needs_login) => check(
                        name,
                        Status::Warning,
                        format!("approved; started, {} tools{auth_note}", s.tools),
                    )
                    .fix(login(&entry.name)),
                    None => check(
                        name,
                        Status::Ok,
                        format!("approved; started, {} tools{auth_note}", s.tools),
                    ),
                }
            }
        });
    }
    if let Some(manager) = manager {
        manager.shutdown().await;
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_is_a_line_and_its_fix_below() {
        let ok = check("sandbox", Status::Ok, "bubblewrap");
        assert_eq!(format_check(&ok), "ok       sandbox: bubblewrap\n");
        let bad = check("settings.project", Status::Problem, "/p/x.json: bad").fix("correct it");
        assert_eq!(
            format_check(&bad),
            "problem  settings.project: /p/x.json: bad\n         fix: correct it\n"
        );
    }

    #[test]
    fn json_has_ok_and_every_check() {
        let checks = vec![
            check("a", Status::Warning, "w").fix("f"),
            check("b", Status::Ok, "fine"),
        ];
        let value = report_json(&checks);
        assert_eq!(value["ok"], true);
        assert_eq!(value["checks"][0]["status"], "warning");
        assert_eq!(value["checks"][0]["fix"], "f");
        assert!(value["checks"][1].get("fix").is_none());
        let value = report_json(&[check("c", Status::Problem, "p")]);
        assert_eq!(value["ok"], false);
    }

    #[cfg(feature = "shell")]
    fn trial(ran: Result<&str, &str>) -> registry::SandboxTrial {
        registry::SandboxTrial {
            allow_degraded: false,
            enabled: true,
            planned: ran.map(str::to_owned).map_err(str::to_owned),
            ran: ran.map(str::to_owned).map_err(str::to_owned),
        }
    }

    #[cfg(feature = "shell")]
    #[test]
    fn sandbox_lines() {
        let probe = registry::SandboxProbe {
            bubblewrap: Some("/usr/bin/bwrap".into()),
            user_namespaces: true,
            landlock_abi: Some(5),
            seccomp: true,
            limits: "cgroup v2",
        };
        let checks = sandbox_report(
            &probe,
            &trial(Ok("bubblewrap (workspace-write, network off)")),
        );
        assert_eq!(
            checks[0].detail,
            "bubblewrap with user namespaces (/usr/bin/bwrap); Landlock ABI 5; resource limits by cgroup v2"
        );
        assert_eq!(
            checks[2].detail,
            "a command ran in bubblewrap (workspace-write, network off)"
        );
        assert!(checks.iter().all(|c| c.status == Status::Ok));

        let none = registry::SandboxProbe {
            bubblewrap: None,
            user_namespaces: false,
            landlock_abi: None,
            seccomp: true,
            limits: "rlimits",
        };
        let checks = sandbox_report(&none, &trial(Err("The command was not run: ...")));
        assert_eq!(checks[0].status, Status::Problem);
        let fix = checks[0].fix.as_deref().unwrap();
        assert!(fix.contains("apt-get install bubblewrap"), "{fix}");
        assert!(fix.contains("sandbox.allowDegraded"), "{fix}");
        assert_eq!(checks[2].status, Status::Problem);
        assert_eq!(checks[3].name, "sandbox.session");

        let mut off = trial(Ok("none (sandbox disabled in settings)"));
        off.enabled = false;
        let checks = sandbox_report(&probe, &off);
        assert_eq!(checks[2].status, Status::Warning);
        assert_eq!(
            checks[2].fix.as_deref(),
            Some("set sandbox.enabled to true in the settings to sandbox commands")
        );
    }
}
