//! The one execution path (lookup → parse → validate → permission → call with cancellation
//! and timeout → render → output budget) and the batch runner with the reference's
//! concurrency rule. The binary, the MCP server and library users all go through here.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};

use crate::budget::{ERROR_TEXT_CAP, PERSIST_THRESHOLD_CAP, apply_budget, cut_middle};
use crate::permission::{allow_hint, headless_denial};
use crate::rule::{RuleBehavior, RuleSource, RuleSourceKind, SourcedRule};
use crate::schema::{Dialect, tool_declaration};
use crate::tool::{ParsedInput, Tool, ValidationResult};
use crate::{
    ApprovedBy, AskKind, CallResult, ContentBlock, PermissionDecision, PermissionRule,
    ProgressSink, ToolContext, ToolError, ToolResult,
};

/// At most this many concurrency-safe calls run at once (the reference's default).
pub const MAX_CONCURRENCY: usize = 10;

/// How long a cancelled call may take to return its own result before it is aborted.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// One requested call: a tool name (or alias), its JSON input, and an optional id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The tool's name or alias
    pub tool: String,
    /// The input; `null` or missing means `{}`
    #[serde(default)]
    pub input: Value,
    /// The caller's id for the call (used to name spill files)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl ToolCall {
    /// A call without an id.
    pub fn new(tool: impl Into<String>, input: Value) -> Self {
        ToolCall {
            tool: tool.into(),
            input,
            id: None,
        }
    }
}

/// A question to a person about one call.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    /// The tool
    pub tool: String,
    /// Its input
    pub input: Value,
    /// Why approval is needed
    pub reason: String,
    /// Rules that would allow calls like this one
    pub suggestions: Vec<PermissionRule>,
    /// What kind of ask
    pub kind: AskKind,
    /// The refusal to give when nobody can answer, in the words of the session's
    /// [`AllowHint`](crate::AllowHint)
    pub denial: String,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionAnswer {
    /// Allow this call
    Allow,
    /// Allow this call and add these rules to the session
    AllowAlways(Vec<PermissionRule>),
    /// Refuse, optionally saying why
    Deny(Option<String>),
}

/// Asks a person about calls that need approval. Hosts put an `Arc<dyn PermissionPrompter>`
/// in the context's services; without one, every ask becomes a denial that names the rule,
/// flag or mode that would allow the call.
#[async_trait]
pub trait PermissionPrompter: Send + Sync {
    /// Asks about one call.
    async fn ask(&self, request: &PermissionRequest) -> PermissionAnswer;
}

/// A pool of tools with lookup by name and alias. Cheap to clone.
#[derive(Clone, Default)]
pub struct ToolPool {
    inner: Arc<PoolInner>,
}

#[derive(Default)]
struct PoolInner {
    tools: Vec<Arc<dyn Tool>>,
    index: HashMap<String, usize>,
}

impl fmt::Debug for ToolPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.inner.tools.iter().map(|t| t.name()))
            .finish()
    }
}

/// The declarations of `tools` for a model provider, in order: name, description and input
/// schema in `dialect`'s shape (see [`tool_declaration`]). For the OpenAI Responses API a
/// tool that also takes free-form text ([`Tool::freeform_grammar`], codex's `apply_patch`)
/// is declared twice, as a function tool and as a custom tool with its Lark grammar; a host
/// sends the model one of the two (a custom tool's text input is the value of the function
/// form's one string field). [`ToolPool::declarations`] does this for a pool.
pub async fn declarations(tools: &[Arc<dyn Tool>], dialect: Dialect) -> Vec<Value> {
    let mut decls = Vec::new();
    for tool in tools {
        let description = tool.description(None).await;
        decls.push(tool_declaration(
            tool.name(),
            &description,
            tool.input_schema(),
            tool.annotations(),
            dialect,
        ));
        if dialect == Dialect::OpenAiResponses
            && let Some(grammar) = tool.freeform_grammar()
        {
            decls.push(serde_json::json!({
                "type": "custom",
                "name": tool.name(),
                "description": tool.freeform_description().unwrap_or(&description),
                "format": {"type": "grammar", "syntax": "lark", "definition": grammar},
            }));
        }
    }
    decls
}

/// A call that passed lookup and parsing, or the result that ended it early.
pub(crate) enum Prepared {
    Ready(Arc<dyn Tool>, ParsedInput, ToolCall),
    Done(CallResult),
}

static CALL_COUNTER: AtomicU64 = AtomicU64::new(0);

