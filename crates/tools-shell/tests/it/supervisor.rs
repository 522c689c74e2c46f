//! A host whose supervisor program is misconfigured or missing: a registered program that
//! ignores the supervisor argument is set aside with one warning naming
//! `sandbox_supervisor_entry`, and commands still run, sandboxed, one sandbox each; without
//! a program the cost is reported once per process, not per call.

use serde_json::json;
use tool_core::PermissionMode;
use tools_shell::{Mechanism, SandboxMode, SandboxSettings};

use crate::{Fixture, NO_SUPERVISOR_VAR, SUPERVISOR_COPY_VAR, child_stderr, require};

/// The mechanisms this machine offers (a missing one skips, or fails under
/// `AGENT_TOOLS_REQUIRE_PEERS=1`).
fn mechanisms() -> Vec<Mechanism> {
    let mut out = Vec::new();
    if require("bubblewrap (bwrap)", tools_shell::bubblewrap().is_some()) {
        out.push(Mechanism::Bubblewrap);
    }
    if require("Landlock", tools_shell::landlock_available()) {
        out.push(Mechanism::Landlock);
    }
    out
}

fn fixture(mechanism: Mechanism) -> Fixture {
    Fixture::with(
        PermissionMode::BypassPermissions,
        &[],
        SandboxSettings {
            mechanism,
            mode: SandboxMode::WorkspaceWrite,
            network: false,
            ..SandboxSettings::default()
        },
    )
}

/// Commands run and stay confined under `mechanism`, in the foreground and in the
/// background, whatever became of the supervisor program; with `notice`, the first result
/// passes on the warning about the program.
async fn runs_sandboxed(mechanism: Mechanism, notice: bool) {
    let label = format!("{mechanism:?}");
    let f = fixture(mechanism);
    // The first result after the program was set aside passes the warning on, once.
    let r = f.bash("echo hello").await;
    assert!(!r.is_error, "{label}: {}", r.text());
    let text = r.text();
    assert_eq!(text.lines().next(), Some("hello"), "{label}");
    if notice {
        assert!(
            text.contains("Note for the host program:")
                && text.contains("sandbox_supervisor_entry()"),
            "{label}: {text}"
        );
    } else {
        assert_eq!(text, "hello", "{label}");
    }
    let r = f.bash("echo hello").await;
    assert_eq!(r.text(), "hello", "{label}");
    // Landlock grants no new top-level entry of the root (see the sandbox tests).
    std::fs::create_dir_all(f.root.join("src")).unwrap();
    let r = f.bash("echo inside > src/made.txt && echo ok").await;
    assert_eq!(r.text(), "ok", "{label}");
    assert_eq!(
        std::fs::read_to_string(f.root.join("src/made.txt")).unwrap(),
        "inside\n"
    );
    let outside = tempfile::Builder::new()
        .prefix("agent-tools-outside-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let target = outside.path().join("escape.txt");
    let r = f.bash(&format!("echo x > '{}'", target.display())).await;
    assert!(r.is_error, "{label}: wrote outside: {}", r.text());
    assert!(!target.exists(), "{label}");
    let r = f
        .call(
            "Bash",
            json!({"command": "echo task", "run_in_background": true}),
        )
        .await;
    assert!(!r.is_error, "{label}: {}", r.text());
}

#[tokio::test]
async fn a_program_that_ignores_the_supervisor_argument() {
    let Some(stderr) = child_stderr(
        "supervisor::a_program_that_ignores_the_supervisor_argument",
        &[(SUPERVISOR_COPY_VAR, "/bin/true")],
    ) else {
        for (i, mechanism) in mechanisms().into_iter().enumerate() {
            runs_sandboxed(mechanism, i == 0).await;
        }
        // The first call's result carried the warning: no later one does.
        if let Some(mechanism) = mechanisms().first() {
            let r = fixture(*mechanism).bash("echo again").await;
            assert_eq!(r.text(), "again");
        }
        return;
    };
    if mechanisms().is_empty() {
        return;
    }
    assert_eq!(
        stderr.matches("did not answer").count(),
        1,
        "one warning per process:\n{stderr}"
    );
    assert!(
        stderr.contains("/bin/true") && stderr.contains("sandbox_supervisor_entry()"),
        "{stderr}"
    );
    assert!(!stderr.contains("no supervisor program"), "{stderr}");
}

#[tokio::test]
async fn no_program_is_reported_once() {
    let Some(stderr) = child_stderr(
        "supervisor::no_program_is_reported_once",
        &[(NO_SUPERVISOR_VAR, "1")],
    ) else {
        for mechanism in mechanisms() {
            runs_sandboxed(mechanism, false).await;
        }
        return;
    };
    if mechanisms().is_empty() {
        return;
    }
    assert_eq!(
        stderr
            .matches("no supervisor program is registered")
            .count(),
        1,
        "one report per process:\n{stderr}"
    );
    assert!(stderr.contains("sandbox_supervisor_entry()"), "{stderr}");
}
