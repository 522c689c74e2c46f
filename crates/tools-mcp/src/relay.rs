//! Requests an upstream MCP server sends the client (`elicitation/create`,
//! `sampling/createMessage`) and who answers them.
//!
//! A server asks while one of its tools runs, so the request goes where that call came
//! from: each call of a server's tool registers its context's route for as long as it runs
//! ([`Callers`]). Under `agent-tools serve` the route is the session's [`ClientRelay`] (the
//! MCP client at the far end, asked with the same request: a form keeps its types, enums
//! and defaults); elsewhere it is the session's tool-core `QuestionPrompter` (a person at
//! a terminal), which gets one question per field ([`ask_person`]). When calls from
//! different routes run at once, the question has no one owner and is declined; with no
//! route it is declined too.
//!
//! What the client declares follows what can be answered ([`ClientOffers`]): elicitation
//! (form mode) when a person or a relay can answer, sampling only under `serve` (where
//! the relay forwards it to the MCP client that made the call).

// Sampling is marked deprecated by SEP-2577, but it is what MCP clients offer today.
#![allow(deprecated)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction,
};
use serde_json::{Map, Value, json};
use tool_core::{Question, QuestionAnswers, QuestionOption, QuestionPrompter, ToolContext};

/// Forwards an upstream server's requests to the MCP client behind a session (installed
/// by the server adapter in each session whose client can answer).
#[async_trait]
pub trait ClientRelay: Send + Sync {
    /// Asks the client's person with `params` (elicitation), as the upstream server asked.
    async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ErrorData>;

    /// Runs the client's model with `params` (sampling).
    async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData>;
}
impl tool_core::ServiceType for dyn ClientRelay {}

/// What the MCP client declares to upstream servers, when a host sets it (in the context's
/// services before the servers start); otherwise elicitation is declared when the session
/// has a `QuestionPrompter`, and sampling is not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientOffers {
    /// Form-mode elicitation
    pub elicitation: bool,
    /// Sampling
    pub sampling: bool,
}
impl tool_core::Service for ClientOffers {}

impl ClientOffers {
    /// What a session can answer: the host's setting, else a person's questions only.
    pub(crate) fn of(ctx: &ToolContext) -> Self {
        if let Some(offers) = ctx.services().get::<ClientOffers>() {
            return offers;
        }
        ClientOffers {
            elicitation: ctx.services().get::<Arc<dyn QuestionPrompter>>().is_some(),
            sampling: false,
        }
    }
}

/// Who answers for one calling context.
#[derive(Clone)]
pub(crate) enum Route {
    /// The MCP client behind `serve`
    Relay(Arc<dyn ClientRelay>),
    /// A person, through the session's question prompter
    Person(Arc<dyn QuestionPrompter>),
}

impl Route {
    /// The route of `ctx`: its relay, else its question prompter.
    pub(crate) fn of(ctx: &ToolContext) -> Option<Self> {
        if let Some(relay) = ctx.services().get::<Arc<dyn ClientRelay>>() {
            return Some(Route::Relay(relay));
        }
        ctx.services()
            .get::<Arc<dyn QuestionPrompter>>()
            .map(Route::Person)
    }

    fn same(&self, other: &Route) -> bool {
        match (self, other) {
            (Route::Relay(a), Route::Relay(b)) => Arc::ptr_eq(a, b),
            (Route::Person(a), Route::Person(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// The routes of the calls of one server that are running now.
#[derive(Default)]
pub(crate) struct Callers {
    running: Mutex<Vec<(u64, Option<Route>)>>,
    next: std::sync::atomic::AtomicU64,
}

/// Removes its call from [`Callers`] when the call ends.
pub(crate) struct Registered<'a> {
    callers: &'a Callers,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if let Ok(mut running) = self.callers.running.lock() {
            running.retain(|(id, _)| *id != self.id);
        }
    }
}

impl Callers {
    /// Registers a call from `ctx` until the returned guard is dropped.
    pub(crate) fn register(&self, ctx: &ToolContext) -> Registered<'_> {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut running) = self.running.lock() {
            running.push((id, Route::of(ctx)));
        }
        Registered { callers: self, id }
    }

