//! TodoWrite through the pool: the list replaced and cleared when all done, a sub-agent's own
//! list, bad items refused.

use std::sync::Arc;

use serde_json::{Value, json};
use tools_agent::AgentIdentity;

use crate::{Fixture, assert_error, call};

fn todo(content: &str, status: &str) -> Value {
    json!({"content": content, "status": status, "activeForm": format!("{content}ing")})
}

#[tokio::test]
async fn todo_write_replaces_the_list_and_clears_when_all_done() {
    let f = Fixture::new();
    let ctx = f.ctx();
    let r = call(
        &ctx,
        "TodoWrite",
        json!({"todos": [todo("Build", "in_progress"), todo("Test", "pending")]}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), tools_agent::testing::TODOS_MODIFIED);
    assert_eq!(r.data["oldTodos"], json!([]));
    assert_eq!(tools_agent::testing::current_todos(&ctx).unwrap().len(), 2);
    let r = call(
        &ctx,
        "TodoWrite",
        json!({"todos": [todo("Build", "completed"), todo("Test", "in_progress")]}),
    )
    .await;
    assert_eq!(r.data["oldTodos"][0]["status"], "in_progress");
    assert_eq!(
        tools_agent::testing::current_todos(&ctx).unwrap()[1].status,
        tools_agent::TodoStatus::InProgress
    );
    let r = call(
        &ctx,
        "TodoWrite",
        json!({"todos": [todo("Build", "completed"), todo("Test", "completed")]}),
    )
    .await;
    assert!(!r.is_error);
    assert_eq!(r.data["newTodos"].as_array().unwrap().len(), 2);
    assert!(
        tools_agent::testing::current_todos(&ctx)
            .unwrap()
            .is_empty(),
        "cleared when all completed"
    );
    // A sub-agent has its own list.
    let agent = f
        .builder()
        .service(Arc::new(AgentIdentity {
            agent_id: "a1".into(),
        }))
        .build();
    call(
        &agent,
        "TodoWrite",
        json!({"todos": [todo("Sub", "pending")]}),
    )
    .await;
    assert_eq!(
        tools_agent::testing::current_todos(&agent).unwrap().len(),
        1
    );
    assert!(
        tools_agent::testing::current_todos(&ctx)
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn todo_write_rejects_bad_items() {
    let f = Fixture::new();
    let ctx = f.ctx();
    let check = |input: Value, needle: &'static str| {
        let ctx = ctx.clone();
        async move { assert_error(&call(&ctx, "TodoWrite", input).await, needle) }
    };
    check(
        json!({"todos": [{"content": "", "status": "pending", "activeForm": "x"}]}),
        "todos[0].content",
    )
    .await;
    check(
        json!({"todos": [{"content": "a", "status": "pending", "activeForm": "  "}]}),
        "todos[0].activeForm must not be empty",
    )
    .await;
    check(
        json!({"todos": [{"content": "a", "status": "done", "activeForm": "b"}]}),
        "todos[0].status",
    )
    .await;
    check(
        json!({"todos": [{"content": "a", "status": "pending"}]}),
        "The required parameter `todos[0].activeForm` is missing",
    )
    .await;
    check(json!({}), "The required parameter `todos` is missing").await;
}
