//! Shared task lists on disk ("Todo V2"): one JSON file per task under
//! `<state>/tasks/<list>/`, ids from a high-water mark, every write under the list's lock
//! file, so every process that names the same list shares it; dependencies (blocks /
//! blockedBy) are kept symmetric and free of cycles.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tool_core::{ToolContext, ToolError};

use crate::stores::state::{lock_file, lock_file_shared, read_json, safe_component, write_json};

/// The environment variable that names the task list, so separate sessions share one.
pub const TASK_LIST_ENV: &str = "AGENT_TOOLS_TASK_LIST_ID";
/// The file holding the highest id ever given out, so ids are never reused.
pub const HIGH_WATER_MARK: &str = ".highwatermark";
const LOCK_FILE: &str = ".lock";

/// Names the task list of a session; a host (or a team) puts one in the context's services.
/// Without it the list is [`TASK_LIST_ENV`], else the session id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskListId(pub String);

impl tool_core::ServiceType for TaskListId {}

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Not started
    Pending,
    /// Being worked on
    InProgress,
    /// Done
    Completed,
}

impl TaskState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TaskState::Pending => "pending",
            TaskState::InProgress => "in_progress",
            TaskState::Completed => "completed",
        }
    }
}

/// One task as stored in `<id>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// Numeric id, as a string
    pub id: String,
    /// A short title
    pub subject: String,
    /// What needs to be done
    pub description: String,
    /// Present continuous form shown while in progress
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
    /// Where it is
    pub status: TaskState,
    /// Who works on it
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Tasks that cannot start before this one is completed
    #[serde(default)]
    pub blocks: Vec<String>,
    /// Tasks that must be completed before this one
    #[serde(default)]
    pub blocked_by: Vec<String>,
    /// Free-form data
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A task list on disk. Every operation takes the list's lock file (shared for reads,
/// exclusive for writes), so processes sharing the directory never lose an update.
#[derive(Debug, Clone)]
pub struct TaskStore {
    dir: PathBuf,
}

fn id_number(id: &str) -> Option<u64> {
    id.trim().trim_start_matches('#').parse().ok()
}

fn sort_ids(ids: &mut [String]) {
    ids.sort_by_key(|id| id_number(id).unwrap_or(u64::MAX));
}

impl TaskStore {
    /// The store in `dir`.
    pub fn open(dir: impl Into<PathBuf>) -> Self {
        TaskStore { dir: dir.into() }
    }

    /// The list of this context: `<state>/tasks/<list id>/`, the id being the context's
    /// [`TaskListId`], else [`TASK_LIST_ENV`], else the team the context is in (lead or
    /// teammate), else the session id.
    pub fn for_context(ctx: &ToolContext) -> Self {
        let id = ctx
            .services()
            .get::<Arc<TaskListId>>()
            .map(|t| t.0.clone())
            .or_else(|| {
                std::env::var(TASK_LIST_ENV)
                    .ok()
                    .filter(|s| !s.trim().is_empty())
            })
            // A team's lead and teammates share the team's list.
            .or_else(|| crate::stores::team_files::sender(ctx).map(|(team, _)| team))
            .unwrap_or_else(|| ctx.session_id().to_owned());
        TaskStore::open(
            ctx.private_state_dir()
                .join("tasks")
                .join(safe_component(&id)),
        )
    }

    /// The directory.
    #[cfg(any(test, feature = "testing"))]
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    fn lock(&self, exclusive: bool) -> Result<File, ToolError> {
        let path = self.dir.join(LOCK_FILE);
        if exclusive {
            lock_file(&path)
        } else {
            lock_file_shared(&path)
        }
    }

