//! One server of `.mcp.json` and its connection ([`ServerConn`]): a stdio child in its own
//! process group with a minimal environment and a bounded stderr buffer, or streamable HTTP
//! with headers, a bearer token and `TCP_NODELAY`; the session's working directories offered
//! as MCP roots and `roots/list` answered; reconnected after a failure; a new session started
//! when an HTTP server no longer knows the old one (the spec's HTTP 404, or
//! server-everything's HTTP 400 with an error naming no request) and the call sent again,
//! with a note for the model; its tools listed again on `tools/list_changed`, the change
//! announced to the manager ([`Signals`]).
//!
//! The client speaks protocol 2025-11-25, the newest version with the `initialize`
//! handshake, which server-everything, server-filesystem and the Python SDK's servers all
//! answer with. (The Python SDK's servers also speak 2026-07-28 through `server/discover`,
//! but that version has no server-to-client requests, so no `roots/list`, and announces list
//! changes only on `subscriptions/listen` streams.)

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientNotification, ClientRequest, ElicitRequestParams, ElicitResult,
    ElicitationCapability, ErrorData, FormElicitationCapability, Implementation, JsonObject,
    JsonRpcMessage, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResult, Resource, ServerNotification, ServerResult,
    Tool as McpToolDecl,
};
// Roots are deprecated from protocol 2026-07-28 on (SEP-2577); this client speaks 2025-11-25.
#[allow(deprecated)]
use rmcp::model::{ListRootsResult, Root};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestContext, RunningService,
    RxJsonRpcMessage, ServiceError, TxJsonRpcMessage,
};
use rmcp::transport::Transport as McpTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::AsyncReadExt;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tool_core::{ProcessGroup, Progress, ProgressSink, ToolContext, ToolError};

use crate::config::{HttpKind, OAuthConfig, Secret, ServerConfig, Transport};
use crate::failure::chain;
use crate::legacy_sse::LegacySse;
use crate::oauth::{AuthedHttp, Tokens};
use crate::oauth_store::TokenStore;
use crate::relay::{Callers, ClientOffers, Route};

/// How long a new HTTP connection waits for its `GET` stream before its first request.
const STREAM_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// At most this much of a server's stderr is kept (the tail).
pub const STDERR_CAP: usize = 64 * 1024;

/// Environment variables a stdio server inherits; everything else must be configured in
/// `env` (no inherited secrets by default).
const INHERITED_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR",
    "TZ",
];

/// The tail of a server's stderr, bounded by [`STDERR_CAP`].
#[derive(Debug, Default)]
pub struct StderrTail {
    buf: Mutex<Vec<u8>>,
    total: AtomicU64,
}

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        self.total.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if let Ok(mut buf) = self.buf.lock() {
            buf.extend_from_slice(bytes);
            if buf.len() > STDERR_CAP {
                let cut = buf.len() - STDERR_CAP;
                buf.drain(..cut);
            }
        }
    }

    /// The kept tail, lossily decoded.
    pub fn text(&self) -> String {
        self.buf
            .lock()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// Bytes kept right now (never above [`STDERR_CAP`]).
    pub fn kept(&self) -> usize {
        self.buf.lock().map(|b| b.len()).unwrap_or(0)
    }

    /// Bytes the server wrote in all.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// The last `n` characters, for error messages.
    fn last(&self, n: usize) -> String {
        let text = self.text();
        let chars: Vec<char> = text.chars().collect();
        let start = chars.len().saturating_sub(n);
        chars[start..].iter().collect::<String>().trim().to_owned()
    }
}

/// What a host may show about one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// The configured name
    pub name: String,
    /// Whether its first connection attempt is still under way
    pub starting: bool,
    /// Whether it is connected now
    pub connected: bool,
    /// The protocol version the server chose in its last handshake
    pub protocol_version: Option<String>,
    /// The last connection or listing error, or why it was not started
    pub error: Option<String>,
    /// Tools it lists
    pub tools: usize,
    /// Problems with its tools (rejected names, collisions, cleaned descriptions)
    pub warnings: Vec<String>,
}

/// How the servers of one manager tell it (and its followers) that their tools changed.
#[derive(Debug)]
pub(crate) struct Signals {
    /// Bumped whenever a server's listed tools change
    pub(crate) generation: watch::Sender<u64>,
    /// Woken whenever a refresh in flight ends
    pub(crate) settled: Notify,
    /// How many servers' first connection attempts have ended
    pub(crate) started: watch::Sender<usize>,
}

impl Default for Signals {
    fn default() -> Self {
        Signals {
            generation: watch::Sender::new(0),
            settled: Notify::new(),
            started: watch::Sender::new(0),
        }
    }
}

/// What the servers of one manager share: the session's places, its roots, the signals to
/// the manager, and the token that ends every start-up when the session ends.
#[derive(Default)]
pub(crate) struct ManagerState {
    root: PathBuf,
    state_dir: PathBuf,
    /// The session's working directories, as `roots/list` answers them: URI and name
    roots: Vec<(String, Option<String>)>,
    pub(crate) signals: Signals,
    pub(crate) closing: CancellationToken,
    /// What the client declares to the servers
    offers: ClientOffers,
    /// Who answers a server's question while none of its calls runs (the session's)
    fallback: Option<Route>,
}

