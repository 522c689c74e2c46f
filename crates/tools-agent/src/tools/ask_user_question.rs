//! AskUserQuestion: multiple-choice questions to the user, answered by a prompter the host
//! provides (tool-core's `QuestionPrompter`), or by answers already in the input.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tool_core::{
    AskKind, PermissionDecision, Question, QuestionAnswers, QuestionPrompter, ToolCategory,
    ToolContext, ToolError, ToolMeta, ToolResult, TypedTool, ValidationResult,
};

use crate::stores::state::agent_id;

/// The validation message for repeated questions or option labels .
pub const NOT_UNIQUE: &str =
    "Question texts must be unique, option labels must be unique within each question";
/// What the model reads when the user declines.
pub const DECLINED: &str = "User declined to answer questions";
/// Sub-agents may not ask the user.
pub const ASK_IN_AGENT: &str = "AskUserQuestion cannot be used by sub-agents: return your question in your final answer instead";

const DESCRIPTION: &str = "Use this tool when you need to ask the user questions during execution. This allows you to:
1. Gather user preferences or requirements
2. Clarify ambiguous instructions
3. Get decisions on implementation choices as you work
4. Offer choices to the user about what direction to take.

Usage notes:
- Ask 1 to 4 questions at a time, each with 2 to 4 options; every option has a short label (1-5 words) and a description of what it means
- Users can always answer \"Other\" with their own text: do not add such an option yourself
- Use `multiSelect: true` to allow several answers to one question
- If you recommend a specific option, make it the first one and add \"(Recommended)\" at the end of its label
- Question texts must be unique within a call, and option labels must be unique within each question
- In plan mode, do not use this tool to ask whether the plan is okay: ExitPlanMode does that";

/// Input of AskUserQuestion.
///
/// # JSON names
///
/// The model sends these fields under JSON names that differ from the Rust ones:
///
/// | JSON name | Rust field |
/// | --- | --- |
/// | `questions[].multiSelect` | [`Question::multi_select`](tool_core::Question::multi_select) |
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskUserQuestionInput {
    /// Questions to ask the user (1-4)
    #[schemars(length(min = 1, max = 4))]
    pub questions: Vec<Question>,
    /// Answers already collected (by the host's dialog), question text → answer
    #[serde(default)]
    pub answers: Option<BTreeMap<String, String>>,
    /// Per-question notes from the user, question text → {notes, preview}
    #[serde(default)]
    pub annotations: Option<Map<String, Value>>,
    /// Where the questions come from, for analytics
    #[serde(default)]
    pub metadata: Option<QuestionMetadata>,
}

/// `metadata` of AskUserQuestion.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionMetadata {
    /// An identifier of the source of the questions
    #[serde(default)]
    pub source: Option<String>,
}

/// Output of AskUserQuestion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AskUserQuestionOutput {
    /// The questions asked
    pub questions: Vec<Question>,
    /// question text → answer (multi-select answers comma-joined)
    pub answers: BTreeMap<String, String>,
}

/// The AskUserQuestion tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct AskUserQuestion;

fn prompter(ctx: &ToolContext) -> Option<Arc<dyn QuestionPrompter>> {
    ctx.services().get::<Arc<dyn QuestionPrompter>>()
}

fn answered_in_input(input: &AskUserQuestionInput) -> bool {
    input.answers.as_ref().is_some_and(|answers| {
        input
            .questions
            .iter()
            .all(|q| answers.contains_key(&q.question))
    })
}

/// The text the model reads for a set of answers.
pub(crate) fn render_answers(
    questions: &[Question],
    answers: &BTreeMap<String, String>,
    annotations: Option<&Map<String, Value>>,
) -> String {
    let parts: Vec<String> = questions
        .iter()
        .filter_map(|q| {
            let answer = answers.get(&q.question)?;
            let mut part = format!("\"{}\"=\"{}\"", q.question, answer);
            if let Some(note) = annotations.and_then(|a| a.get(&q.question)) {
                if let Some(preview) = note.get("preview").and_then(Value::as_str) {
                    part.push_str(&format!(" selected preview:\n{preview}"));
                }
                if let Some(notes) = note.get("notes").and_then(Value::as_str) {
                    part.push_str(&format!(" user notes: {notes}"));
                }
            }
            Some(part)
        })
        .collect();
    format!(
        "User has answered your questions: {}. You can now continue with the user's answers in mind.",
        parts.join(", ")
    )
}