    fn task_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn load_all(&self) -> Result<BTreeMap<u64, TaskRecord>, ToolError> {
        let mut out = BTreeMap::new();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(ToolError::io(&self.dir, e)),
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(n) = name.strip_suffix(".json").and_then(id_number) else {
                continue;
            };
            if let Some(task) = read_json::<TaskRecord>(&entry.path())? {
                out.insert(n, task);
            }
        }
        Ok(out)
    }

    fn high_water_mark(&self) -> u64 {
        std::fs::read_to_string(self.dir.join(HIGH_WATER_MARK))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Creates a task with the next id.
    pub fn create(
        &self,
        subject: String,
        description: String,
        active_form: Option<String>,
        metadata: Option<Map<String, Value>>,
    ) -> Result<TaskRecord, ToolError> {
        let _lock = self.lock(true)?;
        let existing = self.load_all()?;
        let max = existing.keys().next_back().copied().unwrap_or(0);
        let id = self.high_water_mark().max(max) + 1;
        let task = TaskRecord {
            id: id.to_string(),
            subject,
            description,
            active_form,
            status: TaskState::Pending,
            owner: None,
            blocks: Vec::new(),
            blocked_by: Vec::new(),
            metadata,
        };
        write_json(&self.task_path(&task.id), &task)?;
        crate::stores::state::write_atomic(
            &self.dir.join(HIGH_WATER_MARK),
            id.to_string().as_bytes(),
        )?;
        Ok(task)
    }

    /// One task.
    pub fn get(&self, id: &str) -> Result<Option<TaskRecord>, ToolError> {
        let Some(n) = id_number(id) else {
            return Ok(None);
        };
        let _lock = self.lock(false)?;
        read_json(&self.task_path(&n.to_string()))
    }

    /// Every task, by id.
    pub fn list(&self) -> Result<Vec<TaskRecord>, ToolError> {
        let _lock = self.lock(false)?;
        Ok(self.load_all()?.into_values().collect())
    }

    /// Applies an update under the exclusive lock. `Ok(None)` when the task does not exist.
    pub fn update(&self, update: &TaskUpdateInput) -> Result<Option<UpdateOutcome>, ToolError> {
        let Some(n) = id_number(&update.task_id) else {
            return Ok(None);
        };
        let _lock = self.lock(true)?;
        let mut all = self.load_all()?;
        let Some(before) = all.get(&n).cloned() else {
            return Ok(None);
        };
        let id = before.id.clone();
        if update.status == Some(UpdateStatus::Deleted) {
            return self.delete(&mut all, n, &id).map(Some);
        }
        // Check the dependency edits before changing anything: no partial writes.
        let edges = new_edges(&all, n, &id, update)?;
        let task = all
            .get_mut(&n)
            .ok_or_else(|| ToolError::fatal("internal error: task vanished"))?;
        let mut changed_fields = apply_fields(task, update);
        let mut touched: Vec<u64> = vec![n];
        let (blocks, blocked_by) = link(&mut all, edges, n, &mut touched);
        if blocks {
            changed_fields.push("blocks");
        }
        if blocked_by {
            changed_fields.push("blockedBy");
        }
        touched.sort_unstable();
        touched.dedup();
        for k in touched {
            if let Some(t) = all.get(&k) {
                write_json(&self.task_path(&t.id), t)?;
            }
        }
        Ok(Some(UpdateOutcome {
            task: all.get(&n).cloned(),
            deleted: false,
            fields: changed_fields,
        }))
    }

    /// Deletes task `n` (id `id`) and every dependency on it; the caller holds the lock.
    fn delete(
        &self,
        all: &mut BTreeMap<u64, TaskRecord>,
        n: u64,
        id: &str,
    ) -> Result<UpdateOutcome, ToolError> {
        let mut touched: Vec<u64> = vec![n];
        all.remove(&n);
        for (k, t) in all.iter_mut() {
            let len = t.blocks.len() + t.blocked_by.len();
            t.blocks.retain(|b| b != id);
            t.blocked_by.retain(|b| b != id);
            if t.blocks.len() + t.blocked_by.len() != len {
                touched.push(*k);
            }
        }
        for k in touched.iter().filter(|k| **k != n) {
            if let Some(t) = all.get(k) {
                write_json(&self.task_path(&t.id), t)?;
            }
        }
        let path = self.task_path(id);
        std::fs::remove_file(&path).map_err(|e| ToolError::io(&path, e))?;
        Ok(UpdateOutcome {
            task: None,
            deleted: true,
            fields: vec!["deleted"],
        })
    }
}

