//! The sandbox, for real, under bubblewrap and under Landlock with seccomp: writes outside
//! the writable roots fail, writes inside succeed, `.git/hooks` and `.git/config` stay
//! read-only, the network is refused when off; dangerouslyDisableSandbox and its settings.

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;

use serde_json::json;
use tool_core::PermissionMode;
use tools_shell::{Mechanism, SandboxMode, SandboxSettings};

use crate::{Fixture, data_str, require};

fn settings(mechanism: Mechanism, mode: SandboxMode, network: bool) -> SandboxSettings {
    SandboxSettings {
        mechanism,
        mode,
        network,
        ..SandboxSettings::default()
    }
}

fn available(mechanism: Mechanism) -> bool {
    match mechanism {
        Mechanism::Bubblewrap => require("bubblewrap (bwrap)", tools_shell::bubblewrap().is_some()),
        Mechanism::Landlock => require("Landlock", tools_shell::landlock_available()),
        Mechanism::Auto => true,
    }
}

fn repo(f: &Fixture) {
    std::fs::create_dir_all(f.root.join(".git/hooks")).unwrap();
    std::fs::write(f.root.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(f.root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir_all(f.root.join("src")).unwrap();
}

async fn file_rules(mechanism: Mechanism) {
    if !available(mechanism) {
        return;
    }
    let outside = tempfile::Builder::new()
        .prefix("agent-tools-outside-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let f = Fixture::with(
        PermissionMode::BypassPermissions,
        &[],
        settings(mechanism, SandboxMode::WorkspaceWrite, false),
    );
    repo(&f);
    let label = format!("{mechanism:?}");

    // Inside: an existing directory, the temporary directory.
    let r = f.bash("echo inside > src/made.txt && echo ok").await;
    assert!(!r.is_error, "{label}: {}", r.text());
    assert!(
        data_str(&r, "sandbox").contains("workspace-write, network off"),
        "{}",
        data_str(&r, "sandbox")
    );
    assert_eq!(
        std::fs::read_to_string(f.root.join("src/made.txt")).unwrap(),
        "inside\n"
    );
    let tmp = tempfile::NamedTempFile::new().unwrap();
    let r = f
        .bash(&format!("echo t > '{}'", tmp.path().display()))
        .await;
    assert!(!r.is_error, "{label}: {}", r.text());
    if mechanism == Mechanism::Bubblewrap {
        // bubblewrap can protect paths inside a root; Landlock grants a root holding
        // protected paths entry by entry (see the sandbox module), so new top-level entries
        // are only possible under bubblewrap.
        let r = f.bash("echo top > top.txt").await;
        assert!(!r.is_error, "{label}: {}", r.text());
    }

    // Outside the writable roots.
    let target = outside.path().join("escape.txt");
    let r = f.bash(&format!("echo x > '{}'", target.display())).await;
    assert!(r.is_error, "{label}: wrote outside: {}", r.text());
    assert!(!target.exists(), "{label}");

    // Protected paths inside the root. The permission check refuses a write it can see, so
    // the targets are hidden in variables: this is what the sandbox is for.
    for (cmd, path) in [
        (
            "p=.git/hooks/pre-commit; echo 'rm -rf /' > \"$p\"",
            ".git/hooks/pre-commit",
        ),
        (
            "p=.git/config; echo '[core] fsmonitor = evil' >> \"$p\"",
            ".git/config",
        ),
    ] {
        let before = std::fs::read(f.root.join(path)).ok();
        let r = f.bash(cmd).await;
        assert!(r.is_error, "{label}: {cmd}: {}", r.text());
        assert_eq!(
            std::fs::read(f.root.join(path)).ok(),
            before,
            "{label}: {path}"
        );
    }
    // The rest of .git stays writable (git works).
    let r = f
        .bash("p=.git/HEAD; echo ref: refs/heads/dev > \"$p\"")
        .await;
    assert!(!r.is_error, "{label}: {}", r.text());

    // Read-only mode: nothing in the root.
    let ro = Fixture::with(
        PermissionMode::BypassPermissions,
        &[],
        settings(mechanism, SandboxMode::ReadOnly, false),
    );
    let r = ro.bash("echo x > file.txt").await;
    assert!(r.is_error, "{label}: {}", r.text());
    assert!(!ro.root.join("file.txt").exists());
    let r = ro
        .bash("cat /etc/hostname > /dev/null && echo readable")
        .await;
    assert_eq!(r.text(), "readable", "{label}");
}

async fn network_rules(mechanism: Mechanism) {
    if !available(mechanism) {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let probe = format!(": < /dev/tcp/127.0.0.1/{port} && echo connected");
    let label = format!("{mechanism:?}");

    let off = Fixture::with(
        PermissionMode::BypassPermissions,
        &[],
        settings(mechanism, SandboxMode::WorkspaceWrite, false),
    );
    let r = off.bash(&probe).await;
    assert!(r.is_error, "{label}: network should be off: {}", r.text());
    assert!(!r.text().contains("connected"));
    assert!(
        listener.accept().is_err(),
        "{label}: a connection reached the host"
    );

    let on = Fixture::with(
        PermissionMode::BypassPermissions,
        &[],
        settings(mechanism, SandboxMode::WorkspaceWrite, true),
    );
    let r = on.bash(&probe).await;
    assert!(!r.is_error, "{label}: network should be on: {}", r.text());
    let (mut s, _) = listener.accept().unwrap();
    let _ = s.set_nonblocking(true);
    let mut buf = [0_u8; 1];
    let _ = s.read(&mut buf);
}

#[tokio::test]
async fn bubblewrap_enforces_files() {
    file_rules(Mechanism::Bubblewrap).await;
}

#[tokio::test]
async fn bubblewrap_enforces_network() {
    network_rules(Mechanism::Bubblewrap).await;
}

#[tokio::test]
async fn landlock_enforces_files() {
    file_rules(Mechanism::Landlock).await;
}

#[tokio::test]
async fn landlock_enforces_network() {
    network_rules(Mechanism::Landlock).await;
}

/// No file in a writable root holds code that later commands run first: what one command
/// plants in the temporary directory stays inert.
async fn nothing_planted_runs_later(mechanism: Mechanism) {
    if !available(mechanism) {
        return;
    }
    let f = Fixture::with(
        PermissionMode::BypassPermissions,
        &[],
        settings(mechanism, SandboxMode::WorkspaceWrite, false),
    );
    let plant = r#"n=0; for f in "${TMPDIR:-/tmp}"/agent-tools-*/*.sh; do [ -f "$f" ] && echo 'echo PLANTED' >> "$f" && n=$((n+1)); done; echo "planted in $n"; echo "[$BASH_ENV]""#;
    let r = f.bash(plant).await;
    assert!(!r.is_error, "{}", r.text());
    assert!(r.text().contains("[]"), "{}", r.text());
    for _ in 0..2 {
        let r = f.bash("echo hi").await;
        assert!(!r.is_error, "{}", r.text());
        assert!(!r.text().contains("PLANTED"), "{}", r.text());
    }
}

#[tokio::test]
async fn landlock_commands_cannot_plant_code_for_later_calls() {
    nothing_planted_runs_later(Mechanism::Landlock).await;
}

#[tokio::test]
async fn bubblewrap_commands_cannot_plant_code_for_later_calls() {
    nothing_planted_runs_later(Mechanism::Bubblewrap).await;
}

#[tokio::test]
async fn dangerously_disable_sandbox_needs_settings_and_approval() {
    if !available(Mechanism::Bubblewrap) && !available(Mechanism::Landlock) {
        return;
    }
    let outside = tempfile::Builder::new()
        .prefix("agent-tools-outside-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let target = outside.path().join("out.txt");
    let cmd = format!("echo x > '{}'", target.display());
    // Allowed by settings and approved by a person: runs unsandboxed.
    let rule = format!("Bash({cmd})");
    let f = Fixture::with(
        PermissionMode::Default,
        &[("allow", &rule)],
        SandboxSettings::default(),
    );
    let asked = crate::approve_unsandboxed(&f.ctx);
    let r = f
        .call(
            "Bash",
            json!({"command": cmd, "dangerouslyDisableSandbox": true}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    assert!(target.exists());
    assert_eq!(r.data["dangerouslyDisableSandbox"], true);
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
    // Without a person, neither the allow rule nor the read-only list approves it.
    let f = Fixture::with(
        PermissionMode::Default,
        &[("allow", &rule)],
        SandboxSettings::default(),
    );
    for cmd in [cmd.as_str(), "ls"] {
        let r = f
            .call(
                "Bash",
                json!({"command": cmd, "dangerouslyDisableSandbox": true}),
            )
            .await;
        assert!(r.is_error);
        assert!(
            r.text().contains("Run outside of the sandbox"),
            "{}",
            r.text()
        );
    }
    // Settings that forbid unsandboxed commands refuse it.
    let strict = Fixture::with(
        PermissionMode::BypassPermissions,
        &[],
        SandboxSettings {
            allow_unsandboxed_commands: false,
            ..SandboxSettings::default()
        },
    );
    let r = strict
        .call(
            "Bash",
            json!({"command": "ls", "dangerouslyDisableSandbox": true}),
        )
        .await;
    assert!(r.is_error);
    assert!(
        r.text().contains("allowUnsandboxedCommands"),
        "{}",
        r.text()
    );
}

#[tokio::test]
async fn settings_sections_reach_bash() {
    // The `sandbox` section of a settings file, through the layers service.
    let dir = tempfile::tempdir().unwrap();
    let layer = tool_core::SettingsLayer::parse(
        tool_core::RuleSourceKind::ProjectSettings,
        &dir.path().join(".agent-tools/settings.json"),
        r#"{"sandbox": {"enabled": false}}"#,
    )
    .unwrap();
    let ctx = tool_core::ToolContext::builder(dir.path())
        .mode(PermissionMode::BypassPermissions)
        .state_dir(dir.path().join("state"))
        .service(std::sync::Arc::new(vec![layer]))
        .build();
    let pool = tool_core::ToolPool::new(tools_shell::tools());
    let r = pool.call("Bash", json!({"command": "true"}), &ctx).await;
    assert!(
        data_str(&r, "sandbox").starts_with("none (sandbox disabled"),
        "{:?}",
        r.data
    );
    assert!(Path::new(&dir.path().join("state")).is_dir());
}
