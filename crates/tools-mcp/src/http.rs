//! The streamable HTTP transport of the server adapter: `/mcp` behind a gate, `/healthz`
//! without one.
//!
//! The gate checks, in order: the server is not stopping (503); the `Origin` header, when a
//! browser sent one, is allowed (403; loopback origins by default, against DNS rebinding);
//! the bearer token, when the server has tokens (401); a legacy session id belongs to the
//! principal that opened the session (404, as for an unknown session); the body is at most
//! the cap (413) and a JSON-RPC message the MCP layer can read ([`check_message`]: -32700,
//! -32600, -32602). Each request carries its [`Principal`] to the handler. A `DELETE` of a
//! session answers 204 No Content. Every refusal's body is a JSON-RPC error object (the MCP
//! layer's plain-text 400, 404, 405, 406 and 415 are turned into ones: -32001 for 404,
//! -32000 otherwise).
//!
//! Tokens are compared in constant time (SHA-256 digests, every token checked). Binding a
//! non-loopback address needs at least one token. Connections are served under deadlines
//! and a cap that hold before the gate (`conns.rs`).
//!
//! A legacy session (and its context) ends after the idle time without a request and
//! without a call in flight; a legacy call whose client went away (its connection closed
//! before the answer) is cancelled, unless it asked to run in the background. A `DELETE`
//! of the session cancels its calls at once (no client can resume their streams then).
//!
//! Shutdown ([`serve_http`]'s token): from the signal on, `/healthz` answers 503 and every
//! request on `/mcp` — on a new connection or a kept-alive one — gets a JSON-RPC error
//! saying the server is stopping (503); calls in flight get the grace period to finish,
//! then every context is ended (calls cancelled, background tasks stopped, their process
//! groups killed and reaped). The MCP layer is stopped, and the connections closed, only
//! once every request the gate let in has had its answer sent (bounded by
//! [`ANSWERS_BOUND`]): a call ends in our handler before rmcp has put its answer in the
//! response, and stopping rmcp in between would send an empty stream (legacy) or a 500
//! (2026-07-28) instead. A `GET`'s stream does not hold the shutdown.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tool_core::ToolError;

use crate::conns::{
    ClientGone, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, Limits,
    on_drop,
};
use crate::contexts::{Contexts, DEFAULT_IDLE, SessionFactory, wait_until};
use crate::live::LivePool;
use crate::principal::Principal;
use crate::server::{
    ANSWERS_BOUND, HandlerState, MAX_REQUEST_BYTES, PoolServer, check_message, finish,
    follow_catalog, mark_repeated_arguments,
};

/// How long calls in flight may take to finish after a shutdown, unless configured.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// The shortest token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// How many legacy session owners the gate remembers (the least recently seen go first).
const MAX_OWNERS: usize = 65_536;

/// How long a legacy call whose client went away may wait for the client to resume its
/// stream (`GET` with `Last-Event-ID`) before it is cancelled: rmcp tells clients to
/// reconnect after 3 seconds.
const RESUME_GRACE: Duration = Duration::from_secs(5);

/// A bearer token the server accepts: its label (the principal's name) and the digest of
/// its secret.
#[derive(Clone)]
pub struct Token {
    label: String,
    digest: [u8; 32],
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

impl Token {
    /// A token with `secret`, known as `label` (never the secret) in the server.
    pub fn new(label: impl Into<String>, secret: &str) -> Result<Self, ToolError> {
        let label = label.into();
        if secret.chars().count() < MIN_TOKEN_LEN {
            return Err(ToolError::respond(format!(
                "{label}: a token needs at least {MIN_TOKEN_LEN} characters; generate one with `openssl rand -hex 32`"
            )));
        }
        if secret.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(ToolError::respond(format!(
                "{label}: a token may not contain spaces or control characters"
            )));
        }
        Ok(Token {
            label,
            digest: sha256(secret.as_bytes()),
        })
    }

    /// The label.
    pub fn label(&self) -> &str {
        &self.label
    }
}

/// The tokens in `text` from `source` (a file name or an environment variable): one per
/// line, or several on a line separated by commas; blank lines and lines starting with `#`
/// are skipped. Labels are `token N`, counting from `first`.
pub fn tokens_from_text(text: &str, source: &str, first: usize) -> Result<Vec<Token>, ToolError> {
    let mut tokens = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        for secret in line.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let label = format!("token {}", first + tokens.len());
            let token = Token::new(label, secret)
                .map_err(|e| ToolError::respond(format!("{source}, line {}: {e}", number + 1)))?;
            tokens.push(token);
        }
    }
    if tokens.is_empty() {
        return Err(ToolError::respond(format!(
            "{source} holds no token; put one token per line"
        )));
    }
    Ok(tokens)
}

