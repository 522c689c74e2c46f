//! Agent's swarm parameters: a scripted teammate (through the in-process Messages API
//! server) that receives a message, replies to the lead with SendMessage, gets a
//! shutdown_request and approves it; the errors of name, team_name, mode, isolation and cwd;
//! a sub-agent in its own worktree; a sub-agent in another permission mode.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{PermissionMode, ToolContext};
use tools_agent::testing::{CWD_WITH_ISOLATION, TEAMMATES_CANNOT_SPAWN, TeamStore};
use tools_agent::{AgentRunner, CommandRunner, InboxMessage};

use crate::agent::{
    api_runner, ctx_with_runner, message, pool, runner_builder, serve, serve_with, task_output,
};
use crate::{Fixture, assert_error, git, git_repo};

/// Waits (bounded) until the lead's inbox of `team` holds a message matching `pred`.
async fn wait_for_lead_mail(
    ctx: &ToolContext,
    team: &str,
    pred: impl Fn(&InboxMessage) -> bool,
) -> Vec<InboxMessage> {
    let store = TeamStore::for_context(ctx);
    for _ in 0..600 {
        let inbox = store.inbox(team, "team-lead").unwrap();
        if inbox.iter().any(&pred) {
            return inbox;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the lead never got the expected message: {:?}",
        store.inbox(team, "team-lead").unwrap()
    );
}

fn send(id: &str, input: Value) -> Value {
    message(
        json!([{"type": "tool_use", "id": id, "name": "SendMessage", "input": input}]),
        "tool_use",
    )
}

/// The request id of the shutdown request in the last user message of a request.
fn shutdown_request_id(body: &Value) -> String {
    let last = body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    let start = last.find("shutdown-").unwrap();
    last[start..].split(['"', '\\']).next().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_teammate_talks_to_the_lead_and_shuts_down() {
    let f = Fixture::new();
    let server = serve_with(|n, body| match n {
        0 => send(
            "t1",
            json!({"to": "team-lead", "summary": "started", "message": "Started on the task"}),
        ),
        1 => message(json!([{"type": "text", "text": "Waiting for instructions."}]), "end_turn"),
        2 => send(
            "t2",
            json!({"to": "team-lead", "summary": "report", "message": "Report: all good"}),
        ),
        3 => message(json!([{"type": "text", "text": "Done reporting."}]), "end_turn"),
        4 => send(
            "t3",
            json!({"to": "team-lead", "message": {"type": "shutdown_response", "request_id": shutdown_request_id(body), "approve": true}}),
        ),
        _ => json!({"type": "error", "error": {"type": "invalid_request_error", "message": "a teammate that approved its shutdown made another request"}}),
    })
    .await;
    let runner = api_runner(&server);
    let lead = ctx_with_runner(&f, runner);
    let r = pool()
        .call("TeamCreate", json!({"team_name": "crew"}), &lead)
        .await;
    assert!(!r.is_error, "{}", r.text());

    let r = pool()
        .call(
            "Agent",
            json!({"description": "work", "prompt": "Work on the parser", "name": "alice", "team_name": "crew"}),
            &lead,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    let text = r.text();
    assert!(
        text.starts_with(
            "Spawned successfully.\nagent_id: alice@crew\nname: alice\nteam_name: crew\n"
        ),
        "{text}"
    );
    assert_eq!(r.data["status"], "teammate_spawned");
    let store = TeamStore::for_context(&lead);
    let team = store.load("crew").unwrap().unwrap();
    let alice = team.member("alice").unwrap();
    assert!(alice.is_running());
    let task_id = alice.task_id.clone().expect("task id recorded");
    // A second alice cannot join while the first runs.
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "p", "name": "alice", "team_name": "crew"}),
            &lead,
        )
        .await;
    assert_error(
        &r,
        "name: a teammate named \"alice\" is already running in team \"crew\"",
    );

    // The teammate reports in, then idles.
    wait_for_lead_mail(&lead, "crew", |m| m.kind() == Some("idle_notification")).await;
    let inbox = store.inbox("crew", "team-lead").unwrap();
    assert_eq!(inbox[0].from, "alice");
    assert_eq!(inbox[0].message, json!("Started on the task"));
    assert_eq!(inbox[1].message["summary"], "Waiting for instructions.");

    // A message from the lead wakes it between turns; it answers.
    let r = pool()
        .call(
            "SendMessage",
            json!({"to": "alice", "summary": "report please", "message": "Please report"}),
            &lead,
        )
        .await;
    assert!(
        r.text().starts_with("Message sent to alice's inbox"),
        "{}",
        r.text()
    );
    wait_for_lead_mail(&lead, "crew", |m| m.message == json!("Report: all good")).await;
    wait_for_lead_mail(&lead, "crew", |m| {
        m.kind() == Some("idle_notification") && m.message["summary"] == "Done reporting."
    })
    .await;

    // TeamDelete refuses while alice runs.
    let r = pool().call("TeamDelete", json!({}), &lead).await;
    assert_error(
        &r,
        "Cannot cleanup team with 1 active member(s): alice. Use requestShutdown to gracefully terminate teammates first.",
    );

    // A shutdown request: alice approves and ends.
    let r = pool()
        .call(
            "SendMessage",
            json!({"to": "alice", "message": {"type": "shutdown_request", "reason": "work is done"}}),
            &lead,
        )
        .await;
    let request_id = r.data["requestId"].as_str().unwrap().to_owned();
    let out = task_output(&lead, &task_id).await;
    assert!(
        out.text().contains("<status>completed</status>"),
        "{}",
        out.text()
    );
    let inbox =
        wait_for_lead_mail(&lead, "crew", |m| m.kind() == Some("teammate_terminated")).await;
    let response = inbox
        .iter()
        .find(|m| m.kind() == Some("shutdown_response"))
        .unwrap();
    assert_eq!(response.from, "alice");
    assert_eq!(response.message["approve"], true);
    assert_eq!(response.message["request_id"], request_id.as_str());
    let team = store.load("crew").unwrap().unwrap();
    assert!(!team.member("alice").unwrap().is_active);

    // What the teammate's model saw.
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 5, "no request after the approved shutdown");
    let first = &requests[0].1;
    assert!(
        first["system"]
            .as_str()
            .unwrap()
            .contains("You are \"alice\", a teammate in team \"crew\""),
        "{}",
        first["system"]
    );
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"SendMessage") && !names.contains(&"Agent"),
        "{names:?}"
    );
    assert_eq!(first["messages"][0]["content"], "Work on the parser");
    let woken = requests[2].1["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(
        woken.contains(r#"<teammate-message teammate_id=\"team-lead\" summary=\"report please\">\nPlease report\n</teammate-message>"#),
        "{woken}"
    );
    let results = requests[1].1["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        results["content"][0]["content"],
        "Message sent to team-lead's inbox"
    );

    // Now the team can go.
    let r = pool().call("TeamDelete", json!({}), &lead).await;
    assert!(!r.is_error, "{}", r.text());
}

