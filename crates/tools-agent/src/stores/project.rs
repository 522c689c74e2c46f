//! What a project ships for this crate — skills (`.agent-tools/skills/<dir>/SKILL.md`),
//! agent definitions (`.agent-tools/agents/*.md`) and durable cron jobs
//! (`.agent-tools/scheduled_tasks.json`) — read without following links, and reviewed like
//! the project's settings: until a person approves a file's exact content with
//! `agent-tools trust`, the keys that would widen a session are withheld.
//!
//! Withheld from an unapproved skill: `allowed-tools` (session allow rules), `model`,
//! `hooks`, and every key this crate does not read. From an unapproved agent definition:
//! `permissionMode`, `model`, `hooks`, `mcpServers`, and every key this crate does not read
//! (`tools` and `disallowedTools` only narrow what a sub-agent gets, so they stay). From an
//! unapproved `scheduled_tasks.json`: every job (schedules start nothing until approved).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tool_core::{Approval, FileReview, ToolContext, TrustStore, Withheld, sha256_hex};

use crate::stores::frontmatter::{self, FrontMatter, FrontValue};

/// The project's folder of agent-tools files.
pub(crate) const PROJECT_DIR: &str = ".agent-tools";

/// The prefix a project skill or agent gets when its name is taken by a built-in type or by
/// the person's own definition: the person's and the built-ins win, and the project's stays
/// reachable under `project:<name>` (rules name it so: `Skill(project:deploy)`).
pub const PROJECT_PREFIX: &str = "project:";

/// Skill front-matter keys that only describe the skill, kept from any file.
const SKILL_KEPT: &[&str] = &[
    "name",
    "description",
    "disable-model-invocation",
    "argument-hint",
    "when_to_use",
    "user-invocable",
    "version",
    "license",
];

/// Agent front-matter keys that describe the agent or narrow its tools, kept from any file.
const AGENT_KEPT: &[&str] = &["name", "description", "tools", "disallowedTools", "color"];

/// The kind of a project definition file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Skill,
    Agent,
}

/// A definition file read from the project: its bytes (the ones hashed are the ones
/// parsed) and whether a person approved them.
#[derive(Debug, Clone)]
pub(crate) struct ProjectFile {
    /// Its name inside the project, as approvals record it
    pub name: String,
    /// The content
    pub bytes: Vec<u8>,
    /// Whether a person approved this content
    pub status: Approval,
}

/// Whether `path`, below `root`, is reached without a symbolic link in any component from
/// `root` on (the project root itself may be reached through links). A project is
/// repository content: a link there could make a definition out of any file on the machine.
pub(crate) fn no_links_below(root: &Path, path: &Path) -> Result<(), String> {
    let rel = path.strip_prefix(root).map_err(|_| {
        format!(
            "{} is not inside the project {}",
            path.display(),
            root.display()
        )
    })?;
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "{} is a symbolic link: project files under {PROJECT_DIR}/ are never followed through links; replace it with a real file or directory",
                    at.display()
                ));
            }
            Ok(_) => {}
            Err(e) => return Err(format!("{}: {e}", at.display())),
        }
    }
    Ok(())
}

/// The approvals of `project` recorded in `state_dir` (name → SHA-256); none when the
/// approvals cannot be read (nothing counts as approved then).
pub(crate) fn approvals(project: &Path, state_dir: &Path) -> BTreeMap<String, String> {
    TrustStore::in_state_dir(state_dir)
        .approvals(project)
        .unwrap_or_default()
}

/// Reads the project file `path` (no link followed below `project`) with its approval.
pub(crate) fn read(
    project: &Path,
    path: &Path,
    approvals: &BTreeMap<String, String>,
) -> Result<ProjectFile, String> {
    no_links_below(project, path)?;
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = path
        .strip_prefix(project)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned();
    let sha = sha256_hex(&bytes);
    let status = match approvals.get(&name) {
        Some(approved) if *approved == sha => Approval::Approved,
        Some(_) => Approval::Changed,
        None => Approval::NotApproved,
    };
    Ok(ProjectFile {
        name,
        bytes,
        status,
    })
}

/// The keys of a definition of `kind` that widen a session and are withheld until a person
/// approves its file, with their values.
pub(crate) fn widening_keys(kind: Kind, doc: &FrontMatter) -> Vec<(String, FrontValue)> {
    let kept = match kind {
        Kind::Skill => SKILL_KEPT,
        Kind::Agent => AGENT_KEPT,
    };
    doc.keys
        .iter()
        .filter(|(k, _)| !kept.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Removes the keys that widen from an unapproved definition.
pub(crate) fn narrow(kind: Kind, doc: &mut FrontMatter) {
    for (key, _) in widening_keys(kind, doc) {
        doc.keys.remove(&key);
    }
}

fn value_json(v: &FrontValue) -> Value {
    match v {
        FrontValue::Text(t) => Value::String(t.clone()),
        FrontValue::List(l) => Value::from(l.clone()),
    }
}

/// The project's skill files (`<project>/.agent-tools/skills/<dir>/SKILL.md`), sorted.
pub(crate) fn skill_files(project: &Path) -> Vec<PathBuf> {
    let root = project.join(PROJECT_DIR).join("skills");
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path().join("SKILL.md"))
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
        .collect();
    files.sort();
    files
}

/// The project's agent files (`<project>/.agent-tools/agents/*.md`), sorted.
pub(crate) fn agent_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    files
}