/// The dependency edges (blocker, blocked) an update adds to task `n` (id `id`), refused
/// when one names a missing task, the task itself, or closes a cycle.
fn new_edges(
    all: &BTreeMap<u64, TaskRecord>,
    n: u64,
    id: &str,
    update: &TaskUpdateInput,
) -> Result<Vec<(u64, u64)>, ToolError> {
    let mut edges: Vec<(u64, u64)> = Vec::new(); // (blocker, blocked)
    for (field, list, outgoing) in [
        ("addBlocks", &update.add_blocks, true),
        ("addBlockedBy", &update.add_blocked_by, false),
    ] {
        for other in list.iter().flatten() {
            let Some(m) = id_number(other).filter(|m| all.contains_key(m)) else {
                return Err(ToolError::respond(format!(
                    "{field}: task #{} does not exist. Use TaskList to see the task ids.",
                    other.trim_start_matches('#')
                )));
            };
            if m == n {
                return Err(ToolError::respond(format!(
                    "{field}: task #{id} cannot depend on itself"
                )));
            }
            edges.push(if outgoing { (n, m) } else { (m, n) });
        }
    }
    for &(blocker, blocked) in &edges {
        if reaches(all, &edges, blocked, blocker) {
            return Err(ToolError::respond(format!(
                "Making task #{blocker} block task #{blocked} would create a dependency cycle"
            )));
        }
    }

    Ok(edges)
}

/// Applies an update's plain fields to `task`; the names of those that changed.
fn apply_fields(task: &mut TaskRecord, update: &TaskUpdateInput) -> Vec<&'static str> {
    let mut changed_fields: Vec<&'static str> = Vec::new();
    if let Some(s) = &update.subject
        && *s != task.subject
    {
        task.subject = s.clone();
        changed_fields.push("subject");
    }
    if let Some(d) = &update.description
        && *d != task.description
    {
        task.description = d.clone();
        changed_fields.push("description");
    }
    if let Some(a) = &update.active_form
        && Some(a) != task.active_form.as_ref()
    {
        task.active_form = Some(a.clone());
        changed_fields.push("activeForm");
    }
    if let Some(status) = update.status.and_then(UpdateStatus::state)
        && status != task.status
    {
        task.status = status;
        changed_fields.push("status");
    }
    if let Some(owner) = &update.owner {
        let owner = Some(owner.trim().to_owned()).filter(|o| !o.is_empty());
        if owner != task.owner {
            task.owner = owner;
            changed_fields.push("owner");
        }
    }
    if let Some(meta) = &update.metadata {
        let target = task.metadata.get_or_insert_with(Map::new);
        for (k, v) in meta {
            if v.is_null() {
                target.remove(k);
            } else {
                target.insert(k.clone(), v.clone());
            }
        }
        if target.is_empty() {
            task.metadata = None;
        }
        changed_fields.push("metadata");
    }
    changed_fields
}

