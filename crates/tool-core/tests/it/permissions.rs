//! The rule forms (`Tool`, `Tool(content)`, `Bash(prefix:*)`, wildcards, paths) and each
//! step of the evaluation order of `PermissionEngine::decide`, as they reach the model
//! through the execution path.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{
    PermissionAnswer, PermissionMode, PermissionPrompter, PermissionRequest, PermissionRule,
    ToolContext, ToolPool,
};

use crate::fixtures::{Fetch, Files, Question, Shell, arc, context, tmp};

fn pool() -> ToolPool {
    ToolPool::new(vec![arc(Shell), arc(Files), arc(Fetch), arc(Question)])
}

/// What a call came to: `Ok(())` when it ran, `Err(text)` with the error text otherwise.
async fn outcome(ctx: &ToolContext, tool: &str, input: Value) -> Result<(), String> {
    let result = pool().call(tool, input, ctx).await;
    if result.is_error {
        Err(result.text())
    } else {
        Ok(())
    }
}

/// Runs `tool(input)` under `mode` and `rules` in a fresh temp dir (`{dir}` in string inputs
/// becomes its path) and checks the outcome: `"allow"`, or an error containing `expected`.
#[track_caller]
fn check(mode: PermissionMode, rules: &[(&str, &str)], tool: &str, input: Value, expected: &str) {
    let (_guard, dir) = tmp();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let input: Value = serde_json::from_str(
        &input
            .to_string()
            .replace("{dir}", &dir.display().to_string()),
    )
    .unwrap();
    let rules: Vec<(String, String)> = rules
        .iter()
        .map(|(b, r)| {
            (
                b.to_string(),
                r.replace("{dir}", &dir.display().to_string()),
            )
        })
        .collect();
    let rules: Vec<(&str, &str)> = rules
        .iter()
        .map(|(b, r)| (b.as_str(), r.as_str()))
        .collect();
    let ctx = context(&dir, mode, &rules);
    let got = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(outcome(&ctx, tool, input.clone()));
    match (got, expected) {
        (Ok(()), "allow") => {}
        (Err(text), e) if e != "allow" && text.contains(e) => {}
        (got, e) => panic!("{tool} {input} under {mode} {rules:?}: got {got:?}, expected {e:?}"),
    }
}

use PermissionMode::{AcceptEdits, BypassPermissions, Default as Def, DontAsk, Plan};

#[test]
fn step_1a_blanket_deny_wins_over_everything() {
    let denied = "Permission to use Shell has been denied.";
    check(
        Def,
        &[("deny", "Shell")],
        "Shell",
        json!({"command": "ls"}),
        denied,
    );
    check(
        Def,
        &[("deny", "Shell"), ("allow", "Shell(ls)")],
        "Shell",
        json!({"command": "ls"}),
        denied,
    );
    check(
        BypassPermissions,
        &[("deny", "Shell")],
        "Shell",
        json!({"command": "ls"}),
        denied,
    );
    check(
        Def,
        &[("deny", "Shell()")],
        "Shell",
        json!({"command": "ls"}),
        denied,
    );
    check(
        Def,
        &[("deny", "Shell(*)")],
        "Shell",
        json!({"command": "ls"}),
        denied,
    );
}

#[test]
fn step_1b_blanket_ask_holds_in_bypass() {
    check(
        BypassPermissions,
        &[("ask", "Shell")],
        "Shell",
        json!({"command": "ls"}),
        "requires approval to use Shell",
    );
    check(
        Def,
        &[("ask", "Shell"), ("allow", "Shell")],
        "Shell",
        json!({"command": "ls"}),
        "requires approval",
    );
}

#[test]
fn step_1d_content_deny_holds_in_bypass() {
    let denied = "Permission to use Shell with command rm -rf x has been denied.";
    check(
        Def,
        &[("deny", "Shell(rm *)")],
        "Shell",
        json!({"command": "rm -rf x"}),
        denied,
    );
    check(
        BypassPermissions,
        &[("deny", "Shell(rm:*)")],
        "Shell",
        json!({"command": "rm -rf x"}),
        denied,
    );
}

