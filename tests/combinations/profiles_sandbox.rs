//! Profiles × the sandbox and protected paths: the codex and gemini tools that write files
//! or run commands hold to the same protected paths (version control internals, shell
//! start-up files) and the same sandbox as the built-ins they stand for, in bypass mode,
//! where nothing else stops them. Every attempt is checked on disk: the files are as they
//! were, and nothing was written outside the project.

use serde_json::{Value, json};
use tool_core::PermissionMode;

use registry::Profile;

use crate::{Session, Setup, ok};

const BASHRC: &str = "# start-up\n";
/// A write to the repository's configuration through a name no analysis can see: only the
/// sandbox stands in the way.
const HIDDEN_GIT_WRITE: &str = "c=.git/con; echo '[core] fsmonitor = x' >> \"${c}fig\"";
/// A write outside the project (into the state directory beside it) through a name no
/// analysis can see.
const HIDDEN_OUTSIDE_WRITE: &str = "d=../.state-home; echo x > \"$d/escaped.txt\"";

fn session(profile: Profile) -> Session {
    let s = Session::new(Setup {
        files: &[(".bashrc", BASHRC), ("a.txt", "alpha\n")],
        mode: Some(PermissionMode::BypassPermissions),
        profile: Some(profile),
        git: true,
        ..Setup::default()
    });
    assert_eq!(registry::session_profile(&s.ctx), profile);
    s
}

/// The protected files and the outside of the project are as they were.
#[track_caller]
fn untouched(s: &Session, what: &str) {
    assert_eq!(
        std::fs::read_to_string(s.root.join(".bashrc")).unwrap(),
        BASHRC,
        "{what}"
    );
    assert!(
        !s.root.join(".git/hooks/pre-commit").exists(),
        "{what}: a hook was planted"
    );
    let config = std::fs::read_to_string(s.root.join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{what}: {config}");
    assert!(
        !s.state.join("escaped.txt").exists(),
        "{what}: written outside the project"
    );
}

/// Runs each call, checks that it failed (or, for commands the sandbox contains, that
/// whatever it reports it left nothing behind) and that nothing protected changed.
async fn attempt(s: &Session, calls: &[(&str, Value, bool)]) {
    for (tool, input, must_fail) in calls {
        assert!(
            s.pool.get(tool).is_some(),
            "{tool} not in {:?}",
            s.pool.names()
        );
        let r = s.call(tool, input.clone()).await;
        if *must_fail {
            assert!(r.is_error, "{tool} {input}: {r:#?}");
        }
        untouched(s, &format!("{tool} {input}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_built_ins_hold_to_protected_paths_and_the_sandbox() {
    let s = session(Profile::Claude);
    let hook = s.root.join(".git/hooks/pre-commit");
    let bashrc = s.root.join(".bashrc");
    ok(s.call("Read", json!({"file_path": bashrc})).await, "read");
    attempt(
        &s,
        &[
            (
                "Write",
                json!({"file_path": hook, "content": "#!/bin/sh\n"}),
                true,
            ),
            (
                "Edit",
                json!({"file_path": bashrc, "old_string": "start-up", "new_string": "x"}),
                true,
            ),
            ("Bash", json!({"command": "echo x >> .bashrc"}), true),
            ("Bash", json!({"command": HIDDEN_GIT_WRITE}), false),
            ("Bash", json!({"command": HIDDEN_OUTSIDE_WRITE}), false),
        ],
    )
    .await;
    ok(
        s.call("Bash", json!({"command": "echo beta >> a.txt"}))
            .await,
        "a write in the project",
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("a.txt")).unwrap(),
        "alpha\nbeta\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_codex_tools_hold_to_protected_paths_and_the_sandbox() {
    let s = session(Profile::Codex);
    let add_hook =
        "*** Begin Patch\n*** Add File: .git/hooks/pre-commit\n+#!/bin/sh\n*** End Patch\n";
    let update_bashrc =
        "*** Begin Patch\n*** Update File: .bashrc\n@@\n-# start-up\n+# changed\n*** End Patch\n";
    attempt(
        &s,
        &[
            ("apply_patch", json!({"input": add_hook}), true),
            ("apply_patch", json!({"input": update_bashrc}), true),
            (
                "shell",
                json!({"command": ["bash", "-c", "echo x >> .bashrc"]}),
                true,
            ),
            (
                "shell_command",
                json!({"command": "echo x >> .bashrc"}),
                true,
            ),
            ("exec_command", json!({"cmd": "echo x >> .bashrc"}), true),
            (
                "shell",
                json!({"command": ["bash", "-c", HIDDEN_GIT_WRITE]}),
                false,
            ),
            (
                "shell_command",
                json!({"command": HIDDEN_OUTSIDE_WRITE}),
                false,
            ),
            ("exec_command", json!({"cmd": HIDDEN_GIT_WRITE}), false),
            ("exec_command", json!({"cmd": HIDDEN_OUTSIDE_WRITE}), false),
        ],
    )
    .await;
    let add = "*** Begin Patch\n*** Add File: notes.txt\n+fine\n*** End Patch\n";
    ok(
        s.call("apply_patch", json!({"input": add})).await,
        "a patch in the project",
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("notes.txt")).unwrap(),
        "fine\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gemini_tools_hold_to_protected_paths_and_the_sandbox() {
    let s = session(Profile::Gemini);
    let hook = s.root.join(".git/hooks/pre-commit");
    let bashrc = s.root.join(".bashrc");
    attempt(
        &s,
        &[
            ("write_file", json!({"file_path": hook, "content": "#!/bin/sh\n"}), true),
            (
                "replace",
                json!({"file_path": bashrc, "instruction": "change it", "old_string": "start-up", "new_string": "x"}),
                true,
            ),
            ("run_shell_command", json!({"command": "echo x >> .bashrc"}), true),
            ("run_shell_command", json!({"command": HIDDEN_GIT_WRITE}), false),
            ("run_shell_command", json!({"command": HIDDEN_OUTSIDE_WRITE}), false),
        ],
    )
    .await;
    ok(
        s.call(
            "write_file",
            json!({"file_path": s.root.join("notes.txt"), "content": "fine\n"}),
        )
        .await,
        "a write in the project",
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("notes.txt")).unwrap(),
        "fine\n"
    );
}
