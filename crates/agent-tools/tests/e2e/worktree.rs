//! A worktree worked in by a sub-agent under the default sandbox: Agent with `isolation:
//! "worktree"` and a command runner that starts the binary again in the worktree, which
//! commits there; the branch holds the commit. (EnterWorktree, Bash and ExitWorktree in one
//! session are tested in process, in the workspace's `tests/` package.)

use std::process::Command;

use serde_json::{Value, json};

use crate::{Project, binary, text};

/// A repository with one commit.
fn repository() -> Project {
    let p = Project::new(&["README.md = hello\\n"]);
    p.git_init();
    git(&p, &["add", "README.md"]);
    git(&p, &["commit", "-qm", "first"]);
    p
}

fn git(p: &Project, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(p.root())
        .env("HOME", p.home())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const COMMIT: &str = "echo wip > wip.txt && git add wip.txt && git -c user.name=t -c user.email=t@example.invalid commit -qm wip && echo committed";

#[test]
fn an_agent_in_a_worktree_commits_through_its_own_session() {
    let p = repository();
    // The command runner: an agent that runs one Bash call in its working directory (the
    // worktree) through agent-tools, under the default sandbox.
    let script = p.home().join("agent.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat > /dev/null\n\"$AGENT_TOOLS_BIN\" --cwd \"$PWD\" --mode bypassPermissions call Bash '{}' >&2 && echo done in \"$PWD\"\n",
            json!({ "command": COMMIT })
        ),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&script, perms).unwrap();
    let settings = p.home().join("agent-settings.json");
    std::fs::write(
        &settings,
        json!({"agent": {"command": [script.display().to_string()]}}).to_string(),
    )
    .unwrap();
    let stdin = format!(
        "{}\n",
        json!({"tool": "Agent", "input": {
            "description": "commit in a worktree",
            "prompt": "Write wip.txt and commit it.",
            "isolation": "worktree"}})
    );
    let mut child = Command::new(binary())
        .args(["--cwd", p.root_str(), "--settings"])
        .arg(&settings)
        .args(["--mode", "bypassPermissions", "batch"])
        .env("AGENT_TOOLS_HOME", p.home())
        .env("HOME", p.home())
        .env("AGENT_TOOLS_BIN", binary())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let line: Value =
        serde_json::from_slice(out.stdout.split(|b| *b == b'\n').next().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(line["is_error"], false, "{line}");
    assert!(text(&line).contains("done in"), "{line}");
    let branches = git(&p, &["branch", "--list"]);
    let branch = branches
        .lines()
        .map(|l| l.trim_start_matches(['*', '+', ' ']).trim())
        .find(|b| b.starts_with("worktree-"))
        .unwrap_or_else(|| panic!("no worktree branch: {branches}"))
        .to_owned();
    let log = git(&p, &["log", "--oneline", &branch]);
    assert!(log.contains("wip"), "{log}");
}
