//! The server adapter: any [`ToolPool`] as an MCP server, over stdio (here) or streamable
//! HTTP (`http.rs`), on every protocol version.
//!
//! A request runs in a [`ToolContext`] that `contexts.rs` chooses: a legacy session's own
//! (made at `initialize`), or for protocol 2026-07-28 the context of the principal and the
//! handle it names. Every `tools/call` goes through [`ToolPool::execute`] with a child of
//! that context, whose token the client's cancellation cancels, and a [`ProgressSink`] that
//! turns the tool's progress into `notifications/progress` when the client sent a progress
//! token. Permission questions go to the client through elicitation (legacy sessions) or as
//! multi round-trip requests (2026-07-28, `mrtr.rs`).
//!
//! The pool may change while the server runs ([`LivePool::following`]): the server then
//! advertises `tools.listChanged`, sends `notifications/tools/list_changed` to every legacy
//! session and every `subscriptions/listen` stream once the new list is ready, and answers
//! later `tools/list` and `tools/call` requests from the new pool.
//!
//! Before the MCP layer reads a message, [`check_message`] answers what it would answer
//! wrongly (not JSON: -32700; wrong params of a known method: -32602), and
//! [`mark_repeated_arguments`] marks tool arguments that repeat a key.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities,
    ContentBlock as McpBlock, Implementation, InitializeRequestParams, InitializeResult,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool as McpToolDecl,
    ToolAnnotations as McpAnnotations,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;
use tool_core::{
    CallResult, ContentBlock, PermissionPrompter, Progress, ProgressSink, Summariser, ToolCall,
    ToolContext, ToolError, ToolPool,
};

use crate::contexts::{CONTEXT_META_KEY, Contexts, SessionFactory, wait_until};
use crate::live::LivePool;
use crate::mrtr::{Binding, Round, Rounds, UpfrontInput, run_round, upfront};
use crate::principal::Principal;
use crate::prompts::{ElicitationPrompter, SamplingSummariser};

/// A host's hook, called when a client initializes a session, to install services that talk
/// to that client (for example an AskUserQuestion prompter over elicitation, which lives
/// with the host because its trait belongs to another category crate). Put it in the
/// session context's services as a `ClientHook`.
#[derive(Clone)]
pub struct ClientHook(
    /// Receives the session's context, the client and its capabilities
    pub Arc<ClientHookFn>,
);
impl tool_core::Service for ClientHook {}

/// The function inside a [`ClientHook`].
pub type ClientHookFn = dyn Fn(&ToolContext, &Peer<RoleServer>, &ClientCapabilities) + Send + Sync;

impl std::fmt::Debug for ClientHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientHook(..)")
    }
}

/// The pool's declarations as MCP tools: name, description, input schema and annotations.
pub async fn mcp_tool_list(pool: &ToolPool) -> Vec<McpToolDecl> {
    let mut out = Vec::with_capacity(pool.len());
    for tool in pool.tools() {
        let description = tool.description(None).await;
        let schema: JsonObject = tool.input_schema().as_object().cloned().unwrap_or_default();
        let hints = tool.annotations();
        let annotations = McpAnnotations::new()
            .read_only(hints.read_only)
            .destructive(hints.destructive && !hints.read_only)
            .idempotent(hints.idempotent)
            .open_world(hints.open_world);
        let mut decl = McpToolDecl::new(tool.name().to_owned(), description, Arc::new(schema))
            .with_annotations(annotations);
        if let Some(serde_json::Value::Object(output)) = tool.output_schema() {
            decl.output_schema = Some(Arc::new(output.clone()));
        }
        out.push(decl);
    }
    out
}

/// A pool and its MCP tool list, computed once per pool.
pub(crate) struct Catalog {
    pool: ToolPool,
    tools: Arc<Vec<McpToolDecl>>,
}

impl Catalog {
    async fn of(pool: ToolPool) -> Self {
        let tools = Arc::new(mcp_tool_list(&pool).await);
        Catalog { pool, tools }
    }
}

/// The catalogue of `live` now, and a task that publishes a new one whenever the pool
/// changes (until every receiver is gone). Sessions watch it to tell their clients.
pub(crate) async fn follow_catalog(live: LivePool) -> watch::Receiver<Arc<Catalog>> {
    let mut pools = live.subscribe();
    let first = pools.borrow_and_update().clone();
    let (tx, rx) = watch::channel(Arc::new(Catalog::of(first).await));
    if live.follows_changes() {
        tokio::spawn(async move {
            // `live` stays alive with the task, so its pools keep coming.
            let _live = live;
            loop {
                tokio::select! {
                    changed = pools.changed() => if changed.is_err() { break },
                    () = tx.closed() => break,
                }
                let pool = pools.borrow_and_update().clone();
                let catalog = Catalog::of(pool).await;
                if tx.send(Arc::new(catalog)).is_err() {
                    break;
                }
            }
        });
    }
    rx
}

/// What every request handler of a server shares: the contexts and the sealer of
/// multi round-trip state.
#[derive(Debug)]
pub(crate) struct HandlerState {
    pub(crate) contexts: Arc<Contexts>,
    rounds: Rounds,
    /// The `.mcp.json` servers behind the pool, to wait for one that is still starting
    upstream: Option<Arc<crate::McpManager>>,
}