#[test]
fn deny_wins_over_a_more_specific_allow() {
    // Deny beats ask beats allow, however specific the allow rule is.
    check(
        Def,
        &[("allow", "Shell(aws s3 ls)"), ("deny", "Shell(aws *)")],
        "Shell",
        json!({"command": "aws s3 ls"}),
        "has been denied",
    );
    check(
        Def,
        &[("allow", "Shell(aws s3 ls)"), ("deny", "Shell(aws *)")],
        "Shell",
        json!({"command": "aws"}),
        "has been denied",
    );
}

#[test]
fn step_1e_interaction_holds_in_bypass() {
    check(
        BypassPermissions,
        &[],
        "Question",
        json!({}),
        "needs a person to answer",
    );
    check(
        BypassPermissions,
        &[("allow", "Question")],
        "Question",
        json!({}),
        "needs a person to answer",
    );
}

#[test]
fn step_1f_content_ask_rule_holds_in_bypass() {
    check(
        BypassPermissions,
        &[("ask", "Shell(git push *)")],
        "Shell",
        json!({"command": "git push origin"}),
        "applies even in bypassPermissions",
    );
    check(
        BypassPermissions,
        &[("ask", "Shell(git push *)")],
        "Shell",
        json!({"command": "git status"}),
        "allow",
    );
}

#[test]
fn step_1g_protected_paths_hold_in_bypass() {
    for path in [
        "{dir}/.git/config",
        "{dir}/.agent-tools/settings.json",
        "{dir}/.bashrc",
        "{dir}/.GIT/hooks/pre-commit",
    ] {
        check(
            BypassPermissions,
            &[],
            "Files",
            json!({"path": path, "write": true}),
            "protected path",
        );
        check(
            AcceptEdits,
            &[("allow", "Edit(//**)")],
            "Files",
            json!({"path": path, "write": true}),
            "protected path",
        );
    }
}

#[test]
fn step_2a_bypass_allows_what_would_ask() {
    check(
        BypassPermissions,
        &[],
        "Shell",
        json!({"command": "make"}),
        "allow",
    );
    check(
        BypassPermissions,
        &[],
        "Files",
        json!({"path": "/etc/hosts"}),
        "allow",
    );
    check(
        BypassPermissions,
        &[],
        "Files",
        json!({"path": "/tmp/elsewhere/x", "write": true}),
        "allow",
    );
}

/// Plan mode is read-only in every session: writes and commands that change something are
/// refused (not asked), the plan file stays writable, reads are allowed — also in a session
/// that started in bypassPermissions (unlike the reference).
#[test]
fn plan_mode_is_read_only() {
    for rules in [&[][..], &[("allow", "Shell"), ("allow", "Files")][..]] {
        check(
            Plan,
            rules,
            "Shell",
            json!({"command": "make"}),
            "Plan mode is read-only",
        );
        check(
            Plan,
            rules,
            "Files",
            json!({"path": "{dir}/src/a.rs", "write": true}),
            "Plan mode is read-only",
        );
        check(
            Plan,
            rules,
            "Files",
            json!({"path": "{dir}/src/a.rs"}),
            "allow",
        );
        check(
            Plan,
            rules,
            "Files",
            json!({"path": "{dir}/.state/plans/test.md", "write": true}),
            "allow",
        );
    }
    // A bypass session that entered plan mode.
    let (_guard, dir) = tmp();
    let ctx = context(&dir, BypassPermissions, &[]);
    ctx.set_permission_mode(Plan);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (tool, input) in [
        ("Shell", json!({"command": "make"})),
        (
            "Files",
            json!({"path": format!("{}/x", dir.display()), "write": true}),
        ),
    ] {
        let got = rt.block_on(outcome(&ctx, tool, input));
        assert!(
            got.as_ref()
                .is_err_and(|e| e.contains("Plan mode is read-only")),
            "{tool}: {got:?}"
        );
    }
    ctx.set_permission_mode(BypassPermissions);
    let got = rt.block_on(outcome(&ctx, "Shell", json!({"command": "make"})));
    assert!(got.is_ok(), "{got:?}");
}

#[test]
fn step_2b_blanket_allow() {
    check(
        Def,
        &[("allow", "Shell")],
        "Shell",
        json!({"command": "make"}),
        "allow",
    );
    check(
        Def,
        &[("allow", "Files")],
        "Files",
        json!({"path": "/etc/hosts"}),
        "allow",
    );
}

