//! Picks the sub-agent runner a session uses from its settings and environment.

use std::sync::Arc;

use tool_core::{SettingsLayer, ToolError};

use crate::runners::api::ApiRunner;
use crate::runners::command::CommandRunner;
use crate::runners::{AgentRunner, AgentSettings};

/// The runner the settings and environment ask for: the command runner when
/// `agent.command` is set, else the Messages API runner when `ANTHROPIC_API_KEY` is set
/// (with `ANTHROPIC_BASE_URL`), else none.
pub fn runner_from_settings(
    layers: &[SettingsLayer],
) -> Result<Option<Arc<dyn AgentRunner>>, ToolError> {
    let settings = AgentSettings::from_layers(layers)?;
    if let Some(command) = settings.command.clone() {
        return Ok(Some(Arc::new(CommandRunner::new(command))));
    }
    match std::env::var("ANTHROPIC_API_KEY") {
        Ok(key) if !key.trim().is_empty() => {
            let base = std::env::var("ANTHROPIC_BASE_URL")
                .ok()
                .filter(|b| !b.trim().is_empty())
                .unwrap_or_else(|| "https://api.anthropic.com".to_owned());
            Ok(Some(Arc::new(ApiRunner::new(base, key, settings)?)))
        }
        _ => Ok(None),
    }
}