impl HandlerState {
    pub(crate) fn new(
        contexts: Contexts,
        upstream: Option<Arc<crate::McpManager>>,
    ) -> Result<Arc<Self>, ToolError> {
        Ok(Arc::new(HandlerState {
            contexts: Arc::new(contexts),
            rounds: Rounds::new()?,
            upstream,
        }))
    }
}

/// The state of one legacy session (or of one stdio connection): its context, once
/// `initialize` made it, and what ends when the session ends.
struct SessionState {
    ctx: OnceLock<ToolContext>,
    /// Whether the context was made for this session (HTTP), and ends with it
    owned: bool,
    contexts: Arc<Contexts>,
    /// Cancelled when the session ends, which ends the task that forwards list changes
    closed: CancellationToken,
    /// The catalogue as of `initialize`, until `notifications/initialized` starts the task
    /// that announces changes
    seen: std::sync::Mutex<Option<watch::Receiver<Arc<Catalog>>>>,
}

impl Drop for SessionState {
    fn drop(&mut self) {
        self.closed.cancel();
        if self.owned
            && let Some(ctx) = self.ctx.get()
        {
            self.contexts.end_session(ctx);
        }
    }
}

/// The MCP server behind one connection or legacy session: the pool's catalogue (which
/// may change), the server's contexts, and the session's own context.
#[derive(Clone)]
pub struct PoolServer {
    catalog: watch::Receiver<Arc<Catalog>>,
    /// Whether the pool can change (then `tools.listChanged` is advertised)
    live: bool,
    shared: Arc<HandlerState>,
    session: Arc<SessionState>,
}

impl std::fmt::Debug for PoolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolServer")
            .field("tools", &self.catalog.borrow().tools.len())
            .field("live", &self.live)
            .field("session", &self.session.ctx.get().map(|c| c.session_id()))
            .finish()
    }
}

/// Whether a request follows protocol 2026-07-28 or later (no session: it names its own
/// version, capabilities and context).
fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .meta
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Who sent the request: the principal the HTTP layer authenticated, or the local client.
fn principal_of(context: &RequestContext<RoleServer>) -> Principal {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>().cloned())
        .unwrap_or_else(Principal::local)
}

impl PoolServer {
    /// A server whose session context `initialize` will make (HTTP: one per legacy
    /// session; stateless requests find theirs in `shared`).
    pub(crate) fn new(
        catalog: watch::Receiver<Arc<Catalog>>,
        live: bool,
        shared: Arc<HandlerState>,
        session: Option<ToolContext>,
    ) -> Self {
        let owned = session.is_none();
        let ctx = OnceLock::new();
        if let Some(session) = session {
            let _ = ctx.set(session);
        }
        PoolServer {
            catalog,
            live,
            session: Arc::new(SessionState {
                ctx,
                owned,
                contexts: Arc::clone(&shared.contexts),
                closed: CancellationToken::new(),
                seen: std::sync::Mutex::default(),
            }),
            shared,
        }
    }

    fn pool(&self) -> ToolPool {
        self.catalog.borrow().pool.clone()
    }

    /// The pool for a call of `name`: when `name` belongs to a `.mcp.json` server that is
    /// still starting, after that server has started and its tools have joined (bounded by
    /// its start-up timeout, then a few seconds for the new list).
    async fn pool_for(&self, name: &str) -> ToolPool {
        let pool = self.pool();
        if pool.get(name).is_some() {
            return pool;
        }
        let Some(manager) = &self.shared.upstream else {
            return pool;
        };
        let Some(status) = manager.status_of_tool(name).filter(|s| s.starting) else {
            return pool;
        };
        manager.wait_for_server(&status.name).await;
        let mut catalog = self.catalog.clone();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while catalog.borrow_and_update().pool.get(name).is_none() {
            match tokio::time::timeout_at(deadline, catalog.changed()).await {
                Ok(Ok(())) => {}
                _ => break,
            }
        }
        self.pool()
    }

    /// The context of this legacy session, made on first use for the principal that opened
    /// it.
    fn session_ctx(&self, principal: &Principal) -> Result<ToolContext, ErrorData> {
        if let Some(ctx) = self.session.ctx.get() {
            return Ok(ctx.clone());
        }
        let made = self.shared.contexts.session(principal)?;
        match self.session.ctx.set(made.clone()) {
            Ok(()) => Ok(made),
            // Another request of the session made it first.
            Err(_) => {
                self.shared.contexts.end_session(&made);
                self.session.ctx.get().cloned().ok_or_else(|| {
                    ErrorData::internal_error("the session context is missing", None)
                })
            }
        }
    }

    /// Runs one call through the pool's execution path in `ctx`: progress goes to the
    /// client when it sent a progress token, and the client's cancellation cancels it —
    /// as does, for a legacy call, the client going away before the answer (unless the
    /// call asked to run in the background).
    async fn execute(
        &self,
        pool: &ToolPool,
        call: ToolCall,
        ctx: &ToolContext,
        context: &RequestContext<RoleServer>,
    ) -> CallResult {
        let _in_flight = self.shared.contexts.call_started(ctx);
        let gone = client_gone(context)
            .filter(|_| !runs_in_background(&call.input))
            .map(|c| c.gone);
        let call_ctx = ctx.child();
        let (sink, flush) = progress_forwarder(context);
        let exec = pool.execute(call, &call_ctx, sink);
        tokio::pin!(exec);
        let result = tokio::select! {
            result = &mut exec => result,
            () = context.ct.cancelled() => {
                call_ctx.cancel_token().cancel();
                exec.await
            }
            () = cancelled(gone.as_ref()) => {
                call_ctx.cancel_token().cancel();
                exec.await
            }
        };
        if let Some(tx) = flush {
            let (done_tx, done_rx) = oneshot::channel();
            if tx.send(ProgressMsg::Flush(done_tx)).is_ok() {
                let _ = tokio::time::timeout(Duration::from_secs(2), done_rx).await;
            }
        }
        result
    }

