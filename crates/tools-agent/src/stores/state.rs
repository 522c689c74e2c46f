//! Small file helpers shared by the tools: atomic JSON writes, per-session state, safe names.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::DeserializeOwned;
use tool_core::{PermissionMode, ToolContext, ToolError};

/// Writes `bytes` to `path` atomically (tool-core's [`tool_core::write_atomic`]), creating
/// its directory. Readers see the old content or the new one, never a half-written file.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ToolError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| ToolError::io(dir, e))?;
    }
    tool_core::write_atomic(path, bytes).map_err(|e| ToolError::io(path, e))
}

/// Serialises `value` as pretty JSON and writes it atomically.
pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), ToolError> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| ToolError::fatal(format!("internal error: cannot serialise state: {e}")))?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// Reads a JSON file; `Ok(None)` when it does not exist.
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, ToolError> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| {
            ToolError::respond(format!(
                "{} is not valid: {e}. Fix or delete the file.",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ToolError::io(path, e)),
    }
}

/// Opens the lock file `path` (creating it and its directory) and takes its exclusive lock,
/// held until the file is dropped.
pub(crate) fn lock_file(path: &Path) -> Result<File, ToolError> {
    let file = open_lock(path)?;
    file.lock().map_err(|e| ToolError::io(path, e))?;
    Ok(file)
}

/// [`lock_file`] with a shared lock, for readers.
#[cfg(feature = "v2-todo")]
pub(crate) fn lock_file_shared(path: &Path) -> Result<File, ToolError> {
    let file = open_lock(path)?;
    file.lock_shared().map_err(|e| ToolError::io(path, e))?;
    Ok(file)
}

fn open_lock(path: &Path) -> Result<File, ToolError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| ToolError::io(dir, e))?;
    }
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| ToolError::io(path, e))
}

/// Runs blocking work (files, locks) on the runtime's blocking threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::fatal(format!("internal error: a blocking worker failed: {e}")))?
}

pub(crate) use tool_core::path::safe_component;

/// Now, in ms since the epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Whether process `pid` still runs. Where `/proc` is not available every process counts as
/// alive (the safe answer for TeamDelete).
pub(crate) fn process_alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return true;
    }
    proc.join(pid.to_string()).exists()
}

/// Marks a context as a sub-agent's: hosts (and the Agent tool) put an `Arc<AgentIdentity>`
/// in the services of a sub-agent's context. Tools that only the main session may use
/// (EnterPlanMode, AskUserQuestion) refuse when it is present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentIdentity {
    /// The sub-agent's id
    pub agent_id: String,
}
impl tool_core::ServiceType for AgentIdentity {}

/// The sub-agent id of this context, if it is a sub-agent's.
pub(crate) fn agent_id(ctx: &ToolContext) -> Option<String> {
    ctx.services()
        .get::<Arc<AgentIdentity>>()
        .map(|a| a.agent_id.clone())
}

/// Session state of this crate's tools (kept in the context's services, so it lives exactly
/// as long as the session).
#[derive(Debug, Default)]
pub(crate) struct AgentSession {
    /// The mode before EnterPlanMode
    pub pre_plan_mode: Mutex<Option<PermissionMode>>,
    /// The worktree EnterWorktree created in this session
    pub worktree: Mutex<Option<crate::stores::git_worktrees::ActiveWorktree>>,
}
impl tool_core::ServiceType for AgentSession {}

/// The session state, created on first use.
pub(crate) fn session(ctx: &ToolContext) -> Arc<AgentSession> {
    ctx.services()
        .get_or_insert_with(Arc::<AgentSession>::default)
}

/// `<state>/<kind>/<session or agent id>.json`: per-session files of a tool.
pub(crate) fn session_file(ctx: &ToolContext, kind: &str, ext: &str) -> PathBuf {
    let key = agent_id(ctx).unwrap_or_else(|| ctx.session_id().to_owned());
    ctx.private_state_dir()
        .join(kind)
        .join(format!("{}.{ext}", safe_component(&key)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/a.json");
        write_json(&p, &serde_json::json!({"a": 1})).unwrap();
        write_json(&p, &serde_json::json!({"a": 2})).unwrap();
        let v: serde_json::Value = read_json(&p).unwrap().unwrap();
        assert_eq!(v["a"], 2);
        let names: Vec<_> = std::fs::read_dir(dir.path().join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);
        assert!(
            read_json::<serde_json::Value>(&dir.path().join("none"))
                .unwrap()
                .is_none()
        );
    }
}