impl std::fmt::Debug for ManagerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerState")
            .field("root", &self.root)
            .field("offers", &self.offers)
            .finish_non_exhaustive()
    }
}

impl ManagerState {
    pub(crate) fn new(root: &Path, state_dir: &Path, working_dirs: &[PathBuf]) -> Self {
        ManagerState {
            root: root.to_path_buf(),
            state_dir: state_dir.to_path_buf(),
            roots: roots_of(working_dirs),
            ..ManagerState::default()
        }
    }

    /// The places and the answering routes of the session `ctx`.
    pub(crate) fn of_session(ctx: &ToolContext) -> Self {
        ManagerState {
            offers: ClientOffers::of(ctx),
            fallback: Route::of(ctx),
            ..ManagerState::new(ctx.original_cwd(), ctx.state_dir(), &ctx.working_dirs())
        }
    }
}

/// The working directories as MCP roots: `file://` URIs (percent-encoded) and the
/// directory's name. Relative paths (never given by a session) are left out.
fn roots_of(dirs: &[PathBuf]) -> Vec<(String, Option<String>)> {
    dirs.iter()
        .filter_map(|dir| {
            let uri = url::Url::from_file_path(dir).ok()?;
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
            Some((uri.to_string(), name))
        })
        .collect()
}

/// The answer to `roots/list`.
#[allow(deprecated)]
fn list_roots_result(roots: &[(String, Option<String>)]) -> ListRootsResult {
    ListRootsResult::new(
        roots
            .iter()
            .map(|(uri, name)| match name {
                Some(name) => Root::new(uri.clone()).with_name(name.clone()),
                None => Root::new(uri.clone()),
            })
            .collect(),
    )
}

/// A client transport that notices `notifications/tools/list_changed` as it arrives, before
/// rmcp hands it to the handler on another task: the refresh counts as in flight from that
/// moment, so a caller that got the response of the call that changed the list can wait for
/// the new list ([`McpManager::settle`]).
///
/// It also ends the connection on a JSON-RPC error that names no request: rmcp cannot route
/// it, so the request it answers would wait for its timeout. server-everything answers
/// that way (HTTP 400, "No valid session ID provided") when it no longer knows the session.
///
/// Both only once the handshake is over: before it, rmcp reports an error naming no request
/// as the handshake's failure, and drops a `tools/list_changed` (the tools listed right
/// after the handshake cover it), so counting one would leave a refresh in flight forever.
struct Watched<T> {
    inner: T,
    server: Weak<ServerConn>,
    /// The client has sent `notifications/initialized`: rmcp's service loop reads from here on
    running: bool,
    ended: bool,
}

impl<T> Watched<T> {
    fn new(inner: T, server: &Arc<ServerConn>) -> Self {
        Watched {
            inner,
            server: Arc::downgrade(server),
            running: false,
            ended: false,
        }
    }
}