    /// A `tools/call` of protocol 2026-07-28: the context the request names, and questions
    /// to the person as multi round-trip requests.
    async fn call_stateless(
        &self,
        pool: &ToolPool,
        request: CallToolRequestParams,
        input: serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let principal = principal_of(context);
        let handle = match context.meta.get(CONTEXT_META_KEY) {
            None => None,
            Some(serde_json::Value::String(h)) => Some(h.clone()),
            Some(other) => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "_meta `{CONTEXT_META_KEY}` must be a string (a context handle, \"new\" or \"default\"), not {other}"
                    ),
                    None,
                ));
            }
        };
        let rounds = &self.shared.rounds;
        let binding = Binding::new(&principal, handle.as_deref(), &name, &input);
        let mut state = rounds.open(
            request.request_state.as_deref(),
            request.input_responses,
            &binding,
        )?;
        // A call that asked for a new context keeps the one its first round minted.
        let wanted = match (handle.as_deref(), state.minted_context()) {
            (Some("new"), Some(minted)) => Some(minted.to_owned()),
            (h, _) => h.map(str::to_owned),
        };
        let (id, ctx) = self
            .shared
            .contexts
            .resolve(&principal, wanted.as_deref())?;
        if handle.as_deref() == Some("new") {
            state.set_minted_context(&id);
        }
        let can_elicit = context
            .meta
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some());
        let host = ctx.services().get::<Arc<dyn UpfrontInput>>();
        let (input, state) = match upfront(
            rounds,
            state,
            host.as_deref(),
            can_elicit,
            &name,
            input,
            &binding,
        )? {
            Ok(ready) => ready,
            Err(Round::Done(result)) => {
                return Ok(with_context(answer(pool, &result), &id).into());
            }
            Err(Round::Ask(interim)) => return Ok(CallToolResponse::InputRequired(interim)),
        };
        let call = ToolCall {
            tool: name,
            input,
            id: Some(next_call_id()),
        };
        let round = run_round(
            rounds,
            state,
            can_elicit,
            &binding,
            self.execute(pool, call, &ctx, context),
        )
        .await?;
        Ok(match round {
            Round::Done(result) => with_context(answer(pool, &result), &id).into(),
            Round::Ask(interim) => CallToolResponse::InputRequired(interim),
        })
    }
}

/// What the HTTP gate put in a legacy request to learn when its client went away.
fn client_gone(context: &RequestContext<RoleServer>) -> Option<crate::conns::ClientGone> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<crate::conns::ClientGone>())
        .cloned()
}