/// Options of the streamable HTTP server.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen; a bare port or `:PORT` means 127.0.0.1
    pub addr: SocketAddr,
    /// Host names (or `host:port`) accepted in the `Host` header; `*` accepts any (only
    /// with tokens). Empty means the loopback names plus the address listened on without
    /// tokens, and any host with tokens.
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted in the `Origin` header (`scheme://host[:port]`, `:*` for
    /// any port); empty means the loopback origins. Requests without `Origin` pass.
    pub allowed_origins: Vec<String>,
    /// Bearer tokens; empty means no authentication (loopback only)
    pub tokens: Vec<Token>,
    /// The largest request body accepted
    pub max_body_bytes: usize,
    /// How long calls in flight may take to finish after a shutdown
    pub grace: Duration,
    /// How long a client may take to send a request's headers (from the accept, or from a
    /// request's first byte on a kept-alive connection); also the longest pause while a
    /// request's body arrives
    pub header_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request
    pub idle_timeout: Duration,
    /// The most connections served at once (at the cap, the one idle longest is closed)
    pub max_connections: usize,
    /// How long a context or legacy session lives without a request and without a call in
    /// flight
    pub session_idle: Duration,
}

impl HttpOptions {
    /// Defaults for listening at `addr`.
    pub fn new(addr: SocketAddr) -> Self {
        HttpOptions {
            addr,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            tokens: Vec::new(),
            max_body_bytes: MAX_REQUEST_BYTES,
            grace: DEFAULT_GRACE,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            session_idle: DEFAULT_IDLE,
        }
    }
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

/// One allowed origin: scheme, host and port (`None` for any port).
#[derive(Debug, Clone, PartialEq, Eq)]
struct OriginRule {
    scheme: String,
    host: String,
    port: Option<u16>,
}

fn default_port(scheme: &str) -> u16 {
    if scheme == "https" { 443 } else { 80 }
}

/// Splits `scheme://host[:port]` (port `*` is `None`, a missing port the scheme's default).
fn parse_origin(text: &str, wildcard: bool) -> Option<OriginRule> {
    let (scheme, rest) = text.trim().split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let rest = rest.trim_end_matches('/');
    if scheme.is_empty() || rest.is_empty() || rest.contains('/') {
        return None;
    }
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        (
            format!("[{}]", host.to_ascii_lowercase()),
            after.strip_prefix(':'),
        )
    } else {
        match rest.rsplit_once(':') {
            Some((host, port)) => (host.to_ascii_lowercase(), Some(port)),
            None => (rest.to_ascii_lowercase(), None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        None => Some(default_port(&scheme)),
        Some("*") if wildcard => None,
        Some(p) => Some(p.parse().ok()?),
    };
    Some(OriginRule { scheme, host, port })
}

/// The origins of pages served from this machine.
fn loopback_origins() -> Vec<OriginRule> {
    ["http", "https"]
        .iter()
        .flat_map(|scheme| {
            ["localhost", "127.0.0.1", "[::1]"].map(|host| OriginRule {
                scheme: (*scheme).to_owned(),
                host: host.to_owned(),
                port: None,
            })
        })
        .collect()
}

/// One legacy session as the gate knows it.
struct Owned {
    principal: Principal,
    /// When a request of the session last arrived
    seen: Instant,
    /// The order of that request among all sessions' (the least recent goes first)
    tick: u64,
    /// Requests of the session whose answer is not done
    in_flight: usize,
    /// When the client last resumed a stream of the session
    resumed: Option<Instant>,
    /// Cancelled when the session is deleted, which ends its calls in flight at once
    ended: CancellationToken,
}

/// Who owns which legacy session, least recently seen first out, and whether the session
/// is in use.
#[derive(Default)]
struct Owners {
    map: HashMap<String, Owned>,
    tick: u64,
}

impl Owners {
    fn bind(&mut self, session: String, principal: Principal) {
        self.tick += 1;
        self.map.insert(
            session,
            Owned {
                principal,
                seen: Instant::now(),
                tick: self.tick,
                in_flight: 0,
                resumed: None,
                ended: CancellationToken::new(),
            },
        );
        // The least recently used session makes room, and its calls in flight end with it
        // (nobody could resume them).
        if self.map.len() > MAX_OWNERS
            && let Some(oldest) = self
                .map
                .iter()
                .min_by_key(|(_, o)| o.tick)
                .map(|(k, _)| k.clone())
        {
            self.forget(&oldest);
        }
    }

    /// The owner of `session`, marking it seen.
    fn owner(&mut self, session: &str) -> Option<Principal> {
        self.tick += 1;
        let tick = self.tick;
        self.map.get_mut(session).map(|o| {
            o.seen = Instant::now();
            o.tick = tick;
            o.principal.clone()
        })
    }

    /// What tells a call of `session` its client went away: also told when the session
    /// is deleted.
    fn client_of(&self, session: &str) -> ClientGone {
        ClientGone {
            gone: self
                .map
                .get(session)
                .map_or_else(CancellationToken::new, |o| o.ended.child_token()),
            answered: CancellationToken::new(),
        }
    }

    /// Forgets `session` and ends its calls in flight: nobody can resume their streams.
    fn forget(&mut self, session: &str) {
        if let Some(o) = self.map.remove(session) {
            o.ended.cancel();
        }
    }

    /// A request of `session` started (`true`) or its answer is done (`false`).
    fn busy(&mut self, session: &str, started: bool) {
        if let Some(o) = self.map.get_mut(session) {
            if started {
                o.in_flight += 1;
            } else {
                o.in_flight = o.in_flight.saturating_sub(1);
                o.seen = Instant::now();
            }
        }
    }

    /// The client of `session` resumed a stream.
    fn resumed(&mut self, session: &str) {
        if let Some(o) = self.map.get_mut(session) {
            o.resumed = Some(Instant::now());
        }
    }

    /// Whether the client of `session` resumed a stream since `when`.
    fn resumed_since(&self, session: &str, when: Instant) -> bool {
        self.map
            .get(session)
            .and_then(|o| o.resumed)
            .is_some_and(|r| r >= when)
    }

    /// Forgets and returns the sessions without a request for `idle` and without one in
    /// flight.
    fn expired(&mut self, now: Instant, idle: Duration) -> Vec<String> {
        let ids: Vec<String> = self
            .map
            .iter()
            .filter(|(_, o)| o.in_flight == 0 && now.duration_since(o.seen) >= idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &ids {
            self.map.remove(id);
        }
        ids
    }
}

/// The requests on `/mcp` whose answer has not gone out: each counted from the moment the
/// gate sees it until its response's body has been sent whole or dropped (a `GET`'s only
/// until its response's head: its stream lasts as long as the session). The shutdown waits
/// for the count to reach zero before it stops the MCP layer, which would otherwise drop
/// an answer the handler had produced but rmcp had not yet put in its response.
#[derive(Debug, Default)]
struct Answering {
    count: AtomicUsize,
    /// Woken when the count reaches zero
    done: Notify,
}

/// One request of [`Answering`]'s count; dropping it ends the request's share.
struct Unanswered(Arc<Answering>);

impl Drop for Unanswered {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.done.notify_waiters();
        }
    }
}

impl Answering {
    /// A request arrived: counted until the guard is dropped.
    fn begin(self: &Arc<Self>) -> Unanswered {
        self.count.fetch_add(1, Ordering::SeqCst);
        Unanswered(Arc::clone(self))
    }

