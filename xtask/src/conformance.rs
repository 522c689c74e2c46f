//! `cargo xtask conformance`: the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, pinned in `cargo xtask peers`, run with the Node 22
//! installed there) against agent-tools.
//!
//! - Server scenarios run against `agent-tools serve --http` on a scratch project (without
//!   bearer tokens: the suite's client sends none).
//! - Client scenarios run against agent-tools' MCP client through an adapter, this program's
//!   `conformance-adapter` command, which the suite starts with the scenario's URL: it
//!   writes a `.mcp.json` naming that URL as the server `test`, approves it with
//!   `agent-tools trust --yes`, and does what a person would (`agent-tools mcp login test`
//!   with `$BROWSER` set to a program that follows the authorization server's redirect,
//!   then `agent-tools call` of the scenario's tool; when the call says to log in again —
//!   a step-up — once more).
//!
//! [`EXPECTED_FAILURES`] lists the scenarios that cannot pass, one per line with the reason;
//! the run fails on any other failure and on a listed scenario that passes.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::cmd::{Cmd, target_dir};
use crate::peers::{NODE22_BIN, peers_dir};

/// The expected failures, relative to the workspace root.
pub const EXPECTED_FAILURES: &str = "xtask/conformance-expected-failures.txt";

/// What `cargo xtask conformance` runs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Only the server scenarios
    pub server_only: bool,
    /// Only the client scenarios
    pub client_only: bool,
    /// Only these scenarios (any mode)
    pub scenarios: Vec<String>,
    /// How many times each client scenario runs (default 1)
    pub runs: usize,
    /// An `agent-tools` binary to test instead of building one
    pub bin: Option<PathBuf>,
}

/// Server or client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mode {
    Server,
    Client,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Server => "server",
            Mode::Client => "client",
        }
    }
}

/// The expected failures: (mode, scenario) → reason.
fn expected_failures(text: &str) -> Result<BTreeMap<(Mode, String), String>> {
    let mut expected = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |what: &str| {
            anyhow::anyhow!(
                "{EXPECTED_FAILURES}, line {}: {what}; write `server NAME: reason` or `client NAME: reason`",
                number + 1
            )
        };
        let (head, reason) = line.split_once(':').ok_or_else(|| bad("no reason"))?;
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(bad("the reason is empty"));
        }
        let (mode, name) = head.trim().split_once(' ').ok_or_else(|| bad("no mode"))?;
        let mode = match mode {
            "server" => Mode::Server,
            "client" => Mode::Client,
            _ => return Err(bad("the mode is neither server nor client")),
        };
        if expected
            .insert((mode, name.trim().to_owned()), reason.to_owned())
            .is_some()
        {
            return Err(bad("the scenario is listed twice"));
        }
    }
    Ok(expected)
}

/// The suite, run with Node 22 first on `PATH`.
fn suite(peers: &Path) -> Cmd {
    Cmd::new(peers.join(NODE22_BIN).join("conformance"))
        .env_prepend_path("PATH", peers.join(NODE22_BIN))
}

/// The scenario names `conformance list --server|--client` prints.
fn list(peers: &Path, mode: Mode) -> Result<Vec<String>> {
    let out = suite(peers)
        .arg("list")
        .arg(format!("--{}", mode.name()))
        .stdout_string()?;
    Ok(out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect())
}

/// One scenario's outcome.
struct Outcome {
    mode: Mode,
    name: String,
    passed: usize,
    runs: usize,
    log: PathBuf,
}