/// Adds `edges` to both ends' lists, noting the tasks changed in `touched`; whether task
/// `n`'s blocks and blockedBy changed.
fn link(
    all: &mut BTreeMap<u64, TaskRecord>,
    edges: Vec<(u64, u64)>,
    n: u64,
    touched: &mut Vec<u64>,
) -> (bool, bool) {
    let mut deps_changed = (false, false);
    for (blocker, blocked) in edges {
        let blocked_id = blocked.to_string();
        let blocker_id = blocker.to_string();
        if let Some(t) = all.get_mut(&blocker)
            && !t.blocks.contains(&blocked_id)
        {
            t.blocks.push(blocked_id.clone());
            sort_ids(&mut t.blocks);
            touched.push(blocker);
            if blocker == n {
                deps_changed.0 = true;
            }
        }
        if let Some(t) = all.get_mut(&blocked)
            && !t.blocked_by.contains(&blocker_id)
        {
            t.blocked_by.push(blocker_id);
            sort_ids(&mut t.blocked_by);
            touched.push(blocked);
            if blocked == n {
                deps_changed.1 = true;
            }
        }
    }
    deps_changed
}

/// Whether `from` reaches `to` following "blocks" edges (stored plus `extra`).
fn reaches(all: &BTreeMap<u64, TaskRecord>, extra: &[(u64, u64)], from: u64, to: u64) -> bool {
    let mut stack = vec![from];
    let mut seen = std::collections::HashSet::new();
    while let Some(cur) = stack.pop() {
        if cur == to {
            return true;
        }
        if !seen.insert(cur) {
            continue;
        }
        if let Some(t) = all.get(&cur) {
            stack.extend(t.blocks.iter().filter_map(|b| id_number(b)));
        }
        stack.extend(extra.iter().filter(|(a, _)| *a == cur).map(|(_, b)| *b));
    }
    false
}

/// What an update did.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateOutcome {
    /// The task after the update (none when deleted)
    pub task: Option<TaskRecord>,
    /// Whether it was deleted
    pub deleted: bool,
    /// The fields that changed
    pub fields: Vec<&'static str>,
}

/// A status TaskUpdate may set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UpdateStatus {
    /// Not started
    Pending,
    /// Being worked on
    InProgress,
    /// Done
    Completed,
    /// Remove the task
    Deleted,
}

impl UpdateStatus {
    fn state(self) -> Option<TaskState> {
        match self {
            UpdateStatus::Pending => Some(TaskState::Pending),
            UpdateStatus::InProgress => Some(TaskState::InProgress),
            UpdateStatus::Completed => Some(TaskState::Completed),
            UpdateStatus::Deleted => None,
        }
    }
}

/// Input of TaskUpdate.
///
/// # JSON names
///
/// The model sends these fields under JSON names that differ from the Rust ones:
///
/// | JSON name | Rust field |
/// | --- | --- |
/// | `taskId` | [`task_id`](Self::task_id) |
/// | `activeForm` | [`active_form`](Self::active_form) |
/// | `addBlocks` | [`add_blocks`](Self::add_blocks) |
/// | `addBlockedBy` | [`add_blocked_by`](Self::add_blocked_by) |
///
/// `status` takes the [`UpdateStatus`] variants in snake case (`pending`, `in_progress`,
/// `completed`, `deleted`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TaskUpdateInput {
    /// The id of the task to update
    #[schemars(length(min = 1, max = tool_core::MAX_NAME_CHARS))]
    pub task_id: String,
    /// New subject
    #[serde(default)]
    pub subject: Option<String>,
    /// New description
    #[serde(default)]
    pub description: Option<String>,
    /// New present continuous form
    #[serde(default)]
    pub active_form: Option<String>,
    /// New status; "deleted" removes the task
    #[serde(default)]
    pub status: Option<UpdateStatus>,
    /// Ids of tasks that cannot start until this one is completed
    #[serde(default)]
    #[schemars(inner(length(max = tool_core::MAX_NAME_CHARS)))]
    pub add_blocks: Option<Vec<String>>,
    /// Ids of tasks that must be completed before this one can start
    #[serde(default)]
    #[schemars(inner(length(max = tool_core::MAX_NAME_CHARS)))]
    pub add_blocked_by: Option<Vec<String>>,
    /// New owner (an agent name); an empty string clears it
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub owner: Option<String>,
    /// Keys to merge into the task's metadata; a null value removes the key
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}