#[async_trait]
impl TypedTool for AskUserQuestion {
    type Input = AskUserQuestionInput;
    type Output = AskUserQuestionOutput;
    const META: ToolMeta = ToolMeta::new("AskUserQuestion")
        .describe(DESCRIPTION)
        .hint("ask the user a multiple choice question")
        .category(ToolCategory::UserInteraction)
        .deferred()
        .read_only()
        .requires_user_interaction();

    async fn validate(&self, input: &AskUserQuestionInput, ctx: &ToolContext) -> ValidationResult {
        if agent_id(ctx).is_some() {
            return ValidationResult::invalid(ASK_IN_AGENT);
        }
        let mut texts = HashSet::new();
        for q in &input.questions {
            if !texts.insert(q.question.as_str()) {
                return ValidationResult::invalid(NOT_UNIQUE);
            }
            let mut labels = HashSet::new();
            if q.options.iter().any(|o| !labels.insert(o.label.as_str())) {
                return ValidationResult::invalid(NOT_UNIQUE);
            }
        }
        for q in &input.questions {
            if q.multi_select && q.options.iter().any(|o| o.preview.is_some()) {
                return ValidationResult::invalid(format!(
                    "Question \"{}\": previews are only supported for single-select questions; remove `preview` or set multiSelect to false",
                    q.question
                ));
            }
            for o in &q.options {
                if let Some(preview) = &o.preview
                    && let Some(tag) = forbidden_tag(preview)
                {
                    return ValidationResult::invalid(format!(
                        "Option \"{}\" of question \"{}\": a preview may not contain <{tag}> tags; use markdown or an HTML fragment",
                        o.label, q.question
                    ));
                }
            }
        }
        if let Some(answers) = &input.answers
            && let Some(unknown) = answers.keys().find(|k| !texts.contains(k.as_str()))
        {
            return ValidationResult::invalid(format!(
                "answers has a key that is not one of the questions: \"{unknown}\""
            ));
        }
        ValidationResult::Valid
    }
    async fn check_permission(
        &self,
        input: &AskUserQuestionInput,
        ctx: &ToolContext,
    ) -> PermissionDecision {
        // The answers are the user's: either already in the input, or collected by the
        // host's prompter during the call. Without either, a person must be asked.
        if answered_in_input(input) || prompter(ctx).is_some() {
            return PermissionDecision::Allow;
        }
        PermissionDecision::Ask {
            reason: "Answer questions?".to_owned(),
            suggestions: Vec::new(),
            kind: AskKind::Interaction,
        }
    }
    async fn call(
        &self,
        input: AskUserQuestionInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<AskUserQuestionOutput>, ToolError> {
        let answers = if answered_in_input(&input) {
            input.answers.clone().unwrap_or_default()
        } else {
            let Some(prompter) = prompter(ctx) else {
                return Err(ToolError::respond(
                    "No one is available to answer questions: this session has no question prompter (run interactively, or pass the answers in `answers`). Continue with your best judgment and state your assumptions.",
                ));
            };
            match prompter.ask(&input.questions).await? {
                QuestionAnswers::Answered(answers) => answers,
                QuestionAnswers::Declined => {
                    return Ok(ToolResult::error(
                        AskUserQuestionOutput {
                            questions: input.questions,
                            answers: BTreeMap::new(),
                        },
                        DECLINED,
                    ));
                }
            }
        };
        let text = render_answers(&input.questions, &answers, input.annotations.as_ref());
        Ok(ToolResult::ok(AskUserQuestionOutput {
            questions: input.questions,
            answers,
        })
        .with_text(text))
    }
}

/// The first of `html`, `body` or `script` that appears as a tag in `preview`.
fn forbidden_tag(preview: &str) -> Option<&'static str> {
    let lower = preview.to_ascii_lowercase();
    ["html", "body", "script"]
        .into_iter()
        .find(|tag| lower.contains(&format!("<{tag}")) || lower.contains(&format!("</{tag}")))
}
