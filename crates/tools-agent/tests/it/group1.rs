//! TodoWrite, plan mode, AskUserQuestion, SendUserMessage and Config through the pool.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{PermissionMode, ToolError};
use tools_agent::{
    AgentIdentity, LinePrompter, Question, QuestionAnswers, QuestionPrompter, UserMessage,
    UserMessageSink,
};

use crate::{Fixture, approver, assert_error, call, with_prompter};

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
    assert_eq!(r.text(), tools_agent::TODOS_MODIFIED);
    assert_eq!(r.data["oldTodos"], json!([]));
    assert_eq!(tools_agent::current_todos(&ctx).unwrap().len(), 2);
    let r = call(
        &ctx,
        "TodoWrite",
        json!({"todos": [todo("Build", "completed"), todo("Test", "in_progress")]}),
    )
    .await;
    assert_eq!(r.data["oldTodos"][0]["status"], "in_progress");
    assert_eq!(
        tools_agent::current_todos(&ctx).unwrap()[1].status,
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
        tools_agent::current_todos(&ctx).unwrap().is_empty(),
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
    assert_eq!(tools_agent::current_todos(&agent).unwrap().len(), 1);
    assert!(tools_agent::current_todos(&ctx).unwrap().is_empty());
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

#[tokio::test]
async fn plan_mode_round_trip_restores_the_previous_mode() {
    let f = Fixture::new();
    let prompter = approver(true);
    let ctx = with_prompter(&f, prompter.clone(), PermissionMode::AcceptEdits);
    let r = call(&ctx, "ExitPlanMode", json!({})).await;
    assert_error(&r, tools_agent::NOT_IN_PLAN_MODE);
    let r = call(&ctx, "EnterPlanMode", json!({})).await;
    assert!(!r.is_error, "{}", r.text());
    assert!(r.text().starts_with(tools_agent::ENTERED_PLAN_MODE));
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
    assert!(r.text().starts_with(tools_agent::PLAN_APPROVED));
    assert!(r.text().contains("## Approved Plan:\n1. Do the thing"));
    assert!(r.text().contains("- Bash: run tests"));
    assert_eq!(
        prompter.asked.lock().unwrap().as_slice(),
        ["Exit plan mode?"]
    );
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
        tools_agent::PLAN_MODE_IN_AGENT,
    );
    assert_eq!(ctx.permission_mode(), PermissionMode::Default);
}

fn question(q: &str, labels: &[&str]) -> Value {
    json!({
        "question": q,
        "header": "Choice",
        "options": labels.iter().map(|l| json!({"label": l, "description": format!("pick {l}")})).collect::<Vec<_>>(),
    })
}

#[tokio::test]
async fn ask_user_question_validation_messages() {
    let f = Fixture::new();
    let ctx = f.ctx();
    let check = |input: Value, needle: &'static str| {
        let ctx = ctx.clone();
        async move { assert_error(&call(&ctx, "AskUserQuestion", input).await, needle) }
    };
    let q = question("Which?", &["A", "B"]);
    check(
        json!({"questions": []}),
        "The parameter `questions` must have at least 1 item(s)",
    )
    .await;
    check(json!({"questions": [q, question("2?", &["A", "B"]), question("3?", &["A", "B"]), question("4?", &["A", "B"]), question("5?", &["A", "B"])]}), "The parameter `questions` must have at most 4 item(s)").await;
    check(
        json!({"questions": [question("Which?", &["A"])]}),
        "The parameter `questions[0].options` must have at least 2 item(s)",
    )
    .await;
    check(
        json!({"questions": [question("Which?", &["A", "B", "C", "D", "E"])]}),
        "must have at most 4 item(s)",
    )
    .await;
    check(json!({"questions": [{"question": "Q?", "header": "far too long header", "options": [{"label": "a", "description": "a"}, {"label": "b", "description": "b"}]}]}), "The parameter `questions[0].header` must be at most 12 character(s) long").await;
    check(
        json!({"questions": [q.clone(), q.clone()]}),
        tools_agent::NOT_UNIQUE,
    )
    .await;
    check(
        json!({"questions": [question("Which?", &["A", "A"])]}),
        tools_agent::NOT_UNIQUE,
    )
    .await;
    check(
        json!({"questions": [q.clone()], "answers": {"Other?": "A"}}),
        "answers has a key that is not one of the questions: \"Other?\"",
    )
    .await;
    check(json!({"questions": [{"question": "Q?", "header": "h", "options": [{"label": "a", "description": "a", "preview": "<script>x</script>"}, {"label": "b", "description": "b"}]}]}), "may not contain <script> tags").await;
    check(json!({"questions": [{"question": "Q?", "header": "h", "multiSelect": true, "options": [{"label": "a", "description": "a", "preview": "x"}, {"label": "b", "description": "b"}]}]}), "previews are only supported for single-select questions").await;
    // Headless, without answers: a clear denial.
    check(
        json!({"questions": [q.clone()]}),
        "AskUserQuestion needs a person to answer; it cannot run without one.",
    )
    .await;
    // Sub-agents may not ask.
    let agent = f
        .builder()
        .service(Arc::new(AgentIdentity {
            agent_id: "a".into(),
        }))
        .build();
    assert_error(
        &call(&agent, "AskUserQuestion", json!({"questions": [q]})).await,
        tools_agent::ASK_IN_AGENT,
    );
}

