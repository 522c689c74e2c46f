//! The file tools against a racing symbolic-link swap, through `agent-tools batch`, as the
//! user running the tests and (when that is root) as an unprivileged user (`setpriv`, uid
//! and gid 65534) on a workspace that user owns. While a thread of this test swaps
//! `$WS/d` between a real directory and a link to a directory outside the workspace,
//! Write, Edit and MultiEdit create files, make directories and rename over files under
//! `$WS/d`; nothing may land outside, and every success must be in the real directory,
//! owned by the user who ran the tools.

use std::io::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use test_support::race::EXPECTED_ERRORS;
use test_support::{Swapper, listing};

use crate::{Project, binary, text};

/// The unprivileged user (`nobody` on Debian).
const NOBODY: u32 = 65534;

/// Writes per run.
const WRITES: usize = 300;
/// Edits (filling an empty file: a rename over it) and MultiEdits (creating a file) each.
const EDITS: usize = 100;

/// Gives `path` and everything under it to `uid` (links themselves, not their targets).
fn chown_tree(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    if std::fs::symlink_metadata(path).unwrap().is_dir() {
        for e in std::fs::read_dir(path).unwrap().flatten() {
            chown_tree(&e.path(), uid);
        }
    }
}

/// The calls of one run: Writes (every third under new directories), Edits that fill the
/// empty `e{i}.txt` and MultiEdits that create `m{i}.txt`, all under `$WS/d`.
fn calls(root: &Path) -> Vec<Value> {
    let d = root.join("d");
    let d = d.display();
    let mut calls = Vec::new();
    for i in 0..WRITES {
        let path = if i % 3 == 0 {
            format!("{d}/new{i}/sub/g{i}.txt")
        } else {
            format!("{d}/g{i}.txt")
        };
        calls.push(
            json!({"tool": "Write", "input": {"file_path": path, "content": format!("g{i}")}}),
        );
    }
    for i in 0..EDITS {
        calls.push(json!({"tool": "Edit", "input": {
            "file_path": format!("{d}/e{i}.txt"), "old_string": "", "new_string": format!("e{i}")}}));
        calls.push(json!({"tool": "MultiEdit", "input": {
            "file_path": format!("{d}/m{i}.txt"),
            "edits": [{"old_string": "", "new_string": format!("m{i}")}]}}));
    }
    calls
}

/// What a successful call left in the real directory: the path under `$WS/d` and the
/// content.
fn effect(root: &Path, call: &Value) -> (PathBuf, String) {
    let input = &call["input"];
    let path = Path::new(input["file_path"].as_str().unwrap());
    let rel = path.strip_prefix(root.join("d")).unwrap().to_path_buf();
    let content = match call["tool"].as_str().unwrap() {
        "Write" => input["content"].as_str().unwrap().to_owned(),
        "Edit" => input["new_string"].as_str().unwrap().to_owned(),
        _ => input["edits"][0]["new_string"].as_str().unwrap().to_owned(),
    };
    (rel, content)
}

/// Runs the race once — as this user, or as `as_user` through `setpriv` — and checks the
/// file system after.
fn check(as_user: Option<u32>) {
    let p = Project::new(&["d/"]);
    let (_outside, out) = test_support::tempdir();
    // The empty files the Edits fill, in the real directory and, as decoys, outside.
    for i in 0..EDITS {
        std::fs::write(out.join(format!("e{i}.txt")), "").unwrap();
        std::fs::write(p.root().join(format!("d/e{i}.txt")), "").unwrap();
    }
    std::os::unix::fs::symlink(&out, p.root().join("d.alt")).unwrap();
    let mut command = match as_user {
        Some(uid) => {
            // The user owns the workspace, the state directory and the outside directory:
            // a redirected write would succeed there, so only the tools can prevent it.
            for dir in [p.root(), p.home(), &out] {
                chown_tree(dir, uid);
            }
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={uid}"))
                .arg("--clear-groups")
                .arg(binary());
            c
        }
        None => Command::new(binary()),
    };
    let before_outside = listing(&out);
    let calls = calls(p.root());
    let stdin: String = calls.iter().map(|c| format!("{c}\n")).collect();

    let swapper = Swapper::start(p.root().join("d"), p.root().join("d.alt"));
    let mut child = command
        .args([
            "--cwd",
            p.root().to_str().unwrap(),
            "--mode",
            "acceptEdits",
            "batch",
        ])
        .current_dir(p.root())
        .env("AGENT_TOOLS_HOME", p.home())
        .env("HOME", p.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let swaps = swapper.stop();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines.len(),
        calls.len(),
        "one result per call: {}",
        String::from_utf8_lossy(&output.stderr)
    );

    // Nothing outside changed, nothing was added there.
    assert_eq!(listing(&out), before_outside, "something landed outside");
    let real: PathBuf = ["d", "d.alt"]
        .iter()
        .map(|n| p.root().join(n))
        .find(|p| std::fs::symlink_metadata(p).unwrap().is_dir())
        .unwrap();
    let stray: Vec<String> = listing(p.root())
        .into_iter()
        .filter(|e| e.contains(".agent-tools-"))
        .collect();
    assert!(stray.is_empty(), "temporary files left: {stray:?}");
    let mut succeeded = 0;
    for (call, line) in calls.iter().zip(&lines) {
        let (rel, content) = effect(p.root(), call);
        if line["is_error"] == false {
            succeeded += 1;
            let path = real.join(&rel);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), content, "{line}");
            if let Some(uid) = as_user {
                assert_eq!(std::fs::metadata(&path).unwrap().uid(), uid, "{line}");
            }
        } else {
            let t = text(line);
            assert!(
                EXPECTED_ERRORS.iter().any(|e| t.contains(e)),
                "unexpected error for {call}: {t}"
            );
        }
    }
    eprintln!(
        "{swaps} swaps; {succeeded} of {} calls succeeded",
        calls.len()
    );
}

#[test]
fn racing_swaps_never_redirect_writes() {
    check(None);
}

#[test]
fn racing_swaps_never_redirect_writes_of_an_unprivileged_user() {
    if !rustix::process::geteuid().is_root() {
        // Already unprivileged: the test above is this one.
        eprintln!("skipped: not root, so the other race test runs unprivileged already");
        return;
    }
    check(Some(NOBODY));
}