    /// Waits until every request counted has been answered.
    async fn settled(&self) {
        wait_until(&self.done, || self.count.load(Ordering::SeqCst) == 0).await;
    }
}

/// What the gate in front of `/mcp` knows.
struct Gate {
    tokens: Vec<Token>,
    origins: Vec<OriginRule>,
    max_body: usize,
    /// The longest pause while a body arrives
    body_stall: Duration,
    owners: Arc<Mutex<Owners>>,
    stopping: AtomicBool,
    requests: AtomicU64,
    answering: Arc<Answering>,
}

/// A JSON-RPC error without an id, as an HTTP response that closes the connection (the
/// request's body is left unread).
fn refuse(status: StatusCode, code: i32, message: String) -> Response {
    let mut response = json_response(
        status,
        &serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": code, "message": message},
        }),
    );
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

impl Gate {
    fn origin_allowed(&self, origin: &HeaderValue) -> bool {
        let Some(origin) = origin.to_str().ok().and_then(|o| parse_origin(o, false)) else {
            return false;
        };
        self.origins.iter().any(|rule| {
            rule.scheme == origin.scheme
                && rule.host == origin.host
                && rule.port.is_none_or(|p| Some(p) == origin.port)
        })
    }

    /// The principal of a request: the token it presents, or the local client when the
    /// server has no tokens.
    fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, &'static str> {
        if self.tokens.is_empty() {
            return Ok(Principal::local());
        }
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("bearer")
                    .then(|| token.trim().to_owned())
            });
        let Some(presented) = presented else {
            return Err("this server needs a bearer token: send `Authorization: Bearer <token>`");
        };
        let digest = sha256(presented.as_bytes());
        // Every token is compared, each in constant time.
        let mut found = None;
        for token in &self.tokens {
            let diff = token
                .digest
                .iter()
                .zip(digest.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if std::hint::black_box(diff) == 0 {
                found = Some(token);
            }
        }
        match found {
            Some(token) => Ok(Principal::for_token(&token.label, &token.digest)),
            None => Err(
                "the bearer token is not one this server accepts; send `Authorization: Bearer <token>` with a token the server was started with",
            ),
        }
    }
}

fn unauthorized(message: &str) -> Response {
    let mut response = refuse(
        StatusCode::UNAUTHORIZED,
        -32000,
        format!("Unauthorized: {message}"),
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"agent-tools\""),
    );
    response
}

const SESSION_HEADER: &str = "mcp-session-id";

/// The gate in front of `/mcp` (see the module documentation).
async fn gate(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    // Counted before the stopping flag is read: a request the shutdown does not refuse is
    // one it waits for.
    let unanswered = gate.answering.begin();
    let streams = request.method() == Method::GET;
    let response = gate_request(&gate, request, next).await;
    if streams {
        return response;
    }
    response.map(|body| Body::new(on_drop(body, move |_| drop(unanswered))))
}

