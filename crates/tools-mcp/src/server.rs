//! The server adapter: any [`ToolPool`] as an MCP server, over stdio or streamable HTTP.
//!
//! Every MCP session gets one [`ToolContext`] (so Read then Edit works across calls); every
//! `tools/call` goes through [`ToolPool::execute`] with a child of that context, whose token
//! the client's `notifications/cancelled` cancels, and a [`ProgressSink`] that turns the
//! tool's progress into `notifications/progress` when the client sent a progress token.
//!
//! The pool may change while the server runs ([`LivePool::following`]): the server then
//! advertises `tools.listChanged`, sends `notifications/tools/list_changed` to every client
//! once the new list is ready, and answers later `tools/list` and `tools/call` requests from
//! the new pool.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::ClientCapabilities;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as McpBlock,
    Implementation, InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig,
    Tool as McpToolDecl, ToolAnnotations as McpAnnotations,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::{CancellationToken, DropGuard};
use tool_core::{
    CallResult, ContentBlock, PermissionPrompter, Progress, ProgressSink, Summariser, ToolCall,
    ToolContext, ToolError, ToolPool,
};

use crate::live::LivePool;
use crate::prompts::{ElicitationPrompter, SamplingSummariser};

/// Builds the context of a new MCP session (HTTP serves many sessions, stdio one).
pub type SessionFactory = Arc<dyn Fn() -> Result<ToolContext, ToolError> + Send + Sync>;

/// A host's hook, called when a client initializes a session, to install services that talk
/// to that client (for example an AskUserQuestion prompter over elicitation, which lives
/// with the host because its trait belongs to another category crate). Put it in the
/// session context's services as a `ClientHook`.
#[derive(Clone)]
pub struct ClientHook(
    /// Receives the session's context, the client and its capabilities
    pub Arc<ClientHookFn>,
);

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
struct Catalog {
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
async fn follow_catalog(live: LivePool) -> watch::Receiver<Arc<Catalog>> {
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

/// The MCP server of one session: the pool's catalogue (which may change), and the
/// session's context.
#[derive(Clone)]
pub struct PoolServer {
    catalog: watch::Receiver<Arc<Catalog>>,
    /// Whether the pool can change (then `tools.listChanged` is advertised)
    live: bool,
    ctx: ToolContext,
    /// Cancelled when the last clone of this session's server is dropped, which ends the
    /// task that forwards list changes to the client
    closed: CancellationToken,
    _guard: Arc<DropGuard>,
    /// The catalogue as of `initialize`, until `notifications/initialized` starts the task
    /// that announces changes
    seen: Arc<std::sync::Mutex<Option<watch::Receiver<Arc<Catalog>>>>>,
}

impl std::fmt::Debug for PoolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolServer")
            .field("tools", &self.catalog.borrow().tools.len())
            .field("live", &self.live)
            .field("session", &self.ctx.session_id())
            .finish()
    }
}

impl PoolServer {
    fn new(catalog: watch::Receiver<Arc<Catalog>>, live: bool, ctx: ToolContext) -> Self {
        let closed = CancellationToken::new();
        PoolServer {
            catalog,
            live,
            ctx,
            _guard: Arc::new(closed.clone().drop_guard()),
            closed,
            seen: Arc::default(),
        }
    }

    fn pool(&self) -> ToolPool {
        self.catalog.borrow().pool.clone()
    }
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
    if let Some(hook) = ctx.services().get::<ClientHook>() {
        (hook.0)(ctx, &context.peer, &request.capabilities);
    }
}

static CALL_IDS: AtomicU64 = AtomicU64::new(0);

impl ServerHandler for PoolServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = if self.live {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
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
        install_client_services(&self.ctx, &request, &context);
        // The tool list the client is about to learn: changes from here on are announced
        // once it has sent `notifications/initialized`.
        let mut seen = self.catalog.clone();
        seen.borrow_and_update();
        if let Ok(mut slot) = self.seen.lock() {
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
        let seen = self.seen.lock().ok().and_then(|mut s| s.take());
        let mut catalog = seen.unwrap_or_else(|| {
            let mut fresh = self.catalog.clone();
            fresh.borrow_and_update();
            fresh
        });
        let closed = self.closed.clone();
        let stop = self.ctx.cancel_token().clone();
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

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = Arc::clone(&self.catalog.borrow().tools);
        Ok(ListToolsResult::with_all_items(tools.as_ref().clone()))
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
        let name = request.name.to_string();
        let pool = self.pool();
        let Some(tool) = pool.get(&name) else {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {name}; tools/list names the available tools"),
                None,
            ));
        };
        let declares_output = tool.output_schema().is_some();
        let input = request
            .arguments
            .map(serde_json::Value::Object)
            .unwrap_or_else(|| serde_json::Value::Object(JsonObject::new()));
        let id = format!("mcp-{}", CALL_IDS.fetch_add(1, Ordering::Relaxed));
        let call = ToolCall {
            tool: name,
            input,
            id: Some(id),
        };
        let call_ctx = self.ctx.child();
        let (sink, flush) = progress_forwarder(&context);
        let exec = pool.execute(call, &call_ctx, sink);
        tokio::pin!(exec);
        let result = tokio::select! {
            result = &mut exec => result,
            () = context.ct.cancelled() => {
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
        let mut answer = to_mcp_result(&result);
        // A tool with an output schema (a proxied MCP tool) gives its data as structured
        // content, as the schema promises.
        if declares_output && !result.is_error {
            answer.structured_content = Some(result.data.clone());
        }
        Ok(answer.into())
    }
}