impl<T: McpTransport<RoleClient>> McpTransport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Notification(n) = &item
            && matches!(
                n.notification,
                ClientNotification::InitializedNotification(_)
            )
        {
            self.running = true;
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        if self.ended {
            return None;
        }
        let message = self.inner.receive().await;
        if !self.running {
            return message;
        }
        if let Some(JsonRpcMessage::Error(e)) = &message
            && e.id.is_none()
        {
            if let Some(server) = self.server.upgrade()
                && let Ok(mut lost) = server.lost.lock()
            {
                *lost = Some(e.error.message.to_string());
            }
            self.ended = true;
            return None;
        }
        if let Some(JsonRpcMessage::Notification(n)) = &message
            && matches!(
                n.notification,
                ServerNotification::ToolListChangedNotification(_)
            )
            && let Some(server) = self.server.upgrade()
        {
            server.refreshing.fetch_add(1, Ordering::SeqCst);
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// A stdio server's connection: rmcp's line transport over [`crate::capped::Capped`], and
/// the child (killed when this is dropped; its group is the connection's).
struct StdioChild {
    transport: rmcp::transport::async_rw::AsyncRwTransport<
        RoleClient,
        crate::capped::Capped<tokio::process::ChildStdout>,
        tokio::process::ChildStdin,
    >,
    _child: tokio::process::Child,
}

impl McpTransport<RoleClient> for StdioChild {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.transport.close()
    }
}

/// Receives the server's notifications.
#[derive(Clone)]
pub(crate) struct Handler {
    conn: Weak<ServerConn>,
    progress: Arc<Mutex<HashMap<ProgressToken, ProgressSink>>>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // Roots are deprecated from 2026-07-28 on (SEP-2577); this client speaks 2025-11-25,
        // where servers use them to learn the workspace (server-filesystem limits itself to
        // them, server-everything offers get-roots-list).
        #[allow(deprecated)]
        let mut capabilities = ClientCapabilities::builder().enable_roots().build();
        let offers = self
            .conn
            .upgrade()
            .map(|c| c.shared.offers)
            .unwrap_or_default();
        if offers.elicitation {
            capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::new().with_schema_validation(true)),
            );
        }
        if offers.sampling {
            #[allow(deprecated)]
            let sampling = rmcp::model::SamplingCapability::default();
            capabilities.sampling = Some(sampling);
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("agent-tools", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let roots = self
            .conn
            .upgrade()
            .map(|conn| list_roots_result(&conn.shared.roots))
            .unwrap_or_else(|| list_roots_result(&[]));
        Ok(roots)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(conn) = self.conn.upgrade() else {
            return Ok(crate::relay::decline());
        };
        match conn.callers.route(conn.shared.fallback.as_ref()) {
            Some(Route::Relay(relay)) => relay.elicit(request).await,
            Some(Route::Person(person)) => {
                crate::relay::ask_person(person.as_ref(), conn.name(), request).await
            }
            None => Ok(crate::relay::decline()),
        }
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, ErrorData> {
        let route = self
            .conn
            .upgrade()
            .and_then(|conn| conn.callers.route(conn.shared.fallback.as_ref()));
        match route {
            Some(Route::Relay(relay)) => relay.sample(params).await,
            _ => Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "sampling is not available: no MCP client behind agent-tools can run a model for this request",
                None,
            )),
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let sink = self
            .progress
            .lock()
            .ok()
            .and_then(|m| m.get(&params.progress_token).cloned());
        if let Some(sink) = sink {
            sink.report_progress(Progress {
                message: params.message.unwrap_or_default(),
                progress: Some(params.progress),
                total: params.total,
            });
        }
    }

    /// Lists the tools again, coalescing: one listing in flight at a time, and the
    /// notifications that arrive meanwhile answered together by one more listing after it
    /// (a server that sends thousands costs two or three listings, not thousands).
    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let Some(conn) = self.conn.upgrade() else {
            return;
        };
        if let Ok(mut state) = conn.refresh.lock() {
            if state.in_flight {
                state.queued += 1;
                return;
            }
            state.in_flight = true;
            state.covered = 1;
        }
        let peer = context.peer.clone();
        // Listing is a request; run it outside the notification handler.
        tokio::spawn(async move {
            loop {
                let listed =
                    tokio::time::timeout(conn.config.startup_timeout, peer.list_all_tools()).await;
                if let Ok(Ok(tools)) = listed {
                    conn.set_tools(tools);
                    conn.list_changes.fetch_add(1, Ordering::Relaxed);
                }
                let (done, again) = match conn.refresh.lock() {
                    Ok(mut state) => {
                        let done = state.covered;
                        if state.queued > 0 {
                            state.covered = std::mem::take(&mut state.queued);
                            (done, true)
                        } else {
                            *state = RefreshState::default();
                            (done, false)
                        }
                    }
                    Err(_) => (1, false),
                };
                conn.refresh_done(done);
                if !again {
                    return;
                }
            }
        });
    }
}

type Service = RunningService<RoleClient, Handler>;

/// Why one attempt of a call failed.
pub(crate) enum Failure {
    /// The server no longer knows the session, so it did not run the call
    Expired(String),
    /// Anything else, as the model reads it
    Error(ToolError),
}

impl From<ToolError> for Failure {
    fn from(error: ToolError) -> Self {
        Failure::Error(error)
    }
}

/// The tool listings `tools/list_changed` notifications start: at most one in flight, and
/// the notifications that arrived meanwhile (answered by one listing after it).
#[derive(Debug, Default)]
struct RefreshState {
    in_flight: bool,
    /// Notifications the listing in flight answers
    covered: usize,
    /// Notifications that arrived while it ran
    queued: usize,
}

struct Connection {
    service: Service,
    /// The process group of a stdio server, killed when the connection goes
    group: Option<ProcessGroup>,
}

impl Connection {
    fn kill(self) {
        if let Some(group) = &self.group {
            group.kill();
        }
        let token = self.service.cancellation_token();
        token.cancel();
    }
}

/// One configured server and its connection.
pub(crate) struct ServerConn {
    pub(crate) config: ServerConfig,
    shared: Arc<ManagerState>,
    conn: tokio::sync::Mutex<Option<Connection>>,
    /// True until the first connection attempt has ended
    starting: AtomicBool,
    /// The process group of a stdio server whose handshake is under way
    spawned: Mutex<Option<ProcessGroup>>,
    /// The protocol version of the last handshake
    protocol: RwLock<Option<String>>,
    tools: RwLock<Vec<McpToolDecl>>,
    error: RwLock<Option<String>>,
    warnings: RwLock<Vec<String>>,
    pub(crate) stderr: Arc<StderrTail>,
    progress: Arc<Mutex<HashMap<ProgressToken, ProgressSink>>>,
    pub(crate) list_changes: AtomicU64,
    /// `tools/list_changed` notifications received whose refresh has not finished
    pub(crate) refreshing: AtomicUsize,
    /// The listing those notifications started, and how many wait for the next one
    refresh: Mutex<RefreshState>,
    /// The message of an error naming no request, which ended the connection
    lost: Mutex<Option<String>>,
    has_resources: RwLock<bool>,
    /// Set when a call timed out: the next use restarts the server. (Not at once, so the
    /// server can still read the `notifications/cancelled` that went out.)
    restart: AtomicBool,
    /// The calls running now, and who answers the server's questions for each
    pub(crate) callers: Callers,
}

impl std::fmt::Debug for ServerConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConn")
            .field("name", &self.config.name)
            .finish_non_exhaustive()
    }
}