/// The checks of [`gate`], then the MCP layer's answer.
async fn gate_request(gate: &Gate, mut request: Request, next: Next) -> Response {
    gate.requests.fetch_add(1, Ordering::Relaxed);
    if gate.stopping.load(Ordering::SeqCst) {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            -32000,
            "the server is shutting down; send the request to another instance or retry once it is back".to_owned(),
        );
    }
    if let Some(origin) = request.headers().get(header::ORIGIN)
        && !gate.origin_allowed(origin)
    {
        return refuse(
            StatusCode::FORBIDDEN,
            -32000,
            format!(
                "Forbidden: Origin {} is not allowed (start the server with --allowed-origin to accept it)",
                origin.to_str().unwrap_or("(not text)")
            ),
        );
    }
    let principal = match gate.authenticate(request.headers()) {
        Ok(p) => p,
        Err(message) => return unauthorized(message),
    };
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session {
        let owner = gate.owners.lock().ok().and_then(|mut o| o.owner(id));
        if owner.as_ref() != Some(&principal) {
            return refuse(
                StatusCode::NOT_FOUND,
                -32001,
                "Session not found: start a new session with initialize".to_owned(),
            );
        }
    }
    request.extensions_mut().insert(principal.clone());
    let method = request.method().clone();
    let mut is_call = false;
    if method == Method::POST {
        (request, is_call) = match check_body(request, gate.max_body, gate.body_stall).await {
            Ok(checked) => checked,
            Err(response) => return *response,
        };
    }
    // A legacy call is in flight until its answer is done; it ends when its client goes
    // (and does not resume its stream within the grace), or at once with its session.
    let legacy_call = match (&session, &method) {
        (Some(id), &Method::POST) if is_call => {
            let client = match gate.owners.lock() {
                Ok(mut owners) => {
                    owners.busy(id, true);
                    owners.client_of(id)
                }
                Err(_) => ClientGone::default(),
            };
            request.extensions_mut().insert(client.clone());
            Some((id.clone(), client))
        }
        (Some(id), &Method::GET) => {
            if request.headers().contains_key("last-event-id")
                && let Ok(mut owners) = gate.owners.lock()
            {
                owners.resumed(id);
            }
            None
        }
        _ => None,
    };
    let mut response = next.run(request).await;
    if let Some((id, client)) = legacy_call {
        let owners = Arc::clone(&gate.owners);
        response = response.map(|body| {
            Body::new(on_drop(body, move |ended| {
                client_went(owners, id, client, ended);
            }))
        });
    }
    match (&session, &method, response.status()) {
        (None, _, status) if status.is_success() => {
            let minted = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if let (Some(id), Ok(mut owners)) = (minted, gate.owners.lock()) {
                owners.bind(id, principal);
            }
        }
        (Some(id), &Method::DELETE, status) if status.is_success() => {
            // The session is gone, its calls with it; there is nothing to say about it.
            if let Ok(mut owners) = gate.owners.lock() {
                owners.forget(id);
            }
            *response.status_mut() = StatusCode::NO_CONTENT;
            *response.body_mut() = Body::empty();
            response.headers_mut().remove(header::CONTENT_TYPE);
            response.headers_mut().remove(header::CONTENT_LENGTH);
        }
        (Some(id), _, StatusCode::NOT_FOUND) => {
            if let Ok(mut owners) = gate.owners.lock() {
                owners.forget(id);
            }
        }
        _ => {}
    }
    as_json_rpc_error(response).await
}

/// A 400, 404, 405, 406 or 415 answer of the MCP layer with a text body, as the JSON-RPC
/// error object the streamable HTTP transport describes (404: -32001, the others -32000),
/// the text as its message.
async fn as_json_rpc_error(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    let code = match status {
        StatusCode::NOT_FOUND => -32001,
        StatusCode::BAD_REQUEST
        | StatusCode::METHOD_NOT_ALLOWED
        | StatusCode::NOT_ACCEPTABLE
        | StatusCode::UNSUPPORTED_MEDIA_TYPE => -32000,
        _ => return response,
    };
    if is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        text
    };
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    })
    .to_string();
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body))
}

/// The answer of a legacy call was sent (`ended`) or abandoned: an abandoned call is
/// cancelled unless the client resumes the session's stream within [`RESUME_GRACE`] (a
/// deleted session's calls were cancelled already, see [`Owners::forget`]); the session's
/// call in flight ends with it.
fn client_went(owners: Arc<Mutex<Owners>>, id: String, client: ClientGone, ended: bool) {
    let done = |owners: &Mutex<Owners>, id: &str| {
        if let Ok(mut owners) = owners.lock() {
            owners.busy(id, false);
        }
    };
    let runtime = tokio::runtime::Handle::try_current();
    match runtime {
        Ok(runtime) if !ended && !client.answered.is_cancelled() => {
            let dropped = Instant::now();
            runtime.spawn(async move {
                tokio::select! {
                    () = tokio::time::sleep(RESUME_GRACE) => {}
                    () = client.answered.cancelled() => {}
                }
                let resumed = owners.lock().is_ok_and(|o| o.resumed_since(&id, dropped));
                if !resumed {
                    client.gone.cancel();
                }
                // The call keeps its session until it has its answer (a cancelled one
                // returns within seconds; a resumed one runs on).
                let bound = if resumed {
                    Duration::from_secs(24 * 3600)
                } else {
                    Duration::from_secs(60)
                };
                let _ = tokio::time::timeout(bound, client.answered.cancelled()).await;
                done(&owners, &id);
            });
        }
        _ => done(&owners, &id),
    }
}

