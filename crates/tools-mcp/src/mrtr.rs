//! Questions to the client on protocol 2026-07-28, where a server may not send requests of
//! its own: multi round-trip requests (MRTR).
//!
//! A `tools/call` runs inside a [`Scope`]. When the permission engine asks about the call,
//! the session's [`RoutingPrompter`] looks at the scope: if the client answered this very
//! question in an earlier round, that answer applies; otherwise the question is recorded and
//! the call is refused before the tool runs (the permission check comes first, so nothing
//! happened). The server then answers the request with an `InputRequiredResult` carrying an
//! `elicitation/create` form and a sealed `requestState`; the client asks its user and
//! retries the same call with the answer, and the call runs again, this time past the
//! question. A client without elicitation, or a call outside any scope (a sub-agent's),
//! gets the headless rule: the denial that names the rule, flag or mode that would allow it.
//!
//! Input a tool needs from the person before it runs (AskUserQuestion's answers) is asked
//! the same way, up front, through a host's [`UpfrontInput`].
//!
//! The `requestState` holds the answers given so far and the keys asked last; it is sealed
//! (HMAC-SHA256, a key drawn at start) with the principal, the context handle, the tool and
//! a digest of the arguments as associated data, and expires after [`ROUND_TTL`]. Only
//! answers to the questions of the previous round are taken, so a client cannot answer a
//! question before it is asked.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::ErrorData;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, RequestStateCodec, SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tool_core::{CallResult, PermissionAnswer, PermissionPrompter, PermissionRequest, ToolError};

use crate::principal::Principal;
use crate::prompts::{permission_answer, permission_form};
use crate::random::random_bytes;

/// How long a client has to answer before the sealed state expires.
pub const ROUND_TTL: Duration = Duration::from_secs(600);

/// The input-request key of a host's up-front form.
const INPUT_KEY: &str = "input";

/// A tool's input that a host collects from the client before the call runs, on protocol
/// 2026-07-28 (where nothing can be asked while a call runs). Hosts put an
/// `Arc<dyn UpfrontInput>` in the context's services.
pub trait UpfrontInput: Send + Sync {
    /// The form to ask before running `tool` with `input`, or `None` when the call needs
    /// nothing.
    fn form(&self, tool: &str, input: &Value) -> Option<ElicitRequestParams>;

    /// `input` completed with the person's answer to [`UpfrontInput::form`]; `Err` is the
    /// result the call ends with instead (for example when the person declined).
    fn complete(
        &self,
        tool: &str,
        input: Value,
        answer: &ElicitResult,
    ) -> Result<Value, Box<CallResult>>;
}
impl tool_core::ServiceType for dyn UpfrontInput {}

tokio::task_local! {
    static SCOPE: Arc<Scope>;
}

/// What one round of a call knows: whether the client can answer, the answers it gave.
struct Scope {
    can_elicit: bool,
    answers: HashMap<String, ElicitResult>,
    /// The question this round could not answer
    asked: Mutex<Option<(String, PermissionRequest)>>,
}

/// The session's permission prompter on every transport: answers from the current call's
/// [`Scope`], or the headless rule.
#[derive(Debug, Clone, Copy)]
pub struct RoutingPrompter;

#[async_trait]
impl PermissionPrompter for RoutingPrompter {
    async fn ask(&self, request: &PermissionRequest) -> PermissionAnswer {
        let scope = SCOPE.try_with(Arc::clone).ok();
        match scope {
            Some(scope) if scope.can_elicit => {
                let key = question_key(request);
                if let Some(answer) = scope.answers.get(&key) {
                    return permission_answer(request, answer);
                }
                if let Ok(mut asked) = scope.asked.lock() {
                    asked.get_or_insert_with(|| (key, request.clone()));
                }
                PermissionAnswer::Deny(Some(format!(
                    "Permission to use {} is being asked of the client.",
                    request.tool
                )))
            }
            _ => PermissionAnswer::Deny(Some(request.denial.clone())),
        }
    }
}