/// Runs `cmd` with its output in `log`; whether it exited with status 0.
fn run_logged(cmd: &Cmd, log: &Path, timeout: Duration) -> Result<bool> {
    let file = fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let mut child = cmd
        .to_command()?
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .spawn()
        .with_context(|| format!("cannot start `{cmd}`"))?;
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status.success());
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `agent-tools serve --http` on a scratch project; killed on drop.
struct Served {
    child: Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(bin: &Path, scratch: &Path) -> Result<Served> {
    let project = scratch.join("server-project");
    let state = scratch.join("server-state");
    for dir in [&project, &state] {
        let _ = fs::remove_dir_all(dir);
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    fs::write(
        project.join("README.md"),
        "A scratch project for the conformance suite.\n",
    )?;
    let help = Command::new(bin).args(["serve", "--help"]).output()?;
    let mut command = Command::new(bin);
    command.args(["serve", "--http", "127.0.0.1:0"]);
    // The suite's client sends no bearer token.
    if String::from_utf8_lossy(&help.stdout).contains("--no-auth") {
        command.arg("--no-auth");
    }
    let mut child = command
        .current_dir(&project)
        .env("AGENT_TOOLS_HOME", &state)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {} serve", bin.display()))?;
    let stderr = child.stderr.take().context("no stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(at) = line.find("http://") {
                let url = line[at..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_owned();
                let _ = tx.send(url);
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .context("`agent-tools serve --http` did not say where it listens within 30 s")?;
    Ok(Served { child, url })
}

/// Runs the scenarios and checks them against the expected failures.
pub fn run(root: &Path, options: &Options) -> Result<()> {
    let peers = peers_dir()?;
    if !peers.join(NODE22_BIN).join("conformance").exists() {
        bail!(
            "the conformance suite is not installed in {}; run `cargo xtask peers`",
            peers.display()
        );
    }
    let expected = expected_failures(
        &fs::read_to_string(root.join(EXPECTED_FAILURES))
            .with_context(|| format!("cannot read {EXPECTED_FAILURES}"))?,
    )?;
    let target = target_dir(root)?;
    let bin = match &options.bin {
        Some(bin) => std::path::absolute(bin)?,
        None => {
            println!("conformance: building agent-tools");
            Cmd::new("cargo")
                .args(["build", "-p", "agent-tools", "--bin", "agent-tools"])
                .cwd(root)
                .run()?;
            target.join("debug/agent-tools")
        }
    };
    let scratch = target.join("conformance");
    let _ = fs::remove_dir_all(&scratch);
    fs::create_dir_all(scratch.join("logs"))?;
    let runs = options.runs.max(1);
    let wanted =
        |name: &str| options.scenarios.is_empty() || options.scenarios.iter().any(|s| s == name);
    let mut outcomes = Vec::new();
    if !options.client_only {
        let served = serve(&bin, &scratch)?;
        println!("conformance: server scenarios against {}", served.url);
        for name in list(&peers, Mode::Server)?
            .into_iter()
            .filter(|n| wanted(n))
        {
            let log = scratch
                .join("logs")
                .join(format!("server-{}.log", name.replace('/', "-")));
            let cmd = suite(&peers)
                .args(["server", "--url", &served.url, "--scenario", &name])
                .arg("-o")
                .arg(scratch.join("results"));
            let passed = usize::from(run_logged(&cmd, &log, Duration::from_secs(120))?);
            outcomes.push(Outcome {
                mode: Mode::Server,
                name,
                passed,
                runs: 1,
                log,
            });
        }
    }
    if !options.server_only {
        let me = std::env::current_exe().context("cannot find the xtask binary")?;
        let work = scratch.join("client");
        fs::create_dir_all(&work)?;
        for path in [&me, &bin, &work] {
            if path.to_string_lossy().contains(char::is_whitespace) {
                bail!(
                    "{} has a space in it, which the suite's --command cannot carry",
                    path.display()
                );
            }
        }
        let command = format!(
            "{} conformance-adapter --bin {} --work {}",
            me.display(),
            bin.display(),
            work.display()
        );
        println!("conformance: client scenarios through `{command} URL`");
        for name in list(&peers, Mode::Client)?
            .into_iter()
            .filter(|n| wanted(n))
        {
            let mut passed = 0;
            let mut log = PathBuf::new();
            for run in 0..runs {
                log = scratch
                    .join("logs")
                    .join(format!("client-{}-{run}.log", name.replace('/', "-")));
                let cmd = suite(&peers)
                    .args(["client", "--command", &command, "--scenario", &name])
                    .args(["--timeout", "60000"])
                    .arg("-o")
                    .arg(scratch.join("results"));
                if run_logged(&cmd, &log, Duration::from_secs(120))? {
                    passed += 1;
                }
            }
            outcomes.push(Outcome {
                mode: Mode::Client,
                name,
                passed,
                runs,
                log,
            });
        }
    }
    report(&outcomes, &expected, options)
}

/// Prints the table; fails on an unexpected failure or a listed scenario that passes.
fn report(
    outcomes: &[Outcome],
    expected: &BTreeMap<(Mode, String), String>,
    options: &Options,
) -> Result<()> {
    let mut problems = Vec::new();
    let mut counts: BTreeMap<(Mode, &str), usize> = BTreeMap::new();
    println!("\nconformance: results");
    for o in outcomes {
        let reason = expected.get(&(o.mode, o.name.clone()));
        let verdict = match (o.passed == o.runs, o.passed == 0, reason) {
            (true, _, None) => "pass",
            (_, true, Some(_)) => "expected failure",
            (true, _, Some(_)) => {
                problems.push(format!(
                    "{} {} passes but is listed in {EXPECTED_FAILURES}: remove its line",
                    o.mode.name(),
                    o.name
                ));
                "STALE (passes)"
            }
            _ => {
                problems.push(format!(
                    "{} {} failed {} of {} runs (log: {})",
                    o.mode.name(),
                    o.name,
                    o.runs - o.passed,
                    o.runs,
                    o.log.display()
                ));
                "FAIL"
            }
        };
        *counts.entry((o.mode, verdict)).or_default() += 1;
        let runs = if o.runs > 1 {
            format!(" ({}/{} runs)", o.passed, o.runs)
        } else {
            String::new()
        };
        println!(
            "  {:<6} {:<45} {verdict}{runs}{}",
            o.mode.name(),
            o.name,
            reason.map(|r| format!(" — {r}")).unwrap_or_default()
        );
    }
    println!("\nconformance: summary");
    for ((mode, verdict), n) in &counts {
        println!("  {:<6} {verdict:<18} {n}", mode.name());
    }
    // A listed scenario that was not run (a filter, or the suite dropped it) is stale too.
    if options.scenarios.is_empty() && !options.server_only && !options.client_only {
        for (mode, name) in expected.keys() {
            if !outcomes.iter().any(|o| o.mode == *mode && &o.name == name) {
                problems.push(format!(
                    "{} {name} is listed in {EXPECTED_FAILURES} but the suite has no such scenario",
                    mode.name()
                ));
            }
        }
    }
    if problems.is_empty() {
        println!("conformance: ok");
        Ok(())
    } else {
        bail!("conformance:\n  {}", problems.join("\n  "))
    }
}

/// The `.mcp.json` entry of the server `test` for a scenario, and the environment the
/// adapter's commands need.
fn entry(
    scenario: &str,
    url: &str,
    context: &serde_json::Value,
    project: &Path,
) -> Result<(serde_json::Value, Vec<(String, String)>)> {
    use serde_json::json;
    let text = |key: &str| {
        context
            .get(key)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_owned()
    };
    let mut env = Vec::new();
    let oauth = match scenario {
        "auth/client-credentials-jwt" => {
            let key = project.join("client-key.pem");
            fs::write(&key, text("private_key_pem"))?;
            json!({
                "grant": "client_credentials",
                "clientId": text("client_id"),
                "privateKeyFile": "client-key.pem",
                "signingAlgorithm": text("signing_algorithm"),
            })
        }
        "auth/client-credentials-basic" => json!({
            "grant": "client_credentials",
            "clientId": text("client_id"),
            "clientSecret": text("client_secret"),
        }),
        "auth/cross-app-access-complete-flow" => {
            env.push(("CONFORMANCE_ID_TOKEN".to_owned(), text("idp_id_token")));
            json!({
                "grant": "enterprise",
                "clientId": text("client_id"),
                "clientSecret": text("client_secret"),
                "idp": {
                    "issuer": text("idp_issuer"),
                    "tokenEndpoint": text("idp_token_endpoint"),
                    "clientId": text("idp_client_id"),
                    "idTokenEnv": "CONFORMANCE_ID_TOKEN",
                },
            })
        }
        "auth/pre-registration" => json!({
            "clientId": text("client_id"),
            "clientSecret": text("client_secret"),
        }),
        // Every other login: the client metadata document's URL, used where the
        // authorization server supports them (dynamic registration otherwise).
        _ => json!({"clientMetadataUrl": "https://conformance-test.local/client-metadata.json"}),
    };
    let mut server = json!({"type": "http", "url": url, "startupTimeoutMs": 30000});
    if scenario.starts_with("auth/") {
        server["oauth"] = oauth;
    }
    Ok((json!({"mcpServers": {"test": server}}), env))
}

/// `conformance-adapter --bin B --work W URL`: what the suite runs for a client scenario.
pub fn adapter(args: &[String]) -> Result<ExitCode> {
    let mut bin = None;
    let mut work = None;
    let mut url = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--bin" => bin = iter.next().map(PathBuf::from),
            "--work" => work = iter.next().map(PathBuf::from),
            other => url = Some(other.to_owned()),
        }
    }
    let (Some(bin), Some(work), Some(url)) = (bin, work, url) else {
        bail!("usage: conformance-adapter --bin AGENT_TOOLS --work DIR URL");
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: serde_json::Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let dir = work.join(format!(
        "{}-{}",
        scenario.replace('/', "-"),
        std::process::id()
    ));
    let project = dir.join("project");
    let state = dir.join("state");
    for d in [&project, &state] {
        fs::create_dir_all(d)?;
    }
    let (config, env) = entry(&scenario, &url, &context, &project)?;
    fs::write(
        project.join(".mcp.json"),
        serde_json::to_vec_pretty(&config)?,
    )?;
    let agent = |args: &[&str]| {
        let mut cmd = Command::new(&bin);
        cmd.args(args)
            .current_dir(&project)
            .env("AGENT_TOOLS_HOME", &state)
            .env("HOME", &dir)
            // A "browser" that follows the authorization server's redirect back to the
            // login's loopback address, as a person's browser would.
            .env("BROWSER", "curl -sSL -o /dev/null");
        for (k, v) in &env {
            cmd.env(k, v);
        }
        cmd
    };
    let status = |mut cmd: Command| -> Result<i32> {
        let status = cmd.status().context("cannot run agent-tools")?;
        Ok(status.code().unwrap_or(1))
    };
    let call = |tool: &str, input: &str| -> Result<(i32, String)> {
        // The person allows the server's tools, as a rule in their settings would.
        let output = agent(&[
            "--mcp-wait",
            "30",
            "--allow",
            "mcp__test",
            "call",
            tool,
            input,
        ])
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run agent-tools")?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        print!("{text}");
        Ok((output.status.code().unwrap_or(1), text))
    };
    if status(agent(&["trust", "--yes"]))? != 0 {
        bail!("agent-tools trust --yes failed");
    }
    let code = match scenario.as_str() {
        "tools_call" => call("mcp__test__add_numbers", r#"{"a": 5, "b": 3}"#)?.0,
        "sse-retry" => call("mcp__test__test_reconnection", "{}")?.0,
        "elicitation-sep1034-client-defaults" => {
            // A person at a terminal, who takes the default of each of the form's five
            // fields (the first choice offered).
            let mut script = Command::new("script");
            script
                .args(["-q", "-e", "-c"])
                .arg(format!(
                    "{} --mcp-wait 30 --allow mcp__test call mcp__test__test_client_elicitation_defaults '{{}}'",
                    bin.display()
                ))
                .arg("/dev/null")
                .current_dir(&project)
                .env("AGENT_TOOLS_HOME", &state)
                .env("HOME", &dir)
                .stdin(Stdio::piped());
            let mut child = script.spawn().context("cannot run script(1)")?;
            if let Some(mut stdin) = child.stdin.take() {
                stdin.write_all(b"1\n1\n1\n1\n1\n")?;
                // Left open until the call ends: script(1) ends the session at end of input.
                let status = child.wait()?;
                drop(stdin);
                status.code().unwrap_or(1)
            } else {
                1
            }
        }
        s if s.starts_with("auth/") => {
            let machine = matches!(
                s,
                "auth/client-credentials-jwt"
                    | "auth/client-credentials-basic"
                    | "auth/cross-app-access-complete-flow"
            );
            if !machine && status(agent(&["mcp", "login", "test"]))? != 0 {
                return Ok(ExitCode::from(1));
            }
            let (mut code, text) = call("mcp__test__test-tool", "{}")?;
            // The server asked for more than the login granted (step-up): log in again,
            // which asks for it, and call once more.
            if code != 0 && !machine && text.contains("run: agent-tools mcp login test") {
                if status(agent(&["mcp", "login", "test"]))? != 0 {
                    return Ok(ExitCode::from(1));
                }
                code = call("mcp__test__test-tool", "{}")?.0;
            }
            code
        }
        // `initialize` and anything new: connect and list the tools.
        _ => status(agent(&["--mcp-wait", "30", "list"]))?,
    };
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_failures_need_a_mode_a_name_and_a_reason() {
        let ok = expected_failures(
            "# comment\n\nserver tools-call-image: calls the suite's own test tool\nclient x: why\n",
        )
        .unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(
            ok[&(Mode::Server, "tools-call-image".to_owned())],
            "calls the suite's own test tool"
        );
        for (bad, why) in [
            ("server x", "no reason"),
            ("server x:   ", "the reason is empty"),
            ("x: y", "no mode"),
            ("peer x: y", "neither server nor client"),
            ("client x: a\nclient x: b", "listed twice"),
        ] {
            let err = expected_failures(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn the_repository_file_parses() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let text = fs::read_to_string(root.join(EXPECTED_FAILURES)).unwrap();
        expected_failures(&text).unwrap();
    }

    #[test]
    fn each_machine_scenario_gets_its_grant() {
        let dir = std::env::temp_dir().join(format!("xtask-conformance-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let context = serde_json::json!({"client_id": "c", "client_secret": "s", "private_key_pem": "PEM", "signing_algorithm": "ES256"});
        let (config, _) = entry(
            "auth/client-credentials-jwt",
            "http://h/mcp",
            &context,
            &dir,
        )
        .unwrap();
        let oauth = &config["mcpServers"]["test"]["oauth"];
        assert_eq!(oauth["grant"], "client_credentials");
        assert_eq!(
            fs::read_to_string(dir.join("client-key.pem")).unwrap(),
            "PEM"
        );
        let (config, _) = entry("auth/metadata-default", "http://h/mcp", &context, &dir).unwrap();
        assert!(config["mcpServers"]["test"]["oauth"]["clientMetadataUrl"].is_string());
        let (config, _) = entry("tools_call", "http://h/mcp", &context, &dir).unwrap();
        assert!(config["mcpServers"]["test"].get("oauth").is_none());
        fs::remove_dir_all(&dir).unwrap();
    }
}