/// Waits until `token` is cancelled; never without one.
async fn cancelled(token: Option<&CancellationToken>) {
    match token {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

/// Whether a call's input asks for it to run in the background (`run_in_background`), so
/// that it outlives the request that started it.
fn runs_in_background(input: &serde_json::Value) -> bool {
    match input.get("run_in_background") {
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    }
}

/// `result` with the handle of the context that served it in `_meta`.
fn with_context(mut result: CallToolResult, handle: &str) -> CallToolResult {
    let mut meta = result.meta.take().unwrap_or_default();
    meta.insert(
        CONTEXT_META_KEY.to_owned(),
        serde_json::Value::String(handle.to_owned()),
    );
    result.meta = Some(meta);
    result
}

fn next_call_id() -> String {
    format!("mcp-{}", CALL_IDS.fetch_add(1, Ordering::Relaxed))
}

/// The MCP result of a call in `pool`: a tool that declares an output schema (a proxied MCP
/// tool) gives its data as structured content, as the schema promises.
fn answer(pool: &ToolPool, result: &CallResult) -> CallToolResult {
    let mut answer = to_mcp_result(result);
    if !result.is_error
        && pool
            .get(&result.tool)
            .is_some_and(|t| t.output_schema().is_some())
    {
        answer.structured_content = Some(result.data.clone());
    }
    answer
}

/// Converts a finished call into MCP content; `is_error` becomes `CallToolResult::error`.
pub fn to_mcp_result(result: &CallResult) -> CallToolResult {
    let content: Vec<McpBlock> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => McpBlock::text(text.clone()),
            ContentBlock::Image { media_type, data } => McpBlock::image(data.clone(), media_type),
        })
        .collect();
    if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// Messages to the task that forwards progress in order.
enum ProgressMsg {
    Event(Progress),
    Flush(oneshot::Sender<()>),
}

/// A sink that forwards progress as `notifications/progress` (in order, with a strictly
/// increasing `progress`), plus the sender used to flush it before the result goes out.
fn progress_forwarder(
    context: &RequestContext<RoleServer>,
) -> (ProgressSink, Option<mpsc::UnboundedSender<ProgressMsg>>) {
    let Some(token) = context.meta.get_progress_token() else {
        return (ProgressSink::default(), None);
    };
    let peer = context.peer.clone();
    let (tx, mut rx) = mpsc::unbounded_channel::<ProgressMsg>();
    tokio::spawn(async move {
        let mut last = 0.0_f64;
        while let Some(msg) = rx.recv().await {
            match msg {
                ProgressMsg::Event(event) => {
                    let value = match event.progress {
                        Some(p) if p > last => p,
                        _ => last + 1.0,
                    };
                    last = value;
                    let mut param = ProgressNotificationParam::new(token.clone(), value);
                    param.total = event.total;
                    if !event.message.is_empty() {
                        param.message = Some(event.message);
                    }
                    // A client that went away cannot be told; the call goes on regardless.
                    let _ = peer.notify_progress(param).await;
                }
                ProgressMsg::Flush(done) => {
                    let _ = done.send(());
                }
            }
        }
    });
    let sink_tx = tx.clone();
    let sink = ProgressSink::new(move |event| {
        let _ = sink_tx.send(ProgressMsg::Event(event));
    });
    (sink, Some(tx))
}

/// Installs the elicitation prompter and the sampling summariser when the client offers them.
fn install_client_services(
    ctx: &ToolContext,
    request: &InitializeRequestParams,
    context: &RequestContext<RoleServer>,
) {
    if request.capabilities.elicitation.is_some() {
        let prompter: Arc<dyn PermissionPrompter> =
            Arc::new(ElicitationPrompter::new(context.peer.clone()));
        ctx.services().insert(prompter);
    }
    if request.capabilities.sampling.is_some() {
        let summariser: Arc<dyn Summariser> =
            Arc::new(SamplingSummariser::new(context.peer.clone()));
        ctx.services().insert(summariser);
    }
    // The questions and sampling requests of the upstream servers behind the pool, during
    // this session's calls of their tools, go to this client.
    let relay: Arc<dyn crate::relay::ClientRelay> = Arc::new(crate::prompts::PeerRelay {
        peer: context.peer.clone(),
        elicitation: request.capabilities.elicitation.is_some(),
        sampling: request.capabilities.sampling.is_some(),
    });
    ctx.services().insert(relay);
    install_event_notifications(ctx, &context.peer);
    if let Some(hook) = ctx.services().get::<ClientHook>() {
        (hook.0)(ctx, &context.peer, &request.capabilities);
    }
}

/// The session's events (fired cron prompts, Monitor lines, background tasks that ended)
/// reach the client as `notifications/message` (logging, level info, logger
/// `agent-tools/event`, the event as data), in order. Protocol versions up to 2025-11-25 have
/// that notification; 2026-07-28 removed it and has no other channel outside a request, so
/// a stateless client reads the same with TaskOutput and CronList. (rmcp marks logging
/// deprecated, after SEP-2577; the clients of those versions still read it.)
#[allow(deprecated)]
fn install_event_notifications(ctx: &ToolContext, peer: &Peer<RoleServer>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<tool_core::SessionEvent>();
    let peer = peer.clone();
    let stop = ctx.cancel_token().clone();
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                () = stop.cancelled() => break,
                event = rx.recv() => match event {
                    Some(event) => event,
                    None => break,
                },
            };
            let data = serde_json::to_value(&event).unwrap_or_default();
            let param = rmcp::model::LoggingMessageNotificationParam::new(
                rmcp::model::LoggingLevel::Info,
                data,
            )
            .with_logger("agent-tools/event");
            if peer.is_transport_closed() || peer.notify_logging_message(param).await.is_err() {
                break;
            }
        }
    });
    ctx.set_event_sink(tool_core::EventSink::new(move |event| {
        let _ = tx.send(event);
    }));
}

static CALL_IDS: AtomicU64 = AtomicU64::new(0);