impl ToolPool {
    /// A pool of `tools` in the given order. Names are unique: a later tool with an earlier
    /// tool's name is dropped. Aliases resolve only when no tool has that name.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        let mut kept: Vec<Arc<dyn Tool>> = Vec::with_capacity(tools.len());
        let mut index = HashMap::new();
        for tool in tools {
            if index.contains_key(tool.name()) {
                continue;
            }
            index.insert(tool.name().to_owned(), kept.len());
            kept.push(tool);
        }
        for (i, tool) in kept.iter().enumerate() {
            for alias in tool.aliases() {
                index.entry((*alias).to_owned()).or_insert(i);
            }
        }
        ToolPool {
            inner: Arc::new(PoolInner { tools: kept, index }),
        }
    }

    /// The tools, in pool order.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.inner.tools
    }

    /// The declarations of every tool of the pool for a model provider, in pool order: what
    /// [`declarations`] gives for [`ToolPool::tools`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tool_core::schemars::JsonSchema;
    /// use tool_core::serde::Deserialize;
    /// use tool_core::{Dialect, ToolContext, ToolError, ToolMeta, ToolPool, ToolResult, TypedTool};
    ///
    /// struct Greet;
    /// #[derive(Deserialize, JsonSchema)]
    /// #[serde(crate = "tool_core::serde")]
    /// #[schemars(crate = "tool_core::schemars")]
    /// struct GreetInput {
    ///     /// Who to greet
    ///     name: String,
    /// }
    /// #[tool_core::async_trait]
    /// impl TypedTool for Greet {
    ///     type Input = GreetInput;
    ///     type Output = String;
    ///     const META: ToolMeta = ToolMeta::new("Greet").describe("Says hello.").read_only();
    ///     async fn call(&self, i: GreetInput, _: &ToolContext) -> Result<ToolResult<String>, ToolError> {
    ///         Ok(ToolResult::ok(format!("Hello, {}!", i.name)))
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let pool = ToolPool::new(vec![Arc::new(tool_core::Typed::new(Greet))]);
    /// let tools = pool.declarations(Dialect::Anthropic).await;
    /// assert_eq!(tools[0]["name"], "Greet");
    /// assert_eq!(tools[0]["description"], "Says hello.");
    /// assert_eq!(tools[0]["input_schema"]["properties"]["name"]["type"], "string");
    /// # }
    /// ```
    pub async fn declarations(&self, dialect: Dialect) -> Vec<Value> {
        declarations(self.tools(), dialect).await
    }

    /// The tool with this name or alias.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.inner.index.get(name).map(|&i| &self.inner.tools[i])
    }

    /// The names, in pool order.
    pub fn names(&self) -> Vec<&str> {
        self.inner.tools.iter().map(|t| t.name()).collect()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.inner.tools.len()
    }

    /// Whether the pool is empty.
    pub fn is_empty(&self) -> bool {
        self.inner.tools.is_empty()
    }

    /// Runs one call through the whole execution path.
    pub async fn call(&self, tool: &str, input: Value, ctx: &ToolContext) -> CallResult {
        self.execute(ToolCall::new(tool, input), ctx, ProgressSink::default())
            .await
    }

    /// Runs one call, reporting progress to `progress`.
    pub async fn execute(
        &self,
        call: ToolCall,
        ctx: &ToolContext,
        progress: ProgressSink,
    ) -> CallResult {
        match self.prepare(call) {
            Prepared::Done(result) => result,
            Prepared::Ready(tool, input, call) => run(tool, input, call, ctx, progress).await.0,
        }
    }

    pub(crate) fn prepare(&self, call: ToolCall) -> Prepared {
        let Some(tool) = self.get(&call.tool).cloned() else {
            let err = ToolError::UnknownTool {
                name: call.tool.clone(),
            };
            return Prepared::Done(error_result(&call.tool, &err));
        };
        if let Some(key) = crate::input::marked_duplicate_key(&call.input) {
            let err = ToolError::InvalidInput {
                tool: tool.name().to_owned(),
                problems: vec![format!(
                    "The key `{key}` appears more than once in the input; send each key once (which of the values was meant is unknown, so the call was not run)"
                )],
            };
            return Prepared::Done(error_result(tool.name(), &err));
        }
        match tool.parse_input(&call.input) {
            Ok(input) => Prepared::Ready(tool, input, call),
            Err(err) => Prepared::Done(error_result(tool.name(), &err)),
        }
    }

    /// Runs calls in order under the reference's concurrency rule: consecutive
    /// concurrency-safe calls run together (at most [`MAX_CONCURRENCY`] at once); every
    /// other call runs alone. Results come back in call order, one per call, well-formed
    /// even when the context is cancelled. An error from a tool that cancels its siblings
    /// (Bash) cancels the rest of its group.
    pub async fn batch(&self, calls: Vec<ToolCall>, ctx: &ToolContext) -> Vec<CallResult> {
        let mut calls: VecDeque<ToolCall> = calls.into();
        let mut results: Vec<CallResult> = Vec::with_capacity(calls.len());
        while !calls.is_empty() {
            results.extend(self.batch_group(&mut calls, ctx).await);
        }
        results
    }

    /// Takes the first group of `calls` under [`ToolPool::batch`]'s rule (one call, or
    /// every concurrency-safe call up to the next other one) and runs it; its results, in
    /// call order. A host whose pool changes between groups (MCP tool lists) takes the pool
    /// afresh before each group.
    pub async fn batch_group(
        &self,
        calls: &mut VecDeque<ToolCall>,
        ctx: &ToolContext,
    ) -> Vec<CallResult> {
        let safe = |p: &Prepared| matches!(p, Prepared::Ready(t, i, _) if t.is_concurrency_safe(i));
        let Some(first) = calls.pop_front().map(|c| self.prepare(c)) else {
            return Vec::new();
        };
        if !safe(&first) {
            return vec![match first {
                Prepared::Done(r) => r,
                Prepared::Ready(tool, input, call) => {
                    run(tool, input, call, ctx, ProgressSink::default()).await.0
                }
            }];
        }
        let mut group = vec![first];
        while let Some(call) = calls.pop_front() {
            match self.prepare(call) {
                next if safe(&next) => group.push(next),
                // The next group's first call: back to the front (preparing it again is
                // parsing, which has no effects).
                Prepared::Ready(_, _, call) => {
                    calls.push_front(call);
                    break;
                }
                // Failed before running: its result follows the group's.
                Prepared::Done(result) => {
                    let mut results = run_group(group, ctx).await;
                    results.push(result);
                    return results;
                }
            }
        }
        run_group(group, ctx).await
    }
}

