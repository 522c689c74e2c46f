//! `docs/deploy.md` on one machine: the Kubernetes manifest's container command line runs
//! (address on loopback, workspace in a temporary directory), the token comes from the
//! environment as the Secret gives it, the readiness path answers, a tool call needs the
//! token, and SIGTERM stops the server within the pod's grace period with no process left.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::peers::peer;

use crate::serve::inspector;
use crate::serve_eras::{marker, survivors, wait_for_process};
use crate::serve_http::{Conn, modern};
use crate::{Project, binary};

/// A child process killed and reaped on drop.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The guide, read from the repository.
fn guide() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/deploy.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The value after `key:` on the first line of the manifest that has it.
fn manifest_value(guide: &str, key: &str) -> String {
    guide
        .lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{key}:")))
        .unwrap_or_else(|| panic!("the manifest has no {key}"))
        .trim()
        .to_owned()
}

#[test]
fn the_deploy_guide_runs_on_one_machine() {
    let guide = guide();
    let args: Vec<String> = serde_json::from_str(&manifest_value(&guide, "args"))
        .expect("the container args are a JSON-style list");
    let grace_period: u64 = manifest_value(&guide, "terminationGracePeriodSeconds")
        .parse()
        .expect("a number");
    let probe = manifest_value(&guide, "httpGet");
    assert!(probe.contains("path: /healthz"), "{probe}");
    let env_var = args
        .iter()
        .skip_while(|a| *a != "--token-env")
        .nth(1)
        .expect("the token comes from the environment")
        .clone();
    let grace: u64 = args
        .iter()
        .skip_while(|a| *a != "--grace")
        .nth(1)
        .and_then(|g| g.parse().ok())
        .expect("--grace N");
    assert!(
        grace_period >= grace + 20,
        "terminationGracePeriodSeconds ({grace_period}) must leave room after --grace ({grace})"
    );

    // The manifest's command line, on loopback and in a temporary workspace.
    let project = Project::new(&["README.md = old text\\n"]);
    let args: Vec<String> = args
        .into_iter()
        .map(|a| match a.as_str() {
            "0.0.0.0:8080" => "127.0.0.1:0".to_owned(),
            "/workspace" => project.root_str().to_owned(),
            _ => a,
        })
        .collect();
    let token = "ws-1842-0123456789abcdef0123456789abcdef";
    let mut child = Reaped(
        Command::new(binary())
            .args(&args)
            .env(&env_var, token)
            .env("AGENT_TOOLS_HOME", project.home())
            .env("HOME", project.home())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the container's command"),
    );
    let stderr = child.0.stderr.take().expect("stderr");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    let line = lines.next().expect("a line").expect("text");
    std::thread::spawn(move || for _ in lines {});
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line}"))
        .to_owned();
    let authority = url.trim_start_matches("http://").trim_end_matches("/mcp");

    // Readiness, then a call with and without the token.
    let mut conn = Conn::open(authority);
    assert_eq!(conn.send("GET", "/healthz", &[], "").status, 200);
    let readme = project.root().join("README.md");
    let (headers, body) = modern(
        1,
        "tools/call",
        json!({"name": "Read", "arguments": {"file_path": readme}}),
        None,
        None,
    );
    assert_eq!(
        Conn::open(authority)
            .send("POST", "/mcp", &headers, &body)
            .status,
        401
    );
    let (headers, body) = modern(
        2,
        "tools/call",
        json!({"name": "Read", "arguments": {"file_path": readme}}),
        Some(token),
        None,
    );
    let answer = conn.send("POST", "/mcp", &headers, &body).answer(2);
    assert_eq!(answer["result"]["isError"], false, "{answer:#}");
    // The mode the manifest sets lets the agent edit the workspace.
    let edit = json!({"file_path": readme, "old_string": "old", "new_string": "new"});
    let (headers, body) = modern(
        3,
        "tools/call",
        json!({"name": "Edit", "arguments": edit}),
        Some(token),
        None,
    );
    let answer = conn.send("POST", "/mcp", &headers, &body).answer(3);
    assert_eq!(answer["result"]["isError"], false, "{answer:#}");
    if let Some(peers) = peer("node_modules/.bin/mcp-inspector") {
        let header = format!("Authorization: Bearer {token}");
        let listed = inspector(
            &peers,
            &project,
            &[
                &url,
                "--transport",
                "http",
                "--header",
                &header,
                "--method",
                "tools/list",
            ],
        );
        assert!(
            listed["tools"].as_array().is_some_and(|t| !t.is_empty()),
            "{listed:#}"
        );
    }

    // A background command, then the kubelet's SIGTERM.
    let m = marker("deploy");
    let bash = json!({"command": format!("sleep 600 # {m}"), "run_in_background": true});
    let (headers, body) = modern(
        4,
        "tools/call",
        json!({"name": "Bash", "arguments": bash}),
        Some(token),
        None,
    );
    let answer: Value = conn.send("POST", "/mcp", &headers, &body).answer(4);
    assert_eq!(answer["result"]["isError"], false, "{answer:#}");
    assert!(
        wait_for_process(&m, 30),
        "the background command never started"
    );
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.0.id() as i32).expect("a pid"),
        rustix::process::Signal::TERM,
    )
    .expect("SIGTERM");
    let started = Instant::now();
    let mut status = None;
    while status.is_none() && started.elapsed() < Duration::from_secs(grace_period) {
        status = child.0.try_wait().expect("status");
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = status.unwrap_or_else(|| {
        panic!("serve did not stop within the pod's {grace_period} s grace period")
    });
    assert!(status.success(), "{status:?}");
    assert_eq!(
        survivors(&m, 10),
        Vec::<u32>::new(),
        "a command outlived the pod's server"
    );
}