impl ServerHandler for PoolServer {
    // Logging is announced for the session events of protocol versions up to 2025-11-25
    // (see `install_event_notifications`).
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        let capabilities = if self.live {
            ServerCapabilities::builder()
                .enable_logging()
                .enable_tools()
                .enable_tool_list_changed()
                .build()
        } else {
            ServerCapabilities::builder()
                .enable_logging()
                .enable_tools()
                .build()
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "agent-tools",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "The tool layer of a coding agent: read, edit and search files, run commands, \
                 fetch the web. Paths are relative to the session's working directory.",
            )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let ctx = self.session_ctx(&principal_of(&context))?;
        install_client_services(&ctx, &request, &context);
        // The tool list the client is about to learn: changes from here on are announced
        // once it has sent `notifications/initialized`.
        let mut seen = self.catalog.clone();
        seen.borrow_and_update();
        if let Ok(mut slot) = self.session.seen.lock() {
            *slot = Some(seen);
        }
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if !self.live {
            return;
        }
        // Tell the client whenever the tool list changes after `initialize`, until the
        // session ends.
        let seen = self.session.seen.lock().ok().and_then(|mut s| s.take());
        let mut catalog = seen.unwrap_or_else(|| {
            let mut fresh = self.catalog.clone();
            fresh.borrow_and_update();
            fresh
        });
        let closed = self.session.closed.clone();
        let stop = self
            .session
            .ctx
            .get()
            .map(|c| c.cancel_token().clone())
            .unwrap_or_default();
        let peer = context.peer;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = closed.cancelled() => break,
                    () = stop.cancelled() => break,
                    changed = catalog.changed() => if changed.is_err() { break },
                }
                catalog.borrow_and_update();
                if peer.is_transport_closed() || peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    // The client picks a level; events are always info, and nothing else is logged.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        (self.live && requested.tools_list_changed == Some(true))
            .then(|| SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        // Protocol 2026-07-28: list changes go to the clients that listen for them.
        let mut catalog = self.catalog.clone();
        catalog.borrow_and_update();
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                changed = catalog.changed() => if changed.is_err() { return Ok(()) },
            }
            catalog.borrow_and_update();
            if subscription
                .sink()
                .notify_tool_list_changed()
                .await
                .is_err()
            {
                return Ok(());
            }
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = Arc::clone(&self.catalog.borrow().tools);
        Ok(ListToolsResult::with_all_items(tools.as_ref().clone()))
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        // JSON-RPC's "Method not found", naming the method.
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {}", request.method),
            Some(serde_json::json!({"method": request.method})),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<McpToolDecl> {
        self.catalog
            .borrow()
            .tools
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // However this call ends, the gate learns it has its answer.
        let _answered = client_gone(&context).map(|c| c.answered.drop_guard());
        let pool = self.pool_for(&request.name).await;
        if pool.get(&request.name).is_none() {
            return Err(ErrorData::invalid_params(
                format!(
                    "Unknown tool: {}; tools/list names the available tools",
                    request.name
                ),
                None,
            ));
        }
        let input = serde_json::Value::Object(request.arguments.clone().unwrap_or_default());
        if is_stateless(&context) {
            return self.call_stateless(&pool, request, input, &context).await;
        }
        let ctx = self.session_ctx(&principal_of(&context))?;
        let call = ToolCall {
            tool: request.name.to_string(),
            input,
            id: Some(next_call_id()),
        };
        let result = self.execute(&pool, call, &ctx, &context).await;
        Ok(answer(&pool, &result).into())
    }
}

/// Options of [`serve_stdio_with`].
#[derive(Clone, Default)]
pub struct StdioOptions {
    /// Builds contexts a client asks for with `"new"` in `_meta` (protocol 2026-07-28);
    /// without it the connection has one context
    pub factory: Option<SessionFactory>,
    /// Stops the server: calls in flight get [`StdioOptions::grace`] to finish, then are
    /// cancelled, and background tasks are stopped
    pub shutdown: CancellationToken,
    /// How long calls in flight may take to finish after `shutdown`
    pub grace: Duration,
}

impl std::fmt::Debug for StdioOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioOptions")
            .field("factory", &self.factory.is_some())
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}

/// Serves `pool` (a [`ToolPool`] or a [`LivePool`]) over stdin/stdout with `ctx` as the
/// connection's context, until the client closes the connection.
pub async fn serve_stdio(pool: impl Into<LivePool>, ctx: ToolContext) -> Result<(), ToolError> {
    serve_stdio_with(pool, ctx, StdioOptions::default()).await
}

/// [`serve_stdio`] with options: a factory for minted contexts, and a shutdown signal.
/// Before it returns, every call has ended and every background task has been stopped.
pub async fn serve_stdio_with(
    pool: impl Into<LivePool>,
    ctx: ToolContext,
    options: StdioOptions,
) -> Result<(), ToolError> {
    let live: LivePool = pool.into();
    let upstream = live.manager();
    let follows = live.follows_changes();
    let catalog = follow_catalog(live).await;
    let shared = HandlerState::new(
        Contexts::with_default(ctx.clone(), options.factory),
        upstream,
    )?;
    let server = PoolServer::new(catalog, follows, Arc::clone(&shared), Some(ctx.clone()));
    let awaiting = Arc::new(Awaiting::default());
    let (input, output, writer) = guarded_stdio(Arc::clone(&awaiting));
    let shutdown = options.shutdown.clone();
    // The shutdown keeps the MCP layer running until the answers are out: dropping its
    // future (or the running service) would stop it at once and cancel every call, so
    // neither is dropped before the drain ends.
    let drain = || drain_stdio(&shared.contexts, &awaiting, options.grace);
    let serving = server.serve((input, output));
    tokio::pin!(serving);
    let mut drained = false;
    let outcome = tokio::select! {
        started = &mut serving => match started {
            Ok(running) => {
                let stop = running.cancellation_token();
                let waiting = running.waiting();
                tokio::pin!(waiting);
                tokio::select! {
                    ended = &mut waiting => ended
                        .map(|_| ())
                        .map_err(|e| ToolError::fatal(format!("the MCP stdio session ended with an error: {e}"))),
                    () = shutdown.cancelled() => {
                        drain().await;
                        drained = true;
                        stop.cancel();
                        let _ = tokio::time::timeout(ANSWERS_BOUND, &mut waiting).await;
                        Ok(())
                    }
                }
            }
            Err(e) => Err(ToolError::fatal(format!("MCP initialization over stdio failed: {e}"))),
        },
        () = shutdown.cancelled() => {
            // Before `initialize` (a client of protocol 2026-07-28 never sends it), the
            // requests are served inside `serving`, which runs on through the drain.
            let draining = drain();
            tokio::pin!(draining);
            tokio::select! {
                () = &mut draining => {}
                started = &mut serving => {
                    let running = started.ok();
                    draining.await;
                    if let Some(running) = running {
                        running.cancellation_token().cancel();
                    }
                }
            }
            drained = true;
            Ok(())
        }
    };
    if !drained {
        finish(&shared.contexts).await;
    }
    // Whatever the server wrote reaches standard output before the process ends.
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    outcome
}

