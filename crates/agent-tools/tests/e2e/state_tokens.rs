//! One principal's state is its own: `serve --http` with two bearer tokens. Token A fills
//! every state subdirectory a session writes (plans, todos, task lists, teams and inboxes,
//! sub-agent transcripts, spilled results, background output); token B then tries to
//! read, list, search and overwrite each of A's files, and to write into `plans/` beside its
//! own plan file. Checked on disk: A's files unchanged and where they belong, B's attempts
//! refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::Project;
use crate::agents::{StandIn, agent_script};
use crate::serve::HttpServer;
use crate::serve_http::Conn;
use test_support::http::text as answer_text;

const TOKEN_A: &str = "token-a-0123456789abcdef";
const TOKEN_B: &str = "token-b-fedcba9876543210";

/// A `tools/call` with `token` in its default context; the JSON-RPC answer.
fn call(conn: &mut Conn, id: u64, tool: &str, args: Value, token: &str) -> Value {
    test_support::http::call(conn, id, tool, args, Some(token), None)
}

fn is_error(answer: &Value) -> bool {
    answer["result"]["isError"] == true || answer.get("error").is_some()
}

/// The plan file an EnterPlanMode answer names.
fn plan_file(answer: &Value) -> String {
    answer["result"]["structuredContent"]["planFile"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| {
            answer_text(answer)
                .lines()
                .find_map(|l| l.split("plan file: ").nth(1).map(str::to_owned))
                .unwrap_or_else(|| panic!("no plan file in {answer}"))
        })
}

/// Every file under `dir`, with its content.
fn files_under(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.insert(path, bytes);
            }
        }
    }
    out
}