    /// The one route of the calls running now; `fallback` when none runs; `None` when the
    /// calls have different routes (nobody owns the question) or no route.
    pub(crate) fn route(&self, fallback: Option<&Route>) -> Option<Route> {
        let running = self.running.lock().ok()?;
        let Some((_, first)) = running.first() else {
            return fallback.cloned();
        };
        let first = first.clone()?;
        running
            .iter()
            .all(|(_, r)| r.as_ref().is_some_and(|r| r.same(&first)))
            .then_some(first)
    }
}

/// The declining answer.
pub(crate) fn decline() -> ElicitResult {
    ElicitResult::new(ElicitationAction::Decline)
}

/// One field of a form, read from its JSON schema.
struct Field {
    name: String,
    kind: &'static str,
    label: String,
    description: String,
    /// Allowed values (enums), with their labels
    choices: Vec<(String, String)>,
    multi: bool,
    default: Option<Value>,
    required: bool,
}

fn fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, p)| {
            let text = |key: &str| p.get(key).and_then(Value::as_str).map(str::to_owned);
            let mut choices: Vec<(String, String)> = Vec::new();
            let mut multi = false;
            let consts = |list: &Value| -> Vec<(String, String)> {
                list.as_array()
                    .map(|items| {
                        items
                            .iter()
                            .filter_map(|i| {
                                let value = i.get("const")?.as_str()?.to_owned();
                                let title = i
                                    .get("title")
                                    .and_then(Value::as_str)
                                    .unwrap_or(&value)
                                    .to_owned();
                                Some((value, title))
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            };
            if let Some(values) = p.get("enum").and_then(Value::as_array) {
                let names = p.get("enumNames").and_then(Value::as_array);
                for (i, v) in values.iter().enumerate() {
                    if let Some(v) = v.as_str() {
                        let title = names
                            .and_then(|n| n.get(i))
                            .and_then(Value::as_str)
                            .unwrap_or(v);
                        choices.push((v.to_owned(), title.to_owned()));
                    }
                }
            } else if let Some(list) = p.get("oneOf").or_else(|| p.get("anyOf")) {
                choices = consts(list);
            } else if let Some(items) = p.get("items") {
                multi = true;
                if let Some(values) = items.get("enum").and_then(Value::as_array) {
                    choices = values
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|v| (v.to_owned(), v.to_owned()))
                        .collect();
                } else if let Some(list) = items.get("anyOf").or_else(|| items.get("oneOf")) {
                    choices = consts(list);
                }
            }
            let kind = match p.get("type").and_then(Value::as_str) {
                Some("boolean") => "boolean",
                Some("integer") => "integer",
                Some("number") => "number",
                Some("array") => "array",
                _ => "string",
            };
            Field {
                name: name.clone(),
                kind,
                label: text("title").unwrap_or_else(|| name.clone()),
                description: text("description").unwrap_or_default(),
                choices,
                multi,
                default: p.get("default").cloned(),
                required: required.contains(&name.as_str()),
            }
        })
        .collect()
}

/// The question a person answers for `field`.
fn question(server: &str, message: &str, index: usize, field: &Field) -> Question {
    let option = |label: String, description: String| QuestionOption {
        label,
        description,
        preview: None,
    };
    let default_text = field.default.as_ref().map(|d| match d {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    });
    let mut options: Vec<QuestionOption> = if !field.choices.is_empty() {
        field
            .choices
            .iter()
            .map(|(value, title)| option(value.clone(), title.clone()))
            .collect()
    } else if field.kind == "boolean" {
        vec![
            option("yes".into(), "true".into()),
            option("no".into(), "false".into()),
        ]
    } else {
        Vec::new()
    };
    if let Some(default) = &default_text
        && field.choices.is_empty()
        && field.kind != "boolean"
    {
        options.insert(0, option(default.clone(), "the default".into()));
    }
    let mut text = String::new();
    if index == 0 {
        text.push_str(&format!("The MCP server \"{server}\" asks: {message}\n"));
    }
    text.push_str(&field.label);
    if !field.description.is_empty() {
        text.push_str(&format!(" ({})", field.description));
    }
    text.push_str(&format!(
        " [{}{}{}]",
        field.kind,
        if field.required { ", required" } else { "" },
        default_text
            .map(|d| format!(", default {d}"))
            .unwrap_or_default()
    ));
    Question {
        question: text,
        header: field.name.chars().take(12).collect(),
        options,
        multi_select: field.multi,
    }
}

/// The value of `field` from a person's `answer`, or what is wrong with it.
fn value_of(field: &Field, answer: &str) -> Result<Value, String> {
    let answer = answer.trim();
    let bad = |what: &str| format!("the answer to {} is not {what}: {answer:?}", field.label);
    let choice = |text: &str| -> Option<String> {
        field
            .choices
            .iter()
            .find(|(value, title)| value == text || title == text)
            .map(|(value, _)| value.clone())
    };
    if field.multi {
        let picked: Result<Vec<Value>, String> = answer
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| match choice(s) {
                Some(v) => Ok(Value::String(v)),
                None if field.choices.is_empty() => Ok(Value::String(s.to_owned())),
                None => Err(bad("one of the choices")),
            })
            .collect();
        return picked.map(Value::Array);
    }
    if !field.choices.is_empty() {
        return choice(answer)
            .map(Value::String)
            .ok_or_else(|| bad("one of the choices"));
    }
    match field.kind {
        "boolean" => match answer.to_ascii_lowercase().as_str() {
            "yes" | "y" | "true" | "1" => Ok(Value::Bool(true)),
            "no" | "n" | "false" | "0" => Ok(Value::Bool(false)),
            _ => Err(bad("yes or no")),
        },
        "integer" => answer
            .parse::<i64>()
            .map(|n| json!(n))
            .map_err(|_| bad("a whole number")),
        "number" => answer
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .map(|n| json!(n))
            .ok_or_else(|| bad("a number")),
        _ => Ok(Value::String(answer.to_owned())),
    }
}

