//! EnterPlanMode and ExitPlanMode through the pool: the round trip restores the previous
//! mode, leaving needs a person, and sub-agents cannot enter.

use std::sync::Arc;

use serde_json::json;
use tool_core::PermissionMode;
use tools_agent::AgentIdentity;

use crate::{Fixture, approver, assert_error, call, with_prompter};

#[tokio::test]
async fn plan_mode_round_trip_restores_the_previous_mode() {
    let f = Fixture::new();
    let prompter = approver(true);
    let ctx = with_prompter(&f, prompter.clone(), PermissionMode::AcceptEdits);
    let r = call(&ctx, "ExitPlanMode", json!({})).await;
    assert_error(&r, tools_agent::testing::NOT_IN_PLAN_MODE);
    let r = call(&ctx, "EnterPlanMode", json!({})).await;
    assert!(!r.is_error, "{}", r.text());
    assert!(
        r.text()
            .starts_with(tools_agent::testing::ENTERED_PLAN_MODE)
    );
    assert!(r.text().contains("DO NOT write or edit any files yet"));
    assert_eq!(ctx.permission_mode(), PermissionMode::Plan);
    assert_eq!(r.data["previousMode"], "acceptEdits");
    let plan = tools_agent::plan_file(&ctx);
    assert!(plan.starts_with(f.state.join("plans")));
    assert!(r.text().contains(&plan.display().to_string()));
    // Entering twice would lose the mode to restore.
    assert_error(
        &call(&ctx, "EnterPlanMode", json!({})).await,
        "You are already in plan mode",
    );
    // No plan written yet.
    assert_error(
        &call(&ctx, "ExitPlanMode", json!({})).await,
        "No plan found at",
    );
    // The permission engine lets the plan file be written in plan mode.
    assert_eq!(
        ctx.permissions().check_write_path(&plan, &ctx),
        tool_core::PermissionDecision::Allow
    );
    std::fs::create_dir_all(plan.parent().unwrap()).unwrap();
    std::fs::write(&plan, "1. Do the thing\n").unwrap();
    let r = call(
        &ctx,
        "ExitPlanMode",
        json!({"allowedPrompts": [{"tool": "Bash", "prompt": "run tests"}], "extra": 1}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    assert!(r.text().starts_with(tools_agent::testing::PLAN_APPROVED));
    assert!(r.text().contains("## Approved Plan:\n1. Do the thing"));
    assert!(r.text().contains("- Bash: run tests"));
    // The question shows the plan, the mode it returns to and the permissions it asks for.
    let asked = prompter.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].starts_with("Exit plan mode and start implementing this plan? Approving returns the session to the acceptEdits permission mode"),
        "{}",
        asked[0]
    );
    assert!(asked[0].contains("\n1. Do the thing"), "{}", asked[0]);
    assert!(asked[0].contains("- Bash: run tests"), "{}", asked[0]);
    assert_eq!(ctx.permission_mode(), PermissionMode::AcceptEdits);
}

#[tokio::test]
async fn exit_plan_mode_needs_a_person() {
    let f = Fixture::new();
    // Headless, even in bypassPermissions mode: the user must approve the plan.
    let ctx = f.builder().mode(PermissionMode::BypassPermissions).build();
    call(&ctx, "EnterPlanMode", json!({})).await;
    let plan = tools_agent::plan_file(&ctx);
    std::fs::create_dir_all(plan.parent().unwrap()).unwrap();
    std::fs::write(&plan, "plan").unwrap();
    let r = call(&ctx, "ExitPlanMode", json!({})).await;
    assert_error(&r, "ExitPlanMode needs a person to answer");
    assert_eq!(ctx.permission_mode(), PermissionMode::Plan);
    // A user who says no keeps the session in plan mode.
    let ctx = with_prompter(&f, approver(false), PermissionMode::Default);
    call(&ctx, "EnterPlanMode", json!({})).await;
    let r = call(&ctx, "ExitPlanMode", json!({})).await;
    assert_error(&r, "The user denied permission to use ExitPlanMode.");
    assert_eq!(ctx.permission_mode(), PermissionMode::Plan);
}

#[tokio::test]
async fn enter_plan_mode_refuses_sub_agents() {
    let f = Fixture::new();
    let ctx = f
        .builder()
        .service(Arc::new(AgentIdentity {
            agent_id: "a1".into(),
        }))
        .build();
    assert_error(
        &call(&ctx, "EnterPlanMode", json!({})).await,
        tools_agent::testing::PLAN_MODE_IN_AGENT,
    );
    assert_eq!(ctx.permission_mode(), PermissionMode::Default);
}
