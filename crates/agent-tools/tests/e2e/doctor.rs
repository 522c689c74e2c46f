//! `agent-tools doctor`: on this machine the sandbox works and nothing is a problem; `--json`
//! has every check; a settings file that is not JSON is a problem naming it (exit 1); an
//! unapproved `.mcp.json` is reported as such; of two approved servers the working one is
//! ok and the hung one a problem, within `--mcp-wait`; a `--settings` file that picks
//! Landlock makes the trial command run under Landlock.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{Project, Run};

/// Whether bubblewrap is expected to work here (installed, or the peers are required).
fn bubblewrap_expected() -> bool {
    test_support::peers::bwrap().is_some() || test_support::peers::required()
}

/// The checks of a `doctor --json` run.
#[track_caller]
fn checks(run: &Run) -> Vec<Value> {
    let value: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("doctor --json printed no JSON object ({e}): {run:#?}"));
    assert_eq!(
        value["ok"],
        json!(run.code == 0),
        "ok follows the exit status: {run:#?}"
    );
    value["checks"].as_array().expect("a checks array").clone()
}

/// The check named `name`.
#[track_caller]
fn named<'a>(checks: &'a [Value], name: &str) -> &'a Value {
    checks
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name} in {checks:#?}"))
}

#[test]
fn doctor_on_this_machine_exits_0_and_the_sandbox_works() {
    let project = Project::new(&["src/main.rs"]);
    let run = project.run(&["doctor"], None);
    run.assert_code(0);
    assert!(!run.stdout.contains("problem "), "{run:#?}");
    for line in run.stdout.lines() {
        let status = line.split_whitespace().next().unwrap_or_default();
        assert!(
            ["ok", "warning", "problem", "fix:"].contains(&status),
            "{line}"
        );
    }
    if bubblewrap_expected() {
        assert!(
            run.stdout
                .contains("ok       sandbox: bubblewrap with user namespaces"),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout.contains(
                "ok       sandbox.run: a command ran in bubblewrap (workspace-write, network off)"
            ),
            "{}",
            run.stdout
        );
    }
    // The trial ran in a directory of its own: nothing was left in the project.
    let mut entries: Vec<String> = std::fs::read_dir(project.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    assert_eq!(entries, ["src"]);
}

#[test]
fn doctor_json_has_every_check() {
    let project = Project::new(&[]);
    let run = project.run(&["doctor", "--json"], None);
    run.assert_code(0);
    let checks = checks(&run);
    for name in [
        "settings.user",
        "settings.project",
        "settings.local",
        "sandbox",
        "seccomp",
        "sandbox.run",
        "lsp.Rust",
        "lsp.Python",
        "lsp.Go",
        "lsp.TypeScript/JavaScript",
        "lsp.C/C++",
        "mcp",
        "tools",
    ] {
        named(&checks, name);
    }
    for c in &checks {
        assert!(c["detail"].is_string(), "{c}");
        let status = c["status"].as_str().unwrap();
        assert!(["ok", "warning", "problem"].contains(&status), "{c}");
        // Whatever is not ok says what to do.
        assert_eq!(c.get("fix").is_some(), status != "ok", "{c}");
    }
    assert!(
        named(&checks, "tools")["detail"]
            .as_str()
            .unwrap()
            .starts_with("profile claude; "),
        "{checks:#?}"
    );
    // A missing language server is a warning, not a problem: LSP is optional.
    let missing = checks
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("lsp."))
        .filter(|c| c["status"] != "ok");
    for c in missing {
        assert_eq!(c["status"], "warning", "{c}");
    }
}

#[test]
fn doctor_names_a_settings_file_that_is_not_json_and_exits_1() {
    let project = Project::new(&[".agent-tools/settings.json = {\"permissions\": {"]);
    let run = project.run(&["doctor"], None);
    run.assert_code(1);
    let file = project.root().join(".agent-tools/settings.json");
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("problem  settings.project: "))
        .unwrap_or_else(|| panic!("no settings problem: {run:#?}"));
    assert!(line.contains(&file.display().to_string()), "{line}");
    assert!(
        run.stdout.contains(&format!(
            "fix: correct {} (or move it away)",
            file.display()
        )),
        "{}",
        run.stdout
    );
    // The machine's checks still ran.
    assert!(run.stdout.contains(" sandbox.run: "), "{}", run.stdout);

    let run = project.run(&["doctor", "--json"], None);
    run.assert_code(1);
    let checks = checks(&run);
    assert_eq!(named(&checks, "settings.project")["status"], "problem");
    assert_eq!(named(&checks, "session")["status"], "problem");
}

