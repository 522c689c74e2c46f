//! Continuation: SendMessage to a finished sub-agent's id resumes it in the background from
//! its transcript; to a running one it is queued for its next tool round.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tool_core::PermissionMode;
use tools_agent::{AgentRunner, CommandRunner};

use crate::agent::{
    api_runner, ctx_with_runner, message, pool, runner_builder, serve, task_output,
};
use crate::{Fixture, assert_error};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_agent_continues_from_its_transcript() {
    let f = Fixture::new();
    let server = serve(vec![
        message(
            json!([{"type": "text", "text": "first answer"}]),
            "end_turn",
        ),
        message(
            json!([{"type": "text", "text": "second answer"}]),
            "end_turn",
        ),
    ])
    .await;
    let runner = api_runner(&server);
    let ctx = ctx_with_runner(&f, runner);
    let r = pool()
        .call("Agent", json!({"description": "d", "prompt": "Do X"}), &ctx)
        .await;
    assert!(!r.is_error, "{}", r.text());
    let id = r.data["agentId"].as_str().unwrap().to_owned();
    let text = r.text();
    assert!(
        text.starts_with(&format!(
            "first answer\n\nagentId: {id} (use SendMessage with to: '{id}' to continue this agent)\n<usage>"
        )),
        "{text}"
    );

    // Structured messages are for teammates.
    let r = pool()
        .call(
            "SendMessage",
            json!({"to": id, "message": {"type": "shutdown_request"}}),
            &ctx,
        )
        .await;
    assert_error(
        &r,
        "is a sub-agent, not a teammate: structured messages go to teammates",
    );
    // Another session cannot continue it.
    let other = f.builder().session_id("someone-else").build();
    let r = pool()
        .call(
            "SendMessage",
            json!({"to": id, "summary": "s", "message": "hi"}),
            &other,
        )
        .await;
    assert_error(&r, "is not an agent id of this session");

    let r = pool()
        .call(
            "SendMessage",
            json!({"to": id, "summary": "more", "message": "Now do Y"}),
            &ctx,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    let text = r.text();
    assert!(
        text.starts_with(&format!(
            "Agent \"{id}\" had stopped; resumed it in the background with your message. You will be notified when it finishes.\ntask_id: "
        )),
        "{text}"
    );
    let task_id = text
        .lines()
        .find_map(|l| l.strip_prefix("task_id: "))
        .unwrap()
        .to_owned();
    let out = task_output(&ctx, &task_id).await;
    assert!(
        out.text().contains("<status>completed</status>"),
        "{}",
        out.text()
    );
    assert!(out.text().contains("second answer"), "{}", out.text());
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].1["messages"],
        json!([
            {"role": "user", "content": "Do X"},
            {"role": "assistant", "content": [{"type": "text", "text": "first answer"}]},
            {"role": "user", "content": [{"type": "text", "text": "Now do Y"}]}
        ])
    );
    // The resumed agent got a background agent's tools.
    let names: Vec<&str> = requests[1].1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"Read") && !names.contains(&"Config"),
        "{names:?}"
    );

    // The command runner keeps no transcript: its trailer does not promise SendMessage.
    let runner: Arc<dyn AgentRunner> = Arc::new(CommandRunner::new(vec!["cat".into()]));
    let ctx = ctx_with_runner(&f, runner);
    let r = pool()
        .call("Agent", json!({"description": "d", "prompt": "p"}), &ctx)
        .await;
    let id = r.data["agentId"].as_str().unwrap().to_owned();
    assert!(
        r.text().contains(&format!("\nagentId: {id}\n<usage>")),
        "{}",
        r.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_a_running_agent_is_queued_for_its_next_tool_round() {
    let f = Fixture::new();
    let gate = f.path("go");
    let wait = format!(
        "while [ ! -f '{}' ]; do sleep 0.05; done; echo released",
        gate.display()
    );
    let server = serve(vec![
        message(
            json!([{"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": wait, "description": "wait"}}]),
            "tool_use",
        ),
        message(json!([{"type": "text", "text": "done with Z"}]), "end_turn"),
    ])
    .await;
    let runner = api_runner(&server);
    let ctx = runner_builder(&f, runner)
        .mode(PermissionMode::BypassPermissions)
        .build();
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "Wait, then report", "run_in_background": true}),
            &ctx,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    // The launch result's id is the task's; SendMessage accepts it.
    let task_id = r.data["agentId"].as_str().unwrap().to_owned();
    for _ in 0..600 {
        if !server.requests.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The agent is inside its Bash call now.
    let r = pool()
        .call(
            "SendMessage",
            json!({"to": task_id, "summary": "z", "message": "Also check Z"}),
            &ctx,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(
        r.text(),
        format!("Message queued for delivery to {task_id} at its next tool round.")
    );
    std::fs::write(&gate, "").unwrap();
    let out = task_output(&ctx, &task_id).await;
    assert!(out.text().contains("done with Z"), "{}", out.text());
    let requests = server.requests.lock().unwrap().clone();
    let last = requests[1].1["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert!(
        last["content"][0]["content"]
            .as_str()
            .unwrap()
            .contains("released"),
        "{last}"
    );
    assert_eq!(
        last["content"][1],
        json!({"type": "text", "text": "Message from the agent that launched you:\nAlso check Z"})
    );
}
