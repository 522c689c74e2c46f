//! A host's questions to the person behind an MCP client (AskUserQuestion's, for
//! `agent-tools serve`): asked through elicitation during the call in legacy sessions
//! whose client offers it ([`question_hook`], [`ElicitQuestions`]), or as a form before the
//! call on protocol 2026-07-28 ([`QuestionForm`]). The form has one text field per question
//! (`q1`, `q2`, ...), its options listed in the field's description; answers are keyed by
//! question text. The questions' shape is AskUserQuestion's input; which tool asks them and
//! what the answers become is the host's.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::Peer;
use serde::Deserialize;
use serde_json::Value;
use tool_core::{CallResult, ToolContext, ToolError, error_result};

use crate::mrtr::UpfrontInput;
use crate::server::ClientHook;

/// One choice of a [`FormQuestion`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormOption {
    /// The option's label
    pub label: String,
    /// What the option means
    pub description: String,
    /// A preview of the option (not shown in the form)
    #[serde(default)]
    pub preview: Option<String>,
}

/// One question of a form, in AskUserQuestion's input shape.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FormQuestion {
    /// The complete question
    pub question: String,
    /// A short label, the field's title
    pub header: String,
    /// The choices, listed in the field's description
    pub options: Vec<FormOption>,
    /// Whether several options may be chosen
    #[serde(default)]
    pub multi_select: bool,
}

/// What the person answered: question text → answer, or `None` when they declined.
pub type FormAnswers = Option<BTreeMap<String, String>>;

/// The elicitation form for `questions`: one required text field per question.
fn question_form(questions: &[FormQuestion]) -> ElicitRequestParams {
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
fn form_answers(questions: &[FormQuestion], result: &ElicitResult) -> BTreeMap<String, String> {
    let mut answers = BTreeMap::new();
    let content = result.content.clone().unwrap_or_default();
    for (i, q) in questions.iter().enumerate() {
        if let Some(answer) = content.get(format!("q{}", i + 1)).and_then(|v| v.as_str()) {
            answers.insert(q.question.clone(), answer.to_owned());
        }
    }
    answers
}

/// Asks questions through MCP elicitation during a call (legacy sessions).
#[derive(Debug, Clone)]
pub struct ElicitQuestions(Peer<RoleServer>);

impl ElicitQuestions {
    /// Asks `questions` of the client's user.
    pub async fn ask(&self, questions: &[FormQuestion]) -> Result<FormAnswers, ToolError> {
        let result = self
            .0
            .create_elicitation(question_form(questions))
            .await
            .map_err(|e| ToolError::fatal(format!("the MCP client did not answer: {e}")))?;
        if result.action != ElicitationAction::Accept {
            return Ok(None);
        }
        Ok(Some(form_answers(questions, &result)))
    }
}

/// A [`ClientHook`] that hands `install` the session's context and an [`ElicitQuestions`]
/// when the client offers elicitation (the host installs its question prompter there).
pub fn question_hook(
    install: impl Fn(&ToolContext, ElicitQuestions) + Send + Sync + 'static,
) -> ClientHook {
    ClientHook(Arc::new(move |ctx, peer, capabilities| {
        if capabilities.elicitation.is_some() {
            install(ctx, ElicitQuestions(peer.clone()));
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
    fn unanswered(&self, tool: &str, input: &Value) -> Option<Vec<FormQuestion>> {
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
