//! What approved a command decides where it runs: a command allowed only because it reads
//! runs in the read-only jail (in default, plan, dontAsk and acceptEdits modes); one a
//! person approved — an allow rule, an answer, bypassPermissions — in the workspace
//! sandbox; a call whose approval is unknown (no permission step) in the jail. The shell's
//! remembered working directory still follows a jailed `cd`, and a command that runs into a
//! resource limit says which.

use std::sync::Arc;

use serde_json::json;
use tool_core::{
    PermissionAnswer, PermissionMode, PermissionPrompter, PermissionRequest, ToolContext, TypedTool,
};
use tools_shell::{Bash, Mechanism, ResourceLimits, SandboxSettings};

use crate::{Fixture, data_str, require};

fn mechanisms() -> Vec<SandboxSettings> {
    let mut out = Vec::new();
    if require("bubblewrap (bwrap)", tools_shell::bubblewrap().is_some()) {
        out.push(SandboxSettings {
            mechanism: Mechanism::Bubblewrap,
            ..SandboxSettings::default()
        });
    }
    if require("Landlock", tools_shell::landlock_available()) {
        out.push(SandboxSettings {
            mechanism: Mechanism::Landlock,
            ..SandboxSettings::default()
        });
    }
    out
}

/// A person who approves every question.
struct Yes;

#[async_trait::async_trait]
impl PermissionPrompter for Yes {
    async fn ask(&self, _request: &PermissionRequest) -> PermissionAnswer {
        PermissionAnswer::Allow
    }
}

#[tokio::test]
async fn what_approved_a_command_decides_its_sandbox() {
    for settings in mechanisms() {
        let label = format!("{:?}", settings.mechanism);
        for mode in [
            PermissionMode::Default,
            PermissionMode::Plan,
            PermissionMode::DontAsk,
            PermissionMode::AcceptEdits,
        ] {
            // Classified read-only: the jail, where nothing can be written.
            let f = Fixture::with(mode, &[], settings.clone());
            std::fs::write(f.root.join("victim"), "keep").unwrap();
            let r = f.bash("cat victim").await;
            assert_eq!(r.text(), "keep", "{label} {mode}");
            assert!(
                data_str(&r, "sandbox").contains("read-only jail"),
                "{label} {mode}: {:?}",
                r.data
            );
            // An allow rule for it: the workspace sandbox.
            let f = Fixture::with(mode, &[("allow", "Bash(cat victim)")], settings.clone());
            std::fs::write(f.root.join("victim"), "keep").unwrap();
            let r = f.bash("cat victim").await;
            assert!(
                data_str(&r, "sandbox").contains("workspace-write"),
                "{label} {mode}: {:?}",
                r.data
            );
        }
        // bypassPermissions: the person approved everything; the workspace sandbox.
        let f = Fixture::with(PermissionMode::BypassPermissions, &[], settings.clone());
        let r = f.bash("ls").await;
        assert!(
            data_str(&r, "sandbox").contains("workspace-write"),
            "{label}"
        );
        // A person's answer to a question: the workspace sandbox, where it may write.
        let f = Fixture::with(PermissionMode::Default, &[], settings.clone());
        f.ctx
            .services()
            .insert(Arc::new(Yes) as Arc<dyn PermissionPrompter>);
        // (In an existing directory: Landlock cannot add entries at the top of a working
        // directory.)
        std::fs::create_dir_all(f.root.join("sub")).unwrap();
        let r = f.bash("echo made > sub/file").await;
        assert!(!r.is_error, "{label}: {}", r.text());
        assert!(
            data_str(&r, "sandbox").contains("workspace-write"),
            "{label}"
        );
        assert!(f.root.join("sub/file").exists(), "{label}");
    }
}

#[tokio::test]
async fn a_call_without_a_permission_step_runs_in_the_jail() {
    for settings in mechanisms() {
        let f = Fixture::with(PermissionMode::BypassPermissions, &[], settings.clone());
        // The tool called directly, as a library might: no approval is known.
        std::fs::create_dir_all(f.root.join("sub")).unwrap();
        let input: tools_shell::BashInput = serde_json::from_value(json!({
            "command": "echo planted > sub/marker; echo done"
        }))
        .unwrap();
        let ctx: &ToolContext = &f.ctx;
        let result = Bash.call(input, ctx).await.unwrap();
        assert!(
            result.data.sandbox.contains("read-only jail"),
            "{:?}",
            result.data
        );
        assert!(!f.root.join("sub/marker").exists());
        // Through the pool in bypassPermissions mode, the same command writes.
        let r = f.bash("echo planted > sub/marker").await;
        assert!(!r.is_error, "{}", r.text());
        assert!(f.root.join("sub/marker").exists());
    }
}

#[tokio::test]
async fn a_jailed_cd_still_moves_the_shell() {
    for settings in mechanisms() {
        let f = Fixture::with(PermissionMode::Default, &[], settings.clone());
        std::fs::create_dir_all(f.root.join("sub/deeper")).unwrap();
        let r = f.bash("cd sub/deeper").await;
        assert!(!r.is_error, "{}", r.text());
        assert!(data_str(&r, "sandbox").contains("read-only jail"));
        let r = f.bash("pwd").await;
        assert!(r.text().ends_with("/sub/deeper"), "{}", r.text());
    }
}

#[tokio::test]
async fn a_limit_is_named_in_the_result() {
    for settings in mechanisms() {
        let settings = SandboxSettings {
            limits: ResourceLimits {
                cpu: Some(1),
                ..ResourceLimits::default()
            },
            ..settings
        };
        let f = Fixture::with(
            PermissionMode::Default,
            &[("allow", "Bash(while :; do :; done)")],
            settings,
        );
        let r = f.bash("while :; do :; done").await;
        assert!(r.is_error);
        assert!(
            r.text()
                .contains("killed: CPU time limit 1 s (sandbox.limits.cpu)"),
            "{}",
            r.text()
        );
        assert_eq!(
            data_str(&r, "limit"),
            "killed: CPU time limit 1 s (sandbox.limits.cpu)"
        );
    }
}