/// A POST body read whole (at most `max` bytes, with no pause longer than `stall`),
/// checked, and with repeated argument keys marked; and whether it is a `tools/call`.
async fn check_body(
    request: Request,
    max: usize,
    stall: Duration,
) -> Result<(Request, bool), Box<Response>> {
    let (parts, body) = request.into_parts();
    let bytes = read_body(body, max, stall).await?;
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Err(Box::new(refuse(
            StatusCode::BAD_REQUEST,
            -32700,
            "Parse error: the body is not UTF-8 JSON".to_owned(),
        )));
    };
    if let Err(rejection) = check_message(text) {
        let status = if rejection.code == -32602 && !rejection.id.is_null() {
            StatusCode::OK
        } else {
            StatusCode::BAD_REQUEST
        };
        return Err(Box::new(json_response(status, &rejection.to_json())));
    }
    let is_call = is_tool_call(text);
    let body = match mark_repeated_arguments(text) {
        std::borrow::Cow::Owned(marked) => Body::from(marked),
        std::borrow::Cow::Borrowed(_) => Body::from(bytes),
    };
    Ok((Request::from_parts(parts, body), is_call))
}

/// Whether a (checked) message is a `tools/call` request, read without building it.
fn is_tool_call(text: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
        id: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Head<'_>>(text)
        .is_ok_and(|h| h.id.is_some() && h.method.as_deref() == Some("tools/call"))
}

/// The bytes of `body`: at most `max`, none of its pauses longer than `stall`.
async fn read_body(mut body: Body, max: usize, stall: Duration) -> Result<Vec<u8>, Box<Response>> {
    use hyper::body::Body as _;
    let too_large = || {
        Box::new(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            -32600,
            format!(
                "the request body is larger than {max} bytes, the most this server reads (--max-request-bytes)"
            ),
        ))
    };
    if body.size_hint().lower() > max as u64 {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    loop {
        let frame = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx));
        let frame = match tokio::time::timeout(stall, frame).await {
            Ok(Some(Ok(frame))) => frame,
            Ok(None) => return Ok(bytes),
            Ok(Some(Err(_))) => {
                return Err(Box::new(refuse(
                    StatusCode::BAD_REQUEST,
                    -32700,
                    "Parse error: the request body could not be read".to_owned(),
                )));
            }
            Err(_) => {
                return Err(Box::new(refuse(
                    StatusCode::REQUEST_TIMEOUT,
                    -32600,
                    format!(
                        "the request body paused for more than {} seconds; send it without pauses",
                        stall.as_secs()
                    ),
                )));
            }
        };
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > max {
                return Err(too_large());
            }
            bytes.extend_from_slice(&data);
        }
    }
}

/// `GET /healthz`: 200 while the server takes requests, 503 once it is stopping.
async fn healthz(State(gate): State<Arc<Gate>>) -> Response {
    if gate.stopping.load(Ordering::SeqCst) {
        json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &serde_json::json!({"status": "stopping"}),
        )
    } else {
        json_response(StatusCode::OK, &serde_json::json!({"status": "ok"}))
    }
}

/// The options' own checks (no listening beyond loopback without tokens, no `*` host
/// without tokens) and the origins the gate accepts: the options', or the loopback ones.
fn checked_origins(options: &HttpOptions, any_host: bool) -> Result<Vec<OriginRule>, ToolError> {
    let addr = options.addr;
    if !addr.ip().is_loopback() && options.tokens.is_empty() {
        return Err(ToolError::respond(format!(
            "--http {addr}: listening beyond loopback needs a bearer token (--token-file FILE or --token-env VAR), or listen on 127.0.0.1"
        )));
    }
    if any_host && options.tokens.is_empty() {
        return Err(ToolError::respond(
            "--allowed-host '*' needs a bearer token (--token-file FILE or --token-env VAR): without one, any web page could reach the server through DNS rebinding",
        ));
    }
    let mut origins = Vec::new();
    for text in &options.allowed_origins {
        origins.push(parse_origin(text, true).ok_or_else(|| {
            ToolError::respond(format!(
                "--allowed-origin {text}: expected scheme://host[:port], such as https://app.example.com or http://localhost:*"
            ))
        })?);
    }
    if origins.is_empty() {
        origins = loopback_origins();
    }
    Ok(origins)
}