#[tokio::test]
async fn swarm_parameter_errors() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.path("sub")).unwrap();
    let runner: Arc<dyn AgentRunner> = Arc::new(CommandRunner::new(vec!["pwd".into()]));
    let ctx = ctx_with_runner(&f, runner);
    let check = |input: Value, expected: &'static str| {
        let ctx = ctx.clone();
        async move {
            let mut full = json!({"description": "d", "prompt": "p"});
            full.as_object_mut()
                .unwrap()
                .extend(input.as_object().unwrap().clone());
            assert_error(&pool().call("Agent", full, &ctx).await, expected);
        }
    };
    check(json!({"name": "bob"}), "name makes the agent a teammate, and this session leads no team: create one with TeamCreate first").await;
    check(
        json!({"name": "bob", "team_name": "ghost"}),
        "team_name: team \"ghost\" does not exist: create it with TeamCreate first",
    )
    .await;
    check(
        json!({"cwd": "sub", "isolation": "worktree"}),
        CWD_WITH_ISOLATION,
    )
    .await;
    check(json!({"cwd": "nope"}), "cwd: ").await;
    check(json!({"cwd": "nope"}), "nope is not a directory").await;
    check(json!({"isolation": "remote"}), "isolation").await;
    check(
        json!({"mode": "bypassPermissions"}),
        "mode: \"bypassPermissions\" allows more than this session's mode \"default\": a sub-agent cannot get more permissions than its caller",
    )
    .await;
    assert!(
        !pool()
            .call("TeamCreate", json!({"team_name": "t"}), &ctx)
            .await
            .is_error
    );
    check(
        json!({"team_name": "t"}),
        "name is required to spawn a teammate",
    )
    .await;
    check(
        json!({"name": "team-lead"}),
        "name: \"team-lead\" is not a valid teammate name",
    )
    .await;
    check(json!({"name": "a b"}), "is not a valid teammate name").await;
    // Another session's team.
    let other = f.builder().session_id("other").build();
    assert!(
        !pool()
            .call("TeamCreate", json!({"team_name": "theirs"}), &other)
            .await
            .is_error
    );
    check(
        json!({"name": "x", "team_name": "theirs"}),
        "team_name: team \"theirs\" is led by another session",
    )
    .await;
    // Teammates cannot spawn teammates.
    let (mate, _) = crate::team::join(&ctx, "t", "carol");
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "p", "name": "dave"}),
            &mate,
        )
        .await;
    assert_error(&r, TEAMMATES_CANNOT_SPAWN);

    // cwd: the agent works there.
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "p", "cwd": "sub", "subagent_type": "Plan"}),
            &ctx,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), f.path("sub").display().to_string());
}