/// The healthy fake server of tools-mcp's tests.
fn fake_server() -> String {
    test_support::mcp::fake_server()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn doctor_reports_an_unapproved_mcp_json() {
    let project = Project::new(&["log/"]);
    let config = json!({"mcpServers": {
        "fake": {"command": "python3", "args": [fake_server(), project.root().join("log")]}}});
    std::fs::write(project.root().join(".mcp.json"), config.to_string()).unwrap();
    let run = project.run(&["doctor", "--json"], None);
    run.assert_code(0);
    let checks = checks(&run);
    let fake = named(&checks, "mcp.fake");
    assert_eq!(fake["status"], "warning", "{fake}");
    assert_eq!(fake["detail"], "not approved: it does not start");
    assert!(
        fake["fix"]
            .as_str()
            .unwrap()
            .contains(&format!("agent-tools trust --cwd {}", project.root_str())),
        "{fake}"
    );
    // Nothing was started.
    assert!(!project.root().join("log/starts").exists());
}

#[test]
fn doctor_starts_approved_servers_within_the_wait() {
    let project = Project::new(&["log/"]);
    let config = json!({"mcpServers": {
        "fake": {"command": "python3", "args": [fake_server(), project.root().join("log")]},
        "hung": {"command": "python3", "args": ["-c", "import time; time.sleep(3600)"],
                 "startupTimeoutMs": 120_000}}});
    std::fs::write(project.root().join(".mcp.json"), config.to_string()).unwrap();
    project.trust();
    let started = Instant::now();
    let run = project.run(&["doctor", "--json", "--mcp-wait", "3"], None);
    let took = started.elapsed();
    run.assert_code(1);
    // The hung server's own start-up timeout is two minutes: the wait bounded doctor.
    assert!(took < Duration::from_secs(60), "doctor took {took:?}");
    let checks = checks(&run);
    let fake = named(&checks, "mcp.fake");
    assert_eq!(fake["status"], "ok", "{fake}");
    assert!(
        fake["detail"]
            .as_str()
            .unwrap()
            .starts_with("approved; started, "),
        "{fake}"
    );
    let hung = named(&checks, "mcp.hung");
    assert_eq!(hung["status"], "problem", "{hung}");
    assert_eq!(
        hung["detail"],
        "approved, but it did not start and list its tools within 3s"
    );
    assert!(
        hung["fix"].as_str().unwrap().contains("--mcp-wait"),
        "{hung}"
    );
    // Only the hung server is a problem.
    let problems: Vec<&Value> = checks.iter().filter(|c| c["status"] == "problem").collect();
    assert_eq!(problems.len(), 1, "{problems:#?}");
}

#[test]
fn doctor_tries_the_mechanism_the_settings_pick() {
    let project = Project::new(&[]);
    let settings = project.home().join("landlock.json");
    std::fs::write(&settings, r#"{"sandbox": {"mechanism": "landlock"}}"#).unwrap();
    let run = project.run(
        &["doctor", "--json", "--settings", settings.to_str().unwrap()],
        None,
    );
    let checks = checks(&run);
    let flag = named(&checks, "settings.flag");
    assert_eq!(flag["status"], "ok", "{flag}");
    let landlock = named(&checks, "sandbox")["detail"]
        .as_str()
        .unwrap()
        .contains("Landlock ABI");
    let trial = named(&checks, "sandbox.run");
    if landlock {
        run.assert_code(0);
        assert_eq!(
            trial["detail"],
            "a command ran in landlock+seccomp (workspace-write, network off)"
        );
    } else {
        // A kernel without Landlock: the trial is refused and says why.
        run.assert_code(1);
        assert_eq!(trial["status"], "problem", "{trial}");
    }
}