/// rmcp's streamable HTTP configuration: JSON answers, the body cap, and the `Host` names
/// accepted (any with tokens and no list, else the list or the loopback names).
fn transport_config(
    options: &HttpOptions,
    any_host: bool,
    bound: SocketAddr,
    mcp_stop: CancellationToken,
) -> rmcp::transport::streamable_http_server::StreamableHttpServerConfig {
    let mut config = rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default()
        .with_cancellation_token(mcp_stop)
        .with_json_response(true)
        .with_max_request_body_bytes(options.max_body_bytes);
    if any_host || (options.allowed_hosts.is_empty() && !options.tokens.is_empty()) {
        config = config.disable_allowed_hosts();
    } else {
        let mut hosts = options.allowed_hosts.clone();
        if hosts.is_empty() {
            hosts = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
            if !bound.ip().is_loopback() && !bound.ip().is_unspecified() {
                hosts.push(bound.ip().to_string());
            }
        }
        config = config.with_allowed_hosts(hosts);
    }
    config
}

/// The shutdown: requests answered 503 from now on, calls in flight given `grace`, then
/// every context ended and the connections closed.
async fn drain(
    gate_state: &Gate,
    sweeping: tokio::task::JoinHandle<()>,
    contexts: &Contexts,
    grace: Duration,
    mcp_stop: &CancellationToken,
    close_connections: &CancellationToken,
) {
    // Draining: every request from now on is answered 503 (the gate), on new connections
    // and kept-alive ones alike, while calls in flight get the grace period, and so do
    // requests that passed the gate before and whose call may not have started yet.
    gate_state.stopping.store(true, Ordering::SeqCst);
    sweeping.abort();
    let _ = tokio::time::timeout(grace, async {
        contexts.settled().await;
        gate_state.answering.settled().await;
    })
    .await;
    // Then every context ends: calls cancelled, background tasks stopped.
    finish(contexts).await;
    // A call counts as settled when our handler returns, before rmcp has put its answer in
    // the response; stopping rmcp then would answer the call with an empty stream or a 500.
    // So the answers, those of the cancelled calls too, go out first (bounded: a client
    // that does not read its answer cannot hold the shutdown).
    let _ = tokio::time::timeout(ANSWERS_BOUND, gate_state.answering.settled()).await;
    mcp_stop.cancel();
    // The streams rmcp ended (sessions' `GET`s) and the answers' last bytes go out, then
    // the connections close.
    tokio::time::sleep(Duration::from_millis(100)).await;
    close_connections.cancel();
}

/// Serves `pool` (a [`tool_core::ToolPool`] or a [`LivePool`]) over streamable HTTP at
/// `/mcp` (and `/healthz`) until `shutdown` fires and the calls in flight have finished or
/// were cancelled after the grace period. Legacy sessions get a fresh context from
/// `factory`; protocol 2026-07-28 requests get their principal's (see `contexts.rs`).
/// `on_bound` receives the address actually bound (useful with port 0).
pub async fn serve_http(
    pool: impl Into<LivePool>,
    factory: SessionFactory,
    options: HttpOptions,
    shutdown: CancellationToken,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<(), ToolError> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpService, session::local::LocalSessionManager,
    };
    let addr = options.addr;
    let any_host = options.allowed_hosts.iter().any(|h| h == "*");
    let origins = checked_origins(&options, any_host)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| ToolError::respond(format!("--http {addr}: cannot listen: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| ToolError::fatal(format!("cannot read the bound address: {e}")))?;
    let live: LivePool = pool.into();
    let upstream = live.manager();
    let follows = live.follows_changes();
    let catalog = follow_catalog(live).await;
    let idle = options.session_idle.max(Duration::from_millis(100));
    let shared = HandlerState::new(Contexts::with_idle(factory, idle), upstream)?;
    let mcp_stop = CancellationToken::new();
    let config = transport_config(&options, any_host, bound, mcp_stop.clone());
    // Legacy sessions end by the gate's idle rule (`sweep`), which counts a call in flight
    // as use; rmcp's own timer would end a session in the middle of a long call.
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = None;
    let sessions = Arc::new(sessions);
    let handlers = Arc::clone(&shared);
    let service = StreamableHttpService::new(
        move || {
            Ok(PoolServer::new(
                catalog.clone(),
                follows,
                Arc::clone(&handlers),
                None,
            ))
        },
        Arc::clone(&sessions),
        config,
    );
    let gate_state = Arc::new(Gate {
        tokens: options.tokens.clone(),
        origins,
        max_body: options.max_body_bytes,
        body_stall: options.header_timeout,
        owners: Arc::default(),
        stopping: AtomicBool::new(false),
        requests: AtomicU64::new(0),
        answering: Arc::default(),
    });
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&gate_state),
            gate,
        ))
        .route("/healthz", axum::routing::get(healthz))
        .with_state(Arc::clone(&gate_state));
    let limits = Limits {
        header_timeout: options.header_timeout,
        idle_timeout: options.idle_timeout,
        max_connections: options.max_connections,
    };
    on_bound(bound);
    let close_connections = CancellationToken::new();
    let serving = tokio::spawn(crate::conns::serve(
        listener,
        router,
        limits,
        close_connections.clone(),
    ));
    let sweeping = tokio::spawn(sweep(
        Arc::clone(&gate_state),
        Arc::clone(&sessions),
        Arc::clone(&shared.contexts),
        idle,
    ));
    shutdown.cancelled().await;
    drain(
        &gate_state,
        sweeping,
        &shared.contexts,
        options.grace,
        &mcp_stop,
        &close_connections,
    )
    .await;
    let _ = serving.await;
    Ok(())
}

