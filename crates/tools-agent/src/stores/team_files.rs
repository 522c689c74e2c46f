//! Teams on disk: `<state>/teams/<team>/config.json` (the lead session and the members,
//! with `isActive`, pid and task id) read and changed under the team's lock file, replaced
//! atomically, so several processes share a team. Who a context is in a team (the lead's
//! session or a teammate's [`TeammateIdentity`]) is answered here too.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tool_core::{CancellationToken, ToolContext, ToolError};

use crate::stores::state::{
    agent_id, lock_file, now_ms, process_alive, read_json, safe_component, write_json,
};

/// The name of every team's lead in its team file and mailboxes.
pub const TEAM_LEAD_NAME: &str = "team-lead";

const LOCK_FILE: &str = ".lock";

/// One member of a team as the team file records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamMember {
    /// `name@team`
    pub agent_id: String,
    /// The name messages are addressed to
    pub name: String,
    /// The agent type it runs as
    pub agent_type: String,
    /// When it joined (ms since the epoch)
    pub joined_at: u64,
    /// Its working directory
    pub cwd: PathBuf,
    /// Whether it is running
    pub is_active: bool,
    /// The process it runs in; a member whose process is gone is not active whatever
    /// `isActive` says (a crashed host cannot block TeamDelete forever)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Its background task, for a teammate
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

impl TeamMember {
    /// Active and its process alive.
    pub fn is_running(&self) -> bool {
        self.is_active && self.pid.is_none_or(process_alive)
    }
}

/// A team file, `<state>/teams/<team>/config.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamFile {
    /// The team's name (its directory)
    pub name: String,
    /// What the team is for
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// When it was created (ms since the epoch)
    pub created_at: u64,
    /// `team-lead@<team>`
    pub lead_agent_id: String,
    /// The session that leads it
    pub lead_session_id: String,
    /// The lead first, then the teammates
    pub members: Vec<TeamMember>,
}

impl TeamFile {
    /// The member called `name` or with agent id `name`.
    pub fn member(&self, name: &str) -> Option<&TeamMember> {
        self.members
            .iter()
            .find(|m| m.name == name || m.agent_id == name)
    }

    /// Teammates (not the lead) that are running.
    pub fn active_teammates(&self) -> Vec<&TeamMember> {
        self.members
            .iter()
            .filter(|m| m.name != TEAM_LEAD_NAME && m.is_running())
            .collect()
    }
}

/// The teams of a state directory: `<state>/teams/`. Every operation takes a lock file
/// (the root's to create or delete a team, the team's for its team file, one per inbox),
/// and every write replaces the file atomically, so processes sharing the directory never
/// lose a message or a member.
#[derive(Debug, Clone)]
pub struct TeamStore {
    dir: PathBuf,
}

/// A team name as a directory name: lower case letters, digits and `-`.
pub(crate) fn team_slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_owned();
    if out.is_empty() {
        "team".to_owned()
    } else {
        out
    }
}

impl TeamStore {
    /// The store in `dir`.
    /// The store in `dir`.
    pub fn open(dir: impl Into<PathBuf>) -> Self {
        TeamStore { dir: dir.into() }
    }

    /// The store of this context's state directory.
    pub fn for_context(ctx: &ToolContext) -> Self {
        TeamStore::open(ctx.private_state_dir().join("teams"))
    }

    /// The directory of one team.
    pub fn team_dir(&self, team: &str) -> PathBuf {
        self.dir.join(safe_component(team))
    }

    /// The team file.
    pub fn team_file(&self, team: &str) -> PathBuf {
        self.team_dir(team).join("config.json")
    }

    /// A member's inbox file.
    pub fn inbox_file(&self, team: &str, member: &str) -> PathBuf {
        self.team_dir(team)
            .join("inboxes")
            .join(format!("{}.json", safe_component(member)))
    }