/// Asks a person a form through `prompter`: one question per field, the answers typed as
/// the form says, defaults for what the person left to them (SEP-1034). A declined
/// questionnaire declines the form; an answer of the wrong type is an error the server
/// reads.
pub(crate) async fn ask_person(
    prompter: &dyn QuestionPrompter,
    server: &str,
    params: ElicitRequestParams,
) -> Result<ElicitResult, ErrorData> {
    let ElicitRequestParams::FormElicitationParams {
        message,
        requested_schema,
        ..
    } = params
    else {
        // Only form mode is declared.
        return Ok(decline());
    };
    let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
    let fields = fields(&schema);
    let questions: Vec<Question> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| question(server, &message, i, f))
        .collect();
    if questions.is_empty() {
        // Nothing to fill in: a confirmation.
        let confirm = Question {
            question: format!("The MCP server \"{server}\" asks: {message}"),
            header: "confirm".into(),
            options: vec![
                QuestionOption {
                    label: "accept".into(),
                    description: "go ahead".into(),
                    preview: None,
                },
                QuestionOption {
                    label: "decline".into(),
                    description: "refuse".into(),
                    preview: None,
                },
            ],
            multi_select: false,
        };
        let answers = prompter
            .ask(std::slice::from_ref(&confirm))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        return Ok(match answers {
            QuestionAnswers::Answered(a)
                if a.get(&confirm.question).is_some_and(|v| v == "accept") =>
            {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({}))
            }
            _ => decline(),
        });
    }
    let answers = prompter
        .ask(&questions)
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let QuestionAnswers::Answered(answers) = answers else {
        return Ok(decline());
    };
    answers_to_content(&fields, &questions, &answers)
        .map(|content| {
            ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
        })
        .map_err(|e| ErrorData::invalid_params(e, None))
}

