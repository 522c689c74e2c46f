//! A host's questions to the person behind an MCP client (AskUserQuestion's, for
//! `agent-tools serve`): asked through elicitation during the call in legacy sessions
//! whose client offers it ([`question_hook`] installs an [`ElicitQuestions`] as the
//! context's tool-core `QuestionPrompter`), or as a form before the call on protocol
//! 2026-07-28 ([`QuestionForm`]). The form has one text field per question (`q1`, `q2`,
//! ...), its options listed in the field's description; answers are keyed by question text.
//! The questions are tool-core's [`Question`]s (AskUserQuestion's input); which tool asks
//! them and what the answers become is the host's.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::Peer;
use serde_json::Value;
use tool_core::{CallResult, Question, QuestionAnswers, QuestionPrompter, ToolError, error_result};

use crate::mrtr::UpfrontInput;
use crate::prompts::ELICIT_TIMEOUT;
use crate::server::ClientHook;

/// The elicitation form for `questions`: one required text field per question.
fn question_form(questions: &[Question]) -> ElicitRequestParams {
    let mut builder = ElicitationSchema::builder();
    for (i, q) in questions.iter().enumerate() {
        let options: Vec<String> = q
            .options
            .iter()
            .map(|o| format!("- {}: {}", o.label, o.description))
            .collect();
        let how = if q.multi_select {
            "Answer with one or more option labels, comma-separated, or your own text."
        } else {
            "Answer with one option label, or your own text."
        };
        let description = format!("{}\n{}\n{how}", q.question, options.join("\n"));
        builder = builder.required_string_property(format!("q{}", i + 1), |s| {
            s.title(q.header.clone()).description(description)
        });
    }
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: "The agent has questions for you.".to_owned(),
        requested_schema: builder.build_unchecked(),
    }
}

/// The answers in an accepted [`question_form`], by question text.
fn form_answers(questions: &[Question], result: &ElicitResult) -> BTreeMap<String, String> {
    let mut answers = BTreeMap::new();
    let content = result.content.clone().unwrap_or_default();
    for (i, q) in questions.iter().enumerate() {
        if let Some(answer) = content.get(format!("q{}", i + 1)).and_then(|v| v.as_str()) {
            answers.insert(q.question.clone(), answer.to_owned());
        }
    }
    answers
}

/// Asks questions through MCP elicitation during a call (legacy sessions): the question
/// prompter of a session whose client offers elicitation. A person who does not answer
/// within the elicitation timeout (the permission questions' too) ends the call with an
/// error.
#[derive(Debug, Clone)]
pub struct ElicitQuestions(Peer<RoleServer>);

#[async_trait]
impl QuestionPrompter for ElicitQuestions {
    async fn ask(&self, questions: &[Question]) -> Result<QuestionAnswers, ToolError> {
        let result = self
            .0
            .create_elicitation_with_timeout(question_form(questions), Some(ELICIT_TIMEOUT))
            .await
            .map_err(|e| ToolError::fatal(format!("the MCP client did not answer: {e}")))?;
        if result.action != ElicitationAction::Accept {
            return Ok(QuestionAnswers::Declined);
        }
        Ok(QuestionAnswers::Answered(form_answers(questions, &result)))
    }
}

/// A [`ClientHook`] that installs an [`ElicitQuestions`] as the session's
/// `Arc<dyn QuestionPrompter>` when the client offers elicitation.
pub fn question_hook() -> ClientHook {
    ClientHook(Arc::new(|ctx, peer, capabilities| {
        if capabilities.elicitation.is_some() {
            let prompter: Arc<dyn QuestionPrompter> = Arc::new(ElicitQuestions(peer.clone()));
            ctx.services().insert(prompter);
        }
    }))
}

/// Asks a tool's questions before the call (protocol 2026-07-28) and runs the call with
/// the answers in its `answers` field: for calls of `tool` whose input has `questions` and
/// no `answers`.
#[derive(Debug, Clone)]
pub struct QuestionForm {
    tool: String,
    declined: String,
}

impl QuestionForm {
    /// The form for `tool`'s questions; a declined form ends the call with `declined`.
    pub fn new(tool: impl Into<String>, declined: impl Into<String>) -> Self {
        QuestionForm {
            tool: tool.into(),
            declined: declined.into(),
        }
    }

    /// The questions of an input that still needs its answers.
    fn unanswered(&self, tool: &str, input: &Value) -> Option<Vec<Question>> {
        if tool != self.tool || input.get("answers").is_some_and(|a| !a.is_null()) {
            return None;
        }
        serde_json::from_value(input.get("questions")?.clone()).ok()
    }
}

impl UpfrontInput for QuestionForm {
    fn form(&self, tool: &str, input: &Value) -> Option<ElicitRequestParams> {
        self.unanswered(tool, input)
            .map(|questions| question_form(&questions))
    }

    fn complete(
        &self,
        tool: &str,
        mut input: Value,
        answer: &ElicitResult,
    ) -> Result<Value, Box<CallResult>> {
        let Some(questions) = self.unanswered(tool, &input) else {
            return Ok(input);
        };
        if answer.action != ElicitationAction::Accept {
            return Err(Box::new(error_result(
                tool,
                &ToolError::respond(self.declined.clone()),
            )));
        }
        let answers = form_answers(&questions, answer);
        if let Some(object) = input.as_object_mut() {
            object.insert(
                "answers".to_owned(),
                serde_json::to_value(answers).unwrap_or_default(),
            );
        }
        Ok(input)
    }
}
