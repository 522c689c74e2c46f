//! The v2-todo task list: create, get, list, update, dependencies, owners, deletion, and two
//! processes writing one list at the same time.
#![cfg(feature = "v2-todo")]

use std::sync::Arc;

use serde_json::{Value, json};
use tool_core::ToolContext;
use tools_agent::TaskListId;
use tools_agent::testing::{TaskStore, TeamStore};

use crate::{Fixture, assert_error, call};

fn shared(f: &Fixture) -> ToolContext {
    f.builder()
        .service(Arc::new(TaskListId("shared".into())))
        .build()
}

async fn create(ctx: &ToolContext, subject: &str) -> String {
    let r = call(
        ctx,
        "TaskCreate",
        json!({"subject": subject, "description": format!("do {subject}")}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    r.data["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn create_get_list_update() {
    let f = Fixture::new();
    let ctx = f.ctx();
    assert_eq!(
        call(&ctx, "TaskList", json!({})).await.text(),
        "No tasks found"
    );
    let r = call(&ctx, "TaskCreate", json!({"subject": "Write parser", "description": "the parser", "activeForm": "Writing parser", "metadata": {"k": 1}})).await;
    assert_eq!(r.text(), "Task #1 created successfully: Write parser");
    create(&ctx, "Test parser").await;
    create(&ctx, "Ship").await;
    let r = call(
        &ctx,
        "TaskUpdate",
        json!({"taskId": "2", "addBlockedBy": ["1"], "owner": "alice"}),
    )
    .await;
    assert_eq!(r.text(), "Updated task #2 owner, blockedBy");
    let r = call(
        &ctx,
        "TaskUpdate",
        json!({"taskId": "#3", "addBlockedBy": ["2"], "status": "in_progress"}),
    )
    .await;
    assert_eq!(r.text(), "Updated task #3 status, blockedBy");
    let r = call(&ctx, "TaskGet", json!({"taskId": "2"})).await;
    assert_eq!(
        r.text(),
        "Task #2: Test parser\nStatus: pending\nDescription: do Test parser\nOwner: alice\nBlocked by: #1\nBlocks: #3"
    );
    assert_eq!(
        call(&ctx, "TaskList", json!({})).await.text(),
        "#1 [pending] Write parser\n#2 [pending] Test parser (alice) [blocked by #1]\n#3 [in_progress] Ship [blocked by #2]"
    );
    // Completing a blocker unblocks what it blocks.
    call(
        &ctx,
        "TaskUpdate",
        json!({"taskId": "1", "status": "completed"}),
    )
    .await;
    let list = call(&ctx, "TaskList", json!({})).await.text();
    assert!(
        list.contains("#2 [pending] Test parser (alice)\n"),
        "{list}"
    );
    // Metadata merges; null removes a key.
    let r = call(
        &ctx,
        "TaskUpdate",
        json!({"taskId": "1", "metadata": {"k": null, "j": "x"}}),
    )
    .await;
    assert_eq!(r.data["metadata"], json!({"j": "x"}));
    let r = call(
        &ctx,
        "TaskUpdate",
        json!({"taskId": "1", "status": "completed"}),
    )
    .await;
    assert_eq!(
        r.text(),
        "Task #1 unchanged: the values given are the current ones"
    );
    // Failures the reference reports as ordinary results.
    let r = call(
        &ctx,
        "TaskUpdate",
        json!({"taskId": "9", "status": "completed"}),
    )
    .await;
    assert!(!r.is_error);
    assert_eq!(r.text(), "Task #9 not found");
    let r = call(&ctx, "TaskGet", json!({"taskId": "9"})).await;
    assert!(!r.is_error);
    assert_eq!(r.text(), "Task not found");
}

#[tokio::test]
async fn dependency_and_input_errors() {
    let f = Fixture::new();
    let ctx = f.ctx();
    create(&ctx, "a").await;
    create(&ctx, "b").await;
    let check = |input: Value, needle: &'static str| {
        let ctx = ctx.clone();
        async move { assert_error(&call(&ctx, "TaskUpdate", input).await, needle) }
    };
    check(
        json!({"taskId": "1", "addBlocks": ["7"]}),
        "addBlocks: task #7 does not exist. Use TaskList to see the task ids.",
    )
    .await;
    check(
        json!({"taskId": "1", "addBlockedBy": ["1"]}),
        "addBlockedBy: task #1 cannot depend on itself",
    )
    .await;
    check(json!({"taskId": "1", "status": "done"}), "status").await;
    check(
        json!({"taskId": "1", "subject": " "}),
        "subject must not be empty when given",
    )
    .await;
    check(
        json!({"taskId": "1", "bogus": 1}),
        "An unexpected parameter `bogus` was provided",
    )
    .await;
    call(
        &ctx,
        "TaskUpdate",
        json!({"taskId": "1", "addBlocks": ["2"]}),
    )
    .await;
    check(
        json!({"taskId": "2", "addBlocks": ["1"]}),
        "would create a dependency cycle",
    )
    .await;
    // The failed update changed nothing.
    let r = call(&ctx, "TaskGet", json!({"taskId": "2"})).await;
    assert_eq!(r.data["blocks"], json!([]));
    assert_error(
        &call(
            &ctx,
            "TaskCreate",
            json!({"subject": "", "description": "x"}),
        )
        .await,
        "subject",
    );
    assert_error(
        &call(&ctx, "TaskCreate", json!({"subject": "x"})).await,
        "The required parameter `description` is missing",
    );
}

#[tokio::test]
async fn deleted_ids_are_never_reused() {
    let f = Fixture::new();
    let ctx = f.ctx();
    create(&ctx, "a").await;
    create(&ctx, "b").await;
    call(
        &ctx,
        "TaskUpdate",
        json!({"taskId": "1", "addBlocks": ["2"]}),
    )
    .await;
    let r = call(
        &ctx,
        "TaskUpdate",
        json!({"taskId": "2", "status": "deleted"}),
    )
    .await;
    assert_eq!(r.text(), "Task #2 deleted");
    // References to the deleted task are gone.
    let r = call(&ctx, "TaskGet", json!({"taskId": "1"})).await;
    assert_eq!(r.data["blocks"], json!([]));
    assert_eq!(create(&ctx, "c").await, "3");
}

const WORKER_ENV: &str = "TOOLS_AGENT_TASK_WORKER";
const PER_WORKER: usize = 15;

/// Two processes (this test binary, run again as workers) create tasks and merge metadata
/// into one task of the same list at the same time; nothing is lost.
#[tokio::test]
async fn two_processes_share_one_list() {
    if let Ok(spec) = std::env::var(WORKER_ENV) {
        // Worker side: "<state dir>|<worker name>".
        let (state, name) = spec.split_once('|').unwrap();
        let ctx = ToolContext::builder(std::env::temp_dir())
            .state_dir(state)
            .service(Arc::new(TaskListId("shared".into())))
            .build();
        for i in 0..PER_WORKER {
            create(&ctx, &format!("{name}-{i}")).await;
            let r = call(
                &ctx,
                "TaskUpdate",
                json!({"taskId": "1", "metadata": {format!("{name}-{i}"): true}}),
            )
            .await;
            assert!(!r.is_error, "{}", r.text());
        }
        return;
    }
    let f = Fixture::new();
    let ctx = shared(&f);
    create(&ctx, "seed").await;
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = ["w1", "w2"]
        .iter()
        .map(|name| {
            std::process::Command::new(&exe)
                .args([
                    "tasks::two_processes_share_one_list",
                    "--exact",
                    "--test-threads=1",
                ])
                .env(WORKER_ENV, format!("{}|{name}", f.state.display()))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let store = TaskStore::open(f.state.join("tasks/shared"));
    let tasks = store.list().unwrap();
    assert_eq!(tasks.len(), 1 + 2 * PER_WORKER);
    let mut ids: Vec<u64> = tasks.iter().map(|t| t.id.parse().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=(1 + 2 * PER_WORKER) as u64).collect::<Vec<_>>());
    let seed = store.get("1").unwrap().unwrap();
    assert_eq!(seed.metadata.unwrap().len(), 2 * PER_WORKER);
    let hwm =
        std::fs::read_to_string(store.dir().join(tools_agent::testing::HIGH_WATER_MARK)).unwrap();
    assert_eq!(hwm.trim(), (1 + 2 * PER_WORKER).to_string());
}

/// A team's lead and teammates share the team's task list, and TeamDelete removes it.
#[tokio::test]
async fn a_team_shares_one_list() {
    let f = Fixture::new();
    let lead = f.ctx();
    let r = call(&lead, "TeamCreate", json!({"team_name": "squad"})).await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(create(&lead, "shared work").await, "1");
    let (mate, _) = crate::team::join(&lead, "squad", "ann");
    assert_eq!(
        call(&mate, "TaskList", json!({})).await.text(),
        "#1 [pending] shared work"
    );
    assert_eq!(create(&mate, "ann's part").await, "2");
    assert!(f.state.join("tasks/squad/2.json").exists());
    // Outside the team, the session's own list.
    let other = f.builder().session_id("loner").build();
    assert_eq!(
        call(&other, "TaskList", json!({})).await.text(),
        "No tasks found"
    );
    TeamStore::for_context(&lead)
        .set_active("squad", "ann", false)
        .unwrap();
    let r = call(&lead, "TeamDelete", json!({})).await;
    assert!(!r.is_error, "{}", r.text());
    assert!(!f.state.join("tasks/squad").exists());
}
