//! SendMessage, TeamCreate and TeamDelete: every validation message, the result texts,
//! mailboxes on disk, the lead's inbox, and concurrent senders to one inbox.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_core::{CancellationToken, PermissionMode, ToolContext};
use tools_agent::testing::{
    EMPTY_RECIPIENT, NO_CROSS_SESSION, NO_STRUCTURED_BROADCAST, PLAN_REJECTION_NEEDS_FEEDBACK,
    PLAN_REQUEST_ID_REQUIRED, PLAN_SUBMITTED, REJECTION_NEEDS_REASON, SHUTDOWN_RESPONSE_TO_LEAD,
    SUMMARY_REQUIRED, TeamMember, TeamStore, subagent_context,
};
use tools_agent::{InboxMessage, TeammateIdentity, render_messages};

use crate::{Fixture, assert_error, call};

/// Adds a running teammate to a team file and returns its context.
pub(crate) fn join(
    lead: &ToolContext,
    team: &str,
    name: &str,
) -> (ToolContext, Arc<TeammateIdentity>) {
    let store = TeamStore::for_context(lead);
    store
        .update(team, |t| {
            t.members.push(TeamMember {
                agent_id: format!("{name}@{team}"),
                name: name.to_owned(),
                agent_type: "general-purpose".to_owned(),
                joined_at: 0,
                cwd: PathBuf::from("/"),
                is_active: true,
                pid: Some(std::process::id()),
                task_id: None,
            });
            Ok(())
        })
        .unwrap();
    let ctx = subagent_context(lead, &format!("{name}@{team}"), None);
    let identity = Arc::new(TeammateIdentity {
        team_name: team.to_owned(),
        name: name.to_owned(),
        agent_id: format!("{name}@{team}"),
        exit: CancellationToken::new(),
        after_plan: tool_core::PermissionMode::Default,
    });
    ctx.services().insert(Arc::clone(&identity));
    (ctx, identity)
}

