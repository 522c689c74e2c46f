//! `agent-tools mcp login | status | logout` against a hosted MCP server behind OAuth
//! (`test_support::mcp::oauth_server`, its own authorization server), with `$BROWSER` a
//! headless browser that follows the authorization server's redirect back to the login's
//! loopback address. Covers the call before any login (the error names the command), the
//! login (discovery, dynamic registration, PKCE, resource indicator), a scope step-up (403
//! insufficient_scope, then a second login asking for more), a refresh after the access token
//! expired, where the tokens are and who may read them, and the logout's revocation.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::{Project, Run, binary, text};

/// The test server: killed on drop.
struct OAuthServer {
    child: Child,
    base: String,
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl OAuthServer {
    fn start(lifetime_secs: u64) -> Self {
        let mut child = Command::new("python3")
            .arg(test_support::mcp::oauth_server())
            .arg(lifetime_secs.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start oauth_server.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the port");
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .expect("PORT line")
            .to_owned();
        OAuthServer {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    fn stats(&self) -> Value {
        let output = Command::new("python3")
            .args([
                "-c",
                "import sys,urllib.request;print(urllib.request.urlopen(sys.argv[1]).read().decode())",
            ])
            .arg(format!("{}/stats", self.base))
            .output()
            .expect("read /stats");
        serde_json::from_slice(&output.stdout).expect("stats JSON")
    }
}

/// Runs the binary in `project` with the headless browser as `$BROWSER`.
fn run(project: &Project, args: &[&str]) -> Run {
    let output = Command::new(binary())
        .arg("--cwd")
        .arg(project.root())
        .args(args)
        .current_dir(project.root())
        .env("AGENT_TOOLS_HOME", project.home())
        .env("HOME", project.home())
        .env(
            "BROWSER",
            format!("python3 {}", test_support::mcp::browser().display()),
        )
        .stdin(Stdio::null())
        .output()
        .expect("run agent-tools");
    Run {
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        code: output.status.code().expect("an exit status"),
        stdout: String::from_utf8(output.stdout).expect("UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8"),
    }
}

fn call(project: &Project) -> Run {
    run(
        project,
        &[
            "--allow",
            "mcp__remote",
            "--mcp-wait",
            "20",
            "call",
            "mcp__remote__whoami",
            "{}",
        ],
    )
}

/// Every file under `dir`, recursively.
fn files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn login_step_up_refresh_and_logout_against_a_local_authorization_server() {
    // Access tokens live 3 s: long enough for a call, short enough to expire in the test.
    let server = OAuthServer::start(3);
    let project = Project::new(&[]);
    let mcp =
        json!({"mcpServers": {"remote": {"type": "http", "url": format!("{}/mcp", server.base)}}});
    project.add(&format!(".mcp.json = {mcp}"));
    project.trust();

    // Before any login: the call says what to run, in one line naming server and URL.
    let before = call(&project);
    before.assert_code(1);
    let line = text(&before.result());
    assert!(
        line.contains("MCP server \"remote\"")
            && line.contains(&server.base)
            && line.contains("needs a login (HTTP 401); run: agent-tools mcp login remote"),
        "{before:#?}"
    );
    let status = run(&project, &["mcp", "status"]);
    assert!(status.stdout.contains("auth:       none"), "{status:#?}");
    let remote = |doctor: &Run| {
        let report: Value = serde_json::from_str(&doctor.stdout).expect("doctor JSON");
        report["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["name"] == "mcp.remote")
            .cloned()
            .unwrap_or_default()
    };
    let doctor = run(&project, &["doctor", "--json"]);
    let check = remote(&doctor);
    assert_eq!(check["status"], "problem", "{doctor:#?}");
    assert_eq!(
        check["fix"], "run: agent-tools mcp login remote",
        "{doctor:#?}"
    );

    // The login: discovery from the 401, dynamic registration, PKCE, the browser.
    let login = run(&project, &["mcp", "login", "remote"]);
    login.assert_code(0);
    assert!(
        login
            .stderr
            .contains("logged in to \"remote\" with scope \"read")
            && login.stderr.contains("it lists 1 tools"),
        "{login:#?}"
    );
    let stats = server.stats();
    assert_eq!(
        stats["authorizations"],
        json!([["read", "offline_access"]]),
        "{stats}"
    );
    assert!(
        stats["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|r| r == &json!(format!("{}/mcp", server.base))),
        "every token request names the resource: {stats}"
    );
    // The tokens: in the state directory, readable by the owner only, never in the
    // project, never printed.
    let stored: Vec<_> = files(&project.home().join("mcp-oauth"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&stored[0]), 0o600);
    assert_eq!(mode(&project.home().join("mcp-oauth")), 0o700);
    let file: Value =
        serde_json::from_slice(&std::fs::read(&stored[0]).expect("read")).expect("JSON");
    let access = file["credentials"]["token_response"]["access_token"]
        .as_str()
        .expect("an access token")
        .to_owned();
    assert!(access.starts_with("at-"));
    for output in [&login.stdout, &login.stderr] {
        assert!(!output.contains(&access), "the token was printed");
    }
    assert!(
        files(project.root())
            .iter()
            .all(|p| !std::fs::read_to_string(p)
                .unwrap_or_default()
                .contains(&access)),
        "a token is in the project"
    );
    let status = run(&project, &["mcp", "status"]);
    assert!(
        status
            .stdout
            .contains("auth:       oauth: logged in; token expires in")
            && status.stdout.contains("(refreshable)")
            && status.stdout.contains("connected (1 tools"),
        "{status:#?}"
    );
    assert!(!status.stdout.contains(&access));
    let doctor = run(&project, &["doctor", "--json"]);
    let check = remote(&doctor);
    assert_eq!(check["status"], "ok", "{doctor:#?}");
    assert!(
        check["detail"]
            .as_str()
            .is_some_and(|d| d.contains("auth: oauth: logged in; token expires in")),
        "{doctor:#?}"
    );
    assert!(!doctor.stdout.contains(&access));

    // The call needs scope write too: 403 insufficient_scope names it, and the next login
    // asks for it (a step-up).
    let short = call(&project);
    short.assert_code(1);
    let message = text(&short.result());
    assert!(
        message.contains("lacks scope \"read write\"")
            && message.contains("403 insufficient_scope")
            && message.contains("run: agent-tools mcp login remote"),
        "{short:#?}"
    );
    run(&project, &["mcp", "login", "remote"]).assert_code(0);
    let stats = server.stats();
    let second = &stats["authorizations"][1];
    for scope in ["read", "write"] {
        assert!(
            second.as_array().is_some_and(|s| s.contains(&json!(scope))),
            "{stats}"
        );
    }
    let ok = call(&project);
    ok.assert_code(0);
    assert!(
        text(&ok.result()).contains("hello from the protected server"),
        "{ok:#?}"
    );

    // After the access token expired, the next call refreshes it on its own.
    std::thread::sleep(Duration::from_secs(4));
    let refreshes_before = grants(&server, "refresh_token");
    let after = call(&project);
    after.assert_code(0);
    assert!(text(&after.result()).contains("hello from the protected server"));
    assert!(
        grants(&server, "refresh_token") > refreshes_before,
        "no refresh: {}",
        server.stats()
    );
    assert_eq!(
        server.stats()["refused"],
        json!(0),
        "an expired token was sent"
    );

    // Logout forgets the tokens and revokes them.
    let logout = run(&project, &["mcp", "logout", "remote"]);
    logout.assert_code(0);
    assert!(
        logout
            .stderr
            .contains("forgot the tokens of \"remote\" and revoked them"),
        "{logout:#?}"
    );
    assert_eq!(server.stats()["revoked"], json!(1));
    assert!(
        files(&project.home().join("mcp-oauth"))
            .iter()
            .all(|p| p.extension().is_none_or(|e| e != "json"))
    );
    let gone = call(&project);
    assert!(text(&gone.result()).contains("run: agent-tools mcp login remote"));
}

fn grants(server: &OAuthServer, kind: &str) -> usize {
    server.stats()["grants"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|g| *g == kind)
        .count()
}

#[test]
fn login_refuses_what_it_cannot_log_in_to() {
    let project = Project::new(&[]);
    let mcp = json!({"mcpServers": {
        "local": {"command": "true"},
        "token": {"type": "http", "url": "http://127.0.0.1:9/mcp", "bearerTokenEnvVar": "PATH"},
        "machine": {"type": "http", "url": "http://127.0.0.1:9/mcp", "oauth": {"grant": "client_credentials", "clientId": "c", "clientSecret": "s"}},
        "dead": {"type": "http", "url": "http://127.0.0.1:9/mcp"}
    }});
    project.add(&format!(".mcp.json = {mcp}"));
    let check = |name: &str, code: i32, expected: &str| {
        let run = run(&project, &["mcp", "login", name]);
        run.assert_code(code);
        assert!(run.stderr.contains(expected), "{name}: {run:#?}");
    };
    // Not approved yet: nothing is contacted.
    check("dead", 2, "is not approved");
    project.trust();
    check(
        "nope",
        2,
        "no server \"nope\" in .mcp.json (it names: dead, local, machine, token)",
    );
    check("local", 2, "is a stdio server");
    check("token", 2, "gets its token from \"bearerTokenEnvVar\"");
    check("machine", 2, "uses a machine grant");
    check("dead", 1, "cannot reach the server");
    assert!(!project.home().join("mcp-oauth").exists());
}

#[test]
fn login_without_a_browser_takes_the_pasted_address() {
    use std::io::Write;
    let server = OAuthServer::start(3600);
    let project = Project::new(&[]);
    let mcp =
        json!({"mcpServers": {"remote": {"type": "http", "url": format!("{}/mcp", server.base)}}});
    project.add(&format!(".mcp.json = {mcp}"));
    project.trust();
    let mut login = Command::new(binary())
        .args([
            "--cwd",
            project.root_str(),
            "mcp",
            "login",
            "remote",
            "--no-browser",
        ])
        .env("AGENT_TOOLS_HOME", project.home())
        .env("HOME", project.home())
        // A browser that must not be used.
        .env("BROWSER", "false")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the login");
    let mut stderr = BufReader::new(login.stderr.take().expect("stderr"));
    let mut printed = String::new();
    let mut url = None;
    while !printed.contains("paste here the address the browser ends on") {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).expect("read") > 0,
            "no URL: {printed}"
        );
        printed.push_str(&line);
        if let Some(rest) = line.trim().strip_prefix("http") {
            url = Some(format!("http{rest}"));
        }
    }
    let url = url.unwrap_or_else(|| panic!("no URL: {printed}"));
    // The person approves elsewhere; the browser ends on the redirect, which is pasted.
    let redirected = Command::new("python3")
        .args([
            "-c",
            "import sys, urllib.request\n\
             class Stop(urllib.request.HTTPRedirectHandler):\n\
             \tdef redirect_request(self, *a): return None\n\
             try:\n\
             \turllib.request.build_opener(Stop).open(sys.argv[1])\n\
             except urllib.error.HTTPError as e:\n\
             \tprint(e.headers['Location'])",
        ])
        .arg(&url)
        .output()
        .expect("follow the authorization URL");
    let location = String::from_utf8_lossy(&redirected.stdout)
        .trim()
        .to_owned();
    assert!(
        location.starts_with("http://localhost:"),
        "{location:?} {redirected:?}"
    );
    let mut stdin = login.stdin.take().expect("stdin");
    writeln!(stdin, "{location}").expect("paste");
    drop(stdin);
    let status = login.wait().expect("login ends");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).expect("read");
    assert!(status.success(), "{printed}{rest}");
    assert!(rest.contains("logged in to \"remote\""), "{rest}");
    let status = run(&project, &["mcp", "status"]);
    assert!(status.stdout.contains("oauth: logged in"), "{status:#?}");
}