#[test]
fn step_3_what_remains_asks_and_headless_denies_with_the_way_out() {
    check(
        Def,
        &[],
        "Shell",
        json!({"command": "make"}),
        "add the allow rule \"Shell(make)\"",
    );
    check(
        Def,
        &[],
        "Shell",
        json!({"command": "make"}),
        "or switch the session to the bypassPermissions mode",
    );
    check(
        Def,
        &[],
        "Files",
        json!({"path": "{dir}/src/a.rs", "write": true}),
        "switch the session to the acceptEdits permission mode",
    );
}

#[test]
fn step_4_dont_ask_denies() {
    check(
        DontAsk,
        &[],
        "Shell",
        json!({"command": "make"}),
        "the permission mode is dontAsk",
    );
    check(
        DontAsk,
        &[("allow", "Shell(make)")],
        "Shell",
        json!({"command": "make"}),
        "allow",
    );
}

#[test]
fn accept_edits_allows_writes_inside_only() {
    check(
        AcceptEdits,
        &[],
        "Files",
        json!({"path": "{dir}/src/a.rs", "write": true}),
        "allow",
    );
    check(
        AcceptEdits,
        &[],
        "Files",
        json!({"path": "/tmp/outside-agent-tools-test/a", "write": true}),
        "outside allowed working directories",
    );
}

#[test]
fn command_rule_forms() {
    // exact
    check(
        Def,
        &[("allow", "Shell(npm test)")],
        "Shell",
        json!({"command": "npm test"}),
        "allow",
    );
    check(
        Def,
        &[("allow", "Shell(npm test)")],
        "Shell",
        json!({"command": "npm test -- --watch"}),
        "no one is available",
    );
    // legacy prefix
    check(
        Def,
        &[("allow", "Shell(npm run test:*)")],
        "Shell",
        json!({"command": "npm run test --ci"}),
        "allow",
    );
    check(
        Def,
        &[("allow", "Shell(npm run test:*)")],
        "Shell",
        json!({"command": "npm run testing"}),
        "no one is available",
    );
    // wildcard, with the optional trailing ` *`
    check(
        Def,
        &[("allow", "Shell(git *)")],
        "Shell",
        json!({"command": "git"}),
        "allow",
    );
    check(
        Def,
        &[("allow", "Shell(* --version)")],
        "Shell",
        json!({"command": "node --version"}),
        "allow",
    );
    // escapes in the rule grammar
    check(
        Def,
        &[("allow", "Shell(echo \\(x\\))")],
        "Shell",
        json!({"command": "echo (x)"}),
        "allow",
    );
}

#[test]
fn legacy_tool_names_in_rules() {
    // A rule naming an alias applies to the tool.
    check(
        Def,
        &[("deny", "OldShell")],
        "Shell",
        json!({"command": "ls"}),
        "has been denied",
    );
    check(
        Def,
        &[("deny", "Task")],
        "Shell",
        json!({"command": "ls"}),
        "no one is available",
    );
    assert_eq!(
        PermissionRule::parse("KillShell(x)").unwrap().tool,
        "TaskStop"
    );
}

#[test]
fn path_rule_forms() {
    // //abs
    check(
        Def,
        &[("allow", "Read(//etc/**)")],
        "Files",
        json!({"path": "/etc/hosts"}),
        "allow",
    );
    check(
        Def,
        &[("deny", "Read(//etc/**)")],
        "Files",
        json!({"path": "/etc/hosts"}),
        "Permission to read /etc/hosts has been denied.",
    );
    // /x relative to the rule's source root
    check(
        Def,
        &[("deny", "Read(/src/**)")],
        "Files",
        json!({"path": "{dir}/src/a.rs"}),
        "has been denied",
    );
    check(
        Def,
        &[("deny", "Read(/src/**)")],
        "Files",
        json!({"path": "{dir}/other/src/a.rs"}),
        "allow",
    );
    // ./x and bare x relative to the cwd; bare names match at any depth
    check(
        Def,
        &[("deny", "Read(./secret.txt)")],
        "Files",
        json!({"path": "{dir}/secret.txt"}),
        "has been denied",
    );
    check(
        Def,
        &[("deny", "Read(./secret.txt)")],
        "Files",
        json!({"path": "{dir}/src/secret.txt"}),
        "allow",
    );
    check(
        Def,
        &[("deny", "Read(*.pem)")],
        "Files",
        json!({"path": "{dir}/src/k.pem"}),
        "has been denied",
    );
    // Beyond the reference: an unrooted deny also protects files of that name outside cwd.
    check(
        Def,
        &[("deny", "Read(.env)"), ("allow", "Read(//tmp/**)")],
        "Files",
        json!({"path": "/tmp/x/.env"}),
        "has been denied",
    );
    // Read ask rule
    check(
        BypassPermissions,
        &[("ask", "Read(//etc/**)")],
        "Files",
        json!({"path": "/etc/hosts"}),
        "requires approval to read",
    );
    // An Edit allow implies read.
    check(
        Def,
        &[("allow", "Edit(//etc/**)")],
        "Files",
        json!({"path": "/etc/hosts"}),
        "allow",
    );
    // Edit deny and allow.
    check(
        AcceptEdits,
        &[("deny", "Edit(/src/**)")],
        "Files",
        json!({"path": "{dir}/src/a.rs", "write": true}),
        "Permission to edit",
    );
    check(
        Def,
        &[("allow", "Edit(/src/**)")],
        "Files",
        json!({"path": "{dir}/src/a.rs", "write": true}),
        "allow",
    );
}