#[tokio::test]
async fn isolation_worktree_kept_only_when_changed() {
    let f = git_repo();

    // An agent that changes nothing: its worktree is removed, the result names none.
    let runner: Arc<dyn AgentRunner> = Arc::new(CommandRunner::new(vec!["pwd".into()]));
    let ctx = ctx_with_runner(&f, runner);
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "p", "isolation": "worktree"}),
            &ctx,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    let ran_in = r.data["content"].as_str().unwrap().to_owned();
    assert!(
        ran_in.starts_with(
            &f.path(".agent-tools/worktrees/agent-")
                .display()
                .to_string()
        ),
        "{ran_in}"
    );
    assert!(!Path::new(&ran_in).exists(), "removed: nothing changed");
    assert!(!r.text().contains("worktreePath"), "{}", r.text());
    assert_eq!(git(&f.root, &["branch", "--list", "worktree-agent-*"]), "");

    // An agent that writes a file: its worktree and branch stay, and the trailer says where.
    let runner: Arc<dyn AgentRunner> = Arc::new(CommandRunner::new(vec![
        "sh".into(),
        "-c".into(),
        "echo made > made.txt; pwd".into(),
    ]));
    let ctx = ctx_with_runner(&f, runner);
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "p", "isolation": "worktree"}),
            &ctx,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    let ran_in = r.data["content"].as_str().unwrap().to_owned();
    let id = r.data["agentId"].as_str().unwrap().to_owned();
    let text = r.text();
    assert!(
        text.contains(&format!(
            "\n\nagentId: {id}\nworktreePath: {ran_in}\nworktreeBranch: worktree-agent-{id}\n<usage>"
        )),
        "{text}"
    );
    assert_eq!(r.data["worktree"], ran_in.as_str());
    assert_eq!(
        std::fs::read_to_string(Path::new(&ran_in).join("made.txt")).unwrap(),
        "made\n"
    );
    assert!(!f.path("made.txt").exists(), "the user's tree is untouched");
    assert_eq!(
        git(
            &f.root,
            &[
                "branch",
                "--list",
                "worktree-agent-*",
                "--format=%(refname:short)"
            ]
        ),
        format!("worktree-agent-{id}")
    );

    // Outside a repository: a clear error naming the field.
    let plain = Fixture::new();
    let runner: Arc<dyn AgentRunner> = Arc::new(CommandRunner::new(vec!["pwd".into()]));
    let ctx = ctx_with_runner(&plain, runner);
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "p", "isolation": "worktree"}),
            &ctx,
        )
        .await;
    assert_error(&r, "isolation: \"worktree\" needs a git repository");
}

#[tokio::test]
async fn mode_sets_the_sub_agents_permission_mode() {
    let f = Fixture::new();
    let target = f.path("out.txt").display().to_string();
    let write = |id: &str| {
        message(
            json!([{"type": "tool_use", "id": id, "name": "Write", "input": {"file_path": target, "content": "x\n"}}]),
            "tool_use",
        )
    };
    let server = serve(vec![
        write("w1"),
        message(json!([{"type": "text", "text": "tried"}]), "end_turn"),
        write("w2"),
        message(json!([{"type": "text", "text": "wrote"}]), "end_turn"),
    ])
    .await;
    let runner = api_runner(&server);
    let ctx = runner_builder(&f, runner)
        .mode(PermissionMode::AcceptEdits)
        .build();
    // In plan mode the sub-agent's Write is refused...
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "write", "mode": "plan"}),
            &ctx,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    assert!(!f.path("out.txt").exists());
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests[1].1["messages"][2]["content"][0]["is_error"], true);
    // ...while without mode it inherits acceptEdits and writes.
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "write"}),
            &ctx,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(std::fs::read_to_string(f.path("out.txt")).unwrap(), "x\n");
}