async fn run_group(group: Vec<Prepared>, ctx: &ToolContext) -> Vec<CallResult> {
    let group_ctx = ctx.child();
    let limit = Arc::new(Semaphore::new(MAX_CONCURRENCY));
    let (sibling_tx, mut sibling_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let mut set = JoinSet::new();
    let mut slots: Vec<Option<CallResult>> = vec![None; group.len()];
    let mut cancelled = vec![false; group.len()];
    for (i, prepared) in group.into_iter().enumerate() {
        match prepared {
            Prepared::Done(r) => slots[i] = Some(r),
            Prepared::Ready(tool, input, call) => {
                let limit = Arc::clone(&limit);
                let group_ctx = group_ctx.clone();
                let tx = sibling_tx.clone();
                set.spawn(async move {
                    let _permit = limit.acquire_owned().await;
                    let name = tool.name().to_owned();
                    let cancels = tool.cancels_siblings_on_error();
                    let (result, was_cancelled) =
                        run(tool, input, call, &group_ctx, ProgressSink::default()).await;
                    if result.is_error && cancels && !was_cancelled {
                        let _ = tx.send(name);
                        group_ctx.cancel_token().cancel();
                    }
                    (i, result, was_cancelled)
                });
            }
        }
    }
    drop(sibling_tx);
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((i, result, was_cancelled)) => {
                slots[i] = Some(result);
                cancelled[i] = was_cancelled;
            }
            Err(e) => {
                // Tasks only fail by panicking outside `run`, which catches tool panics; keep
                // the slot well-formed anyway.
                let err = ToolError::fatal(format!("internal error in the batch runner: {e}"));
                if let Some(slot) = slots.iter_mut().find(|s| s.is_none()) {
                    *slot = Some(error_result("batch", &err));
                }
            }
        }
    }
    let errored = sibling_rx.try_recv().ok();
    slots
        .into_iter()
        .zip(cancelled)
        .map(|(slot, was_cancelled)| {
            let mut result = slot.unwrap_or_else(|| {
                error_result(
                    "batch",
                    &ToolError::fatal("internal error: a call produced no result"),
                )
            });
            if let (true, Some(name)) = (was_cancelled, &errored) {
                result.content = vec![ContentBlock::text(format!(
                    "<tool_use_error>Cancelled: parallel tool call {name} errored</tool_use_error>"
                ))];
            }
            result
        })
        .collect()
}