/// The certificates of a `caCertFile`.
pub(crate) fn read_ca_certs(path: &Path) -> Result<Vec<reqwest::Certificate>, String> {
    let pem = std::fs::read(path)
        .map_err(|e| format!("caCertFile {}: cannot read it: {e}", path.display()))?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|e| format!("caCertFile {}: {}", path.display(), chain(&e)))?;
    if certs.is_empty() {
        return Err(format!(
            "caCertFile {}: no certificate in it (expected PEM blocks \"-----BEGIN CERTIFICATE-----\")",
            path.display()
        ));
    }
    Ok(certs)
}

/// A server entry's `headers` as HTTP headers; a name or value HTTP refuses is an error
/// naming the header.
fn header_map(headers: &BTreeMap<String, String>) -> Result<reqwest::header::HeaderMap, String> {
    let mut map = reqwest::header::HeaderMap::new();
    for (k, v) in headers {
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|e| format!("header name {k:?}: {e}"))?;
        let value =
            reqwest::header::HeaderValue::from_str(v).map_err(|e| format!("header {k}: {e}"))?;
        map.insert(name, value);
    }
    Ok(map)
}

fn minimal_env(configured: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = INHERITED_ENV
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| ((*k).to_owned(), v)))
        .collect();
    env.extend(configured.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

impl ServerConn {
    pub(crate) fn new(config: ServerConfig, shared: Arc<ManagerState>) -> Arc<Self> {
        Arc::new(ServerConn {
            config,
            shared,
            conn: tokio::sync::Mutex::new(None),
            starting: AtomicBool::new(true),
            spawned: Mutex::new(None),
            protocol: RwLock::new(None),
            tools: RwLock::new(Vec::new()),
            error: RwLock::new(None),
            warnings: RwLock::new(Vec::new()),
            stderr: Arc::new(StderrTail::default()),
            progress: Arc::new(Mutex::new(HashMap::new())),
            list_changes: AtomicU64::new(0),
            refreshing: AtomicUsize::new(0),
            refresh: Mutex::new(RefreshState::default()),
            lost: Mutex::new(None),
            has_resources: RwLock::new(false),
            restart: AtomicBool::new(false),
            callers: Callers::default(),
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.config.name
    }

    /// Whether the first connection attempt is still under way.
    pub(crate) fn is_starting(&self) -> bool {
        self.starting.load(Ordering::SeqCst)
    }

    /// The first connection attempt has ended (connected or failed).
    pub(crate) fn first_attempt_done(&self) {
        if self.starting.swap(false, Ordering::SeqCst) {
            self.shared.signals.started.send_modify(|n| *n += 1);
        }
    }

    /// Kills the process group of a stdio server whose handshake did not finish.
    fn kill_spawned(&self) {
        let group = self.spawned.lock().ok().and_then(|mut s| s.take());
        drop(group);
    }

    /// Stores the listed tools; a change is announced to the manager's followers.
    fn set_tools(&self, tools: Vec<McpToolDecl>) {
        let changed = match self.tools.write() {
            Ok(mut t) if *t != tools => {
                *t = tools;
                true
            }
            _ => false,
        };
        if changed {
            self.shared.signals.generation.send_modify(|g| *g += 1);
        }
    }

    /// A refresh that answers `count` `tools/list_changed` notifications has ended (with or
    /// without a new list).
    fn refresh_done(&self, count: usize) {
        let _ = self
            .refreshing
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_sub(count))
            });
        self.shared.signals.settled.notify_waiters();
    }

    pub(crate) fn listed_tools(&self) -> Vec<McpToolDecl> {
        self.tools.read().map(|t| t.clone()).unwrap_or_default()
    }

    fn set_error(&self, error: Option<String>) {
        if let Ok(mut e) = self.error.write() {
            *e = error;
        }
    }

    pub(crate) fn error(&self) -> Option<String> {
        self.error.read().ok().and_then(|e| e.clone())
    }

    /// What a host may show about this server.
    pub(crate) fn status(&self) -> ServerStatus {
        let starting = self.is_starting();
        ServerStatus {
            name: self.name().to_owned(),
            starting,
            connected: !starting
                && self
                    .conn
                    .try_lock()
                    .map(|c| c.as_ref().is_some_and(|c| !c.service.is_closed()))
                    .unwrap_or(true),
            protocol_version: self.protocol.read().ok().and_then(|p| p.clone()),
            error: self.error(),
            tools: self.listed_tools().len(),
            warnings: self.warnings.read().map(|w| w.clone()).unwrap_or_default(),
        }
    }

    pub(crate) fn warn(&self, message: String) {
        if let Ok(mut w) = self.warnings.write()
            && !w.contains(&message)
        {
            w.push(message);
        }
    }

    pub(crate) fn supports_resources(&self) -> bool {
        self.has_resources.read().map(|r| *r).unwrap_or(false)
    }

    /// " to URL" for an HTTP server, "" for a stdio one (for messages).
    fn address(&self) -> String {
        match &self.config.transport {
            Transport::Http { url, .. } => format!(" to {url}"),
            Transport::Stdio { .. } => String::new(),
        }
    }

    /// The stderr tail, for messages: "" or "\nstderr: …".
    pub(crate) fn stderr_note(&self) -> String {
        let tail = self.stderr.last(800);
        if tail.is_empty() {
            String::new()
        } else {
            format!("\nLast stderr of the server:\n{tail}")
        }
    }

    /// The connected peer, connecting (again) when there is none or the old one closed.
    pub(crate) async fn peer(self: &Arc<Self>) -> Result<Peer<RoleClient>, String> {
        let mut guard = self.conn.lock().await;
        if self.shared.closing.is_cancelled() {
            return Err(format!(
                "MCP server \"{}\" is not available: the session is ending",
                self.config.name
            ));
        }
        if self.restart.swap(false, Ordering::SeqCst)
            && let Some(old) = guard.take()
        {
            old.kill();
        }
        if let Some(conn) = guard.as_ref()
            && !conn.service.peer().is_transport_closed()
            && !conn.service.is_closed()
        {
            return Ok(conn.service.peer().clone());
        }
        if let Some(old) = guard.take() {
            old.kill();
        }
        // What ended the old connection says nothing about the new one.
        if let Ok(mut lost) = self.lost.lock() {
            *lost = None;
        }
        let limit = self.config.startup_timeout;
        // Dropping `open` mid-way (time out, session ending) drops its transport, and with it
        // a stdio child; its process group is killed as well, so nothing it started stays.
        let opened = tokio::select! {
            opened = tokio::time::timeout(limit, self.open()) => Some(opened),
            () = self.shared.closing.cancelled() => None,
        };
        let outcome = match opened {
            Some(Ok(Ok((conn, tools)))) => {
                let peer = conn.service.peer().clone();
                let info = conn.service.peer_info();
                let resources = info
                    .as_ref()
                    .is_some_and(|i| i.capabilities.resources.is_some());
                if let Ok(mut r) = self.has_resources.write() {
                    *r = resources;
                }
                if let Ok(mut p) = self.protocol.write() {
                    *p = info.map(|i| i.protocol_version.to_string());
                }
                self.set_tools(tools);
                *guard = Some(conn);
                Ok(peer)
            }
            Some(Ok(Err(e))) => Err(e),
            Some(Err(_)) => Err(format!(
                "did not finish starting within {}s (raise startupTimeoutMs in .mcp.json or MCP_TIMEOUT)",
                limit.as_secs_f64()
            )),
            None => Err("the session ended while it was starting".to_owned()),
        };
        if outcome.is_err() {
            self.kill_spawned();
        }
        match outcome {
            Ok(peer) => {
                self.set_error(None);
                Ok(peer)
            }
            Err(e) => {
                let message = format!(
                    "MCP server \"{}\" failed to connect{}: {e}{}",
                    self.config.name,
                    self.address(),
                    self.stderr_note()
                );
                self.set_error(Some(message.clone()));
                Err(message)
            }
        }
    }

    /// Drops the connection (killing a stdio server's process group); the next call
    /// reconnects.
    pub(crate) async fn disconnect(&self) {
        if let Some(conn) = self.conn.lock().await.take() {
            conn.kill();
        }
        // Refreshes of the old connection will never finish.
        self.refreshing.store(0, Ordering::SeqCst);
        if let Ok(mut state) = self.refresh.lock() {
            *state = RefreshState::default();
        }
        if let Ok(mut lost) = self.lost.lock() {
            *lost = None;
        }
        self.shared.signals.settled.notify_waiters();
    }

    async fn open(self: &Arc<Self>) -> Result<(Connection, Vec<McpToolDecl>), String> {
        let handler = Handler {
            conn: Arc::downgrade(self),
            progress: Arc::clone(&self.progress),
        };
        let (service, group) = match &self.config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                self.open_stdio(handler, command, args, env, cwd.as_deref())
                    .await?
            }
            Transport::Http {
                url,
                kind,
                headers,
                bearer_token,
                ca_cert_file,
                oauth,
            } => {
                let (client, tokens) = self.http_client(
                    url,
                    bearer_token.as_ref(),
                    ca_cert_file.as_deref(),
                    oauth.as_deref(),
                )?;
                let headers = header_map(headers)?;
                let bearer = bearer_token.as_ref().map(|t| t.expose().to_owned());
                let service = match kind {
                    HttpKind::Streamable => {
                        self.open_streamable(handler, client, tokens, url, headers, bearer)
                            .await?
                    }
                    HttpKind::Sse => {
                        self.open_sse(handler, client, tokens, url, headers, bearer)
                            .await?
                    }
                };
                (service, None)
            }
        };
        let has_tools = service
            .peer_info()
            .is_none_or(|i| i.capabilities.tools.is_some());
        let tools = if has_tools {
            service.peer().list_all_tools().await.map_err(|e| {
                crate::failure::request_problem(&self.config, &e)
                    .unwrap_or_else(|| format!("tools/list failed: {e}"))
            })?
        } else {
            Vec::new()
        };
        Ok((Connection { service, group }, tools))
    }

    /// Starts a stdio server in its own process group and runs the handshake over its
    /// pipes (messages held to the size and nesting limits); its stderr's tail is kept.
    async fn open_stdio(
        self: &Arc<Self>,
        handler: Handler,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        cwd: Option<&Path>,
    ) -> Result<(Service, Option<ProcessGroup>), String> {
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args)
            .env_clear()
            .envs(minimal_env(env))
            .current_dir(cwd.unwrap_or(&self.shared.root))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let (mut child, group) =
            ProcessGroup::spawn(&mut cmd).map_err(|e| format!("cannot start `{command}`: {e}"))?;
        // Held here while the handshake runs, so a start-up that times out or is
        // abandoned kills the group (`kill_spawned`).
        if let Ok(mut spawned) = self.spawned.lock() {
            *spawned = Some(group);
        }
        let stderr = child.stderr.take();
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            self.kill_spawned();
            return Err(format!("cannot start `{command}`: no pipes to it"));
        };
        // Every message the server sends is held to its size and nesting limits.
        let process = StdioChild {
            transport: crate::capped::stdio_transport(
                stdout,
                stdin,
                &self.config.name,
                self.config.max_message_bytes,
            ),
            _child: child,
        };
        if let Some(mut stderr) = stderr {
            let tail = Arc::clone(&self.stderr);
            tokio::spawn(async move {
                let mut chunk = vec![0_u8; 8192];
                while let Ok(n) = stderr.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    tail.push(&chunk[..n]);
                }
            });
        }
        let watched = Watched::new(process, self);
        match handler.serve(watched).await {
            Ok(service) => Ok((service, self.spawned.lock().ok().and_then(|mut s| s.take()))),
            Err(e) => {
                self.kill_spawned();
                Err(format!("the MCP handshake failed: {e}"))
            }
        }
    }

    /// The HTTP client of an http or sse server (trusting `ca_cert_file` when given), and,
    /// without a fixed bearer token, the OAuth tokens of its URL.
    fn http_client(
        &self,
        url: &str,
        bearer_token: Option<&Secret>,
        ca_cert_file: Option<&Path>,
        oauth: Option<&OAuthConfig>,
    ) -> Result<(reqwest::Client, Option<Arc<Tokens>>), String> {
        // Small JSON-RPC messages on a kept-alive connection must not wait for
        // Nagle's algorithm (reqwest's default, stated here because it matters).
        let mut builder = reqwest::Client::builder().tcp_nodelay(true);
        if let Some(path) = ca_cert_file {
            builder = builder.tls_certs_merge(read_ca_certs(path)?);
        }
        let client = builder
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {}", chain(&e)))?;
        // Without a fixed bearer token, requests carry the OAuth token of the
        // server's URL when there is one (a login, or a machine grant).
        let tokens = bearer_token.is_none().then(|| {
            Arc::new(Tokens::new(
                &self.config.name,
                url,
                oauth,
                TokenStore::new(&self.shared.state_dir, url),
                ca_cert_file.is_some().then(|| client.clone()),
            ))
        });
        Ok((client, tokens))
    }

    /// The handshake with a streamable HTTP server.
    async fn open_streamable(
        self: &Arc<Self>,
        handler: Handler,
        client: reqwest::Client,
        tokens: Option<Arc<Tokens>>,
        url: &str,
        headers: reqwest::header::HeaderMap,
        bearer: Option<String>,
    ) -> Result<Service, String> {
        use rmcp::transport::StreamableHttpClientTransport;
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let custom: HashMap<_, _> = headers
            .into_iter()
            .filter_map(|(k, v)| Some((k?, v)))
            .collect();
        // rmcp would renew an expired session by itself, silently: the
        // manager does it instead (see `call_tool`), so the tool list is
        // fetched again for the new session and the model is told that
        // the server's session state is gone.
        let mut config = StreamableHttpClientTransportConfig::with_uri(url)
            .custom_headers(custom)
            .reinit_on_expired_session(false);
        if let Some(token) = bearer {
            config = config.auth_header(token);
        }
        // Held to the same cap as a stdio server's messages: a larger JSON
        // body or SSE event is refused before it is read whole.
        config.max_json_response_size = self.config.max_message_bytes;
        config.max_sse_event_size = self.config.max_message_bytes;
        let (opened, mut stream_opened) = watch::channel(false);
        let http = AuthedHttp {
            inner: client,
            tokens,
            stream_opened: Arc::new(opened),
        };
        let transport = Watched::new(
            StreamableHttpClientTransport::with_client(http, config),
            self,
        );
        let service = handler
            .serve(transport)
            .await
            .map_err(|e| crate::failure::handshake_problem(&self.config, &e))?;
        // rmcp opens the session's GET stream once the handshake is over;
        // the first request waits for it (a server may answer a request
        // there), a moment at most.
        let _ = tokio::time::timeout(STREAM_WAIT, stream_opened.wait_for(|opened| *opened)).await;
        Ok(service)
    }

    /// The handshake with a server of the legacy HTTP+SSE transport.
    async fn open_sse(
        self: &Arc<Self>,
        handler: Handler,
        client: reqwest::Client,
        tokens: Option<Arc<Tokens>>,
        url: &str,
        headers: reqwest::header::HeaderMap,
        bearer: Option<String>,
    ) -> Result<Service, String> {
        let problem = |e: rmcp::service::ClientInitializeError| {
            crate::failure::handshake_problem(&self.config, &e)
        };
        let transport = LegacySse::connect(client, url, headers, bearer, tokens)
            .await
            .map_err(|e| {
                problem(
                    rmcp::service::ClientInitializeError::transport::<LegacySse>(
                        e,
                        "open the event stream",
                    ),
                )
            })?;
        handler
            .serve(Watched::new(transport, self))
            .await
            .map_err(problem)
    }

    /// Calls `tool` with the call timeout, reporting progress to the call's sink and sending
    /// `notifications/cancelled` when the call is cancelled or times out.
    ///
    /// When the server no longer knows the session (it restarted, or expired the session),
    /// it has not run the call: the manager starts a new session, which lists the tools
    /// again, and sends the call once more. The result then carries a note saying so.
    pub(crate) async fn call_tool(
        self: &Arc<Self>,
        tool: &str,
        arguments: JsonObject,
        ctx: &ToolContext,
        qualified: &str,
    ) -> Result<(rmcp::model::CallToolResult, Option<String>), ToolError> {
        // While the call runs, the server's questions go to whoever made it.
        let _caller = self.callers.register(ctx);
        let why = match self
            .call_once(tool, arguments.clone(), ctx, qualified)
            .await
        {
            Ok(result) => return Ok((result, None)),
            Err(Failure::Error(e)) => return Err(e),
            Err(Failure::Expired(why)) => why,
        };
        self.disconnect().await;
        match self.call_once(tool, arguments, ctx, qualified).await {
            Ok(result) => Ok((
                result,
                Some(format!(
                    "Note: the MCP server \"{}\" no longer knew agent-tools' session ({why}); it may have restarted. agent-tools started a new session and sent the call again, so anything the server kept for the old session is gone.",
                    self.config.name
                )),
            )),
            Err(Failure::Error(e)) => Err(e),
            Err(Failure::Expired(again)) => {
                self.disconnect().await;
                Err(ToolError::fatal(format!(
                    "MCP server \"{}\" ended its session again right after agent-tools started a new one ({again}); {qualified} was not run. The next call starts another session.",
                    self.config.name
                )))
            }
        }
    }

    /// Why `error` means the server no longer knows the session (so it did not run the
    /// request): HTTP 404 for the session id, as the spec says, or the error naming no
    /// request that ended the connection when it mentions the session.
    fn expired(&self, error: &ServiceError) -> Option<String> {
        use rmcp::transport::streamable_http_client::StreamableHttpError;
        if let ServiceError::TransportSend(e) = error
            && let Some(StreamableHttpError::SessionExpired) = e
                .error
                .downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return Some("HTTP 404 for the session id".to_owned());
        }
        // Only looked at: any other message is the one `broken` reports; `disconnect`
        // clears it.
        let lost = self.lost.lock().ok()?;
        let message = lost.as_deref()?;
        message
            .to_lowercase()
            .contains("session")
            .then(|| format!("the server answered \"{message}\""))
    }

    async fn call_once(
        self: &Arc<Self>,
        tool: &str,
        arguments: JsonObject,
        ctx: &ToolContext,
        qualified: &str,
    ) -> Result<rmcp::model::CallToolResult, Failure> {
        let peer = self.peer().await.map_err(ToolError::fatal)?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        let limit = self.config.call_timeout;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match peer
            .send_cancellable_request(request, PeerRequestOptions::with_timeout(limit))
            .await
        {
            Ok(handle) => handle,
            Err(e) => return Err(self.failure(e, qualified).await),
        };
        let id = handle.id.clone();
        let token = handle.progress_token.clone();
        if let Ok(mut map) = self.progress.lock() {
            map.insert(token.clone(), ctx.progress().clone());
        }
        let outcome = tokio::select! {
            response = handle.await_response() => Some(response),
            () = ctx.cancel_token().cancelled() => None,
        };
        if let Ok(mut map) = self.progress.lock() {
            map.remove(&token);
        }
        match outcome {
            None => {
                let note = CancelledNotificationParam::new(
                    Some(id),
                    Some("the call was cancelled".to_owned()),
                );
                let _ = peer.notify_cancelled(note).await;
                Err(ToolError::Cancelled {
                    tool: qualified.to_owned(),
                }
                .into())
            }
            Some(Ok(ServerResult::CallToolResult(result))) => Ok(result),
            Some(Ok(_)) => Err(ToolError::fatal(format!(
                "MCP server \"{}\" answered tools/call with something other than a tool result",
                self.config.name
            ))
            .into()),
            Some(Err(ServiceError::Timeout { .. })) => {
                // notifications/cancelled went out with the timeout; a server that does not
                // answer in time is restarted on the next call.
                self.restart.store(true, Ordering::SeqCst);
                Err(ToolError::fatal(format!(
                    "{qualified} timed out after {}s; the request was cancelled and the server \"{}\" will be restarted on the next call (raise toolTimeoutMs in .mcp.json or MCP_TOOL_TIMEOUT for slow tools){}",
                    limit.as_secs_f64(),
                    self.config.name,
                    self.stderr_note()
                ))
                .into())
            }
            Some(Err(e)) => Err(self.failure(e, qualified).await),
        }
    }

    async fn failure(&self, error: ServiceError, qualified: &str) -> Failure {
        match self.expired(&error) {
            Some(why) => Failure::Expired(why),
            None => Failure::Error(self.broken(error, qualified).await),
        }
    }

    /// The error of a call that failed because of the connection; the connection is dropped
    /// so the next call reconnects.
    async fn broken(&self, error: ServiceError, qualified: &str) -> ToolError {
        match error {
            ServiceError::McpError(e) => ToolError::respond(format!(
                "MCP server \"{}\" refused {qualified}: {}",
                self.config.name, e.message
            )),
            other if crate::failure::is_auth_refusal(&other) => {
                // The next call connects again, with whatever token there is by then.
                self.disconnect().await;
                let problem =
                    crate::failure::request_problem(&self.config, &other).unwrap_or_default();
                ToolError::fatal(format!(
                    "MCP server \"{}\"{} refused {qualified}: {problem}",
                    self.config.name,
                    self.address().replacen(" to ", " at ", 1),
                ))
            }
            other => {
                let lost = self.lost.lock().ok().and_then(|mut l| l.take());
                let problem = crate::failure::request_problem(&self.config, &other);
                self.disconnect().await;
                let limit = self.config.max_message_bytes;
                let http = matches!(self.config.transport, Transport::Http { .. });
                let what = match (lost, problem) {
                    // rmcp refuses a JSON body over the limit before reading it whole.
                    _ if other.to_string().contains("exceeded the maximum size") => format!(
                        "it sent a message larger than {limit} bytes, its limit (maxMessageBytes in .mcp.json, or MCP_MAX_MESSAGE_BYTES); the message was dropped without being read whole"
                    ),
                    (_, Some(problem)) => problem,
                    (Some(message), None) => {
                        format!("it answered with an error that names no request: \"{message}\"")
                    }
                    // An SSE event over the limit ends the stream the same way.
                    (None, None) if http => format!(
                        "{other}; it may have crashed, or sent an event larger than {limit} bytes, its limit (maxMessageBytes in .mcp.json, or MCP_MAX_MESSAGE_BYTES)"
                    ),
                    (None, None) => format!("{other}; it may have crashed"),
                };
                ToolError::fatal(format!(
                    "MCP server \"{}\" lost the connection during {qualified} ({what}). The next call reconnects.{}",
                    self.config.name,
                    self.stderr_note()
                ))
            }
        }
    }

    /// Runs a resources request, once more in a new session when the server no longer
    /// knows the old one (resources requests read, so repeating them is harmless).
    async fn resources_request<T, F, Fut>(self: &Arc<Self>, what: &str, op: F) -> Result<T, String>
    where
        F: Fn(Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let limit = self.config.call_timeout;
        let mut renewed = false;
        loop {
            let peer = self.peer().await?;
            match tokio::time::timeout(limit, op(peer)).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(ServiceError::McpError(e))) => return Err(e.message.to_string()),
                Ok(Err(e)) => {
                    let expired = self.expired(&e);
                    self.disconnect().await;
                    match expired {
                        Some(_) if !renewed => renewed = true,
                        _ => {
                            return Err(format!("{what} failed: {e}; the next request reconnects"));
                        }
                    }
                }
                Err(_) => {
                    return Err(format!("{what} timed out after {}s", limit.as_secs_f64()));
                }
            }
        }
    }

    pub(crate) async fn list_resources(self: &Arc<Self>) -> Result<Vec<Resource>, String> {
        self.peer().await?;
        if !self.supports_resources() {
            return Ok(Vec::new());
        }
        self.resources_request("resources/list", |peer| async move {
            peer.list_all_resources().await
        })
        .await
    }

    pub(crate) async fn read_resource(
        self: &Arc<Self>,
        uri: &str,
    ) -> Result<ReadResourceResult, String> {
        self.resources_request("resources/read", |peer| async move {
            peer.read_resource(ReadResourceRequestParams::new(uri.to_owned()))
                .await
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_is_bounded_to_its_tail() {
        let tail = StderrTail::default();
        for i in 0..100 {
            tail.push(format!("line {i} {}\n", "x".repeat(2000)).as_bytes());
        }
        assert!(tail.kept() <= STDERR_CAP);
        assert!(tail.total() > 200_000);
        assert!(tail.text().contains("line 99"));
        assert!(!tail.text().contains("line 0 "));
    }

    #[test]
    fn working_directories_become_file_uris() {
        let check = |dir: &str, expected: Option<(&str, Option<&str>)>| {
            let got = roots_of(&[PathBuf::from(dir)]);
            let expected: Vec<(String, Option<String>)> = expected
                .map(|(u, n)| (u.to_owned(), n.map(str::to_owned)))
                .into_iter()
                .collect();
            assert_eq!(got, expected, "{dir}");
        };
        check(
            "/work/project",
            Some(("file:///work/project", Some("project"))),
        );
        check("/", Some(("file:///", None)));
        check(
            "/tmp/with space/ü#?%",
            Some(("file:///tmp/with%20space/%C3%BC%23%3F%25", Some("ü#?%"))),
        );
        check("relative/dir", None);
    }

    #[test]
    fn the_environment_is_minimal() {
        let mut configured = BTreeMap::new();
        configured.insert("API_KEY".to_owned(), "k".to_owned());
        let env = minimal_env(&configured);
        assert!(
            env.iter()
                .all(|(k, _)| INHERITED_ENV.contains(&k.as_str()) || k == "API_KEY")
        );
    }
}