#[test]
fn each_token_keeps_its_state_to_itself() {
    let project = Project::new(&["src/", "src/a.rs = fn a() {}\n"]);
    let tokens = project.home().join("tokens");
    std::fs::write(&tokens, format!("{TOKEN_A}\n{TOKEN_B}\n")).expect("tokens");
    let standin = StandIn::start(agent_script(vec![]));
    let server = HttpServer::start_with_env(
        &project,
        &[
            "--token-file",
            tokens.to_str().expect("UTF-8"),
            "--mode",
            "acceptEdits",
        ],
        &[
            ("ANTHROPIC_API_KEY", "stand-in"),
            ("ANTHROPIC_BASE_URL", &standin.base),
        ],
    );
    let mut conn = Conn::open(server.authority());
    let mut id = 0;
    let mut a = |tool: &str, args: Value| {
        id += 1;
        let answer = call(&mut conn, id, tool, args, TOKEN_A);
        assert!(!is_error(&answer), "A's {tool}: {answer}");
        answer
    };
    // A fills every subdirectory.
    a(
        "TodoWrite",
        json!({"todos": [{"content": "A's todo", "status": "pending", "activeForm": "Doing"}]}),
    );
    a(
        "TaskCreate",
        json!({"subject": "A's task", "description": "secret plan of A"}),
    );
    a("TeamCreate", json!({"team_name": "ateam"}));
    // A teammate: it ends its turn and tells the lead, which fills the lead's inbox.
    a(
        "Agent",
        json!({"description": "d", "prompt": "A's teammate", "name": "helper", "team_name": "ateam"}),
    );
    a(
        "Agent",
        json!({"description": "d", "prompt": "A's sub-agent"}),
    );
    a("Bash", json!({"command": "seq 1 30000"}));
    a(
        "Bash",
        json!({"command": "echo A-background", "run_in_background": true}),
    );
    let entered = a("EnterPlanMode", json!({}));
    let plan = plan_file(&entered);
    a(
        "Write",
        json!({"file_path": plan, "content": "A's secret plan"}),
    );
    std::thread::sleep(std::time::Duration::from_millis(300));

    let home = project.home().canonicalize().expect("canonical home");
    let principals = home.join("principals");
    let mine: Vec<PathBuf> = std::fs::read_dir(&principals)
        .expect("principals/")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(mine.len(), 1, "only A wrote state so far: {mine:?}");
    let a_dir = &mine[0];
    let a_files = files_under(a_dir);
    for sub in [
        "plans",
        "todos",
        "tasks",
        "teams",
        "agent-runs",
        "tool-results",
    ] {
        assert!(
            a_files.keys().any(|p| p.starts_with(a_dir.join(sub))),
            "nothing of A in {sub}/: {:?}",
            a_files.keys().collect::<Vec<_>>()
        );
        assert!(
            !home.join(sub).exists(),
            "A's {sub}/ leaked into the shared state directory"
        );
    }

    // B tries each of A's files, and each of A's subdirectories.
    let mut attempts = 0;
    let mut b = |tool: &str, args: Value| -> Value {
        attempts += 1;
        id += 1;
        call(&mut conn, id, tool, args, TOKEN_B)
    };
    let mut dirs: Vec<PathBuf> = a_files
        .keys()
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect();
    dirs.sort();
    dirs.dedup();
    for file in a_files.keys() {
        let path = file.to_str().expect("UTF-8");
        for (tool, args) in [
            ("Read", json!({"file_path": path})),
            ("Write", json!({"file_path": path, "content": "B was here"})),
            (
                "Edit",
                json!({"file_path": path, "old_string": "A", "new_string": "B"}),
            ),
            ("Grep", json!({"pattern": "A", "path": path})),
        ] {
            let answer = b(tool, args);
            assert!(is_error(&answer), "B's {tool} of {path}: {answer}");
            assert!(
                answer_text(&answer).contains("belongs to another client")
                    || answer_text(&answer).contains("has not been read"),
                "B's {tool} of {path}: {answer}"
            );
        }
    }
    for dir in &dirs {
        let path = dir.to_str().expect("UTF-8");
        for (tool, args) in [
            ("Glob", json!({"pattern": "**/*", "path": path})),
            ("Grep", json!({"pattern": "secret", "path": path})),
            (
                "Bash",
                json!({"command": format!("cat {path}/* 2>&1; ls -la {path}")}),
            ),
        ] {
            let answer = b(tool, args);
            let shown = answer_text(&answer);
            assert!(
                is_error(&answer) || !shown.contains("secret plan of A") && !shown.contains("A's"),
                "B's {tool} in {path}: {answer}"
            );
        }
    }
    // B's sub-agent and task ids cannot reach A's either.
    let runs: Vec<String> = a_files
        .keys()
        .filter(|p| p.starts_with(a_dir.join("agent-runs")))
        .filter_map(|p| p.file_stem()?.to_str().map(str::to_owned))
        .filter(|s| !s.starts_with('.'))
        .collect();
    for run in &runs {
        let answer = b(
            "SendMessage",
            json!({"to": run, "summary": "hi", "message": "hi"}),
        );
        assert!(is_error(&answer), "{answer}");
    }
    // B writes its own plan, and nothing else in plans/.
    let entered = b("EnterPlanMode", json!({}));
    assert!(!is_error(&entered), "{entered}");
    let b_plan = plan_file(&entered);
    assert!(!b_plan.starts_with(a_dir.to_str().expect("UTF-8")));
    let own = b("Write", json!({"file_path": b_plan, "content": "B's plan"}));
    assert!(!is_error(&own), "{own}");
    let b_plans = Path::new(&b_plan).parent().expect("plans/").to_path_buf();
    for name in ["other.md", "s0.md", "../todos/x.json"] {
        let path = b_plans.join(name);
        let answer = b("Write", json!({"file_path": path, "content": "x"}));
        assert!(is_error(&answer), "B wrote {}: {answer}", path.display());
        assert!(!path.exists() || path.starts_with(a_dir));
    }
    for path in [home.join("plans/x.md"), home.join("trust.json")] {
        let answer = b("Write", json!({"file_path": path, "content": "x"}));
        assert!(is_error(&answer), "B wrote {}: {answer}", path.display());
    }
    // A's files are exactly as A left them.
    let after = files_under(a_dir);
    for (path, bytes) in &a_files {
        assert_eq!(after.get(path), Some(bytes), "{} changed", path.display());
    }
    eprintln!(
        "state variants: {attempts} attempts by B over {} files in {} directories",
        a_files.len(),
        dirs.len()
    );
}