/// Hex SHA-256 of the parts, each ended by a NUL.
fn digest(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
        hasher.update([0u8]);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The input-request key of a permission question: the same call asking the same thing
/// gets the same key.
fn question_key(request: &PermissionRequest) -> String {
    let input = request.input.to_string();
    let hash = digest(&[
        request.tool.as_bytes(),
        input.as_bytes(),
        request.reason.as_bytes(),
    ]);
    format!("permission:{}", &hash[..32])
}

/// What travels in `requestState` between the rounds of one call.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct RoundState {
    /// The input-request keys of the last round: only answers to these are taken
    #[serde(default)]
    asked: Vec<String>,
    /// Every answer so far, by input-request key
    #[serde(default)]
    answers: BTreeMap<String, Value>,
    /// The context minted for a call that asked for a new one in its first round
    #[serde(default, skip_serializing_if = "Option::is_none")]
    context: Option<String>,
}

impl RoundState {
    /// The context handle a first round minted, if any.
    pub fn minted_context(&self) -> Option<&str> {
        self.context.as_deref()
    }

    /// Records the handle a first round minted.
    pub fn set_minted_context(&mut self, handle: &str) {
        self.context = Some(handle.to_owned());
    }

    /// The answer to the host's up-front form, if given.
    fn upfront_answer(&self) -> Option<ElicitResult> {
        self.answers
            .get(INPUT_KEY)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }
}

/// Seals and opens the state of multi round-trip calls.
pub struct Rounds {
    codec: RequestStateCodec,
}

impl std::fmt::Debug for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Rounds(..)")
    }
}

/// What the state of one call is bound to.
pub struct Binding(Vec<u8>);

impl Binding {
    /// The principal, the context handle it asked for, the tool and its arguments.
    pub fn new(principal: &Principal, handle: Option<&str>, tool: &str, arguments: &Value) -> Self {
        let args = arguments.to_string();
        let hash = digest(&[
            principal.as_str().as_bytes(),
            handle.unwrap_or("").as_bytes(),
            tool.as_bytes(),
            args.as_bytes(),
        ]);
        Binding(hash.into_bytes())
    }
}

impl Rounds {
    /// A sealer with a key drawn from the system's random source.
    pub fn new() -> Result<Self, ToolError> {
        let key = random_bytes::<32>().map_err(|e| {
            ToolError::fatal(format!("no randomness for the request-state key: {e}"))
        })?;
        let codec = RequestStateCodec::try_new(key.to_vec())
            .map_err(|e| ToolError::fatal(format!("cannot make the request-state key: {e}")))?;
        Ok(Rounds { codec })
    }

    /// The state of a retried call (or a fresh one without `sealed`), with the answers the
    /// client sent for the questions it was asked.
    pub fn open(
        &self,
        sealed: Option<&str>,
        responses: Option<InputResponses>,
        binding: &Binding,
    ) -> Result<RoundState, ErrorData> {
        let Some(sealed) = sealed else {
            return Ok(RoundState::default());
        };
        let mut state: RoundState = self.codec.open_json_with(sealed, &binding.0).map_err(|e| {
            ErrorData::invalid_params(
                format!(
                    "requestState was not issued for this call ({e}): it belongs to another call or client, was changed, or is older than {} minutes; send the call again without requestState and inputResponses",
                    ROUND_TTL.as_secs() / 60
                ),
                None,
            )
        })?;
        let asked = std::mem::take(&mut state.asked);
        for (key, value) in responses.unwrap_or_default() {
            if asked.contains(&key) {
                state.answers.insert(key, value);
            }
        }
        Ok(state)
    }

    /// The interim result that asks `requests`, carrying `state` to the next round.
    fn ask(
        &self,
        mut state: RoundState,
        requests: Vec<(String, ElicitRequestParams)>,
        binding: &Binding,
    ) -> Result<InputRequiredResult, ErrorData> {
        state.asked = requests.iter().map(|(k, _)| k.clone()).collect();
        let sealed = self
            .codec
            .seal_json_with(
                &state,
                &SealOptions::new()
                    .associated_data(&binding.0)
                    .ttl(ROUND_TTL),
            )
            .map_err(|e| ErrorData::internal_error(format!("cannot seal the state: {e}"), None))?;
        let requests: InputRequests = requests
            .into_iter()
            .map(|(k, params)| (k, InputRequest::Elicitation(ElicitRequest::new(params))))
            .collect();
        Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
    }
}

