//! AskUserQuestion through the pool: validation messages, answers given in the input or by
//! a prompter, and the line prompter's numbers and labels.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::ToolError;
use tool_core::{LinePrompter, Question, QuestionAnswers, QuestionPrompter};
use tools_agent::AgentIdentity;

use crate::{Fixture, assert_error, call};

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
        tools_agent::testing::NOT_UNIQUE,
    )
    .await;
    check(
        json!({"questions": [question("Which?", &["A", "A"])]}),
        tools_agent::testing::NOT_UNIQUE,
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
        tools_agent::testing::ASK_IN_AGENT,
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