/// The durable cron file of a project.
pub(crate) fn cron_file(project: &Path) -> PathBuf {
    project.join(PROJECT_DIR).join("scheduled_tasks.json")
}

/// Reviews what `project` ships for the agent tools, against the approvals in `state_dir`:
/// one [`FileReview`] per skill, agent definition and durable cron file present, naming
/// the keys a session withholds until a person approves the file (`agent-tools trust`
/// lists them and records the approval). A file that cannot be read (a link, bad front
/// matter) is reviewed with its problem.
pub fn review_project_definitions(project: &Path, state_dir: &Path) -> Vec<FileReview> {
    let approvals = approvals(project, state_dir);
    let files = skill_files(project)
        .into_iter()
        .map(|p| (Kind::Skill, p))
        .chain(
            agent_files(&project.join(PROJECT_DIR).join("agents"))
                .into_iter()
                .map(|p| (Kind::Agent, p)),
        );
    let mut out: Vec<FileReview> = files
        .map(|(kind, path)| {
            review_file(project, &path, &approvals, |bytes| {
                let doc = std::str::from_utf8(bytes)
                    .map_err(|e| format!("not UTF-8 text: {e}"))
                    .and_then(frontmatter::parse)?;
                Ok(widening_keys(kind, &doc)
                    .iter()
                    .map(|(k, v)| Withheld {
                        key: k.clone(),
                        value: value_json(v),
                    })
                    .collect())
            })
        })
        .collect();
    let cron = cron_file(project);
    if std::fs::symlink_metadata(&cron).is_ok() {
        out.push(review_file(project, &cron, &approvals, cron_jobs_withheld));
    }
    out
}

/// The review of the project file `path`: its name, hash and approval, and the keys
/// `withheld` finds in its content (or the problem it or the reading ran into).
fn review_file(
    project: &Path,
    path: &Path,
    approvals: &BTreeMap<String, String>,
    withheld: impl FnOnce(&[u8]) -> Result<Vec<Withheld>, String>,
) -> FileReview {
    let mut review = FileReview {
        name: path
            .strip_prefix(project)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned(),
        path: path.to_path_buf(),
        sha256: String::new(),
        status: Approval::NotApproved,
        named: Default::default(),
        changed: Vec::new(),
        withheld: Vec::new(),
        problem: None,
    };
    match read(project, path, approvals) {
        Ok(file) => {
            review.sha256 = sha256_hex(&file.bytes);
            review.status = file.status;
            review.name = file.name;
            match withheld(&file.bytes) {
                Ok(keys) => review.withheld = keys,
                Err(e) => review.problem = Some(e),
            }
        }
        Err(e) => review.problem = Some(e),
    }
    review
}

/// The jobs of a durable cron file, each withheld as `jobs.<id>` (`jobs.<index>` without an
/// id).
fn cron_jobs_withheld(bytes: &[u8]) -> Result<Vec<Withheld>, String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Array(jobs)) => Ok(jobs
            .into_iter()
            .enumerate()
            .map(|(i, job)| Withheld {
                key: format!(
                    "jobs.{}",
                    job.get("id")
                        .and_then(Value::as_str)
                        .map_or_else(|| i.to_string(), str::to_owned)
                ),
                value: job,
            })
            .collect()),
        Ok(_) => Err("not a JSON array of jobs".to_owned()),
        Err(e) => Err(format!("not valid JSON: {e}")),
    }
}

/// The canonical project directory of a session (where its project files live).
pub(crate) fn project_root(ctx: &ToolContext) -> PathBuf {
    ctx.original_cwd().to_path_buf()
}

/// Whether `name` is taken (compared without case, as a person reads names) by one of
/// `taken`.
pub(crate) fn is_taken<'a>(name: &str, mut taken: impl Iterator<Item = &'a str>) -> bool {
    taken.any(|t| t.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_below_the_project_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".agent-tools/agents")).unwrap();
        std::fs::write(root.join(".agent-tools/agents/a.md"), "x").unwrap();
        assert!(no_links_below(&root, &root.join(".agent-tools/agents/a.md")).is_ok());
        std::os::unix::fs::symlink("/etc/hostname", root.join(".agent-tools/agents/b.md")).unwrap();
        let err = no_links_below(&root, &root.join(".agent-tools/agents/b.md")).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
        std::os::unix::fs::symlink(root.join(".agent-tools/agents"), root.join("linked")).unwrap();
        assert!(no_links_below(&root, &root.join("linked/a.md")).is_err());
    }

    #[test]
    fn widening_keys_by_kind() {
        let doc = frontmatter::parse(
            "---\nname: x\ndescription: d\nallowed-tools: [Bash]\nmodel: opus\ntools: Read\npermissionMode: bypassPermissions\nhooks: [a]\n---\nbody",
        )
        .unwrap();
        let keys = |kind| -> Vec<String> {
            widening_keys(kind, &doc)
                .into_iter()
                .map(|(k, _)| k)
                .collect()
        };
        assert_eq!(
            keys(Kind::Skill),
            ["allowed-tools", "hooks", "model", "permissionMode", "tools"]
        );
        assert_eq!(
            keys(Kind::Agent),
            ["allowed-tools", "hooks", "model", "permissionMode"]
        );
    }
}
