//! A host's questions to the person behind the client, in process over streamable HTTP
//! with a stand-in asking tool: in a legacy session through elicitation during the call
//! (`question_hook`), on protocol 2026-07-28 as a form before the call whose answers the
//! call gets in its input (`QuestionForm`); answered or declined.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use test_support::mcp::run_client;
use test_support::peers::peer;
use tool_core::{
    Question, QuestionAnswers, QuestionPrompter, ToolCategory, ToolContext, ToolError, ToolMeta,
    ToolPool, ToolResult, Typed, TypedTool,
};
use tools_mcp::{QuestionForm, SessionFactory, UpfrontInput, question_hook};

use crate::server::serve_with;

/// What [`Ask`] answers when the person declines.
const DECLINED: &str = "The person declined to answer.";

/// Input of [`Ask`]
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AskInput {
    questions: Vec<Question>,
    /// question text → answer, when the host collected them before the call
    #[serde(default)]
    answers: Option<BTreeMap<String, String>>,
}

/// Asks its questions through the context's question prompter, unless its input brings
/// the answers; returns `"question"="answer"` pairs.
struct Ask;

#[async_trait]
impl TypedTool for Ask {
    type Input = AskInput;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Ask")
        .category(ToolCategory::UserInteraction)
        .read_only();
    async fn call(
        &self,
        input: AskInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<String>, ToolError> {
        let answers = match input.answers {
            Some(answers) => answers,
            None => {
                let prompter = ctx
                    .services()
                    .require::<Arc<dyn QuestionPrompter>>("a question prompter")?;
                match prompter.ask(&input.questions).await? {
                    QuestionAnswers::Answered(answers) => answers,
                    QuestionAnswers::Declined => return Err(ToolError::respond(DECLINED)),
                }
            }
        };
        let pairs: Vec<String> = answers
            .iter()
            .map(|(q, a)| format!("{q:?}={a:?}"))
            .collect();
        Ok(ToolResult::ok(pairs.join(", ")))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_are_asked_through_the_client_on_both_eras() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    // The host's services, as `agent-tools serve` installs them for AskUserQuestion.
    let factory: SessionFactory = Arc::new(move |_: &tools_mcp::Principal| {
        let ctx = ToolContext::builder(&root)
            .state_dir(root.join("state"))
            .build();
        ctx.services().insert(question_hook());
        let upfront: Arc<dyn UpfrontInput> = Arc::new(QuestionForm::new("Ask", DECLINED));
        ctx.services().insert(upfront);
        Ok(ctx)
    });
    let pool = ToolPool::new(vec![Arc::new(Typed::new(Ask))]);
    let (url, shutdown, server) = serve_with(factory, pool).await;
    let question = json!({"questions": [{"question": "Which colour?", "header": "Colour",
        "options": [{"label": "Blue", "description": "cool"}, {"label": "Red", "description": "warm"}]}]});
    tokio::task::spawn_blocking(move || {
        // A legacy session (the SDK's ClientSession), then protocol 2026-07-28.
        for mode in [None, Some("auto")] {
            let mut scenario = json!({
                "transport": {"http": url},
                "elicit": "accept",
                "elicit_content": {"q1": "Blue"},
                "steps": [{"op": "call", "tool": "Ask", "args": question}],
            });
            if let Some(mode) = mode {
                scenario["mode"] = json!(mode);
            }
            let lines = run_client(&peers, &scenario);
            assert_eq!(lines[0]["is_error"], false, "{mode:?}: {lines:#?}");
            assert_eq!(
                lines[0]["text"], "\"Which colour?\"=\"Blue\"",
                "{mode:?}: {lines:#?}"
            );
            assert_eq!(
                lines[1]["elicited"].as_array().map(Vec::len),
                Some(1),
                "{mode:?}: {lines:#?}"
            );
            let era = lines[1]["protocol"].as_str().unwrap_or_default();
            assert_eq!(era == "2026-07-28", mode.is_some(), "{lines:#?}");
            scenario["elicit"] = json!("decline");
            let lines = run_client(&peers, &scenario);
            assert_eq!(lines[0]["is_error"], true, "{mode:?}: {lines:#?}");
            assert!(
                lines[0]["text"].as_str().unwrap_or("").contains(DECLINED),
                "{mode:?}: {lines:#?}"
            );
        }
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}