/// Ends what nobody uses any more, every so often: legacy sessions without a request for
/// `idle` and without a call in flight (closed in rmcp, which ends their contexts), rmcp
/// sessions the gate does not know (forgotten when its table was full; nobody can reach
/// them), and 2026-07-28 contexts idle as long.
async fn sweep(
    gate: Arc<Gate>,
    sessions: Arc<rmcp::transport::streamable_http_server::session::local::LocalSessionManager>,
    contexts: Arc<Contexts>,
    idle: Duration,
) {
    use rmcp::transport::streamable_http_server::SessionManager;
    // A session is bound to its owner when the answer to its `initialize` goes out.
    const UNOWNED_GRACE: Duration = Duration::from_secs(10);
    let period = (idle / 4).clamp(Duration::from_millis(25), Duration::from_secs(5));
    let mut unowned: HashMap<String, Instant> = HashMap::new();
    loop {
        tokio::time::sleep(period).await;
        let now = Instant::now();
        let mut ended = gate
            .owners
            .lock()
            .map(|mut o| o.expired(now, idle))
            .unwrap_or_default();
        let live: Vec<String> = sessions
            .sessions
            .read()
            .await
            .keys()
            .map(|id| id.to_string())
            .collect();
        if let Ok(owners) = gate.owners.lock() {
            unowned.retain(|id, _| live.contains(id) && !owners.map.contains_key(id));
            for id in live.iter().filter(|id| !owners.map.contains_key(*id)) {
                let since = *unowned.entry(id.clone()).or_insert(now);
                if now.duration_since(since) >= UNOWNED_GRACE.min(idle.max(Duration::from_secs(1)))
                {
                    ended.push(id.clone());
                }
            }
        }
        for id in ended {
            unowned.remove(&id);
            let _ = sessions.close_session(&id.into()).await;
        }
        contexts.expire().await;
    }
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

    fn gate_with(tokens: &[&str], origins: &[&str]) -> Gate {
        let tokens = tokens
            .iter()
            .enumerate()
            .filter_map(|(i, t)| Token::new(format!("token {}", i + 1), t).ok())
            .collect();
        let origins: Vec<OriginRule> = if origins.is_empty() {
            loopback_origins()
        } else {
            origins
                .iter()
                .filter_map(|o| parse_origin(o, true))
                .collect()
        };
        Gate {
            tokens,
            origins,
            max_body: 1024,
            body_stall: Duration::from_secs(1),
            owners: Arc::default(),
            stopping: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            answering: Arc::default(),
        }
    }

    #[test]
    fn origins_are_checked_by_scheme_host_and_port() {
        let check = |gate: &Gate, origin: &str, expected: bool| {
            let value = HeaderValue::from_str(origin).unwrap_or(HeaderValue::from_static("x"));
            assert_eq!(gate.origin_allowed(&value), expected, "{origin}");
        };
        let local = gate_with(&[], &[]);
        for origin in [
            "http://localhost:6274",
            "http://127.0.0.1",
            "https://[::1]:9",
            "HTTP://LOCALHOST:3000",
        ] {
            check(&local, origin, true);
        }
        for origin in [
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io:80",
            "null",
            "file://",
            "",
            "localhost",
            "ftp://localhost",
        ] {
            check(&local, origin, false);
        }
        let custom = gate_with(&[], &["https://app.example.com", "http://10.0.0.5:*"]);
        check(&custom, "https://app.example.com", true);
        check(&custom, "https://app.example.com:443", true);
        check(&custom, "https://app.example.com:8443", false);
        check(&custom, "http://app.example.com", false);
        check(&custom, "http://10.0.0.5:1234", true);
        check(&custom, "http://localhost:6274", false);
    }

    #[test]
    fn bearer_tokens_name_their_principal() {
        let gate = gate_with(&["aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb"], &[]);
        let check = |authorization: Option<&str>, expected: Option<&str>| {
            let mut headers = HeaderMap::new();
            if let Some(value) = authorization
                && let Ok(value) = HeaderValue::from_str(value)
            {
                headers.insert(header::AUTHORIZATION, value);
            }
            let got = gate.authenticate(&headers).ok();
            assert_eq!(
                got.as_ref().map(Principal::as_str),
                expected,
                "{authorization:?}"
            );
        };
        check(Some("Bearer aaaaaaaaaaaaaaaaaaaa"), Some("token 1"));
        check(Some("bearer bbbbbbbbbbbbbbbbbbbb"), Some("token 2"));
        check(Some("Bearer  bbbbbbbbbbbbbbbbbbbb "), Some("token 2"));
        for wrong in [
            None,
            Some("Bearer"),
            Some("Bearer aaaaaaaaaaaaaaaaaaa"),
            Some("Bearer aaaaaaaaaaaaaaaaaaaaa"),
            Some("Basic aaaaaaaaaaaaaaaaaaaa"),
            Some("aaaaaaaaaaaaaaaaaaaa"),
            Some("Bearer AAAAAAAAAAAAAAAAAAAA"),
        ] {
            check(wrong, None);
        }
        // Without tokens everyone is the local client.
        let open = gate_with(&[], &[]);
        assert_eq!(
            open.authenticate(&HeaderMap::new()).ok(),
            Some(Principal::local())
        );
    }

    #[test]
    fn token_files_hold_one_or_more_tokens() {
        let labels = |text: &str| {
            tokens_from_text(text, "FILE", 1)
                .map(|t| t.iter().map(|t| t.label().to_owned()).collect::<Vec<_>>())
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            labels("# ours\n0123456789abcdef\n\n  fedcba9876543210fedc  \n"),
            Ok(vec!["token 1".to_owned(), "token 2".to_owned()])
        );
        assert_eq!(
            labels("0123456789abcdef,fedcba9876543210").map(|l| l.len()),
            Ok(2)
        );
        let short = labels("short").err().unwrap_or_default();
        assert!(
            short.contains("line 1") && short.contains("16 characters"),
            "{short}"
        );
        let empty = labels("# nothing\n").err().unwrap_or_default();
        assert!(empty.contains("no token"), "{empty}");
        let spaced = labels("0123456789 abcdef0123").err().unwrap_or_default();
        assert!(spaced.contains("spaces"), "{spaced}");
    }

    #[test]
    fn tool_calls_are_told_from_other_messages() {
        let check = |text: &str, expected: bool| assert_eq!(is_tool_call(text), expected, "{text}");
        check(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            true,
        );
        check(
            r#"{"params":{"arguments":{"method":"x"}},"method":"tools/call","id":"a"}"#,
            true,
        );
        check(
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{}}"#,
            false,
        );
        check(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, false);
        check(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, false);
        check(r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call"}"#, true);
    }

    #[test]
    fn a_session_with_a_call_in_flight_does_not_expire() {
        let mut owners = Owners::default();
        owners.bind("a".into(), Principal::local());
        owners.bind("b".into(), Principal::local());
        owners.busy("a", true);
        let later = Instant::now() + Duration::from_secs(10);
        assert_eq!(
            owners.expired(later, Duration::from_secs(5)),
            vec!["b".to_owned()]
        );
        assert!(owners.expired(later, Duration::from_secs(5)).is_empty());
        owners.busy("a", false);
        // The idle time counts from the end of the call.
        let soon = Instant::now() + Duration::from_secs(3);
        assert!(owners.expired(soon, Duration::from_secs(5)).is_empty());
        let much_later = Instant::now() + Duration::from_secs(20);
        assert_eq!(
            owners.expired(much_later, Duration::from_secs(5)),
            vec!["a".to_owned()]
        );
        // A resumed stream is remembered from when it came.
        owners.bind("c".into(), Principal::local());
        let before = Instant::now();
        owners.resumed("c");
        assert!(owners.resumed_since("c", before));
        assert!(!owners.resumed_since("c", Instant::now() + Duration::from_secs(1)));
    }

    #[test]
    fn session_owners_are_bounded() {
        let mut owners = Owners::default();
        owners.bind("s0".into(), Principal::local());
        let call_of_s0 = owners.client_of("s0");
        for i in 1..MAX_OWNERS + 10 {
            owners.bind(format!("s{i}"), Principal::local());
        }
        assert_eq!(owners.map.len(), MAX_OWNERS);
        assert!(owners.owner("s0").is_none(), "the oldest went first");
        assert!(call_of_s0.gone.is_cancelled(), "with its calls in flight");
        assert!(owners.owner(&format!("s{}", MAX_OWNERS + 9)).is_some());
    }

    #[tokio::test]
    async fn answering_settles_once_every_guard_is_dropped() {
        let answering = Arc::new(Answering::default());
        answering.settled().await;
        let (first, second) = (answering.begin(), answering.begin());
        let waiting = tokio::spawn({
            let answering = Arc::clone(&answering);
            async move { answering.settled().await }
        });
        drop(first);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "settled with a request unanswered");
        drop(second);
        let settled = tokio::time::timeout(Duration::from_secs(30), waiting).await;
        assert!(matches!(settled, Ok(Ok(()))), "never settled");
        assert_eq!(answering.count.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_forgotten_session_ends_its_calls_and_only_its() {
        let mut owners = Owners::default();
        owners.bind("a".to_owned(), Principal::local());
        owners.bind("b".to_owned(), Principal::local());
        let (in_a, in_b) = (owners.client_of("a"), owners.client_of("b"));
        owners.forget("a");
        assert!(in_a.gone.is_cancelled());
        assert!(!in_b.gone.is_cancelled());
        assert!(owners.owner("a").is_none());
        // A call of a session the gate does not know has a token of its own.
        assert!(!owners.client_of("a").gone.is_cancelled());
    }
}