    /// Every team (files that cannot be read are skipped).
    pub fn teams(&self) -> Vec<TeamFile> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut teams: Vec<TeamFile> = entries
            .flatten()
            .filter_map(|e| {
                read_json::<TeamFile>(&e.path().join("config.json"))
                    .ok()
                    .flatten()
            })
            .collect();
        teams.sort_by(|a, b| a.name.cmp(&b.name));
        teams
    }

    /// The team `session_id` leads, if any.
    pub fn led_by(&self, session_id: &str) -> Option<TeamFile> {
        self.teams()
            .into_iter()
            .find(|t| t.lead_session_id == session_id)
    }

    /// One team.
    pub fn load(&self, team: &str) -> Result<Option<TeamFile>, ToolError> {
        let _lock = lock_file(&self.team_dir(team).join(LOCK_FILE))?;
        read_json(&self.team_file(team))
    }

    /// Creates a team led by `lead_session_id`. Refuses when that session already leads
    /// one; when the name is taken, the team gets the next free `<name>-N`.
    pub fn create(
        &self,
        name: &str,
        description: Option<String>,
        lead_session_id: &str,
        lead_agent_type: &str,
        cwd: &Path,
    ) -> Result<TeamFile, ToolError> {
        let _root = lock_file(&self.dir.join(LOCK_FILE))?;
        if let Some(existing) = self.led_by(lead_session_id) {
            return Err(ToolError::respond(format!(
                "Already leading team \"{}\". A leader can only manage one team at a time. Use TeamDelete to end the current team before creating a new one.",
                existing.name
            )));
        }
        let base = team_slug(name);
        let mut slug = base.clone();
        let mut n = 2;
        while self.team_dir(&slug).exists() {
            slug = format!("{base}-{n}");
            n += 1;
        }
        let team = TeamFile {
            name: slug.clone(),
            description,
            created_at: now_ms(),
            lead_agent_id: format!("{TEAM_LEAD_NAME}@{slug}"),
            lead_session_id: lead_session_id.to_owned(),
            members: vec![TeamMember {
                agent_id: format!("{TEAM_LEAD_NAME}@{slug}"),
                name: TEAM_LEAD_NAME.to_owned(),
                agent_type: lead_agent_type.to_owned(),
                joined_at: now_ms(),
                cwd: cwd.to_path_buf(),
                is_active: true,
                pid: Some(std::process::id()),
                task_id: None,
            }],
        };
        let _lock = lock_file(&self.team_dir(&slug).join(LOCK_FILE))?;
        write_json(&self.team_file(&slug), &team)?;
        Ok(team)
    }

    /// Changes a team file under its lock; `f` may refuse with an error (nothing is written).
    pub fn update<T>(
        &self,
        team: &str,
        f: impl FnOnce(&mut TeamFile) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let _lock = lock_file(&self.team_dir(team).join(LOCK_FILE))?;
        let mut file: TeamFile = read_json(&self.team_file(team))?.ok_or_else(|| {
            ToolError::respond(format!(
                "Team \"{team}\" does not exist: create it with TeamCreate"
            ))
        })?;
        let out = f(&mut file)?;
        write_json(&self.team_file(team), &file)?;
        Ok(out)
    }

    /// Marks a member active or not.
    pub fn set_active(&self, team: &str, member: &str, active: bool) -> Result<(), ToolError> {
        self.update(team, |t| {
            if let Some(m) = t.members.iter_mut().find(|m| m.name == member) {
                m.is_active = active;
            }
            Ok(())
        })
    }

    /// Deletes a team and its mailboxes; refuses while teammates run.
    pub fn delete(&self, team: &str) -> Result<usize, ToolError> {
        let _root = lock_file(&self.dir.join(LOCK_FILE))?;
        let inboxes = {
            let _lock = lock_file(&self.team_dir(team).join(LOCK_FILE))?;
            let Some(file) = read_json::<TeamFile>(&self.team_file(team))? else {
                return Ok(0);
            };
            let active = file.active_teammates();
            if !active.is_empty() {
                let names: Vec<&str> = active.iter().map(|m| m.name.as_str()).collect();
                return Err(ToolError::respond(format!(
                    "Cannot cleanup team with {} active member(s): {}. Use requestShutdown to gracefully terminate teammates first.",
                    active.len(),
                    names.join(", ")
                )));
            }
            std::fs::read_dir(self.team_dir(team).join("inboxes"))
                .map(|d| {
                    d.flatten()
                        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                        .count()
                })
                .unwrap_or(0)
        };
        let dir = self.team_dir(team);
        std::fs::remove_dir_all(&dir).map_err(|e| ToolError::io(&dir, e))?;
        Ok(inboxes)
    }
}

/// Marks a context as a teammate's: the Agent tool puts an `Arc<TeammateIdentity>` in the
/// services of a teammate's context.
#[derive(Debug, Clone)]
pub struct TeammateIdentity {
    /// The team
    pub team_name: String,
    /// Its name in the team
    pub name: String,
    /// `name@team`
    pub agent_id: String,
    /// Fired when the teammate approved a shutdown request: its run ends after the current
    /// tool round
    pub exit: CancellationToken,
    /// The mode a teammate in plan mode switches to when the lead approves its plan (the
    /// lead's mode when it spawned the teammate; default when that was plan)
    pub after_plan: tool_core::PermissionMode,
}
impl tool_core::ServiceType for TeammateIdentity {}