/// Aborts a spawned call when the caller stops waiting for it.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Validation, permission, the call itself and rendering. Returns the result and whether
/// the call was cancelled.
pub(crate) async fn run(
    tool: Arc<dyn Tool>,
    input: ParsedInput,
    call: ToolCall,
    ctx: &ToolContext,
    progress: ProgressSink,
) -> (CallResult, bool) {
    let name = tool.name().to_owned();
    let ctx = ctx.for_call(call.id.clone(), progress);
    if ctx.is_cancelled() {
        return (
            error_result(&name, &ToolError::Cancelled { tool: name.clone() }),
            true,
        );
    }
    // Declared paths reach the tool absolute: the path checked is the path used.
    let input = match crate::path_fields::resolve(tool.as_ref(), &input, &ctx) {
        None => input,
        Some(Ok(resolved)) => resolved,
        Some(Err(err)) => return (error_result(&name, &err), false),
    };
    // Validation and the permission engine resolve paths, walk directories and parse
    // commands: work that must not hold a runtime thread (see `off_runtime`).
    let checked = off_runtime(ctx.alone_on_runtime(), async {
        if let ValidationResult::Invalid { message, .. } = tool.validate(&input, &ctx).await {
            return Err(ToolError::respond(message));
        }
        Ok(ctx
            .permissions()
            .decide_with_approval(tool.as_ref(), &input, &ctx)
            .await)
    })
    .await;
    let (decision, approval) = match checked {
        Ok(decided) => decided,
        Err(err) => return (error_result(&name, &err), false),
    };
    let ctx = match authorize(tool.as_ref(), &input, &ctx, decision, approval).await {
        Ok(approval) => ctx.approved(approval),
        Err(err) => return (error_result(&name, &err), false),
    };
    if let Err(err) = crate::path_fields::check_fresh(tool.as_ref(), &input, &ctx).await {
        return (error_result(&name, &err), false);
    }
    // What a successful call wrote goes to the read ledger; kept here since the call
    // consumes the input.
    let written =
        (!tool.path_fields().is_empty()).then(|| ParsedInput::from_json(input.json().clone()));

    let task_tool = Arc::clone(&tool);
    let task_ctx = ctx.clone();
    let mut handle = AbortOnDrop(tokio::spawn(async move {
        task_tool.call(input, &task_ctx).await
    }));
    let timeout = ctx.call_timeout();
    let sleep = crate::sleep_or_never(timeout);
    let mut interrupted: Option<ToolError> = None;
    let joined = tokio::select! {
        joined = &mut handle.0 => Some(joined),
        () = ctx.cancel_token().cancelled() => {
            interrupted = Some(ToolError::Cancelled { tool: name.clone() });
            graceful(&mut handle).await
        }
        () = sleep => {
            interrupted = Some(ToolError::TimedOut { tool: name.clone(), limit: timeout.unwrap_or_default() });
            ctx.cancel_token().cancel();
            graceful(&mut handle).await
        }
    };
    let was_cancelled = interrupted.is_some();
    let outcome = match joined {
        // A tool that noticed the cancellation reports "cancelled"; say why it was.
        Some(Ok(Err(ToolError::Cancelled { .. }))) if interrupted.is_some() => {
            Err(interrupted.unwrap_or(ToolError::Cancelled { tool: name.clone() }))
        }
        Some(Ok(outcome)) => outcome,
        Some(Err(join_err)) if join_err.is_panic() => Err(ToolError::fatal(format!(
            "internal error: {name} panicked; the call was abandoned"
        ))),
        _ => Err(interrupted.unwrap_or(ToolError::Cancelled { tool: name.clone() })),
    };
    if let (Some(written), Ok(result)) = (&written, &outcome)
        && !result.is_error
    {
        crate::path_fields::record_writes(tool.as_ref(), written, &ctx).await;
    }
    (render(tool.as_ref(), outcome, &ctx).await, was_cancelled)
}

/// Gives a cancelled call a grace period to return its own result, then aborts it.
async fn graceful(
    handle: &mut AbortOnDrop<Result<ToolResult<Value>, ToolError>>,
) -> Option<Result<Result<ToolResult<Value>, ToolError>, tokio::task::JoinError>> {
    match tokio::time::timeout(CANCEL_GRACE, &mut handle.0).await {
        Ok(joined) => Some(joined),
        Err(_) => {
            handle.0.abort();
            None
        }
    }
}