/// The stdio shutdown: the calls in flight get `grace` to finish and be answered, then every
/// context ends (the calls still running are cancelled), and the answers, the cancelled
/// calls' too, reach standard output (bounded: a request the MCP layer never answers
/// cannot hold the shutdown).
async fn drain_stdio(contexts: &Contexts, awaiting: &Awaiting, grace: Duration) {
    let _ = tokio::time::timeout(grace, async {
        contexts.settled().await;
        awaiting.settled().await;
    })
    .await;
    finish(contexts).await;
    let _ = tokio::time::timeout(ANSWERS_BOUND, awaiting.settled()).await;
}

/// Ends every context and waits (bounded) for the cancelled calls to return, then kills
/// what they left behind, so that no process of theirs outlives the server.
pub(crate) async fn finish(contexts: &Contexts) {
    let adoption = crate::reaper::adopt_orphans();
    contexts.shutdown().await;
    let _ = tokio::time::timeout(Duration::from_secs(10), contexts.settled()).await;
    adoption.kill_adopted().await;
}

/// A `tools/call` message whose arguments repeat a key, rewritten so that the execution path
/// refuses the call naming the key (a JSON parser would keep one of the values, and the
/// other would be lost without a word); any other message as it is.
pub fn mark_repeated_arguments(message: &str) -> std::borrow::Cow<'_, str> {
    let repeated = tool_core::duplicate_keys(message);
    let Some(key) = repeated
        .iter()
        .find_map(|k| k.strip_prefix("params.arguments."))
    else {
        return std::borrow::Cow::Borrowed(message);
    };
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(message) else {
        return std::borrow::Cow::Borrowed(message);
    };
    match value.pointer_mut("/params/arguments") {
        Some(arguments) => {
            tool_core::mark_duplicate_key(arguments, key);
            std::borrow::Cow::Owned(value.to_string())
        }
        None => std::borrow::Cow::Borrowed(message),
    }
}

/// Requests of the MCP specification a client may send; a message naming one of these
/// whose parameters do not have the method's shape has invalid params.
const CLIENT_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
];

/// A JSON-RPC error that answers a message the server cannot take, per the JSON-RPC and
/// MCP specifications: not JSON (-32700), not a request or notification (-32600), or a
/// known method with parameters of the wrong shape (-32602).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The request's id (null when it has none or could not be read)
    pub id: serde_json::Value,
    /// The JSON-RPC error code
    pub code: i32,
    /// What is wrong and what to send instead
    pub message: String,
}

impl Rejection {
    /// The JSON-RPC error response.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": {"code": self.code, "message": self.message},
        })
    }
}

/// Checks one incoming message before the MCP layer reads it (see [`Rejection`]).
pub fn check_message(text: &str) -> Result<(), Rejection> {
    checked(text).map(|_| ())
}

/// [`check_message`], giving the message as parsed when it passes.
fn checked(text: &str) -> Result<serde_json::Value, Rejection> {
    use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| Rejection {
        id: serde_json::Value::Null,
        code: -32700,
        message: format!("Parse error: the message is not valid JSON ({e})"),
    })?;
    let invalid_request = |id: serde_json::Value| {
        Rejection {
        id,
        code: -32600,
        message: "Invalid Request: expected one JSON-RPC 2.0 request or notification ({\"jsonrpc\": \"2.0\", \"method\": .., \"params\": {..}}, with an \"id\" for a request)".to_owned(),
    }
    };
    let Some(object) = value.as_object() else {
        return Err(invalid_request(serde_json::Value::Null));
    };
    let id = object.get("id").cloned().unwrap_or_default();
    if object.get("jsonrpc").and_then(|v| v.as_str()) != Some("2.0") {
        return Err(invalid_request(id));
    }
    let Some(method) = object.get("method").and_then(|m| m.as_str()) else {
        // A response to one of the server's requests (legacy elicitation), or nothing.
        return if object.contains_key("result") || object.contains_key("error") {
            Ok(value)
        } else {
            Err(invalid_request(id))
        };
    };
    if !CLIENT_METHODS.contains(&method) {
        // Unknown methods are answered -32601 by the MCP layer, unknown notifications
        // ignored.
        return Ok(value);
    }
    // A request method without an id is no valid request (and gets no answer on stdio).
    let has_id = object.contains_key("id");
    let invalid_params = |detail: String| Rejection {
        id: id.clone(),
        code: if has_id { -32602 } else { -32600 },
        message: format!(
            "Invalid params for {method}: {detail}; see the method's schema in the MCP specification"
        ),
    };
    let params = object.get("params").cloned().unwrap_or_default();
    if method == "tools/call" {
        // The common case, checked without parsing the whole message again.
        return match serde_json::from_value::<CallToolRequestParams>(params) {
            Ok(_) => Ok(value),
            Err(e) => Err(invalid_params(e.to_string())),
        };
    }
    let typed = match serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
        Ok(ClientJsonRpcMessage::Request(request)) => {
            !matches!(request.request, ClientRequest::CustomRequest(_))
        }
        Ok(_) => true,
        Err(_) => false,
    };
    if typed {
        return Ok(value);
    }
    let detail = match method {
        "initialize" => serde_json::from_value::<InitializeRequestParams>(params)
            .err()
            .map(|e| e.to_string()),
        _ => None,
    };
    Err(invalid_params(detail.unwrap_or_else(|| {
        "the params do not have the expected shape".to_owned()
    })))
}