/// The text of the last message of a request body (the newest tool results and mail).
fn last_message(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string()
}

/// Waits (bounded) until `take_inbox` gives the lead a `plan_approval_request`, collecting
/// everything it took meanwhile.
async fn take_plan_request(lead: &ToolContext) -> (InboxMessage, Vec<InboxMessage>) {
    let mut seen = Vec::new();
    for _ in 0..600 {
        seen.extend(tools_agent::take_inbox(lead).unwrap());
        if let Some(m) = seen
            .iter()
            .find(|m| m.kind() == Some("plan_approval_request"))
        {
            return (m.clone(), seen);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the lead never got a plan approval request: {seen:?}");
}

/// The teammate path, end to end through the Messages API runner: a teammate
/// spawned in plan mode writes its plan and calls ExitPlanMode, which sends a
/// plan_approval_request to the lead's inbox instead of asking a person; the lead (reading
/// it through take_inbox) rejects it with feedback, the teammate (still in plan mode, told
/// the feedback) revises and asks again, the lead approves, and the teammate — out of plan
/// mode — can now Write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_in_plan_mode_asks_the_lead_to_approve_its_plan() {
    let f = Fixture::new();
    let target = f.path("out.txt").display().to_string();
    let tool = |id: &str, name: &str, input: Value| {
        message(
            json!([{"type": "tool_use", "id": id, "name": name, "input": input}]),
            "tool_use",
        )
    };
    // The teammate learns its plan file from ExitPlanMode's error, as a model would.
    let plan_path = Arc::new(std::sync::Mutex::new(String::new()));
    let seen_path = Arc::clone(&plan_path);
    let server = serve_with(move |n, body| {
        let plan = seen_path.lock().unwrap().clone();
        match n {
            0 => tool("e1", "ExitPlanMode", json!({})),
            1 => {
                let last = last_message(body);
                let start = last.find("No plan found at ").unwrap() + "No plan found at ".len();
                let path = last[start..].split(". Write your plan").next().unwrap();
                *seen_path.lock().unwrap() = path.to_owned();
                tool("p1", "Write", json!({"file_path": path, "content": "1. Write out.txt\n"}))
            }
            2 => tool("e2", "ExitPlanMode", json!({})),
            3 => message(json!([{"type": "text", "text": "Waiting for approval."}]), "end_turn"),
            // Rejected: still in plan mode, so this Write is refused.
            4 => tool("w1", "Write", json!({"file_path": target, "content": "x\n"})),
            5 => tool(
                "p2",
                "Write",
                json!({"file_path": plan, "content": "1. Write out.txt\n2. Test it\n"}),
            ),
            6 => tool("e3", "ExitPlanMode", json!({})),
            7 => message(json!([{"type": "text", "text": "Revised."}]), "end_turn"),
            8 => tool("w2", "Write", json!({"file_path": target, "content": "x\n"})),
            9 => message(json!([{"type": "text", "text": "Wrote it."}]), "end_turn"),
            _ => send(
                "s1",
                json!({"to": "team-lead", "message": {"type": "shutdown_response", "request_id": shutdown_request_id(body), "approve": true}}),
            ),
        }
    })
    .await;
    let runner = api_runner(&server);
    let lead = runner_builder(&f, runner)
        .mode(PermissionMode::AcceptEdits)
        .build();
    assert!(
        !pool()
            .call("TeamCreate", json!({"team_name": "p"}), &lead)
            .await
            .is_error
    );
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "Plan, then write", "name": "pat", "team_name": "p", "mode": "plan"}),
            &lead,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());

    // The first request reaches the lead's inbox, with the plan and how to answer.
    let (first, _) = take_plan_request(&lead).await;
    let first_id = first.message["request_id"].as_str().unwrap().to_owned();
    assert!(
        first_id.starts_with("plan-") && first_id.ends_with("@pat"),
        "{first_id}"
    );
    assert_eq!(first.from, "pat");
    assert_eq!(first.message["plan"], "1. Write out.txt\n");
    assert_eq!(
        first.message["plan_file_path"],
        plan_path.lock().unwrap().as_str()
    );
    let shown = tools_agent::render_messages(std::slice::from_ref(&first));
    assert!(shown.contains("1. Write out.txt"), "{shown}");
    assert!(
        shown.contains(&format!("\"request_id\": \"{first_id}\"")),
        "{shown}"
    );
    assert!(!f.path("out.txt").exists());

    // Rejecting needs feedback; the rejection keeps pat in plan mode.
    let r = pool()
        .call(
            "SendMessage",
            json!({"to": "pat", "message": {"type": "plan_approval_response", "request_id": first_id, "approve": false}}),
            &lead,
        )
        .await;
    assert_error(&r, tools_agent::testing::PLAN_REJECTION_NEEDS_FEEDBACK);
    let r = pool()
        .call(
            "SendMessage",
            json!({"to": "pat", "message": {"type": "plan_approval_response", "request_id": first_id, "approve": false, "feedback": "Also add a test step"}}),
            &lead,
        )
        .await;
    assert!(
        r.text()
            .starts_with("Plan rejected for pat with feedback: \"Also add a test step\""),
        "{}",
        r.text()
    );

    // The revised plan comes back as a new request; the old id is no longer pending.
    // (Read from the inbox file: the lead's SendMessage results may have taken it already.)
    let inbox = wait_for_lead_mail(&lead, "p", |m| {
        m.kind() == Some("plan_approval_request") && m.message["request_id"] != first_id.as_str()
    })
    .await;
    let second = inbox
        .iter()
        .rfind(|m| m.kind() == Some("plan_approval_request"))
        .unwrap()
        .clone();
    let second_id = second.message["request_id"].as_str().unwrap().to_owned();
    assert_ne!(second_id, first_id);
    assert_eq!(second.message["plan"], "1. Write out.txt\n2. Test it\n");
    let r = pool()
        .call(
            "SendMessage",
            json!({"to": "pat", "message": {"type": "plan_approval_response", "request_id": first_id, "approve": true}}),
            &lead,
        )
        .await;
    assert_error(
        &r,
        &format!(
            "request_id \"{first_id}\" does not match a pending plan approval request: pat's plan waiting for approval is \"{second_id}\""
        ),
    );
    let r = pool()
        .call(
            "SendMessage",
            json!({"to": "pat", "message": {"type": "plan_approval_response", "request_id": second_id, "approve": true}}),
            &lead,
        )
        .await;
    assert!(
        r.text().starts_with("Plan approved for pat."),
        "{}",
        r.text()
    );
    wait_for_lead_mail(&lead, "p", |m| m.message["summary"] == "Wrote it.").await;
    assert_eq!(std::fs::read_to_string(f.path("out.txt")).unwrap(), "x\n");
    assert!(
        TeamStore::for_context(&lead)
            .pending_plan_requests("p")
            .unwrap()
            .is_empty()
    );

    let requests = server.requests.lock().unwrap().clone();
    let result_of = |n: usize| {
        requests[n].1["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone()
    };
    // No plan yet: ExitPlanMode says where to write it.
    assert_eq!(result_of(1)["content"][0]["is_error"], true);
    // Writing the plan file is allowed in plan mode; ExitPlanMode submits it.
    assert_eq!(result_of(2)["content"][0]["is_error"], false);
    let submitted = result_of(3)["content"][0].clone();
    assert_eq!(submitted["is_error"], false, "{submitted}");
    let text = submitted["content"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "{}\n\nRequest ID: {first_id}\n",
            tools_agent::testing::PLAN_SUBMITTED
        )),
        "{text}"
    );
    // The rejection and its feedback reach pat between turns.
    let woken = last_message(&requests[4].1);
    assert!(
        woken.contains("The team lead rejected your plan"),
        "{woken}"
    );
    assert!(woken.contains("Feedback: Also add a test step"), "{woken}");
    assert!(woken.contains("You are still in plan mode"), "{woken}");
    // Still in plan mode: the Write is refused.
    assert_eq!(result_of(5)["content"][0]["is_error"], true);
    // Approved: told so, in the lead's mode, and the Write succeeds.
    let approved = last_message(&requests[8].1);
    assert!(
        approved.contains("The team lead approved your plan (")
            && approved.contains("permission mode: acceptEdits"),
        "{approved}"
    );
    assert_eq!(result_of(9)["content"][0]["is_error"], false);

    // Shut it down so nothing outlives the test.
    pool()
        .call(
            "SendMessage",
            json!({"to": "pat", "message": {"type": "shutdown_request"}}),
            &lead,
        )
        .await;
    wait_for_lead_mail(&lead, "p", |m| m.kind() == Some("teammate_terminated")).await;
}