#[tokio::test]
async fn ask_user_question_answers_from_input() {
    let f = Fixture::new();
    let ctx = f.ctx();
    let r = call(
        &ctx,
        "AskUserQuestion",
        json!({"questions": [question("Which?", &["A", "B"]), question("Also?", &["C", "D"])],
               "answers": {"Which?": "A", "Also?": "C, D"},
               "annotations": {"Which?": {"notes": "quickly"}}}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(
        r.text(),
        "User has answered your questions: \"Which?\"=\"A\" user notes: quickly, \"Also?\"=\"C, D\". You can now continue with the user's answers in mind."
    );
}

struct Scripted(Mutex<Option<QuestionAnswers>>);

#[async_trait]
impl QuestionPrompter for Scripted {
    async fn ask(&self, _questions: &[Question]) -> Result<QuestionAnswers, ToolError> {
        Ok(self
            .0
            .lock()
            .unwrap()
            .take()
            .unwrap_or(QuestionAnswers::Declined))
    }
}

#[tokio::test]
async fn ask_user_question_uses_the_prompter() {
    let f = Fixture::new();
    let answers = BTreeMap::from([("Which?".to_owned(), "B".to_owned())]);
    let prompter: Arc<dyn QuestionPrompter> = Arc::new(Scripted(Mutex::new(Some(
        QuestionAnswers::Answered(answers),
    ))));
    let ctx = f.builder().service(prompter).build();
    let input = json!({"questions": [question("Which?", &["A", "B"])]});
    let r = call(&ctx, "AskUserQuestion", input.clone()).await;
    assert!(!r.is_error, "{}", r.text());
    assert!(r.text().contains("\"Which?\"=\"B\""));
    let r = call(&ctx, "AskUserQuestion", input).await;
    assert_error(&r, tools_agent::DECLINED);
}

#[tokio::test]
async fn line_prompter_maps_numbers_to_labels() {
    let questions: Vec<Question> = serde_json::from_value(json!([
        question("Which?", &["A", "B"]),
        {"question": "Many?", "header": "m", "multiSelect": true, "options": [{"label": "X", "description": ""}, {"label": "Y", "description": ""}]},
        question("Free?", &["A", "B"]),
    ]))
    .unwrap();
    let out = Vec::new();
    let p = LinePrompter::new(std::io::Cursor::new(b"2\n1, 2\nmy own\n".to_vec()), out);
    let QuestionAnswers::Answered(a) = p.ask(&questions).await.unwrap() else {
        panic!("declined")
    };
    assert_eq!(a["Which?"], "B");
    assert_eq!(a["Many?"], "X, Y");
    assert_eq!(a["Free?"], "my own");
    let p = LinePrompter::new(std::io::Cursor::new(b"\n".to_vec()), Vec::new());
    assert_eq!(p.ask(&questions).await.unwrap(), QuestionAnswers::Declined);
}

#[derive(Default)]
struct Inbox(Mutex<Vec<UserMessage>>);

#[async_trait]
impl UserMessageSink for Inbox {
    async fn deliver(&self, message: &UserMessage) -> Result<(), ToolError> {
        self.0.lock().unwrap().push(message.clone());
        Ok(())
    }
}

#[tokio::test]
async fn send_user_message_delivers_to_the_sink() {
    let f = Fixture::new();
    std::fs::write(f.path("report.md"), "# hi").unwrap();
    std::fs::create_dir(f.path("dir")).unwrap();
    let headless = f.ctx();
    assert_error(
        &call(
            &headless,
            "SendUserMessage",
            json!({"message": "hi", "status": "normal"}),
        )
        .await,
        "No user message channel is configured",
    );
    let inbox = Arc::new(Inbox::default());
    let ctx = f
        .builder()
        .service(inbox.clone() as Arc<dyn UserMessageSink>)
        .build();
    let r = call(
        &ctx,
        "Brief",
        json!({"message": "done", "status": "proactive", "attachments": ["report.md"]}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.tool, "SendUserMessage");
    assert_eq!(
        r.text(),
        "Message delivered to user. 1 attachment included."
    );
    let got = inbox.0.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].attachments[0].path, f.path("report.md"));
    assert_eq!(got[0].attachments[0].size, 4);
    let check = |input: Value, needle: &'static str| {
        let ctx = ctx.clone();
        async move { assert_error(&call(&ctx, "SendUserMessage", input).await, needle) }
    };
    check(
        json!({"message": "x", "status": "normal", "attachments": ["nope.txt"]}),
        "nope.txt does not exist",
    )
    .await;
    check(
        json!({"message": "x", "status": "normal", "attachments": ["dir"]}),
        "is not a regular file",
    )
    .await;
    check(
        json!({"message": "x", "status": "normal", "attachments": [""]}),
        "attachments[0] is empty",
    )
    .await;
    check(
        json!({"message": "x"}),
        "The required parameter `status` is missing",
    )
    .await;
    check(json!({"message": "x", "status": "loud"}), "status").await;
    // Attachments outside the working directories need read permission.
    let outside = tempfile::NamedTempFile::new().unwrap();
    check(
        json!({"message": "x", "status": "normal", "attachments": [outside.path()]}),
        "Path is outside allowed working directories",
    )
    .await;
    assert_eq!(inbox.0.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn config_validation_messages() {
    let f = Fixture::new();
    let ctx = f.ctx();
    let check = |input: Value, needle: &'static str| {
        let ctx = ctx.clone();
        async move { assert_error(&call(&ctx, "Config", input).await, needle) }
    };
    check(json!({"setting": "theme"}), "Unknown setting: \"theme\"").await;
    // Person-only keys are refused whatever the value, before the value is checked.
    check(
        json!({"setting": "sandbox.enabled", "value": "maybe"}),
        "sandbox.enabled can only be changed by a person",
    )
    .await;
    check(
        json!({"setting": "permissions.defaultMode", "value": "yolo"}),
        "permissions.defaultMode can only be changed by a person",
    )
    .await;
    check(
        json!({"setting": "model", "value": "two words"}),
        "model requires a non-empty name",
    )
    .await;
    // Writes ask; headless they are denied.
    check(
        json!({"setting": "model", "value": "opus"}),
        "Set model to \"opus\"",
    )
    .await;
    assert!(!f.path(".agent-tools/settings.json").exists());
}

#[tokio::test]
async fn config_reads_and_writes_the_project_file() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.path(".agent-tools")).unwrap();
    std::fs::write(
        f.path(".agent-tools/settings.json"),
        r#"{"permissions": {"allow": ["Bash(ls)"]}, "lsp": {"py": "pyright"}, "sandbox": {"enabled": true}}"#,
    )
    .unwrap();
    let ctx = f.ctx();
    let r = call(
        &ctx,
        "Config",
        json!({"setting": "permissions.defaultMode"}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), "permissions.defaultMode is not set");
    // Reading a person-only key is allowed.
    let r = call(&ctx, "Config", json!({"setting": "sandbox.enabled"})).await;
    assert!(
        r.text().starts_with("sandbox.enabled = true (from "),
        "{}",
        r.text()
    );
    let prompter = approver(true);
    let ctx = with_prompter(&f, prompter.clone(), PermissionMode::Default);
    let r = call(&ctx, "Config", json!({"setting": "model", "value": "opus"})).await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), "Set model to \"opus\"");
    assert_eq!(
        prompter.asked.lock().unwrap().as_slice(),
        ["Set model to \"opus\""]
    );
    let text = std::fs::read_to_string(f.path(".agent-tools/settings.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["model"], "opus");
    assert_eq!(v["permissions"]["allow"], json!(["Bash(ls)"]));
    assert_eq!(v["lsp"]["py"], "pyright");
    let r = call(&ctx, "Config", json!({"setting": "model"})).await;
    assert!(
        r.text().starts_with("model = \"opus\" (from "),
        "{}",
        r.text()
    );
    // A model in bypassPermissions mode may change ordinary settings alone.
    let bypass = f.builder().mode(PermissionMode::BypassPermissions).build();
    let r = call(
        &bypass,
        "Config",
        json!({"setting": "model", "value": "haiku"}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    // A broken file is reported, not overwritten.
    std::fs::write(f.path(".agent-tools/settings.json"), "{ nope").unwrap();
    let r = call(&ctx, "Config", json!({"setting": "model", "value": "opus"})).await;
    assert_error(&r, "is not valid JSON");
    assert_eq!(
        std::fs::read_to_string(f.path(".agent-tools/settings.json")).unwrap(),
        "{ nope"
    );
}

/// The sandbox and the permission mode are a person's to change: Config refuses to write
/// them in every mode, with or without a person to approve the call, and the project file
/// stays as it was (or absent).
#[tokio::test]
async fn config_never_writes_the_sandbox_or_the_mode() {
    let keys_and_values = [
        ("sandbox.enabled", json!(false)),
        ("sandbox.enabled", json!("false")),
        ("sandbox.enabled", json!(true)),
        ("permissions.defaultMode", json!("bypassPermissions")),
        ("permissions.defaultMode", json!("acceptEdits")),
        ("permissions.defaultMode", json!("plan")),
        ("permissions.disableBypassPermissionsMode", json!("disable")),
        (" sandbox.enabled ", json!(false)),
    ];
    let original = r#"{"sandbox": {"enabled": true}}"#;
    let mut cases = 0;
    for existing in [None, Some(original)] {
        for mode in PermissionMode::ALL {
            for person in [None, Some(true), Some(false)] {
                for (key, value) in &keys_and_values {
                    let f = Fixture::new();
                    if let Some(text) = existing {
                        std::fs::create_dir_all(f.path(".agent-tools")).unwrap();
                        std::fs::write(f.path(".agent-tools/settings.json"), text).unwrap();
                    }
                    let prompter = person.map(approver);
                    let ctx = match &prompter {
                        Some(p) => with_prompter(&f, p.clone(), mode),
                        None => f.builder().mode(mode).build(),
                    };
                    let r = call(&ctx, "Config", json!({"setting": key, "value": value})).await;
                    let label = format!("{key}={value} in {mode}, person {person:?}");
                    assert!(r.is_error, "{label}: {}", r.text());
                    assert!(
                        r.text()
                            .contains(&format!("{} can only be changed by a person", key.trim())),
                        "{label}: {}",
                        r.text()
                    );
                    assert!(r.retryable, "{label}");
                    let on_disk =
                        std::fs::read_to_string(f.path(".agent-tools/settings.json")).ok();
                    assert_eq!(on_disk.as_deref(), existing, "{label}");
                    if let Some(p) = prompter {
                        assert!(
                            p.asked.lock().unwrap().is_empty(),
                            "{label}: a person was asked"
                        );
                    }
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, 2 * 5 * 3 * 8);
}
