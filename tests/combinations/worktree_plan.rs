//! The sandbox × worktrees × plan mode: Bash writes in a worktree under the sandbox land in
//! the worktree and its branch, never in the main checkout, and the repository's hooks and
//! configuration stay out of reach; plan mode refuses Write, Edit and writing commands (also
//! in a worktree, also in a session started in bypass mode) while Read, Grep and read-only
//! commands work, and leaving it restores the mode, so the same calls then go through.

use serde_json::json;
use tool_core::PermissionMode;

use crate::{
    Session, Setup, eventually, git, marker, ok, plan_file, processes_with, refused, sandboxed,
};

const COMMIT: &str = "echo wip > wip.txt && git add wip.txt && git -c user.name=t -c user.email=t@example.invalid commit -qm wip && echo committed";

fn repository(mode: PermissionMode) -> Session {
    Session::new(Setup {
        files: &[("README.md", "hello\n")],
        mode: Some(mode),
        git: true,
        ..Setup::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_commits_in_a_worktree_under_the_sandbox() {
    let s = repository(PermissionMode::BypassPermissions);
    ok(
        s.call("EnterWorktree", json!({"name": "w1"})).await,
        "enter",
    );
    let worktree = s.ctx.cwd();
    assert_ne!(worktree, s.root);
    let r = ok(
        s.call("Bash", json!({"command": "touch b.txt && echo wrote"}))
            .await,
        "touch",
    );
    assert!(sandboxed(&r), "{r:#?}");
    assert_eq!(r.text(), "wrote");
    let r = ok(s.call("Bash", json!({"command": COMMIT})).await, "commit");
    assert!(r.text().contains("committed"), "{r:#?}");
    ok(
        s.call(
            "Bash",
            json!({"command": "git stash list && git status --short"}),
        )
        .await,
        "status",
    );
    // Both files are in the worktree, neither in the user's checkout.
    assert!(worktree.join("b.txt").is_file() && worktree.join("wip.txt").is_file());
    assert!(!s.root.join("b.txt").exists() && !s.root.join("wip.txt").exists());
    ok(
        s.call("ExitWorktree", json!({"action": "keep"})).await,
        "exit",
    );
    assert_eq!(s.ctx.cwd(), s.root);
    // The branch holds the commit; the user's branch does not.
    assert!(git(&s.root, &["log", "--oneline", "worktree-w1"]).contains("wip"));
    assert!(!git(&s.root, &["log", "--oneline", "main"]).contains("wip"));
    // The repository's hooks and configuration stayed out of reach.
    let r = s
        .call(
            "Bash",
            json!({"command": "c=.git/config; echo '[core] fsmonitor = x' >> \"$c\""}),
        )
        .await;
    assert!(r.is_error, "{r:#?}");
    let config = std::fs::read_to_string(s.root.join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
    s.shutdown().await;
}

/// Plan mode, entered from bypass mode: nothing is written by any tool, in the checkout or
/// in a worktree, and no refused command starts a process; reading and searching work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_refuses_every_write_in_a_worktree_until_it_is_left() {
    let s = repository(PermissionMode::BypassPermissions);
    ok(
        s.call("EnterWorktree", json!({"name": "p1"})).await,
        "enter",
    );
    let worktree = s.ctx.cwd();
    let entered = ok(s.call("EnterPlanMode", json!({})).await, "plan");
    assert_eq!(entered.data["previousMode"], "bypassPermissions");
    assert_eq!(s.ctx.permission_mode(), PermissionMode::Plan);

    let write = json!({"file_path": worktree.join("new.txt"), "content": "x\n"});
    refused(&s.call("Write", write.clone()).await, "Plan mode");
    let edit = json!({"file_path": worktree.join("README.md"), "old_string": "hello", "new_string": "bye"});
    // Edit wants the file read first: read it, so only plan mode stands in the way.
    ok(
        s.call("Read", json!({"file_path": worktree.join("README.md")}))
            .await,
        "read",
    );
    refused(&s.call("Edit", edit.clone()).await, "Plan mode");
    refused(
        &s.call("Bash", json!({"command": "touch touched.txt"}))
            .await,
        "Plan mode",
    );
    let sleep = marker(1);
    let background = json!({"command": format!("sleep {sleep}"), "run_in_background": true});
    refused(&s.call("Bash", background.clone()).await, "Plan mode");
    assert!(!worktree.join("new.txt").exists());
    assert!(!worktree.join("touched.txt").exists());
    assert_eq!(
        std::fs::read_to_string(worktree.join("README.md")).unwrap(),
        "hello\n"
    );
    assert!(processes_with(&sleep).is_empty(), "a refused command runs");
    // Reading, searching and read-only commands still work, in the worktree.
    let r = ok(
        s.call(
            "Grep",
            json!({"pattern": "hel+o", "output_mode": "content"}),
        )
        .await,
        "grep",
    );
    assert!(r.text().contains("hello"), "{r:#?}");
    let r = ok(
        s.call("Bash", json!({"command": "cat README.md"})).await,
        "cat",
    );
    assert!(r.text().contains("hello"), "{r:#?}");

    // A person approves the plan: the session is back in bypass mode, in the worktree.
    let plan = plan_file(&entered);
    std::fs::create_dir_all(plan.parent().unwrap()).unwrap();
    std::fs::write(&plan, "1. Write new.txt\n").unwrap();
    let approver = s.answer(true);
    ok(s.call("ExitPlanMode", json!({})).await, "exit plan");
    assert_eq!(approver.asked.lock().unwrap().len(), 1);
    assert_eq!(s.ctx.permission_mode(), PermissionMode::BypassPermissions);
    assert_eq!(s.ctx.cwd(), worktree);
    ok(s.call("Write", write).await, "write");
    ok(
        s.call("Read", json!({"file_path": worktree.join("README.md")}))
            .await,
        "read",
    );
    ok(s.call("Edit", edit).await, "edit");
    ok(
        s.call("Bash", json!({"command": "touch touched.txt"}))
            .await,
        "touch",
    );
    assert!(worktree.join("new.txt").is_file() && worktree.join("touched.txt").is_file());
    assert_eq!(
        std::fs::read_to_string(worktree.join("README.md")).unwrap(),
        "bye\n"
    );
    for name in ["new.txt", "touched.txt"] {
        assert!(!s.root.join(name).exists(), "{name} in the checkout");
    }
    assert_eq!(
        std::fs::read_to_string(s.root.join("README.md")).unwrap(),
        "hello\n"
    );
    // The background command now starts, and TaskStop ends its processes.
    let r = ok(s.call("Bash", background).await, "background");
    let id = r.data["backgroundTaskId"].as_str().unwrap().to_owned();
    assert!(eventually(|| !processes_with(&sleep).is_empty()).await);
    ok(s.call("TaskStop", json!({"task_id": id})).await, "stop");
    assert!(
        eventually(|| processes_with(&sleep).is_empty()).await,
        "the stopped task's processes remain: {:?}",
        processes_with(&sleep)
    );
    s.shutdown().await;
}

/// Plan mode in the checkout itself, with no worktree: a refused Bash write leaves nothing,
/// and a refused person's answer keeps the session in plan mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_turned_down_keeps_plan_mode() {
    let s = repository(PermissionMode::AcceptEdits);
    let entered = ok(s.call("EnterPlanMode", json!({})).await, "plan");
    let plan = plan_file(&entered);
    std::fs::create_dir_all(plan.parent().unwrap()).unwrap();
    // The plan file is the one file plan mode lets Write write.
    ok(
        s.call(
            "Write",
            json!({"file_path": plan, "content": "1. Nothing\n"}),
        )
        .await,
        "write the plan",
    );
    s.answer(false);
    assert!(s.call("ExitPlanMode", json!({})).await.is_error);
    assert_eq!(s.ctx.permission_mode(), PermissionMode::Plan);
    refused(
        &s.call(
            "Write",
            json!({"file_path": s.root.join("x.txt"), "content": "x"}),
        )
        .await,
        "Plan mode",
    );
    refused(
        &s.call("Bash", json!({"command": "echo x > x.txt"})).await,
        "Plan mode",
    );
    assert!(!s.root.join("x.txt").exists());
    s.shutdown().await;
}