/// How long a shutdown waits, once every context has ended, for the answers still on their
/// way to go out (over stdio, [`Awaiting`]; over HTTP, the gate's count).
pub(crate) const ANSWERS_BOUND: Duration = Duration::from_secs(5);

/// The requests read from standard input whose answer has not been written to standard
/// output yet, by id. A call counts as settled when our handler returns, before the MCP
/// layer has written its answer, and stopping the layer then loses the answer: the stdio
/// shutdown waits for this set to empty first.
#[derive(Debug, Default)]
struct Awaiting {
    ids: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Woken when the set becomes empty
    done: tokio::sync::Notify,
}

/// What [`Awaiting`] reads of a message the MCP layer wrote: its id, and whether it is an
/// answer (a result or an error) rather than a request of the server's own.
#[derive(serde::Deserialize)]
struct Envelope {
    id: Option<serde_json::Value>,
    method: Option<serde::de::IgnoredAny>,
    result: Option<serde::de::IgnoredAny>,
    error: Option<serde::de::IgnoredAny>,
}

impl Awaiting {
    /// A message the client sent, as [`check_message`] parsed it: a request waits for its
    /// answer; a cancellation ends the wait for the request it names (the MCP layer does
    /// not answer it).
    fn read(&self, message: &serde_json::Value) {
        let id = message.get("id").filter(|id| !id.is_null());
        match (
            message.get("method").and_then(serde_json::Value::as_str),
            id,
        ) {
            (Some("notifications/cancelled"), _) => {
                if let Some(request) = message.pointer("/params/requestId") {
                    self.end(&request.to_string());
                }
            }
            (Some(_), Some(id)) => {
                if let Ok(mut ids) = self.ids.lock() {
                    ids.insert(id.to_string());
                }
            }
            _ => {}
        }
    }

    /// A message the MCP layer wrote: an answer ends the wait for its request.
    fn written(&self, line: &[u8]) {
        let Ok(message) = serde_json::from_slice::<Envelope>(line) else {
            return;
        };
        if let (None, Some(id)) = (message.method, message.id)
            && (message.result.is_some() || message.error.is_some())
        {
            self.end(&id.to_string());
        }
    }

    fn end(&self, id: &str) {
        if let Ok(mut ids) = self.ids.lock()
            && ids.remove(id)
            && ids.is_empty()
        {
            self.done.notify_waiters();
        }
    }

    /// Waits until every request read has been answered.
    async fn settled(&self) {
        wait_until(&self.done, || {
            self.ids.lock().map_or(true, |ids| ids.is_empty())
        })
        .await;
    }
}

/// Standard input and output for the MCP layer: each input line is checked
/// ([`check_message`]; a rejected one is answered here and never reaches the MCP layer)
/// and marked ([`mark_repeated_arguments`]); output lines go to standard output, and the
/// returned task ends once the MCP layer's output has all been written. `awaiting` follows
/// which requests are still to be answered.
fn guarded_stdio(
    awaiting: Arc<Awaiting>,
) -> (
    tokio::io::DuplexStream,
    tokio::io::DuplexStream,
    tokio::task::JoinHandle<()>,
) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    let (mut to_mcp, from_stdin) = tokio::io::duplex(256 * 1024);
    let (to_stdout, mut from_mcp) = tokio::io::duplex(256 * 1024);
    let (answers, mut answered) = mpsc::unbounded_channel::<String>();
    let asked = Arc::clone(&awaiting);
    tokio::spawn(async move {
        let mut input = tokio::io::BufReader::new(tokio::io::stdin());
        let mut line = Vec::new();
        loop {
            line.clear();
            // One message is at most MAX_REQUEST_BYTES, as over HTTP.
            let mut limited = (&mut input).take(MAX_REQUEST_BYTES as u64);
            match limited.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(n) if n >= MAX_REQUEST_BYTES && !line.ends_with(b"\n") => break,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            if text.trim().is_empty() {
                continue;
            }
            let message = match checked(text) {
                Ok(message) => message,
                Err(rejection) => {
                    // A notification gets no answer, even a malformed one.
                    let is_request = rejection.code == -32700 || !rejection.id.is_null();
                    if is_request && answers.send(rejection.to_json().to_string()).is_err() {
                        break;
                    }
                    continue;
                }
            };
            asked.read(&message);
            let out = mark_repeated_arguments(text);
            if to_mcp.write_all(out.as_bytes()).await.is_err()
                || to_mcp.write_all(b"\n").await.is_err()
            {
                break;
            }
        }
    });
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        let mut from_mcp = tokio::io::BufReader::new(&mut from_mcp);
        let mut line = Vec::new();
        loop {
            line.clear();
            // What to write, and whether the MCP layer wrote it.
            let (out, from_layer) = tokio::select! {
                biased;
                read = from_mcp.read_until(b'\n', &mut line) => match read {
                    Ok(0) | Err(_) => {
                        // The MCP layer is done; answers already queued still go out.
                        while let Ok(answer) = answered.try_recv() {
                            let _ = stdout.write_all(format!("{answer}\n").as_bytes()).await;
                        }
                        let _ = stdout.flush().await;
                        break;
                    }
                    Ok(_) => (std::mem::take(&mut line), true),
                },
                Some(answer) = answered.recv() => {
                    let mut bytes = answer.into_bytes();
                    bytes.push(b'\n');
                    (bytes, false)
                }
            };
            if stdout.write_all(&out).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
            if from_layer {
                awaiting.written(&out);
            }
        }
    });
    (from_stdin, to_stdout, writer)
}