async fn create(ctx: &ToolContext, name: &str) -> Value {
    let r = call(
        ctx,
        "TeamCreate",
        json!({"team_name": name, "description": "d"}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    serde_json::from_str(&r.text()).unwrap()
}

#[tokio::test]
async fn send_message_validation_messages() {
    let f = Fixture::new();
    let ctx = f.ctx();
    create(&ctx, "val").await;
    let check = |input: Value, expected: &'static str| {
        let ctx = ctx.clone();
        async move {
            let r = call(&ctx, "SendMessage", input).await;
            assert_error(&r, expected);
        }
    };
    check(
        json!({"to": "  ", "summary": "s", "message": "hi"}),
        EMPTY_RECIPIENT,
    )
    .await;
    check(
        json!({"to": "bridge:session-1", "summary": "s", "message": "hi"}),
        NO_CROSS_SESSION,
    )
    .await;
    check(
        json!({"to": "uds:/tmp/x.sock", "summary": "s", "message": "hi"}),
        NO_CROSS_SESSION,
    )
    .await;
    check(json!({"to": "bob", "message": "hi"}), SUMMARY_REQUIRED).await;
    check(
        json!({"to": "bob", "summary": " ", "message": "hi"}),
        SUMMARY_REQUIRED,
    )
    .await;
    check(
        json!({"to": "*", "message": {"type": "shutdown_request"}}),
        NO_STRUCTURED_BROADCAST,
    )
    .await;
    check(
        json!({"to": "bob", "message": {"type": "shutdown_response", "request_id": "r", "approve": true}}),
        SHUTDOWN_RESPONSE_TO_LEAD,
    )
    .await;
    check(
        json!({"to": "team-lead", "message": {"type": "shutdown_response", "request_id": "r", "approve": false}}),
        REJECTION_NEEDS_REASON,
    )
    .await;
    check(
        json!({"to": "team-lead", "message": {"type": "shutdown_response", "request_id": "r", "approve": false, "reason": "  "}}),
        REJECTION_NEEDS_REASON,
    )
    .await;
    check(
        json!({"to": "nobody", "summary": "s", "message": "hi"}),
        "\"nobody\" is not a member of team \"val\" nor an agent id of this session. Members: team-lead",
    )
    .await;
    check(
        json!({"to": "bob", "message": {"type": "shutdown_request", "bogus": 1}}),
        "message",
    )
    .await;
    // Outside any team.
    let other = f.builder().session_id("no-team").build();
    let r = call(
        &other,
        "SendMessage",
        json!({"to": "bob", "summary": "s", "message": "hi"}),
    )
    .await;
    assert_error(
        &r,
        "this session is in no team: create a team with TeamCreate",
    );
    // Validation errors carry the reference's code 9 and change nothing.
    assert!(
        !TeamStore::for_context(&ctx)
            .inbox_file("val", "bob")
            .exists()
    );
}

/// A refused TeamDelete leaves the lead's unread messages unread (it only shows them when
/// they are deleted with the team).
#[tokio::test]
async fn a_refused_team_delete_keeps_the_leads_unread_messages() {
    let f = Fixture::new();
    let ctx = f.ctx();
    create(&ctx, "keep").await;
    let (mate, _) = join(&ctx, "keep", "alice");
    call(
        &mate,
        "SendMessage",
        json!({"to": "team-lead", "summary": "note", "message": "still here"}),
    )
    .await;
    assert_error(
        &call(&ctx, "TeamDelete", json!({})).await,
        "Cannot cleanup team with 1 active member(s): alice.",
    );
    let unread = tools_agent::take_inbox(&ctx).unwrap();
    assert_eq!(unread.len(), 1);
    assert_eq!(unread[0].message, json!("still here"));
}

#[tokio::test]
async fn team_create_one_per_leader_collisions_and_delete() {
    let f = Fixture::new();
    let ctx = f.ctx();
    let created = create(&ctx, "Build Crew").await;
    assert_eq!(created["team_name"], "build-crew");
    assert_eq!(created["lead_agent_id"], "team-lead@build-crew");
    let file = PathBuf::from(created["team_file_path"].as_str().unwrap());
    assert_eq!(file, f.state.join("teams/build-crew/config.json"));
    let team: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(team["leadSessionId"], "test-session");
    assert_eq!(team["members"][0]["name"], "team-lead");
    assert_eq!(team["description"], "d");

    let r = call(&ctx, "TeamCreate", json!({"team_name": "other"})).await;
    assert_error(
        &r,
        "Already leading team \"build-crew\". A leader can only manage one team at a time. Use TeamDelete to end the current team before creating a new one.",
    );
    let r = call(&ctx, "TeamCreate", json!({"team_name": " "})).await;
    assert_error(&r, "team_name must not be empty");
    // Another session asking for the same name gets a new slug.
    let second = f.builder().session_id("second").build();
    let created2 = create(&second, "build crew").await;
    assert_eq!(created2["team_name"], "build-crew-2");

    // Active teammates block TeamDelete.
    let (mate, _) = join(&ctx, "build-crew", "alice");
    join(&ctx, "build-crew", "bob");
    let r = call(&ctx, "TeamDelete", json!({})).await;
    assert_error(
        &r,
        "Cannot cleanup team with 2 active member(s): alice, bob. Use requestShutdown to gracefully terminate teammates first.",
    );
    // Teammates cannot delete or create teams.
    assert_error(
        &call(&mate, "TeamDelete", json!({})).await,
        "Only the team lead can delete the team",
    );
    assert_error(
        &call(&mate, "TeamCreate", json!({"team_name": "x"})).await,
        "Only the main session can create a team",
    );
    let store = TeamStore::for_context(&ctx);
    store.set_active("build-crew", "alice", false).unwrap();
    // A member whose process is gone does not count (a crashed host cannot block forever).
    store
        .update("build-crew", |t| {
            t.members[2].pid = Some(u32::MAX - 7);
            Ok(())
        })
        .unwrap();
    call(
        &mate,
        "SendMessage",
        json!({"to": "team-lead", "summary": "bye", "message": "last words"}),
    )
    .await;
    let r = call(&ctx, "TeamDelete", json!({})).await;
    assert!(!r.is_error, "{}", r.text());
    let text = r.text();
    assert!(
        text.starts_with(
            "Cleaned up team \"build-crew\": its team file, 1 mailbox(es) and its task list were deleted."
        ),
        "{text}"
    );
    // The lead's unread messages are shown before they go.
    assert!(text.contains("last words"), "{text}");
    assert!(!f.state.join("teams/build-crew").exists());
    assert!(f.state.join("teams/build-crew-2/config.json").exists());
    let r = call(&ctx, "TeamDelete", json!({})).await;
    assert_eq!(
        r.text(),
        "No team to delete: this session does not lead a team."
    );
    // Now the session may lead a new team.
    assert_eq!(create(&ctx, "again").await["team_name"], "again");
}

#[tokio::test]
async fn messages_broadcasts_and_the_lead_inbox() {
    let f = Fixture::new();
    let lead = f.ctx();
    create(&lead, "t").await;
    let (alice, _) = join(&lead, "t", "alice");
    let (bob, _) = join(&lead, "t", "bob");
    let store = TeamStore::for_context(&lead);

    let r = call(
        &lead,
        "SendMessage",
        json!({"to": "alice", "summary": "start", "message": "Look at src/"}),
    )
    .await;
    assert_eq!(r.text(), "Message sent to alice's inbox");
    assert!(!r.is_error && r.data["recipients"] == json!(["alice"]));
    // By agent id too.
    let r = call(
        &lead,
        "SendMessage",
        json!({"to": "bob@t", "summary": "start", "message": "Look at tests/"}),
    )
    .await;
    assert_eq!(r.text(), "Message sent to bob's inbox");
    let r = call(
        &lead,
        "SendMessage",
        json!({"to": "*", "summary": "all", "message": "Stand-up"}),
    )
    .await;
    assert_eq!(r.text(), "Message broadcast to 2 teammate(s): alice, bob");
    let inbox = store.inbox("t", "alice").unwrap();
    assert_eq!(inbox.len(), 2);
    assert_eq!(inbox[0].from, "team-lead");
    assert_eq!(inbox[0].message, json!("Look at src/"));
    assert_eq!(inbox[0].summary.as_deref(), Some("start"));
    assert!(!inbox[0].read);

    // A teammate's broadcast reaches the lead and the others, never itself.
    let r = call(
        &alice,
        "SendMessage",
        json!({"to": "*", "summary": "found", "message": "Found it"}),
    )
    .await;
    assert_eq!(
        r.text(),
        "Message broadcast to 2 teammate(s): team-lead, bob"
    );
    assert_eq!(store.inbox("t", "alice").unwrap().len(), 2);
    assert_error(
        &call(
            &alice,
            "SendMessage",
            json!({"to": "alice", "summary": "s", "message": "me"}),
        )
        .await,
        "You cannot send a message to yourself",
    );
    let r = call(
        &bob,
        "SendMessage",
        json!({"to": "team-lead", "summary": "done", "message": "Tests pass"}),
    )
    .await;
    assert_eq!(r.text(), "Message sent to team-lead's inbox");

    // The lead reads its inbox: attached to its next team tool result...
    let r = call(
        &lead,
        "SendMessage",
        json!({"to": "alice", "summary": "thanks", "message": "Thanks"}),
    )
    .await;
    let text = r.text();
    assert!(text.starts_with("Message sent to alice's inbox\nNew messages from your teammates:\n<teammate-message teammate_id=\"alice\" summary=\"found\">\nFound it\n</teammate-message>"), "{text}");
    assert!(text.contains("<teammate-message teammate_id=\"bob\" summary=\"done\">\nTests pass\n</teammate-message>"), "{text}");
    // ...once.
    assert!(tools_agent::take_inbox(&lead).unwrap().is_empty());
    // ...or through the library API.
    call(
        &bob,
        "SendMessage",
        json!({"to": "team-lead", "summary": "more", "message": "One more"}),
    )
    .await;
    let unread = tools_agent::take_inbox(&lead).unwrap();
    assert_eq!(unread.len(), 1);
    assert_eq!(unread[0].message, json!("One more"));
    assert_eq!(
        tools_agent::render_messages(&unread),
        "<teammate-message teammate_id=\"bob\" summary=\"more\">\nOne more\n</teammate-message>"
    );
    // A teammate reads its own inbox the same way.
    assert_eq!(tools_agent::take_inbox(&alice).unwrap().len(), 3);
    // A stopped teammate's inbox still takes messages, and the lead is told.
    store.set_active("t", "bob", false).unwrap();
    let r = call(
        &lead,
        "SendMessage",
        json!({"to": "bob", "summary": "s", "message": "later"}),
    )
    .await;
    assert_eq!(
        r.text(),
        "Message sent to bob's inbox. bob is not running: it reads the message only if you spawn it again with the same name and team."
    );
}

#[tokio::test]
async fn shutdown_and_plan_approval_protocol() {
    let f = Fixture::new();
    let lead = f.ctx();
    create(&lead, "p").await;
    let (alice, identity) = join(&lead, "p", "alice");
    let store = TeamStore::for_context(&lead);

    let r = call(
        &lead,
        "SendMessage",
        json!({"to": "alice", "message": {"type": "shutdown_request", "reason": "done"}}),
    )
    .await;
    let text = r.text();
    assert!(
        text.starts_with("Shutdown request sent to alice. Request ID: shutdown-"),
        "{text}"
    );
    let request_id = r.data["requestId"].as_str().unwrap().to_owned();
    assert!(request_id.ends_with("@alice"));
    let inbox = store.inbox("p", "alice").unwrap();
    assert_eq!(inbox[0].kind(), Some("shutdown_request"));
    assert_eq!(inbox[0].message["request_id"], request_id.as_str());
    assert_eq!(inbox[0].message["reason"], "done");
    assert_error(
        &call(
            &lead,
            "SendMessage",
            json!({"to": "team-lead", "message": {"type": "shutdown_request"}}),
        )
        .await,
        "A shutdown_request goes to a teammate, not to team-lead",
    );
    // Only teammates answer shutdown requests.
    assert_error(
        &call(&lead, "SendMessage", json!({"to": "team-lead", "message": {"type": "shutdown_response", "request_id": request_id, "approve": true}})).await,
        "Only a teammate answers a shutdown request",
    );

    let r = call(&alice, "SendMessage", json!({"to": "team-lead", "message": {"type": "shutdown_response", "request_id": request_id, "approve": false, "reason": "still testing"}})).await;
    assert_eq!(
        r.text(),
        "Shutdown rejected. Reason: \"still testing\". Continuing to work."
    );
    assert!(!identity.exit.is_cancelled());
    let r = call(&alice, "SendMessage", json!({"to": "team-lead", "message": {"type": "shutdown_response", "request_id": request_id, "approve": true}})).await;
    assert_eq!(
        r.text(),
        "Shutdown approved. Sent confirmation to team-lead. Agent alice is now exiting."
    );
    assert!(identity.exit.is_cancelled());
    let lead_inbox: Vec<InboxMessage> = store.inbox("p", "team-lead").unwrap();
    assert_eq!(lead_inbox.len(), 2);
    assert_eq!(lead_inbox[1].message["approve"], true);
    assert_eq!(lead_inbox[1].from, "alice");

    let plan_file = PathBuf::from("/plans/alice.md");
    let id = store
        .request_plan_approval("p", "alice", "1. Parse", &plan_file, None)
        .unwrap();
    let r = call(&lead, "SendMessage", json!({"to": "alice", "message": {"type": "plan_approval_response", "request_id": id, "approve": true}})).await;
    let text = r.text();
    assert!(
        text.starts_with("Plan approved for alice. They will receive the approval and can proceed with implementation.\nNew messages from your teammates:"),
        "{text}"
    );
    // The lead saw alice's answers; structured messages carry no null fields.
    assert!(text.contains(r#""approve":true,"from":"alice""#), "{text}");
    let id = store
        .request_plan_approval("p", "alice", "1. Parse", &plan_file, None)
        .unwrap();
    let r = call(&lead, "SendMessage", json!({"to": "alice", "message": {"type": "plan_approval_response", "request_id": id, "approve": false, "feedback": "add tests"}})).await;
    assert!(
        r.text()
            .starts_with("Plan rejected for alice with feedback: \"add tests\""),
        "{}",
        r.text()
    );
    assert_error(
        &call(&alice, "SendMessage", json!({"to": "alice", "message": {"type": "plan_approval_response", "request_id": "x", "approve": true}})).await,
        "Only the team lead can approve or reject a teammate's plan",
    );
}

/// ExitPlanMode in a plan-mode teammate sends a plan_approval_request to the lead instead of
/// asking a person; the lead's answers are checked against the pending requests.
#[tokio::test]
async fn plan_approval_requests_and_their_validation() {
    let f = Fixture::new();
    let lead = f.ctx();
    create(&lead, "q").await;
    let (alice, _) = join(&lead, "q", "alice");
    join(&lead, "q", "bob");
    let store = TeamStore::for_context(&lead);
    alice.set_permission_mode(PermissionMode::Plan);
    let plan = tools_agent::plan_file(&alice);
    assert_error(
        &call(&alice, "ExitPlanMode", json!({})).await,
        &format!("No plan found at {}", plan.display()),
    );
    std::fs::create_dir_all(plan.parent().unwrap()).unwrap();
    std::fs::write(&plan, "1. Parse\n").unwrap();
    // No person is asked (the fixture has none): the plan goes to the lead.
    let r = call(
        &alice,
        "ExitPlanMode",
        json!({"allowedPrompts": [{"tool": "Bash", "prompt": "run tests"}]}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    assert!(r.text().starts_with(PLAN_SUBMITTED), "{}", r.text());
    let id = r.data["requestId"].as_str().unwrap().to_owned();
    assert_eq!(r.data["mode"], "plan");
    assert_eq!(alice.permission_mode(), PermissionMode::Plan);
    let inbox = store.inbox("q", "team-lead").unwrap();
    let request = inbox.last().unwrap();
    assert_eq!(request.kind(), Some("plan_approval_request"));
    assert_eq!(request.message["request_id"], id.as_str());
    assert_eq!(request.message["plan"], "1. Parse\n");
    assert_eq!(
        request.message["plan_file_path"],
        plan.display().to_string()
    );
    assert_eq!(request.message["allowed_prompts"][0]["prompt"], "run tests");
    assert_eq!(store.pending_plan_requests("q").unwrap()[0].request_id, id);

    let check = |to: &'static str, message: Value, expected: String| {
        let lead = lead.clone();
        async move {
            let r = call(&lead, "SendMessage", json!({"to": to, "message": message})).await;
            assert_error(&r, &expected);
        }
    };
    let response = |id: &str, approve: bool| json!({"type": "plan_approval_response", "request_id": id, "approve": approve});
    check(
        "alice",
        response(&id, false),
        PLAN_REJECTION_NEEDS_FEEDBACK.to_owned(),
    )
    .await;
    check(
        "alice",
        json!({"type": "plan_approval_response", "request_id": id, "approve": false, "feedback": "  "}),
        PLAN_REJECTION_NEEDS_FEEDBACK.to_owned(),
    )
    .await;
    check(
        "alice",
        response(" ", true),
        PLAN_REQUEST_ID_REQUIRED.to_owned(),
    )
    .await;
    check(
        "alice",
        response("plan-1@alice", true),
        format!("request_id \"plan-1@alice\" does not match a pending plan approval request: alice's plan waiting for approval is \"{id}\": answer that one"),
    )
    .await;
    check(
        "bob",
        response(&id, true),
        format!("request_id \"{id}\" does not match a pending plan approval request: it is alice's request, not bob's: send the response to alice"),
    )
    .await;
    check(
        "team-lead",
        response(&id, true),
        "A plan_approval_response goes to the teammate that asked for approval".to_owned(),
    )
    .await;
    // Nothing was delivered by the refused answers.
    assert!(store.inbox("q", "alice").unwrap().is_empty());

    let r = call(&lead, "SendMessage", json!({"to": "alice", "message": {"type": "plan_approval_response", "request_id": id, "approve": false, "feedback": "add tests"}})).await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(
        r.text().lines().next().unwrap(),
        "Plan rejected for alice with feedback: \"add tests\". They stay in plan mode, revise the plan and send a new request."
    );
    let mail = store.inbox("q", "alice").unwrap();
    assert_eq!(mail[0].message["feedback"], "add tests");
    assert_eq!(mail[0].message["approve"], false);
    check(
        "alice",
        response(&id, true),
        format!("request_id \"{id}\" does not match a pending plan approval request: alice has no plan waiting for approval (it was answered already, or alice has not called ExitPlanMode)"),
    )
    .await;
    assert!(store.pending_plan_requests("q").unwrap().is_empty());
    // A plain sub-agent or the lead still needs a person for ExitPlanMode.
    lead.set_permission_mode(PermissionMode::Plan);
    let lead_plan = tools_agent::plan_file(&lead);
    std::fs::write(&lead_plan, "plan").unwrap();
    assert_error(
        &call(&lead, "ExitPlanMode", json!({})).await,
        "ExitPlanMode needs a person to answer",
    );
}

/// What the lead reads for a teammate's plan approval request.
#[test]
fn lead_reads_a_plan_approval_request() {
    let dir = tempfile::tempdir().unwrap();
    let store = TeamStore::open(dir.path());
    store.create("r", None, "s", "lead", dir.path()).unwrap();
    let id = store
        .request_plan_approval(
            "r",
            "alice",
            "1. Parse the input\n2. Test it\n",
            std::path::Path::new("/state/plans/s-agent-alice@r.md"),
            None,
        )
        .unwrap();
    let mail = store.take_unread("r", "team-lead").unwrap();
    insta::assert_snapshot!(render_messages(&mail).replace(&id, "<request-id>"));
}

const WORKER_ENV: &str = "TOOLS_AGENT_INBOX_WORKER";
const PER_SENDER: i64 = 40;

fn send_many(state: &std::path::Path, sender: &str) {
    // A handle of its own: its own lock file descriptors.
    let store = TeamStore::open(state);
    for i in 0..PER_SENDER {
        store
            .deliver("c", "team-lead", InboxMessage::new(sender, json!(i), None))
            .unwrap();
        if i % 10 == 0 {
            store.take_unread("c", "team-lead").unwrap();
        }
    }
}

/// Two processes (this test binary, run again as workers) and two threads of this one send
/// to one inbox at the same time, the reader marking messages read in between: nothing is
/// lost and every sender's messages stay in order.
#[test]
fn concurrent_senders_to_one_inbox_lose_nothing() {
    if let Ok(spec) = std::env::var(WORKER_ENV) {
        let (state, name) = spec.split_once('|').unwrap();
        send_many(std::path::Path::new(state), name);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    TeamStore::open(dir.path())
        .create("c", None, "lead", "team-lead", dir.path())
        .unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = ["p1", "p2"]
        .iter()
        .map(|name| {
            std::process::Command::new(&exe)
                .args([
                    "team::concurrent_senders_to_one_inbox_lose_nothing",
                    "--exact",
                    "--test-threads=1",
                ])
                .env(WORKER_ENV, format!("{}|{name}", dir.path().display()))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let threads: Vec<_> = ["t1", "t2"]
        .iter()
        .map(|name| {
            let path = dir.path().to_path_buf();
            std::thread::spawn(move || send_many(&path, name))
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let inbox = TeamStore::open(dir.path()).inbox("c", "team-lead").unwrap();
    assert_eq!(inbox.len(), 4 * PER_SENDER as usize);
    for sender in ["p1", "p2", "t1", "t2"] {
        let mine: Vec<i64> = inbox
            .iter()
            .filter(|m| m.from == sender)
            .map(|m| m.message.as_i64().unwrap())
            .collect();
        assert_eq!(
            mine,
            (0..PER_SENDER).collect::<Vec<_>>(),
            "{sender} in order"
        );
    }
}

/// What the lead's model reads when teammates wrote: plain and structured messages.
#[tokio::test]
async fn the_lead_reads_its_teammates_messages() {
    let f = Fixture::new();
    let lead = f.ctx();
    create(&lead, "snap").await;
    let (alice, _) = join(&lead, "snap", "alice");
    call(&alice, "SendMessage", json!({"to": "team-lead", "summary": "found the bug", "message": "The bug is in parse.rs line 40."})).await;
    let store = TeamStore::for_context(&lead);
    store
        .deliver(
            "snap",
            "team-lead",
            InboxMessage::new(
                "alice",
                json!({"type": "idle_notification", "idle_reason": "available", "summary": "Waiting."}),
                None,
            ),
        )
        .unwrap();
    let r = call(
        &lead,
        "SendMessage",
        json!({"to": "alice", "summary": "thanks", "message": "Fix it."}),
    )
    .await;
    insta::assert_snapshot!("lead_reads_teammates", r.text());
}