/// How one round of a call ended.
pub enum Round {
    /// The call is done (or was never started)
    Done(Box<CallResult>),
    /// The client must answer first
    Ask(InputRequiredResult),
}

/// Asks the host's up-front form when the call needs one and it was not answered yet;
/// otherwise the input to run with (completed with the answer when there is one).
pub fn upfront(
    rounds: &Rounds,
    state: RoundState,
    host: Option<&dyn UpfrontInput>,
    can_elicit: bool,
    tool: &str,
    input: Value,
    binding: &Binding,
) -> Result<Result<(Value, RoundState), Round>, ErrorData> {
    let Some(host) = host.filter(|_| can_elicit) else {
        return Ok(Ok((input, state)));
    };
    if let Some(answer) = state.upfront_answer() {
        return Ok(match host.complete(tool, input, &answer) {
            Ok(input) => Ok((input, state)),
            Err(result) => Err(Round::Done(result)),
        });
    }
    match host.form(tool, &input) {
        Some(form) => Ok(Err(Round::Ask(rounds.ask(
            state,
            vec![(INPUT_KEY.to_owned(), form)],
            binding,
        )?))),
        None => Ok(Ok((input, state))),
    }
}

/// Runs `call` (the execution of one round) in a scope with the answers of `state`; when
/// the permission engine asked a question the client can answer, the result is dropped
/// (the call was refused before the tool ran) and the question goes to the client.
pub async fn run_round<F>(
    rounds: &Rounds,
    state: RoundState,
    can_elicit: bool,
    binding: &Binding,
    call: F,
) -> Result<Round, ErrorData>
where
    F: std::future::Future<Output = CallResult>,
{
    let answers = state
        .answers
        .iter()
        .filter(|(k, _)| k.starts_with("permission:"))
        .filter_map(|(k, v)| Some((k.clone(), serde_json::from_value(v.clone()).ok()?)))
        .collect();
    let scope = Arc::new(Scope {
        can_elicit,
        answers,
        asked: Mutex::new(None),
    });
    let result = SCOPE.scope(Arc::clone(&scope), call).await;
    let asked = scope.asked.lock().ok().and_then(|mut a| a.take());
    match asked {
        Some((key, request)) => Ok(Round::Ask(rounds.ask(
            state,
            vec![(key, permission_form(&request))],
            binding,
        )?)),
        None => Ok(Round::Done(Box::new(result))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ElicitationAction;
    use serde_json::json;
    use tool_core::AskKind;

    fn request(input: Value) -> PermissionRequest {
        PermissionRequest {
            tool: "Edit".into(),
            input,
            reason: "needs approval".into(),
            suggestions: Vec::new(),
            kind: AskKind::Default,
            denial: tool_core::headless_denial(
                "Edit",
                "needs approval",
                &[],
                &AskKind::Default,
                &tool_core::NeutralHint,
            ),
        }
    }

    fn accept(allow: bool) -> Value {
        json!({"action": "accept", "content": {"allow": allow, "always": false}})
    }

    #[tokio::test]
    async fn outside_a_scope_an_ask_is_the_headless_denial() {
        let answer = RoutingPrompter.ask(&request(json!({}))).await;
        let PermissionAnswer::Deny(Some(text)) = answer else {
            panic!("{answer:?}");
        };
        assert!(text.contains("no one is available"), "{text}");
    }

    #[tokio::test]
    async fn a_question_is_asked_then_answered_on_the_retry() {
        let rounds = Rounds::new().unwrap_or_else(|e| panic!("{e}"));
        let binding = Binding::new(&Principal::local(), None, "Edit", &json!({"a": 1}));
        let ask = || async { RoutingPrompter.ask(&request(json!({"a": 1}))).await };
        let done = |answer: PermissionAnswer| CallResult {
            tool: "Edit".into(),
            is_error: !matches!(answer, PermissionAnswer::Allow),
            content: Vec::new(),
            data: Value::Null,
            retryable: false,
        };
        // Round 1: the question goes to the client with sealed state.
        let state = rounds.open(None, None, &binding).unwrap_or_default();
        let round = run_round(&rounds, state, true, &binding, async { done(ask().await) }).await;
        let Ok(Round::Ask(interim)) = round else {
            panic!("expected a question");
        };
        let requests = interim.input_requests.unwrap_or_default();
        let (key, _) = requests
            .iter()
            .next()
            .unwrap_or_else(|| panic!("a request"));
        assert!(key.starts_with("permission:"), "{key}");
        let sealed = interim.request_state.unwrap_or_default();

        // Round 2: the answer applies to the same question.
        let mut responses = InputResponses::new();
        responses.insert(key.clone(), accept(true));
        let state = rounds
            .open(Some(&sealed), Some(responses.clone()), &binding)
            .unwrap_or_default();
        let round = run_round(&rounds, state, true, &binding, async { done(ask().await) }).await;
        let Ok(Round::Done(result)) = round else {
            panic!("expected the call to run");
        };
        assert!(!result.is_error);

        // The state is bound to the call: another principal or other arguments fail.
        for other in [
            Binding::new(&Principal::named("x"), None, "Edit", &json!({"a": 1})),
            Binding::new(&Principal::local(), None, "Edit", &json!({"a": 2})),
            Binding::new(&Principal::local(), Some("new"), "Edit", &json!({"a": 1})),
        ] {
            let err = rounds.open(Some(&sealed), Some(responses.clone()), &other);
            assert!(err.is_err());
        }
        let mut forged = sealed.clone();
        forged.push('x');
        assert!(rounds.open(Some(&forged), None, &binding).is_err());
    }

    #[tokio::test]
    async fn answers_to_questions_not_asked_are_ignored() {
        let rounds = Rounds::new().unwrap_or_else(|e| panic!("{e}"));
        let binding = Binding::new(&Principal::local(), None, "Edit", &json!({}));
        let sealed = rounds
            .ask(RoundState::default(), Vec::new(), &binding)
            .ok()
            .and_then(|r| r.request_state)
            .unwrap_or_default();
        let mut responses = InputResponses::new();
        responses.insert(question_key(&request(json!({}))), accept(true));
        let state = rounds
            .open(Some(&sealed), Some(responses), &binding)
            .unwrap_or_default();
        assert!(state.answers.is_empty());
    }

    #[tokio::test]
    async fn a_declined_question_denies_and_a_client_without_elicitation_gets_the_rule() {
        let rounds = Rounds::new().unwrap_or_else(|e| panic!("{e}"));
        let binding = Binding::new(&Principal::local(), None, "Edit", &json!({}));
        let seen: Arc<Mutex<Vec<PermissionAnswer>>> = Arc::default();
        let record = |answer: PermissionAnswer| {
            if let Ok(mut s) = seen.lock() {
                s.push(answer);
            }
            CallResult {
                tool: "Edit".into(),
                is_error: true,
                content: Vec::new(),
                data: Value::Null,
                retryable: false,
            }
        };
        let mut state = RoundState::default();
        let key = question_key(&request(json!({})));
        state.answers.insert(
            key,
            serde_json::to_value(ElicitResult::new(ElicitationAction::Decline)).unwrap_or_default(),
        );
        let round = run_round(&rounds, state, true, &binding, async {
            record(RoutingPrompter.ask(&request(json!({}))).await)
        })
        .await;
        assert!(matches!(round, Ok(Round::Done(_))));
        let round = run_round(&rounds, RoundState::default(), false, &binding, async {
            record(RoutingPrompter.ask(&request(json!({}))).await)
        })
        .await;
        assert!(matches!(round, Ok(Round::Done(_))));
        let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
        assert!(
            matches!(&seen[0], PermissionAnswer::Deny(Some(t)) if t.contains("declined")),
            "{seen:?}"
        );
        assert!(
            matches!(&seen[1], PermissionAnswer::Deny(Some(t)) if t.contains("no one is available")),
            "{seen:?}"
        );
    }
}
