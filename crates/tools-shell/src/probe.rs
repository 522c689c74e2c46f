//! A trial run of a command through the same path Bash takes, for hosts that report on the
//! machine (`agent-tools doctor`, with `sandbox::probe_sandbox`).

use std::sync::Arc;

use serde_json::json;
use tool_core::{PermissionMode, ToolContext, ToolPool, Typed};

use sandbox::SandboxSettings;

use crate::bash::Bash;

/// What Bash would do in a session, and what it did with a trivial command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxTrial {
    /// The session's sandbox settings allow commands to run unsandboxed when no mechanism
    /// works (`sandbox.allowDegraded`)
    pub allow_degraded: bool,
    /// The session's sandbox settings enable the sandbox (`sandbox.enabled`)
    pub enabled: bool,
    /// How Bash would start commands in the session (`bubblewrap (workspace-write, network
    /// off)`, ...), or why it would refuse them
    pub planned: Result<String, String>,
    /// The sandbox description of the trial command's result, or its error
    pub ran: Result<String, String>,
}

/// Runs `echo ok` through the Bash tool in a throw-away session (a temporary working
/// directory, the sandbox settings of `ctx`) and says how it was sandboxed. The trial's
/// directory is removed afterwards; the session of `ctx` is not touched.
pub async fn try_sandbox(ctx: &ToolContext) -> SandboxTrial {
    let settings = match SandboxSettings::from_context(ctx) {
        Ok(settings) => settings,
        Err(e) => {
            return SandboxTrial {
                allow_degraded: false,
                enabled: true,
                planned: Err(e.to_string()),
                ran: Err(e.to_string()),
            };
        }
    };
    let planned = sandbox::prepare(&settings, &ctx.working_dirs(), &ctx.cwd(), false)
        .map(|p| p.description)
        .map_err(|e| e.to_string());
    let ran = run_trial(&settings).await;
    SandboxTrial {
        allow_degraded: settings.allow_degraded,
        enabled: settings.enabled,
        planned,
        ran,
    }
}

async fn run_trial(settings: &SandboxSettings) -> Result<String, String> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!(
        "agent-tools-sandbox-trial-{}-{stamp}",
        std::process::id()
    ));
    std::fs::create_dir(&dir)
        .map_err(|e| format!("cannot create the trial directory {}: {e}", dir.display()))?;
    let outcome = {
        let trial = ToolContext::builder(&dir)
            .mode(PermissionMode::BypassPermissions)
            .state_dir(dir.join("state"))
            .service(Arc::new(settings.clone()))
            .build();
        let pool = ToolPool::new(vec![Arc::new(Typed::new(Bash))]);
        let result = pool
            .call("Bash", json!({"command": "echo ok"}), &trial)
            .await;
        let sandbox = result
            .data
            .get("sandbox")
            .and_then(|s| s.as_str())
            .map(str::to_owned);
        match sandbox {
            Some(sandbox) if !result.is_error && result.text().trim() == "ok" => Ok(sandbox),
            _ if result.is_error => Err(result.text()),
            _ => Err(format!(
                "the command ran but did not print what it should: {}",
                result.text()
            )),
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}