#[test]
fn home_rooted_rules() {
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let path = format!("{home}/.agent-tools-test-never-created/key");
    check(
        Def,
        &[("deny", "Read(~/.agent-tools-test-never-created/**)")],
        "Files",
        json!({"path": path}),
        "has been denied",
    );
}

#[test]
fn reads_inside_and_outside() {
    check(
        Def,
        &[],
        "Files",
        json!({"path": "{dir}/src/a.rs"}),
        "allow",
    );
    check(Def, &[], "Files", json!({"path": "src/a.rs"}), "allow");
    check(
        Def,
        &[],
        "Files",
        json!({"path": "../../../../etc/passwd"}),
        "outside allowed working directories",
    );
    check(
        Def,
        &[],
        "Files",
        json!({"path": "{dir}/.state/tool-results/x.txt"}),
        "allow",
    );
}

#[test]
fn symlinks_are_resolved_before_containment() {
    let (_guard, dir) = tmp();
    std::os::unix::fs::symlink("/etc", dir.join("link")).unwrap();
    let ctx = context(&dir, Def, &[]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let got = rt.block_on(outcome(
        &ctx,
        "Files",
        json!({"path": dir.join("link/passwd")}),
    ));
    assert!(
        got.unwrap_err()
            .contains("outside allowed working directories")
    );
    // A deny rule on the target also catches the link.
    let ctx = context(&dir, BypassPermissions, &[("deny", "Read(//etc/**)")]);
    let got = rt.block_on(outcome(
        &ctx,
        "Files",
        json!({"path": dir.join("link/hosts")}),
    ));
    assert!(got.unwrap_err().contains("has been denied"));
}

#[test]
fn domain_and_mcp_rule_forms() {
    check(
        Def,
        &[("allow", "Fetch(domain:docs.rs)")],
        "Fetch",
        json!({"host": "docs.rs"}),
        "allow",
    );
    check(
        Def,
        &[("allow", "Fetch(domain:docs.rs)")],
        "Fetch",
        json!({"host": "evil.rs"}),
        "add the allow rule \"Fetch(domain:evil.rs)\"",
    );
    check(
        Def,
        &[("deny", "Fetch(domain:evil.rs)")],
        "Fetch",
        json!({"host": "evil.rs"}),
        "Fetch denied access to domain:evil.rs.",
    );
    for rule in ["mcp__github", "mcp__github__*", "mcp__github__create_issue"] {
        assert!(
            PermissionRule::parse(rule)
                .unwrap()
                .names_tool("mcp__github__create_issue", &[]),
            "{rule}"
        );
    }
    assert!(
        !PermissionRule::parse("mcp__github__list")
            .unwrap()
            .names_tool("mcp__github__create_issue", &[])
    );
}

struct Recorder {
    answer: PermissionAnswer,
    asked: std::sync::Mutex<Vec<PermissionRequest>>,
}

#[async_trait]
impl PermissionPrompter for Recorder {
    async fn ask(&self, request: &PermissionRequest) -> PermissionAnswer {
        self.asked.lock().unwrap().push(request.clone());
        self.answer.clone()
    }
}

fn with_prompter(dir: &Path, answer: PermissionAnswer) -> (ToolContext, Arc<Recorder>) {
    let recorder = Arc::new(Recorder {
        answer,
        asked: Default::default(),
    });
    let ctx = context(dir, Def, &[]);
    ctx.services()
        .insert::<Arc<dyn PermissionPrompter>>(recorder.clone());
    (ctx, recorder)
}

#[tokio::test]
async fn a_person_can_allow_once_always_or_deny() {
    let (_guard, dir) = tmp();
    let (ctx, rec) = with_prompter(&dir, PermissionAnswer::Allow);
    assert_eq!(
        outcome(&ctx, "Shell", json!({"command": "make"})).await,
        Ok(())
    );
    assert_eq!(
        rec.asked.lock().unwrap()[0].suggestions,
        vec![PermissionRule::with_content("Shell", "make")]
    );

    let (ctx, rec) = with_prompter(
        &dir,
        PermissionAnswer::AllowAlways(vec![PermissionRule::with_content("Shell", "make")]),
    );
    assert_eq!(
        outcome(&ctx, "Shell", json!({"command": "make"})).await,
        Ok(())
    );
    assert_eq!(
        outcome(&ctx, "Shell", json!({"command": "make"})).await,
        Ok(())
    );
    assert_eq!(
        rec.asked.lock().unwrap().len(),
        1,
        "the session rule answers the second call"
    );
    assert!(
        outcome(&ctx, "Shell", json!({"command": "make install"}))
            .await
            .is_ok()
    );
    assert_eq!(
        rec.asked.lock().unwrap().len(),
        2,
        "an exact rule does not widen"
    );

    let (ctx, _) = with_prompter(&dir, PermissionAnswer::Deny(None));
    let err = outcome(&ctx, "Shell", json!({"command": "make"}))
        .await
        .unwrap_err();
    assert!(
        err.contains("The user denied permission to use Shell."),
        "{err}"
    );
}

#[test]
fn blanket_deny_hides_and_mode_names_parse() {
    use tool_core::{RuleBehavior, RuleSource, RuleSourceKind, SourcedRule};
    let source = RuleSource {
        kind: RuleSourceKind::CliArg,
        file: None,
        root: "/".into(),
    };
    let engine = tool_core::PermissionEngine::new(vec![
        SourcedRule {
            rule: PermissionRule::tool("Shell"),
            behavior: RuleBehavior::Deny,
            source: source.clone(),
        },
        SourcedRule {
            rule: PermissionRule::with_content("Files", "//x/**"),
            behavior: RuleBehavior::Deny,
            source,
        },
    ]);
    assert!(engine.is_hidden(arc(Shell).as_ref()));
    assert!(
        !engine.is_hidden(arc(Files).as_ref()),
        "a scoped deny leaves the tool visible"
    );
    for mode in PermissionMode::ALL {
        assert_eq!(mode.as_str().parse::<PermissionMode>(), Ok(mode));
    }
    assert!("yolo".parse::<PermissionMode>().is_err());
}

/// A tool of another vocabulary that does what `Shell` and `Files` do.
struct Patch;

#[async_trait::async_trait]
impl tool_core::TypedTool for Patch {
    type Input = serde_json::Value;
    type Output = String;
    const META: tool_core::ToolMeta = tool_core::ToolMeta::new("patch")
        .checked_as(&["Shell", "Files"])
        .category(tool_core::ToolCategory::FileSystem);
    async fn call(
        &self,
        _: serde_json::Value,
        _: &tool_core::ToolContext,
    ) -> Result<tool_core::ToolResult<String>, tool_core::ToolError> {
        Ok(tool_core::ToolResult::ok(String::new()))
    }
}

#[test]
fn blanket_rules_on_the_tools_a_tool_is_checked_as_govern_it() {
    use tool_core::{RuleBehavior, RuleSource, RuleSourceKind, SourcedRule};
    let engine = |rules: &[(&str, RuleBehavior)]| {
        let source = RuleSource {
            kind: RuleSourceKind::CliArg,
            file: None,
            root: "/".into(),
        };
        tool_core::PermissionEngine::new(
            rules
                .iter()
                .map(|(tool, behavior)| SourcedRule {
                    rule: PermissionRule::tool(*tool),
                    behavior: *behavior,
                    source: source.clone(),
                })
                .collect(),
        )
    };
    let patch = arc(Patch);
    let check = |rules: &[(&str, RuleBehavior)], behavior: RuleBehavior, expected: bool| {
        assert_eq!(
            engine(rules)
                .blanket_rule(patch.as_ref(), behavior)
                .is_some(),
            expected,
            "{rules:?} {behavior:?}"
        );
    };
    use RuleBehavior::{Allow, Ask, Deny};
    check(&[("Shell", Deny)], Deny, true);
    check(&[("Files", Deny)], Deny, true);
    check(&[("patch", Deny)], Deny, true);
    check(&[("Other", Deny)], Deny, false);
    check(&[("Files", Ask)], Ask, true);
    check(&[("Shell", Allow)], Allow, false);
    check(&[("Shell", Allow), ("Files", Allow)], Allow, true);
    check(&[("patch", Allow)], Allow, true);
    assert!(engine(&[("Files", Deny)]).is_hidden(patch.as_ref()));
    assert!(!engine(&[("Files", Allow)]).is_hidden(patch.as_ref()));
}

/// Rules a host adds in code, and the hint it gives: the builder's `allow`/`deny`/`ask`
/// take effect as "the host program"'s rules, and refusals use the host's words.
#[tokio::test]
async fn host_rules_and_the_hosts_hint() {
    let (_guard, dir) = tmp();
    let ctx = ToolContext::builder(&dir)
        .allow("Shell(npm test)")
        .deny("Fetch(domain:evil.example)")
        .ask("Shell(npm publish)")
        .allow("   ")
        .build();
    assert_eq!(
        outcome(&ctx, "Shell", json!({"command": "npm test"})).await,
        Ok(())
    );
    let denied = outcome(&ctx, "Fetch", json!({"host": "evil.example"}))
        .await
        .unwrap_err();
    assert!(denied.contains("denied access"), "{denied}");
    let asked = outcome(&ctx, "Shell", json!({"command": "npm publish"}))
        .await
        .unwrap_err();
    assert!(asked.contains("the host program"), "{asked}");
    // Nothing allows `make`: the neutral hint names the rule and the mode, no flag or file.
    let neutral = outcome(&ctx, "Shell", json!({"command": "make"}))
        .await
        .unwrap_err();
    assert!(
        neutral.contains("add the allow rule \"Shell(make)\""),
        "{neutral}"
    );
    assert!(neutral.contains("bypassPermissions"), "{neutral}");
    for flag in ["--allow", "--mode", "settings.json", "agent-tools"] {
        assert!(!neutral.contains(flag), "{flag} in {neutral}");
    }
    assert_eq!(
        ctx.permissions()
            .rules()
            .iter()
            .filter(|r| r.source.kind == tool_core::RuleSourceKind::Host)
            .count(),
        3,
        "a blank rule adds nothing"
    );

    struct Mine;
    impl tool_core::AllowHint for Mine {
        fn how_to_allow(&self, rule: &PermissionRule, _kind: &tool_core::AskKind) -> String {
            format!("Ask the user to click Allow for {rule}.")
        }
    }
    let ctx = ToolContext::builder(&dir)
        .allow_hint(Arc::new(Mine))
        .build();
    let mine = outcome(&ctx, "Shell", json!({"command": "make"}))
        .await
        .unwrap_err();
    assert!(
        mine.contains("approve it: Shell command needs approval: make. Ask the user to click Allow for Shell(make)."),
        "{mine}"
    );
}

/// A prompter given with the builder's typed method is the one asked.
#[tokio::test]
async fn the_builders_prompter_is_asked() {
    struct Yes;
    #[async_trait]
    impl PermissionPrompter for Yes {
        async fn ask(&self, _request: &PermissionRequest) -> PermissionAnswer {
            PermissionAnswer::Allow
        }
    }
    let (_guard, dir) = tmp();
    let ctx = ToolContext::builder(&dir).prompter(Arc::new(Yes)).build();
    assert_eq!(
        outcome(&ctx, "Shell", json!({"command": "make"})).await,
        Ok(())
    );
    assert!(
        ctx.services().unread().is_empty(),
        "{:?}",
        ctx.services().unread()
    );
}