fn answers_to_content(
    fields: &[Field],
    questions: &[Question],
    answers: &BTreeMap<String, String>,
) -> Result<Map<String, Value>, String> {
    let mut content = Map::new();
    for (field, question) in fields.iter().zip(questions) {
        match answers.get(&question.question).map(|a| a.trim()) {
            Some(answer) if !answer.is_empty() => {
                content.insert(field.name.clone(), value_of(field, answer)?);
            }
            _ => {
                if let Some(default) = &field.default {
                    content.insert(field.name.clone(), default.clone());
                } else if field.required {
                    return Err(format!("{} needs an answer", field.label));
                }
            }
        }
    }
    Ok(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sep1034() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
                "colors": {"type": "array", "items": {"anyOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]}},
                "tier": {"type": "string", "oneOf": [{"const": "free", "title": "Free"}, {"const": "pro", "title": "Pro"}]}
            },
            "required": ["tier"]
        })
    }

    #[test]
    fn a_form_becomes_questions_and_answers_become_typed_values() {
        let fields = fields(&sep1034());
        let questions: Vec<Question> = fields
            .iter()
            .enumerate()
            .map(|(i, f)| question("s", "Tell me", i, f))
            .collect();
        assert!(
            questions[0]
                .question
                .starts_with("The MCP server \"s\" asks: Tell me\n")
        );
        let by_name = |n: &str| fields.iter().position(|f| f.name == n).unwrap();
        // The default comes first among the options of a free field.
        assert_eq!(questions[by_name("name")].options[0].label, "John Doe");
        assert_eq!(questions[by_name("status")].options.len(), 3);
        assert!(questions[by_name("colors")].multi_select);
        let check = |name: &str, answer: &str, expected: Result<Value, &str>| {
            let got = value_of(&fields[by_name(name)], answer);
            match expected {
                Ok(v) => assert_eq!(got, Ok(v), "{name} {answer}"),
                Err(part) => {
                    let err = got.err().unwrap_or_default();
                    assert!(err.contains(part), "{name} {answer}: {err}");
                }
            }
        };
        check("age", "41", Ok(json!(41)));
        check("age", "4.5", Err("not a whole number"));
        check("score", "1e2", Ok(json!(100.0)));
        check("score", "NaN", Err("not a number"));
        check("verified", "no", Ok(json!(false)));
        check("verified", "maybe", Err("yes or no"));
        check("status", "pending", Ok(json!("pending")));
        check("status", "gone", Err("one of the choices"));
        check("tier", "Pro", Ok(json!("pro")));
        check("colors", "Red, g", Ok(json!(["r", "g"])));
        check("colors", "blue", Err("one of the choices"));
        // Fields left to their defaults get them; a required field without one is an error.
        let mut answers = BTreeMap::new();
        answers.insert(
            questions[by_name("tier")].question.clone(),
            "free".to_owned(),
        );
        let content = answers_to_content(&fields, &questions, &answers).unwrap();
        assert_eq!(content["name"], json!("John Doe"));
        assert_eq!(content["age"], json!(30));
        assert_eq!(content["score"], json!(95.5));
        assert_eq!(content["status"], json!("active"));
        assert_eq!(content["verified"], json!(true));
        assert_eq!(content["tier"], json!("free"));
        assert!(!content.contains_key("colors"));
        let err = answers_to_content(&fields, &questions, &BTreeMap::new()).unwrap_err();
        assert!(err.contains("tier needs an answer"), "{err}");
    }

    #[test]
    fn calls_from_different_routes_leave_a_question_unowned() {
        struct Nobody;
        #[async_trait]
        impl QuestionPrompter for Nobody {
            async fn ask(&self, _q: &[Question]) -> Result<QuestionAnswers, tool_core::ToolError> {
                Ok(QuestionAnswers::Declined)
            }
        }
        let dir = std::env::temp_dir();
        let person: Arc<dyn QuestionPrompter> = Arc::new(Nobody);
        let a = ToolContext::builder(&dir)
            .service(Arc::clone(&person))
            .build();
        let b = ToolContext::builder(&dir)
            .service(Arc::new(Nobody) as Arc<dyn QuestionPrompter>)
            .build();
        let callers = Callers::default();
        assert!(callers.route(None).is_none());
        let fallback = Route::Person(Arc::clone(&person));
        assert!(callers.route(Some(&fallback)).is_some());
        let first = callers.register(&a);
        let same = callers.register(&a.child());
        assert!(matches!(callers.route(None), Some(Route::Person(_))));
        let other = callers.register(&b);
        assert!(callers.route(Some(&fallback)).is_none());
        drop(other);
        drop(same);
        assert!(callers.route(None).is_some());
        drop(first);
        assert!(callers.route(None).is_none());
    }
}