pub(crate) fn teammate(ctx: &ToolContext) -> Option<Arc<TeammateIdentity>> {
    ctx.services().get::<Arc<TeammateIdentity>>()
}

/// Who sends from this context: `(team, name)`. A teammate is itself; the main session is
/// `team-lead` of the team it leads.
pub(crate) fn sender(ctx: &ToolContext) -> Option<(String, String)> {
    if let Some(t) = teammate(ctx) {
        return Some((t.team_name.clone(), t.name.clone()));
    }
    if agent_id(ctx).is_some() {
        return None;
    }
    TeamStore::for_context(ctx)
        .led_by(ctx.session_id())
        .map(|t| (t.name, TEAM_LEAD_NAME.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stores::mailbox::InboxMessage;
    use serde_json::json;

    #[test]
    fn slugs() {
        assert_eq!(team_slug("My Team!"), "my-team");
        assert_eq!(team_slug("  "), "team");
        assert_eq!(team_slug("a__b"), "a-b");
    }

    #[test]
    fn create_collides_and_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let store = TeamStore::open(dir.path());
        let a = store
            .create("alpha", None, "s1", "lead", dir.path())
            .unwrap();
        assert_eq!(a.name, "alpha");
        let err = store
            .create("beta", None, "s1", "lead", dir.path())
            .unwrap_err();
        assert!(
            err.to_string().contains("Already leading team \"alpha\""),
            "{err}"
        );
        let b = store
            .create("alpha", None, "s2", "lead", dir.path())
            .unwrap();
        assert_eq!(b.name, "alpha-2");
        store
            .deliver(
                "alpha",
                "team-lead",
                InboxMessage::new("x", json!("hi"), None),
            )
            .unwrap();
        assert_eq!(store.take_unread("alpha", "team-lead").unwrap().len(), 1);
        assert!(store.take_unread("alpha", "team-lead").unwrap().is_empty());
        assert_eq!(store.inbox("alpha", "team-lead").unwrap().len(), 1);
        assert_eq!(store.delete("alpha").unwrap(), 1);
        assert!(!store.team_dir("alpha").exists());
    }

    #[test]
    fn plan_requests_are_answered_once_and_replaced_by_newer_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = TeamStore::open(dir.path());
        store.create("t", None, "s", "lead", dir.path()).unwrap();
        let file = Path::new("/plans/a.md");
        let answer = |id: &str| {
            store.answer_plan_request(
                "t",
                "a",
                id,
                InboxMessage::new(
                    TEAM_LEAD_NAME,
                    json!({"type": "plan_approval_response"}),
                    None,
                ),
            )
        };
        let check = |id: &str, expected: &str| {
            let err = answer(id).unwrap_err().to_string();
            assert!(
                err.contains(&format!(
                    "request_id \"{id}\" does not match a pending plan approval request: {expected}"
                )),
                "{err}"
            );
        };
        check("plan-0@a", "a has no plan waiting for approval");
        let first = store
            .request_plan_approval("t", "a", "p1", file, None)
            .unwrap();
        let second = store
            .request_plan_approval("t", "a", "p2", file, None)
            .unwrap();
        assert_ne!(first, second);
        // The newer request replaces the older one; the lead got both messages.
        assert_eq!(store.pending_plan_requests("t").unwrap().len(), 1);
        assert_eq!(store.inbox("t", TEAM_LEAD_NAME).unwrap().len(), 2);
        check(
            &first,
            &format!("a's plan waiting for approval is \"{second}\""),
        );
        let b = store
            .request_plan_approval("t", "b", "pb", file, None)
            .unwrap();
        check(&b, "it is b's request, not a's: send the response to b");
        assert!(store.inbox("t", "a").unwrap().is_empty());
        answer(&second).unwrap();
        assert_eq!(store.inbox("t", "a").unwrap().len(), 1);
        check(&second, "a has no plan waiting for approval");
        assert_eq!(store.pending_plan_requests("t").unwrap()[0].from, "b");
    }

    #[test]
    fn dead_processes_are_not_active() {
        let member = TeamMember {
            agent_id: "a@t".into(),
            name: "a".into(),
            agent_type: "general-purpose".into(),
            joined_at: 0,
            cwd: PathBuf::from("/"),
            is_active: true,
            pid: Some(u32::MAX - 1),
            task_id: None,
        };
        assert!(!member.is_running() || !Path::new("/proc/self").exists());
        let alive = TeamMember {
            pid: Some(std::process::id()),
            ..member
        };
        assert!(alive.is_running());
    }
}