/// The largest message the server reads, on either transport, unless configured otherwise.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn awaiting_follows_requests_until_their_answers_are_written() {
        let a = Arc::new(Awaiting::default());
        let pending = |a: &Awaiting| {
            let mut ids: Vec<String> = a.ids.lock().unwrap().iter().cloned().collect();
            ids.sort();
            ids
        };
        // Requests wait; notifications, the client's answers to the server's own
        // requests and what is not JSON do not.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Bash"}}"#,
            r#"{"jsonrpc":"2.0","id":"two","method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":9,"result":{"action":"accept"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            "not json",
        ] {
            // What is not JSON never gets this far (the guard answers it).
            if let Ok(message) = serde_json::from_str(line) {
                a.read(&message);
            }
        }
        assert_eq!(pending(&a), ["\"two\"", "1", "3"]);
        // An answer ends the wait for its id (a string id stays a string); the server's
        // own requests and notifications end nothing.
        a.written(br#"{"jsonrpc":"2.0","id":"two","result":{"tools":[]}}"#);
        a.written(br#"{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{}}"#);
        a.written(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#);
        a.written(br#"{"jsonrpc":"2.0","id":"1","result":{}}"#);
        assert_eq!(pending(&a), ["1", "3"]);
        // A cancelled request gets no answer: the cancellation ends its wait.
        a.read(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}));
        assert_eq!(pending(&a), ["1"]);
        // Settled once the last answer (an error answers too) is written.
        let waiter = {
            let a = Arc::clone(&a);
            tokio::spawn(async move { a.settled().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        a.written(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}"#);
        assert!(waiter.await.is_ok());
        assert!(pending(&a).is_empty());
    }

    #[test]
    fn malformed_messages_get_the_json_rpc_error_the_specifications_name() {
        let check = |text: &str, expected: Option<(i32, serde_json::Value)>| {
            let got = check_message(text).err().map(|r| (r.code, r.id));
            assert_eq!(got, expected, "{text}");
        };
        let call = |params: &str| {
            format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{params}}}"#)
        };
        let id = serde_json::json!(7);
        // Not JSON: a parse error, whatever else is wrong.
        for text in [
            "{",
            "not json",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list""#,
            "\u{0}",
        ] {
            check(text, Some((-32700, serde_json::Value::Null)));
        }
        // A known method with params of the wrong shape: invalid params, with the id.
        for params in [
            r#"{"name":"Read","arguments":"str"}"#,
            r#"{"name":"Read","arguments":[1]}"#,
            r#"{"name":7}"#,
            r#"{"arguments":{}}"#,
            r#""x""#,
            "3",
        ] {
            check(&call(params), Some((-32602, id.clone())));
        }
        // Valid JSON that is no JSON-RPC message: an invalid request.
        for text in [
            "[1]",
            "3",
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"id":1,"method":"tools/list"}"#,
        ] {
            check(
                text,
                Some((
                    -32600,
                    if text.contains("\"id\"") {
                        serde_json::json!(1)
                    } else {
                        serde_json::Value::Null
                    },
                )),
            );
        }
        // A request method without an id and with bad params is no request at all.
        check(
            r#"{"jsonrpc":"2.0","method":"tools/call","params":7}"#,
            Some((-32600, serde_json::Value::Null)),
        );
        // Well-formed messages pass, including methods the server does not know (the MCP
        // layer answers those with -32601).
        for text in [
            call(r#"{"name":"Read","arguments":{"file_path":"/x"}}"#),
            call(r#"{"name":"Read"}"#),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":1,"method":"no/such"}"#.to_owned(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        ] {
            check(&text, None);
        }
        let message = check_message(&call(r#"{"name":"Read","arguments":"str"}"#))
            .err()
            .map(|r| r.message)
            .unwrap_or_default();
        assert!(
            message.contains("tools/call") && message.contains("expected a map"),
            "{message}"
        );
    }

    #[test]
    fn repeated_argument_keys_are_marked() {
        let msg = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Bash","arguments":{"command":"ls","command":"id"}}}"#;
        let out = mark_repeated_arguments(msg);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(
            tool_core::marked_duplicate_key(&v["params"]["arguments"]),
            Some("command")
        );
        let plain = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert!(matches!(
            mark_repeated_arguments(plain),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn errors_become_mcp_errors() {
        let result = CallResult {
            tool: "Read".into(),
            is_error: true,
            content: vec![ContentBlock::text("<tool_use_error>no</tool_use_error>")],
            data: serde_json::Value::Null,
            retryable: true,
        };
        let mcp = to_mcp_result(&result);
        assert_eq!(mcp.is_error, Some(true));
        assert_eq!(mcp.content.len(), 1);
    }
}
