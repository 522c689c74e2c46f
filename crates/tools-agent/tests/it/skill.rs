//! Skill: discovery in the project and user folders, the reference's validation messages,
//! permissions, argument substitution and allowed-tools rules.

use serde_json::{Value, json};
use tool_core::{
    PermissionEngine, PermissionRule, RuleBehavior, RuleSource, RuleSourceKind, SourcedRule,
};

use crate::{Fixture, assert_error, call};

fn write_skill(dir: &std::path::Path, folder: &str, text: &str) {
    let d = dir.join(folder);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("SKILL.md"), text).unwrap();
}

fn fixture() -> Fixture {
    let f = Fixture::new();
    let project = f.path(".agent-tools/skills");
    write_skill(
        &project,
        "pdf",
        "---\nname: pdf\ndescription: Work with PDF files\n---\nUse pdftotext on $ARGUMENTS.\n",
    );
    write_skill(
        &project,
        "release",
        "---\ndescription: Cut a release\nallowed-tools: [\"Bash(git tag:*)\"]\n---\nTag and push.\n",
    );
    write_skill(
        &project,
        "manual",
        "---\nname: manual\ndescription: only the user\ndisable-model-invocation: true\n---\nSecret steps.\n",
    );
    write_skill(
        &project,
        "empty",
        "---\nname: empty\ndescription: no body\n---\n",
    );
    write_skill(&project, "broken", "---\nname broken\n---\nx\n");
    let user = f.state.join("skills");
    write_skill(
        &user,
        "pdf",
        "---\nname: pdf\ndescription: the user's pdf\n---\nUser version.\n",
    );
    write_skill(
        &user,
        "notes",
        "---\nname: notes\ndescription: Take notes\n---\nWrite notes about $ARGUMENTS\n",
    );
    f.approve_project();
    f
}

#[tokio::test]
async fn validation_messages() {
    let f = fixture();
    let ctx = f.ctx();
    let check = |input: Value, needle: &'static str| {
        let ctx = ctx.clone();
        async move { assert_error(&call(&ctx, "Skill", input).await, needle) }
    };
    check(json!({"skill": " / "}), "Invalid skill format:  / ").await;
    check(json!({"skill": "nope"}), "Unknown skill: nope").await;
    check(
        json!({"skill": "manual"}),
        "Skill manual cannot be used with Skill tool due to disable-model-invocation",
    )
    .await;
    check(
        json!({"skill": "empty"}),
        "Skill empty is not a prompt-based skill",
    )
    .await;
    check(json!({"skill": "broken"}), "Skill broken cannot be loaded").await;
    check(
        json!({"skill": "pdf", "extra": 1}),
        "An unexpected parameter `extra` was provided",
    )
    .await;
}

#[tokio::test]
async fn the_persons_skills_win_and_the_projects_keep_a_distinct_name() {
    let f = fixture();
    let ctx = f.ctx();
    let r = call(
        &ctx,
        "Skill",
        json!({"skill": "/pdf", "args": "report.pdf"}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    assert!(
        r.text().starts_with("Launching skill: pdf\n"),
        "{}",
        r.text()
    );
    assert!(
        r.text().contains("User version."),
        "the person's skill wins: {}",
        r.text()
    );
    let r = call(
        &ctx,
        "Skill",
        json!({"skill": "project:pdf", "args": "report.pdf"}),
    )
    .await;
    assert_eq!(r.data["instructions"], "Use pdftotext on report.pdf.");
    let r = call(
        &ctx,
        "Skill",
        json!({"skill": "notes", "args": "the meeting"}),
    )
    .await;
    assert_eq!(r.data["instructions"], "Write notes about the meeting");
    let names: Vec<String> = tools_agent::testing::list_skills(&ctx)
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(
        names,
        [
            "notes",
            "pdf",
            "broken",
            "empty",
            "manual",
            "project:pdf",
            "release"
        ]
    );
    let listing = tools_agent::skill_listing(&ctx, 10_000);
    assert_eq!(
        listing,
        "- notes: Take notes\n- pdf: the user's pdf\n- empty: no body\n- project:pdf: Work with PDF files\n- release: Cut a release\n"
    );
    assert!(tools_agent::skill_listing(&ctx, 30).ends_with("(4 more skills not listed)\n"));
}

#[tokio::test]
async fn permissions() {
    let f = fixture();
    // A skill that grants itself tools asks; headless that is a denial naming the rule.
    let ctx = f.ctx();
    let r = call(&ctx, "Skill", json!({"skill": "release"})).await;
    assert_error(&r, "Execute skill: release");
    assert!(r.text().contains("Skill(release)"), "{}", r.text());
    // Rules decide first: deny by prefix, allow by name.
    let rule = |text: &str, behavior| SourcedRule {
        rule: PermissionRule::parse(text).unwrap(),
        behavior,
        source: RuleSource {
            kind: RuleSourceKind::CliArg,
            file: None,
            root: f.root.clone(),
        },
    };
    let ctx = f
        .builder()
        .permissions(PermissionEngine::new(vec![
            rule("Skill(pdf:*)", RuleBehavior::Deny),
            rule("Skill(release)", RuleBehavior::Allow),
        ]))
        .build();
    assert_error(
        &call(&ctx, "Skill", json!({"skill": "pdf"})).await,
        "Skill execution blocked by permission rules",
    );
    let r = call(&ctx, "Skill", json!({"skill": "release"})).await;
    assert!(!r.is_error, "{}", r.text());
    assert!(
        r.text()
            .contains("Allowed tools for this skill: Bash(git tag:*)")
    );
    // Its allowed-tools are now session rules.
    let added = ctx.permissions().rules();
    assert!(added.iter().any(
        |r| r.rule == PermissionRule::with_content("Bash", "git tag:*")
            && r.behavior == RuleBehavior::Allow
            && r.source.kind == RuleSourceKind::Session
    ));
}
