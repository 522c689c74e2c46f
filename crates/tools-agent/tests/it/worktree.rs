//! EnterWorktree and ExitWorktree in a temporary git repository.

use serde_json::json;

use crate::{Fixture, approver, assert_error, call, git, git_repo, with_prompter};

#[tokio::test]
async fn enter_keep_and_remove() {
    let f = git_repo();
    let ctx = f.ctx();
    assert_error(
        &call(&ctx, "ExitWorktree", json!({"action": "keep"})).await,
        tools_agent::testing::NO_WORKTREE_SESSION,
    );
    let r = call(&ctx, "EnterWorktree", json!({"name": "feature/x"})).await;
    assert!(!r.is_error, "{}", r.text());
    let wt = f.root.join(".agent-tools/worktrees/feature/x");
    assert_eq!(
        r.text(),
        format!(
            "Created worktree at {} on branch worktree-feature/x. The session is now working in the worktree. Use ExitWorktree to leave mid-session, or stay in it until the work is done.",
            wt.display()
        )
    );
    assert_eq!(ctx.cwd(), wt);
    assert!(wt.join("a.txt").is_file());
    assert_eq!(
        git(&wt, &["branch", "--show-current"]),
        "worktree-feature/x"
    );
    assert_error(
        &call(&ctx, "EnterWorktree", json!({})).await,
        tools_agent::testing::ALREADY_IN_WORKTREE,
    );
    // Keep: the worktree stays, the session goes back.
    let r = call(&ctx, "ExitWorktree", json!({"action": "keep"})).await;
    assert!(
        r.text().starts_with(&format!(
            "Exited worktree. Your work is preserved at {}",
            wt.display()
        )),
        "{}",
        r.text()
    );
    assert_eq!(ctx.cwd(), f.root);
    assert!(wt.is_dir());
    // A fresh one without a name, clean, removed.
    let r = call(&ctx, "EnterWorktree", json!({})).await;
    assert!(!r.is_error, "{}", r.text());
    let path = std::path::PathBuf::from(r.data["path"].as_str().unwrap());
    let branch = r.data["branch"].as_str().unwrap().to_owned();
    assert!(branch.starts_with("worktree-wt-"), "{branch}");
    let r = call(&ctx, "ExitWorktree", json!({"action": "remove"})).await;
    assert!(!r.is_error, "{}", r.text());
    assert!(r.text().starts_with(&format!(
        "Exited and removed worktree at {}",
        path.display()
    )));
    assert!(!path.exists());
    assert_eq!(git(&f.root, &["branch", "--list", &branch]), "");
    assert_eq!(ctx.cwd(), f.root);
}

#[tokio::test]
async fn remove_refuses_unsaved_work_unless_discarded() {
    let f = git_repo();
    let prompter = approver(true);
    let ctx = with_prompter(&f, prompter.clone(), tool_core::PermissionMode::Default);
    call(&ctx, "EnterWorktree", json!({"name": "w"})).await;
    let wt = ctx.cwd();
    std::fs::write(wt.join("new.txt"), "n").unwrap();
    std::fs::write(wt.join("b.txt"), "b").unwrap();
    git(&wt, &["add", "b.txt"]);
    git(&wt, &["commit", "-q", "-m", "b"]);
    let r = call(&ctx, "ExitWorktree", json!({"action": "remove"})).await;
    assert_error(
        &r,
        "Worktree has 1 uncommitted file(s) and 1 commit(s) on worktree-w that are not in the starting commit.",
    );
    assert!(wt.is_dir());
    assert_eq!(ctx.cwd(), wt);
    let r = call(
        &ctx,
        "ExitWorktree",
        json!({"action": "remove", "discard_changes": true}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    assert!(
        r.text()
            .ends_with("Discarded 1 uncommitted file(s) and 1 commit(s)."),
        "{}",
        r.text()
    );
    assert_eq!(prompter.asked.lock().unwrap().len(), 1);
    assert!(!wt.exists());
}

#[tokio::test]
async fn bad_names_and_no_repository() {
    let f = Fixture::new();
    let ctx = f.ctx();
    let check = |name: &'static str, needle: &'static str| {
        let ctx = ctx.clone();
        async move {
            assert_error(
                &call(&ctx, "EnterWorktree", json!({"name": name})).await,
                needle,
            )
        }
    };
    check("a/../b", "each \"/\"-separated part must be").await;
    check("a b", "Invalid worktree name \"a b\"").await;
    check("", "Invalid worktree name").await;
    let long: &'static str = Box::leak("x".repeat(65).into_boxed_str());
    check(long, "at most 64 characters").await;
    check("ok", "EnterWorktree needs a git repository").await;
    assert_error(
        &call(&ctx, "ExitWorktree", json!({"action": "delete"})).await,
        "action",
    );
}

#[tokio::test]
async fn remove_refuses_when_the_state_cannot_be_verified() {
    let f = git_repo();
    let ctx = f.ctx();
    call(&ctx, "EnterWorktree", json!({"name": "gone"})).await;
    let wt = ctx.cwd();
    std::fs::remove_dir_all(&wt).unwrap();
    let r = call(&ctx, "ExitWorktree", json!({"action": "remove"})).await;
    assert_error(
        &r,
        &format!(
            "Could not verify the state of the worktree at {}",
            wt.display()
        ),
    );
    // Keeping it still returns the session to where it was.
    let r = call(&ctx, "ExitWorktree", json!({"action": "keep"})).await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(ctx.cwd(), f.root);
}

/// `.agent-tools` is repository content: a committed link (or a file) where worktrees go is
/// never followed, for EnterWorktree and for an agent's `isolation: "worktree"`; nothing is
/// checked out elsewhere and the session stays where it was.
#[tokio::test]
async fn links_and_files_in_the_way_of_worktrees_are_refused() {
    // (what is planted, the message)
    let cases: [(&str, &str); 5] = [
        (".agent-tools -> {out}", "is a symbolic link"),
        (".agent-tools/worktrees -> {out}", "is a symbolic link"),
        (
            ".agent-tools/worktrees/nested -> {out}",
            "is a symbolic link",
        ),
        (".agent-tools/worktrees = a file", "is in the way"),
        (".agent-tools = a file", "is in the way"),
    ];
    for (planted, message) in cases {
        let f = git_repo();
        let out = tempfile::tempdir().unwrap();
        let (path, target) = planted.split_once(" -> ").map_or_else(
            || (planted.split(" = ").next().unwrap(), None),
            |(p, t)| (p, Some(t)),
        );
        let at = f.root.join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        match target {
            Some(_) => std::os::unix::fs::symlink(out.path(), &at).unwrap(),
            None => std::fs::write(&at, "in the way").unwrap(),
        }
        let ctx = f.ctx();
        let name = if path.ends_with("nested") {
            "nested/x"
        } else {
            "x"
        };
        let r = call(&ctx, "EnterWorktree", json!({"name": name})).await;
        assert_error(&r, message);
        assert!(r.text().contains(&at.display().to_string()), "{}", r.text());
        assert_eq!(ctx.cwd(), f.root, "{planted}");
        assert_eq!(
            std::fs::read_dir(out.path()).unwrap().count(),
            0,
            "{planted}: something was checked out through the link"
        );
        assert!(!git(&f.root, &["worktree", "list"]).contains("worktrees/"));
    }
}