/// Serves `pool` (a [`ToolPool`] or a [`LivePool`]) over stdin/stdout until the client
/// closes the connection.
pub async fn serve_stdio(pool: impl Into<LivePool>, ctx: ToolContext) -> Result<(), ToolError> {
    let live: LivePool = pool.into();
    let follows = live.follows_changes();
    let catalog = follow_catalog(live).await;
    let server = PoolServer::new(catalog, follows, ctx.clone());
    let running = server
        .serve((guarded_stdin(), tokio::io::stdout()))
        .await
        .map_err(|e| ToolError::fatal(format!("MCP initialization over stdio failed: {e}")))?;
    let outcome = running.waiting().await;
    ctx.cancel_token().cancel();
    outcome
        .map(|_| ())
        .map_err(|e| ToolError::fatal(format!("the MCP stdio session ended with an error: {e}")))
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

/// Standard input, one JSON-RPC message per line, with [`mark_repeated_arguments`] applied.
fn guarded_stdin() -> tokio::io::DuplexStream {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    let (mut tx, rx) = tokio::io::duplex(256 * 1024);
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
            let out = mark_repeated_arguments(text.trim_end_matches(['\n', '\r']));
            if tx.write_all(out.as_bytes()).await.is_err() || tx.write_all(b"\n").await.is_err() {
                break;
            }
        }
    });
    rx
}

/// An HTTP request body with [`mark_repeated_arguments`] applied (a POST of one JSON-RPC
/// message).
async fn guard_repeated_arguments(
    request: axum::extract::Request,
) -> Result<axum::extract::Request, axum::http::StatusCode> {
    if request.method() != axum::http::Method::POST {
        return Ok(request);
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_REQUEST_BYTES)
        .await
        .map_err(|_| axum::http::StatusCode::PAYLOAD_TOO_LARGE)?;
    let body = match std::str::from_utf8(&bytes) {
        Ok(text) => match mark_repeated_arguments(text) {
            std::borrow::Cow::Owned(marked) => axum::body::Body::from(marked),
            std::borrow::Cow::Borrowed(_) => axum::body::Body::from(bytes),
        },
        Err(_) => axum::body::Body::from(bytes),
    };
    Ok(axum::extract::Request::from_parts(parts, body))
}

/// The largest HTTP request body the server reads.
const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// Options of the streamable HTTP server.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen; a bare port or `:PORT` means 127.0.0.1
    pub addr: SocketAddr,
    /// Host names (or `host:port`) accepted in the `Host` header; empty means the loopback
    /// names plus the address listened on
    pub allowed_hosts: Vec<String>,
}

/// Reads `--http ADDR`: `PORT`, `:PORT`, `HOST:PORT` or `[V6]:PORT`. Without a host the
/// server listens on 127.0.0.1 only.
pub fn parse_listen_addr(text: &str) -> Result<SocketAddr, ToolError> {
    let text = text.trim();
    let port_only = text.strip_prefix(':').unwrap_or(text);
    if let Ok(port) = port_only.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    let candidate = text.replace("localhost:", "127.0.0.1:");
    candidate.parse::<SocketAddr>().map_err(|_| {
        ToolError::respond(format!(
            "--http {text}: expected PORT, :PORT or HOST:PORT with an IP address, such as 127.0.0.1:8080"
        ))
    })
}

/// Serves `pool` (a [`ToolPool`] or a [`LivePool`]) over streamable HTTP at `/mcp` until
/// `shutdown` fires. Each MCP session gets a fresh context from `factory`. `on_bound`
/// receives the address actually bound (useful with port 0).
pub async fn serve_http(
    pool: impl Into<LivePool>,
    factory: SessionFactory,
    options: HttpOptions,
    shutdown: CancellationToken,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<(), ToolError> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| ToolError::respond(format!("--http {}: cannot listen: {e}", options.addr)))?;
    let bound = listener
        .local_addr()
        .map_err(|e| ToolError::fatal(format!("cannot read the bound address: {e}")))?;
    let live: LivePool = pool.into();
    let follows = live.follows_changes();
    let catalog = follow_catalog(live).await;
    let mut hosts = options.allowed_hosts.clone();
    if hosts.is_empty() {
        hosts = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        if !bound.ip().is_loopback() && !bound.ip().is_unspecified() {
            hosts.push(bound.ip().to_string());
        }
    }
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_cancellation_token(shutdown.child_token());
    let service = StreamableHttpService::new(
        move || {
            let ctx = factory().map_err(|e| std::io::Error::other(e.to_string()))?;
            Ok(PoolServer::new(catalog.clone(), follows, ctx))
        },
        LocalSessionManager::default().into(),
        config,
    );
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::map_request(guard_repeated_arguments));
    on_bound(bound);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .map_err(|e| ToolError::fatal(format!("the MCP HTTP server failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_default_to_loopback() {
        let check = |text: &str, expected: &str| {
            assert_eq!(
                parse_listen_addr(text)
                    .map(|a| a.to_string())
                    .ok()
                    .as_deref(),
                Some(expected),
                "{text}"
            );
        };
        check("8080", "127.0.0.1:8080");
        check(":0", "127.0.0.1:0");
        check("localhost:9", "127.0.0.1:9");
        check("0.0.0.0:80", "0.0.0.0:80");
        check("[::1]:7", "[::1]:7");
        let err = parse_listen_addr("example.com:80")
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("HOST:PORT")));
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
