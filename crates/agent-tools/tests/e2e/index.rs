//! The search index through the binary: `agent-tools index --status|--rebuild|--drop`, the
//! `search-index` line of `doctor`, `batch` answering from an index that is always fresh,
//! one-shot `call` using a saved one, a session killed in the middle of saving: the
//! next one finds no index (never a part of one) and rebuilds, and a project on a FUSE
//! mount, whose changes made beneath it send no notification.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{Project, binary, text};

fn status(p: &Project) -> Value {
    let run = p.run(&["index", "--status", "--json"], None);
    run.assert_code(0);
    serde_json::from_str(run.stdout.trim()).expect("one JSON object")
}

fn tree() -> Project {
    let mut entries = vec![
        ".ignore = *.log\\n".to_owned(),
        "src/lib.rs = pub fn needle() {}\\n".to_owned(),
        ".github/workflows/ci.yml = run: needle\\n".to_owned(),
        "skip.log = needle in a log\\n".to_owned(),
    ];
    for i in 0..200 {
        entries.push(format!(
            "gen/d{}/f{i}.txt = line {i}\\nword_{i} here\\n",
            i % 9
        ));
    }
    let refs: Vec<&str> = entries.iter().map(String::as_str).collect();
    Project::new(&refs)
}

#[test]
fn index_command_builds_shows_and_drops() {
    let p = tree();
    let s = status(&p);
    assert_eq!(s["state"], "not built", "{s}");
    let run = p.run(&["index", "--rebuild"], None);
    run.assert_code(0);
    assert!(run.stdout.contains(": ready — "), "{run:#?}");
    let s = status(&p);
    assert_eq!(s["state"], "ready", "{s}");
    let file = PathBuf::from(s["file"].as_str().unwrap());
    assert!(
        file.starts_with(p.home()),
        "kept in the state directory: {s}"
    );
    assert!(!file.starts_with(p.root()), "never inside the project: {s}");
    // doctor shows it.
    let doctor = p.run(&["doctor", "--json"], None);
    let report: Value = serde_json::from_str(doctor.stdout.trim()).unwrap();
    let line = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "search-index")
        .cloned()
        .expect("a search-index check");
    assert_eq!(line["status"], "ok", "{line}");
    assert!(
        line["detail"].as_str().unwrap().starts_with("ready"),
        "{line}"
    );
    // A one-shot call uses the saved index: same answer as the scan.
    let run = p.run(&["call", "Grep", r#"{"pattern":"needle"}"#], None);
    run.assert_code(0);
    assert_eq!(
        text(&run.result()),
        "Found 2 files\n.github/workflows/ci.yml\nsrc/lib.rs\n\n(1 path was skipped by .gitignore/.ignore rules; set include_ignored: true to search them.)"
    );
    let run = p.run(&["index", "--drop"], None);
    run.assert_code(0);
    assert!(run.stdout.starts_with("removed"), "{run:#?}");
    assert!(!file.exists());
    assert_eq!(status(&p)["state"], "not built");
}

/// A live `agent-tools batch`.
struct Batch {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Batch {
    fn start(p: &Project, env: &[(&str, &str)]) -> Batch {
        Batch::start_in(p, p.root(), env)
    }

    /// A batch of `p`'s home working in `cwd`.
    fn start_in(p: &Project, cwd: &std::path::Path, env: &[(&str, &str)]) -> Batch {
        let mut command = Command::new(binary());
        command
            .arg("--cwd")
            .arg(cwd)
            .args(["--mode", "acceptEdits", "batch"])
            .env("AGENT_TOOLS_HOME", p.home())
            .env("HOME", p.home())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("spawn batch");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Batch {
            child,
            stdin,
            stdout,
        }
    }

    fn call(&mut self, tool: &str, input: Value) -> Value {
        writeln!(self.stdin, "{}", json!({"tool": tool, "input": input})).unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    fn end(mut self) {
        drop(self.stdin);
        self.child.wait().unwrap();
    }
}

fn settings(p: &Project, value: &str) {
    std::fs::write(p.home().join("settings.json"), value).unwrap();
}

#[test]
fn batch_answers_from_a_fresh_index() {
    let p = tree();
    settings(&p, r#"{"search": {"index": "eager"}}"#);
    let mut batch = Batch::start(&p, &[]);
    // Eager: built at start; the answers are the scan's whether it is ready or not.
    let r = batch.call(
        "Grep",
        json!({"pattern": "word_17\\b", "output_mode": "content"}),
    );
    assert_eq!(
        text(&r),
        "gen/d8/f17.txt:2:word_17 here\n\n(1 path was skipped by .gitignore/.ignore rules; set include_ignored: true to search them.)"
    );
    // Wait for the saved index, then change the tree from outside and through our tools.
    let started = Instant::now();
    while status(&p)["state"].as_str() != Some("ready") {
        assert!(started.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(p.root().join("gen/new.txt"), "fresh_token_a\n").unwrap();
    let r = batch.call("Grep", json!({"pattern": "fresh_token_a"}));
    assert_eq!(
        text(&r),
        "Found 1 file\ngen/new.txt\n\n(1 path was skipped by .gitignore/.ignore rules; set include_ignored: true to search them.)"
    );
    let w = batch.call(
        "Write",
        json!({"file_path": p.root().join("src/w.rs"), "content": "fresh_token_b\n"}),
    );
    assert_eq!(w["is_error"], false, "{w}");
    let r = batch.call("Grep", json!({"pattern": "fresh_token_b"}));
    assert_eq!(
        text(&r),
        "Found 1 file\nsrc/w.rs\n\n(1 path was skipped by .gitignore/.ignore rules; set include_ignored: true to search them.)"
    );
    std::fs::write(p.root().join(".ignore"), "*.log\ngen/\n").unwrap();
    let r = batch.call("Grep", json!({"pattern": "fresh_token_a"}));
    assert_eq!(
        text(&r),
        "No files found\n\n(2 paths were skipped by .gitignore/.ignore rules; set include_ignored: true to search them.)"
    );
    let r = batch.call("Glob", json!({"pattern": "**/*.yml"}));
    assert_eq!(text(&r), ".github/workflows/ci.yml");
    batch.end();
}

#[test]
fn a_session_killed_while_saving_leaves_no_index_and_the_next_one_rebuilds() {
    let p = tree();
    // The save pauses halfway through its lists; the process is killed there.
    let mut child = Command::new(binary())
        .arg("--cwd")
        .arg(p.root())
        .args(["index", "--rebuild"])
        .env("AGENT_TOOLS_HOME", p.home())
        .env("HOME", p.home())
        .env("AGENT_TOOLS_INDEX_SAVE_PAUSE_MS", "30000")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dir = p.home().join("search-index");
    let started = Instant::now();
    let temp = loop {
        let found = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains(".tmp-"))
            });
        if let Some(t) = found {
            // The temporary file holds the first half of the lists: the pause has begun.
            if std::fs::metadata(&t).is_ok_and(|m| m.len() > 0) {
                break t;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no save started"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(temp.exists(), "killed mid-save: the temporary file is left");
    // No index file: the rename never happened.
    assert_eq!(status(&p)["state"], "not built");
    // The next session rebuilds, answers right, and clears the dead session's leftovers.
    settings(&p, r#"{"search": {"index": "eager"}}"#);
    let mut batch = Batch::start(&p, &[]);
    let started = Instant::now();
    while status(&p)["state"] != "ready" {
        assert!(started.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = batch.call("Grep", json!({"pattern": "word_1\\d\\b", "head_limit": 0}));
    assert!(text(&r).starts_with("Found 10 files\n"), "{r}");
    batch.end();
    assert!(
        !temp.exists(),
        "the dead session's temporary file is removed"
    );
}

/// A FUSE mount of a directory (bindfs), unmounted when dropped.
struct FuseMount(PathBuf);

impl FuseMount {
    /// `source` mounted at `point`; `None` after saying why (see `test_support::peers`).
    fn new(source: &std::path::Path, point: &std::path::Path) -> Option<FuseMount> {
        // A machine without FUSE at all (a container without the device) cannot have the
        // problem this guards against; everywhere else the mount must work.
        if !std::path::Path::new("/dev/fuse").exists() {
            eprintln!("skipped: this machine has no /dev/fuse");
            return None;
        }
        let bindfs = test_support::peers::on_path("bindfs");
        if !test_support::peers::require(
            "bindfs (Debian package bindfs; `cargo xtask peers` installs it)",
            bindfs.is_some(),
        ) {
            return None;
        }
        let out = Command::new(bindfs?)
            .arg(source)
            .arg(point)
            .output()
            .unwrap();
        let mounted = out.status.success();
        let why = format!(
            "a FUSE mount by bindfs (/dev/fuse; root or fusermount): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        if !test_support::peers::require(&why, mounted) {
            return None;
        }
        Some(FuseMount(point.to_path_buf()))
    }
}

impl Drop for FuseMount {
    fn drop(&mut self) {
        for (program, flag) in [
            ("fusermount3", "-u"),
            ("fusermount", "-u"),
            ("umount", "-l"),
        ] {
            let done = Command::new(program)
                .arg(flag)
                .arg(&self.0)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if done {
                return;
            }
        }
    }
}

/// A project on a FUSE file system (here bindfs; sshfs, virtiofs as in container bind
/// mounts, 9p as in WSL's `/mnt/c` and NFS behave alike): a change made beneath the mount,
/// not through it, sends no notification to a watch on the mount. The session must not
/// trust notifications there: every Grep after such a change sees it.
#[test]
fn an_index_on_a_fuse_mount_sees_changes_made_beneath_it() {
    let p = tree();
    let (_dir, point) = test_support::tempdir();
    let Some(_mount) = FuseMount::new(p.root(), &point) else {
        return;
    };
    settings(&p, r#"{"search": {"index": "eager"}}"#);
    let status_of = || -> Value {
        let out = Command::new(binary())
            .arg("--cwd")
            .arg(&point)
            .args(["index", "--status", "--json"])
            .env("AGENT_TOOLS_HOME", p.home())
            .env("HOME", p.home())
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).expect("one JSON object")
    };
    let mut batch = Batch::start_in(&p, &point, &[]);
    let r = batch.call("Grep", json!({"pattern": "word_17\\b"}));
    assert_eq!(
        text(&r),
        "Found 1 file\ngen/d8/f17.txt\n\n(1 path was skipped by .gitignore/.ignore rules; set include_ignored: true to search them.)"
    );
    let started = Instant::now();
    while status_of()["state"].as_str() != Some("ready") {
        assert!(started.elapsed() < Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(50));
    }
    for i in 0..4 {
        // Written beneath the mount, as another machine or the VM's host would.
        std::fs::write(
            p.root().join(format!("gen/d{i}/beneath.txt")),
            format!("beneath_{i}\n"),
        )
        .unwrap();
        if i == 2 {
            std::fs::remove_file(p.root().join("src/lib.rs")).unwrap();
        }
        let r = batch.call("Grep", json!({"pattern": "beneath_\\d|needle"}));
        let mut expected: Vec<String> = (0..=i).map(|k| format!("gen/d{k}/beneath.txt")).collect();
        expected.push(".github/workflows/ci.yml".to_owned());
        if i < 2 {
            expected.push("src/lib.rs".to_owned());
        }
        let mut got: Vec<String> = text(&r)
            .lines()
            .skip(1)
            .filter(|l| !l.is_empty() && !l.starts_with('('))
            .map(str::to_owned)
            .collect();
        got.sort();
        expected.sort();
        assert_eq!(got, expected, "after change {i}: {r}");
    }
    batch.end();
}