/// Runs `work` where blocking does no harm: in a task of a multi-threaded runtime the
/// worker hands its other tasks to another thread for the duration (`block_in_place`), so a
/// slow file system, a path with thousands of components or a long command line delays
/// this call only — never the server's health check, other sessions or its shutdown.
/// Task-local values stay visible (the work runs on this thread). Elsewhere (a
/// current-thread runtime, outside a task, a session `alone` on its runtime, which has no
/// other session to keep waiting and pays a thread hand-over per call otherwise) it simply
/// runs.
async fn off_runtime<T>(alone: bool, work: impl std::future::Future<Output = T>) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle)
            if !alone
                && handle.runtime_flavor() == RuntimeFlavor::MultiThread
                && tokio::task::try_id().is_some() =>
        {
            tokio::task::block_in_place(|| handle.block_on(work))
        }
        _ => work.await,
    }
}

/// Acts on the permission engine's decision: for an ask, the context's prompter (or the
/// headless rule); what allowed the call when it may run.
async fn authorize(
    tool: &dyn Tool,
    input: &ParsedInput,
    ctx: &ToolContext,
    decision: PermissionDecision,
    approval: ApprovedBy,
) -> Result<ApprovedBy, ToolError> {
    let name = tool.name().to_owned();
    match decision {
        PermissionDecision::Allow => Ok(approval),
        PermissionDecision::Deny { reason } => {
            Err(ToolError::PermissionDenied { tool: name, reason })
        }
        PermissionDecision::Ask {
            reason,
            suggestions,
            kind,
        } => {
            let denial = headless_denial(&name, &reason, &suggestions, &kind, &*allow_hint(ctx));
            let Some(prompter) = ctx.services().get::<Arc<dyn PermissionPrompter>>() else {
                return Err(ToolError::PermissionDenied {
                    tool: name,
                    reason: denial,
                });
            };
            let request = PermissionRequest {
                tool: name.clone(),
                input: input.json().clone(),
                reason,
                suggestions,
                kind,
                denial,
            };
            match prompter.ask(&request).await {
                PermissionAnswer::Allow => Ok(ApprovedBy::Person),
                PermissionAnswer::AllowAlways(rules) => {
                    let source = RuleSource {
                        kind: RuleSourceKind::Session,
                        file: None,
                        root: ctx.original_cwd().to_path_buf(),
                    };
                    for rule in rules {
                        ctx.permissions().add_rule(SourcedRule {
                            rule,
                            behavior: RuleBehavior::Allow,
                            source: source.clone(),
                        });
                    }
                    Ok(ApprovedBy::Person)
                }
                PermissionAnswer::Deny(message) => Err(ToolError::PermissionDenied {
                    tool: name.clone(),
                    reason: message
                        .unwrap_or_else(|| format!("The user denied permission to use {name}.")),
                }),
            }
        }
    }
}

/// Turns a tool's outcome into what the model reads, applying the output budget.
async fn render(
    tool: &dyn Tool,
    outcome: Result<ToolResult<Value>, ToolError>,
    ctx: &ToolContext,
) -> CallResult {
    let name = tool.name();
    let result = match outcome {
        Ok(result) => result,
        Err(err) => return error_result(name, &err),
    };
    let mut content = result.content;
    if content.is_empty() {
        let text = match (&result.error_message, &result.data) {
            (Some(message), _) if result.is_error => message.clone(),
            (_, Value::String(s)) => s.clone(),
            (_, Value::Null) => String::new(),
            (_, data) => serde_json::to_string_pretty(data).unwrap_or_default(),
        };
        content.push(ContentBlock::text(text));
    }
    for message in result.side_messages {
        content.push(ContentBlock::text(message));
    }
    let max = tool.max_result_size_chars();
    if max != usize::MAX {
        let threshold = max.min(PERSIST_THRESHOLD_CAP);
        let dir = ctx
            .private_state_dir()
            .join("tool-results")
            .join(ctx.session_id());
        let spill_name = match ctx.call_id() {
            Some(id) => id.to_owned(),
            None => format!("{name}-{}", CALL_COUNTER.fetch_add(1, Ordering::Relaxed)),
        };
        apply_budget(&mut content, threshold, &dir, &spill_name).await;
    }
    CallResult {
        tool: name.to_owned(),
        is_error: result.is_error,
        content,
        data: result.data,
        retryable: false,
    }
}

/// The result of a call that failed with `err`: one `<tool_use_error>` text block, the text
/// cut to 10,000 characters (head and tail).
pub fn error_result(tool: &str, err: &ToolError) -> CallResult {
    let text = cut_middle(&err.to_string(), ERROR_TEXT_CAP);
    CallResult {
        tool: tool.to_owned(),
        is_error: true,
        content: vec![ContentBlock::text(format!(
            "<tool_use_error>{text}</tool_use_error>"
        ))],
        data: Value::Null,
        retryable: err.is_retryable(),
    }
}
