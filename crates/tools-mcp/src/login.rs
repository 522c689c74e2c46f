//! `agent-tools mcp login`, `logout` and `status`, the person's side of OAuth for HTTP
//! servers (the session's side is `oauth.rs`).
//!
//! A login asks the server once without a token to learn where its authorization server
//! is (the 401's `WWW-Authenticate`: `resource_metadata` and `scope`; then protected
//! resource metadata, RFC 9728, and authorization server metadata, RFC 8414 or OpenID
//! Connect discovery — rmcp's `auth` does the discovery and checks that the metadata
//! describes this server), picks the client identity (a client registered in advance, a
//! client ID metadata document, dynamic registration), and runs the authorization code
//! flow with PKCE S256 and the resource indicator (RFC 8707): the person opens the
//! authorization URL ([`open_browser`], or pastes the redirected URL back), the code comes
//! back to a loopback listener, and the tokens go to the state directory. The scopes asked
//! for are `oauth.scopes`, else what the server's challenge or metadata names, plus any a
//! server asked for since with `403 insufficient_scope` (step-up), plus `offline_access`
//! when the authorization server offers it (for a refresh token). The login then connects
//! with the new token and lists the tools; a `403 insufficient_scope` there asks again
//! with the added scopes, at most twice.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use oauth2::TokenResponse;
use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationMetadata,
    AuthorizationRequest, AuthorizationSession, StoredCredentials,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tool_core::ToolError;

use crate::config::{Grant, HttpKind, OAuthConfig, ServerConfig, Transport};
use crate::oauth::{expires_at, now_secs, refreshable};
use crate::oauth_store::{StoredClient, TokenFile, TokenStore};

/// How long a login waits for the person.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// How many authorizations one login may run (the first, and step-ups).
const MAX_AUTHORIZATIONS: usize = 3;

/// The client name agent-tools registers with.
const CLIENT_NAME: &str = "agent-tools";

/// How a login reaches the person.
#[async_trait]
pub trait LoginPrompt: Send + Sync {
    /// Shows the authorization URL (opening a browser, when the host can).
    fn show(&self, authorization_url: &str);

    /// Reads the URL the authorization server redirected to, pasted by the person; `None`
    /// when the host cannot read one (the loopback listener is then the only way back).
    async fn pasted_redirect(&self) -> Option<String>;
}

/// What a login achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginOutcome {
    /// The scopes granted (as the authorization server reported them)
    pub scopes: Vec<String>,
    /// Seconds until the access token expires, if the server said
    pub expires_in: Option<u64>,
    /// Whether a refresh token came with it
    pub refreshable: bool,
    /// How many tools the server listed with the new token
    pub tools: usize,
    /// Where the tokens are
    pub token_file: std::path::PathBuf,
}

fn login_error(server: &str, url: &str, what: impl std::fmt::Display) -> ToolError {
    ToolError::fatal(format!(
        "MCP server \"{server}\" ({url}): login failed: {what}"
    ))
}

/// The HTTP details of a server, or why it has no login.
struct HttpServer<'a> {
    url: &'a str,
    kind: HttpKind,
    headers: &'a BTreeMap<String, String>,
    oauth: Option<&'a OAuthConfig>,
    ca_cert_file: Option<&'a Path>,
}

fn http_server(server: &ServerConfig) -> Result<HttpServer<'_>, ToolError> {
    match &server.transport {
        Transport::Stdio { .. } => Err(ToolError::respond(format!(
            "MCP server \"{}\" is a stdio server: agent-tools starts it, and it needs no login",
            server.name
        ))),
        Transport::Http {
            url,
            kind,
            headers,
            oauth,
            ca_cert_file,
            bearer_token,
        } => {
            if bearer_token.is_some() {
                return Err(ToolError::respond(format!(
                    "MCP server \"{}\" ({url}) gets its token from \"bearerTokenEnvVar\"; remove that from its entry in .mcp.json to log in with OAuth instead",
                    server.name
                )));
            }
            match oauth.as_ref().map(|o| &o.grant) {
                Some(Grant::ClientCredentials { .. }) | Some(Grant::Enterprise(_)) => {
                    Err(ToolError::respond(format!(
                        "MCP server \"{}\" ({url}) uses a machine grant (\"oauth.grant\" in .mcp.json): each session obtains its own tokens, so there is nothing to log in to",
                        server.name
                    )))
                }
                _ => Ok(HttpServer {
                    url,
                    kind: *kind,
                    headers,
                    oauth: oauth.as_deref(),
                    ca_cert_file: ca_cert_file.as_deref(),
                }),
            }
        }
    }
}

/// An HTTP client for `server` (its `caCertFile` trusted), and whether it differs from the
/// default one (then the OAuth requests use it too).
fn http_client(server: &HttpServer<'_>) -> Result<(reqwest::Client, bool), String> {
    let mut builder = reqwest::Client::builder()
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(30));
    let custom = server.ca_cert_file.is_some();
    if let Some(path) = server.ca_cert_file {
        builder = builder.tls_certs_merge(crate::server_conn::read_ca_certs(path)?);
    }
    let client = builder
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    Ok((client, custom))
}

/// The `WWW-Authenticate` of the server's first refusal of a request without a token:
/// `Ok(None)` when it answered everything (it needs no login).
async fn probe(http: &reqwest::Client, server: &HttpServer<'_>) -> Result<Option<String>, String> {
    let refusal = |response: &reqwest::Response| -> Option<String> {
        matches!(response.status().as_u16(), 401 | 403).then(|| {
            response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        })
    };
    let with_headers = |mut request: reqwest::RequestBuilder| {
        for (k, v) in server.headers {
            request = request.header(k, v);
        }
        request
    };
    let failure =
        |e: reqwest::Error| format!("cannot reach the server: {}", crate::failure::chain(&e));
    if server.kind == HttpKind::Sse {
        let response = with_headers(http.get(server.url))
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(failure)?;
        return Ok(refusal(&response));
    }
    let post = |body: serde_json::Value, session: Option<&str>| {
        let mut request = with_headers(http.post(server.url))
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .header("MCP-Protocol-Version", "2025-11-25")
            .json(&body);
        if let Some(session) = session {
            request = request.header("Mcp-Session-Id", session);
        }
        request.send()
    };
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")},
        },
    });
    let response = post(initialize, None).await.map_err(failure)?;
    if let Some(challenge) = refusal(&response) {
        return Ok(Some(challenge));
    }
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    drop(response);
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = post(initialized, session.as_deref())
        .await
        .map_err(failure)?;
    if let Some(challenge) = refusal(&response) {
        return Ok(Some(challenge));
    }
    drop(response);
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let response = post(list, session.as_deref()).await.map_err(failure)?;
    Ok(refusal(&response))
}

/// A loopback listener for the authorization server's redirect.
struct Callback {
    listeners: Vec<tokio::net::TcpListener>,
    redirect_uri: String,
}

impl Callback {
    /// Listens on `port` (any free port for `None`) on 127.0.0.1 and, when it can, ::1.
    async fn bind(port: Option<u16>) -> Result<Self, String> {
        let v4 = tokio::net::TcpListener::bind(("127.0.0.1", port.unwrap_or(0)))
            .await
            .map_err(|e| match port {
                Some(p) => format!(
                    "cannot listen on 127.0.0.1:{p} for the login's redirect ({e}); free the port or change oauth.callbackPort"
                ),
                None => format!("cannot listen on 127.0.0.1 for the login's redirect: {e}"),
            })?;
        let port = v4.local_addr().map_err(|e| e.to_string())?.port();
        let mut listeners = vec![v4];
        if let Ok(v6) = tokio::net::TcpListener::bind(("::1", port)).await {
            listeners.push(v6);
        }
        Ok(Callback {
            listeners,
            redirect_uri: format!("http://localhost:{port}/callback"),
        })
    }

    /// The redirected URL of the first request to `/callback` (others are answered 404).
    async fn wait(&self) -> String {
        loop {
            let accepted = {
                let accepts = self.listeners.iter().map(|l| Box::pin(l.accept()));
                futures::future::select_all(accepts).await.0
            };
            let Ok((mut stream, _)) = accepted else {
                continue;
            };
            let mut buf = vec![0_u8; 8192];
            let mut len = 0;
            // The request line and headers; a browser sends them at once.
            let read = tokio::time::timeout(Duration::from_secs(5), async {
                while len < buf.len() {
                    match stream.read(&mut buf[len..]).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            len += n;
                            if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                                break;
                            }
                        }
                    }
                }
            })
            .await;
            if read.is_err() {
                continue;
            }
            let head = String::from_utf8_lossy(&buf[..len]);
            let target = head
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("GET "))
                .and_then(|l| l.split(' ').next())
                .unwrap_or("");
            if !target.starts_with("/callback") {
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
                continue;
            }
            let body = "<!doctype html><title>agent-tools</title><p>agent-tools received the authorization. You can close this tab and return to the terminal.</p>";
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            return format!("http://localhost{target}");
        }
    }
}

/// What the authorization server sent back: the code, or its refusal.
fn callback_of(redirected: &str) -> Result<AuthorizationCallback, String> {
    let url = url::Url::parse(redirected.trim())
        .map_err(|e| format!("the pasted text is not the redirected URL ({e})"))?;
    let pairs: BTreeMap<String, String> = url.query_pairs().into_owned().collect();
    if let Some(error) = pairs.get("error") {
        let description = pairs
            .get("error_description")
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Err(format!(
            "the authorization server refused: {error}{description}"
        ));
    }
    AuthorizationCallback::from_redirect_url(url.as_str()).map_err(|e| e.to_string())
}

/// Runs one authorization: the session, the person, the code exchange. Returns the file to
/// store.
#[allow(clippy::too_many_arguments)]
async fn authorize(
    name: &str,
    server: &HttpServer<'_>,
    http: &reqwest::Client,
    custom_http: bool,
    challenge: Option<&str>,
    extra_scopes: &[String],
    prompt: &dyn LoginPrompt,
    timeout: Duration,
) -> Result<TokenFile, String> {
    let config = server.oauth.cloned().unwrap_or_default();
    let mut manager = AuthorizationManager::new(server.url)
        .await
        .map_err(|e| e.to_string())?;
    if custom_http {
        manager
            .with_client(http.clone())
            .map_err(|e| e.to_string())?;
    }
    let metadata = match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => resolution.metadata,
        Err(AuthError::AuthorizationServerMismatch {
            received_issuer, ..
        }) if same_origin(&received_issuer, server.url) => {
            own_origin_metadata(http, server.url, &received_issuer).await?
        }
        Err(e) => return Err(discovery_problem(&e)),
    };
    manager.set_metadata(metadata.clone());
    let callback = Callback::bind(config.callback_port).await?;
    let scopes = login_scopes(&manager, &config, extra_scopes).await;
    let (request, client_secret) = client_identity(
        &mut manager,
        &metadata,
        &config,
        &scopes,
        &callback.redirect_uri,
    )
    .await?;
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| e.to_string())?;
    let client_id = session
        .get_credentials()
        .await
        .map(|(id, _)| id)
        .map_err(|e| e.to_string())?;
    let authorization_url = session.get_authorization_url();
    check_openable(authorization_url)?;
    prompt.show(authorization_url);
    let redirected = wait_for_redirect(&callback, prompt, timeout).await?;
    let callback = callback_of(&redirected)?;
    let response = session
        .handle_callback_with_issuer(
            &callback.code,
            &callback.csrf_token,
            callback.issuer.as_deref(),
        )
        .await
        .map_err(|e| format!("the token exchange failed: {e}"))?;
    let granted: Vec<String> = match response.scopes() {
        Some(s) => s.iter().map(|s| s.to_string()).collect(),
        None => scopes.clone(),
    };
    let credentials =
        StoredCredentials::new(client_id.clone(), Some(response), granted, Some(now_secs()))
            .with_issuer(metadata.issuer.clone());
    Ok(TokenFile {
        url: server.url.to_owned(),
        servers: vec![name.to_owned()],
        metadata: Some(metadata),
        client: Some(StoredClient {
            client_id,
            client_secret,
            redirect_uri: callback_redirect(&session),
        }),
        credentials: Some(credentials),
        required_scopes: Vec::new(),
    })
}

/// The scopes a login asks for: the configured ones, else what the server named; plus a
/// step-up's `extra_scopes`.
async fn login_scopes(
    manager: &AuthorizationManager,
    config: &OAuthConfig,
    extra_scopes: &[String],
) -> Vec<String> {
    let mut scopes: Vec<String> = if config.scopes.is_empty() {
        manager.select_initial_scopes(&[]).await
    } else {
        config.scopes.clone()
    };
    for scope in extra_scopes {
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
    scopes
}

/// The authorization request with the client's identity: registered in advance, a client
/// ID metadata document when the server takes them, or dynamic registration; and the
/// client secret, when there is one. Without any of the three, the error says how to
/// register agent-tools.
async fn client_identity(
    manager: &mut AuthorizationManager,
    metadata: &AuthorizationMetadata,
    config: &OAuthConfig,
    scopes: &[String],
    redirect_uri: &str,
) -> Result<(AuthorizationRequest, Option<String>), String> {
    let mut request =
        AuthorizationRequest::new(redirect_uri.to_owned()).with_client_name(CLIENT_NAME);
    if scopes.is_empty() {
        request = request.with_initial_scope_selection();
    } else {
        request = request.with_scopes(scopes.to_vec());
    }
    let cimd = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let mut client_secret = config.client_secret.as_ref().map(|s| s.expose().to_owned());
    if let Some(id) = &config.client_id {
        request = request.with_preregistered_client(id.clone());
        if let Some(secret) = &client_secret {
            request = request.with_client_secret(secret.clone());
        }
    } else if let (Some(url), true) = (&config.client_metadata_url, cimd) {
        request = request.with_client_metadata_url(url.clone());
    } else if metadata.registration_endpoint.is_some() {
        let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let registered = manager
            .register_client(CLIENT_NAME, redirect_uri, &refs)
            .await
            .map_err(|e| format!("dynamic client registration failed: {e}"))?;
        client_secret = registered.client_secret.clone();
        request = request.with_preregistered_client(registered.client_id);
        if let Some(secret) = &client_secret {
            request = request.with_client_secret(secret.clone());
        }
    } else {
        return Err(format!(
            "its authorization server ({}) offers no dynamic client registration{}: register agent-tools there (redirect URI {}) and put the client in its entry in .mcp.json: \"oauth\": {{\"clientId\": \"…\", \"callbackPort\": {}}} (and \"clientSecret\" for a confidential client)",
            metadata
                .issuer
                .as_deref()
                .unwrap_or(&metadata.authorization_endpoint),
            if config.client_metadata_url.is_some() {
                " and no client ID metadata documents"
            } else {
                ""
            },
            redirect_uri,
            redirect_uri
                .rsplit(':')
                .next()
                .and_then(|p| p.split('/').next())
                .unwrap_or("PORT"),
        ));
    }
    Ok((request, client_secret))
}

/// The URL the browser was redirected to (at the loopback callback, or pasted by the
/// person), within `timeout`.
async fn wait_for_redirect(
    callback: &Callback,
    prompt: &dyn LoginPrompt,
    timeout: Duration,
) -> Result<String, String> {
    tokio::time::timeout(timeout, async {
        tokio::select! {
            url = callback.wait() => url,
            Some(url) = prompt.pasted_redirect() => url,
        }
    })
    .await
    .map_err(|_| {
        format!(
            "no authorization arrived within {}s (finish the login in the browser, or use --no-browser and paste the URL the browser ends on)",
            timeout.as_secs()
        )
    })
}

fn callback_redirect(session: &AuthorizationSession) -> String {
    session.redirect_uri.clone()
}

/// The authorization URL goes to a browser, and comes from metadata the server chose: only
/// `https` (or `http` to this machine) is opened, never a `file:`, `javascript:` or other
/// URL a browser launcher would hand to another program.
fn check_openable(url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url)
        .map_err(|e| format!("the authorization server's authorization URL is not a URL: {e}"))?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(host)) => host.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match parsed.scheme() {
        "https" if parsed.host().is_some() => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(format!(
            "the authorization server's authorization URL must be https (or http to this machine), not {}: {url}",
            parsed.scheme()
        )),
    }
}

/// Whether two URLs share scheme, host and port.
fn same_origin(a: &str, b: &str) -> bool {
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

/// The authorization server metadata a 2025-03-26 server publishes at its own origin's
/// root, whose issuer names a path on that same origin (`http://host/oauth` at
/// `http://host/.well-known/oauth-authorization-server`). RFC 8414 would refuse the
/// mismatch, which guards against another authorization server's metadata; an issuer on the
/// MCP server's own origin is no other party, so it is taken.
async fn own_origin_metadata(
    http: &reqwest::Client,
    url: &str,
    issuer: &str,
) -> Result<rmcp::transport::auth::AuthorizationMetadata, String> {
    let mut address = url::Url::parse(url).map_err(|e| e.to_string())?;
    address.set_path("/.well-known/oauth-authorization-server");
    address.set_query(None);
    let metadata: rmcp::transport::auth::AuthorizationMetadata = http
        .get(address.clone())
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| format!("OAuth discovery failed: {address}: {e}"))?
        .json()
        .await
        .map_err(|e| format!("OAuth discovery failed: {address} is no metadata document: {e}"))?;
    let endpoints_here = [
        Some(metadata.authorization_endpoint.as_str()),
        Some(metadata.token_endpoint.as_str()),
        metadata.registration_endpoint.as_deref(),
    ]
    .into_iter()
    .flatten()
    .all(|endpoint| same_origin(endpoint, url));
    if metadata.issuer.as_deref() != Some(issuer) || !endpoints_here {
        return Err(format!(
            "OAuth discovery failed: the metadata at {address} names issuer {issuer} and endpoints off the server's origin"
        ));
    }
    Ok(metadata)
}

/// A discovery failure as the person reads it.
fn discovery_problem(error: &AuthError) -> String {
    match error {
        AuthError::ProtectedResourceMetadataInvalid { url, reason } => format!(
            "the protected resource metadata at {url} does not describe this server ({reason}); agent-tools does not send a login for one server to another"
        ),
        other => format!("OAuth discovery failed: {other}"),
    }
}

/// Logs in to `server` (an HTTP server of `.mcp.json`): asks the server where to
/// authorize, has the person authorize through `prompt`, stores the tokens under
/// `state_dir` and checks them by listing the server's tools. `root` and `working_dirs`
/// are the project's (for the check's connection).
pub async fn login(
    server: &ServerConfig,
    state_dir: &Path,
    root: &Path,
    prompt: &dyn LoginPrompt,
    timeout: Duration,
) -> Result<LoginOutcome, ToolError> {
    let http_config = http_server(server)?;
    let name = server.name.as_str();
    let url = http_config.url;
    let fail = |what: String| login_error(name, url, what);
    let (http, custom) = http_client(&http_config).map_err(fail)?;
    let store = TokenStore::new(state_dir, url);
    let previous = store.load().map_err(fail)?.unwrap_or_default();
    // Scopes asked for before (step-ups included) are asked for again.
    let mut extra: Vec<String> = previous.required_scopes.clone();
    if let Some(creds) = &previous.credentials {
        for scope in &creds.granted_scopes {
            if !extra.contains(scope) {
                extra.push(scope.clone());
            }
        }
    }
    let challenge = probe(&http, &http_config).await.map_err(fail)?;
    if challenge.is_none() && http_config.oauth.is_none() {
        return Err(ToolError::respond(format!(
            "MCP server \"{name}\" ({url}) answered without asking for a token: it needs no login"
        )));
    }
    let mut attempts = 0;
    loop {
        attempts += 1;
        let mut file = authorize(
            name,
            &http_config,
            &http,
            custom,
            challenge.as_deref(),
            &extra,
            prompt,
            timeout,
        )
        .await
        .map_err(fail)?;
        for other in previous.servers.iter().filter(|s| s.as_str() != name) {
            file.servers.push(other.clone());
        }
        store.save(&file).map_err(fail)?;
        let checked = check(server, state_dir, root).await;
        let after = store.load().map_err(fail)?.unwrap_or_default();
        match checked {
            Ok(tools) => {
                return Ok(LoginOutcome {
                    scopes: after
                        .credentials
                        .as_ref()
                        .map(|c| c.granted_scopes.clone())
                        .unwrap_or_default(),
                    expires_in: expires_at(&after).map(|at| at.saturating_sub(now_secs())),
                    refreshable: refreshable(&after),
                    tools,
                    token_file: store.path().to_path_buf(),
                });
            }
            Err(why) => {
                let granted = after
                    .credentials
                    .as_ref()
                    .map(|c| c.granted_scopes.clone())
                    .unwrap_or_default();
                let missing: Vec<String> = after
                    .required_scopes
                    .iter()
                    .filter(|s| !granted.contains(s))
                    .cloned()
                    .collect();
                if missing.is_empty() || attempts >= MAX_AUTHORIZATIONS {
                    return Err(fail(format!(
                        "the authorization worked, but the server refused the new token: {why}"
                    )));
                }
                // Step-up: the server wants more scopes than were granted.
                for scope in missing {
                    if !extra.contains(&scope) {
                        extra.push(scope);
                    }
                }
            }
        }
    }
}

/// Connects to `server` with the stored tokens and lists its tools.
async fn check(server: &ServerConfig, state_dir: &Path, root: &Path) -> Result<usize, String> {
    let shared = Arc::new(crate::server_conn::ManagerState::new(root, state_dir, &[]));
    let conn = crate::server_conn::ServerConn::new(server.clone(), shared);
    let outcome = conn.peer().await.map(|_| conn.listed_tools().len());
    conn.disconnect().await;
    outcome
}

/// What `logout` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogoutOutcome {
    /// Whether there were tokens to forget
    pub removed: bool,
    /// What the authorization server said to the revocation, when it offers one
    pub revoked: Option<Result<(), String>>,
}

/// Forgets the tokens of `server`'s URL, and asks its authorization server to revoke them
/// when it offers revocation (RFC 7009).
pub async fn logout(server: &ServerConfig, state_dir: &Path) -> Result<LogoutOutcome, ToolError> {
    let http_config = http_server(server)?;
    let url = http_config.url;
    let store = TokenStore::new(state_dir, url);
    let fail = |what: String| login_error(&server.name, url, what);
    let Some(file) = store.load().map_err(fail)? else {
        return Ok(LogoutOutcome {
            removed: false,
            revoked: None,
        });
    };
    let revoked = match http_client(&http_config) {
        Ok((http, _)) => revoke(&http, &file).await,
        Err(e) => Some(Err(e)),
    };
    let removed = store.remove().map_err(fail)?;
    Ok(LogoutOutcome { removed, revoked })
}

/// Revokes the refresh token (else the access token) at the revocation endpoint.
async fn revoke(http: &reqwest::Client, file: &TokenFile) -> Option<Result<(), String>> {
    let endpoint = file
        .metadata
        .as_ref()?
        .additional_fields
        .get("revocation_endpoint")?
        .as_str()?
        .to_owned();
    let client = file.client.as_ref()?;
    let token = file.credentials.as_ref()?.token_response.as_ref()?;
    let (value, hint) = match token.refresh_token() {
        Some(refresh) => (refresh.secret().clone(), "refresh_token"),
        None => (token.access_token().secret().clone(), "access_token"),
    };
    let body = {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("token", &value);
        form.append_pair("token_type_hint", hint);
        if client.client_secret.is_none() {
            form.append_pair("client_id", &client.client_id);
        }
        form.finish()
    };
    let mut request = http.post(&endpoint).header(
        reqwest::header::CONTENT_TYPE,
        "application/x-www-form-urlencoded",
    );
    if let Some(secret) = &client.client_secret {
        request = request.basic_auth(&client.client_id, Some(secret));
    }
    let outcome = match request.body(body).send().await {
        Ok(response) if response.status().is_success() => Ok(()),
        Ok(response) => Err(format!("{endpoint} answered HTTP {}", response.status())),
        Err(e) => Err(format!("{endpoint}: {}", crate::failure::chain(&e))),
    };
    Some(outcome)
}

/// How a server authenticates, for `mcp status` and `doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthStatus {
    /// `none`, `bearer token`, `oauth`, `oauth client credentials` or `oauth enterprise`
    pub kind: String,
    /// The state of the tokens (never the tokens): logged in, expiry, refreshable
    pub detail: String,
    /// Whether a person must log in before the server can be used
    pub needs_login: bool,
}

/// The authentication of `server`, from its configuration and the stored tokens.
pub fn auth_status(server: &ServerConfig, state_dir: &Path) -> AuthStatus {
    let status = |kind: &str, detail: String, needs_login: bool| AuthStatus {
        kind: kind.to_owned(),
        detail,
        needs_login,
    };
    let Transport::Http {
        url,
        oauth,
        bearer_token,
        ..
    } = &server.transport
    else {
        return status("none", "a local process".to_owned(), false);
    };
    if bearer_token.is_some() {
        return status(
            "bearer token",
            "from the environment (bearerTokenEnvVar)".to_owned(),
            false,
        );
    }
    match oauth.as_ref().map(|o| &o.grant) {
        Some(Grant::ClientCredentials { .. }) => {
            return status(
                "oauth client credentials",
                "each session obtains its own token".to_owned(),
                false,
            );
        }
        Some(Grant::Enterprise(_)) => {
            return status(
                "oauth enterprise",
                "each session exchanges the identity provider's ID token".to_owned(),
                false,
            );
        }
        _ => {}
    }
    let store = TokenStore::new(state_dir, url);
    let login = format!("run: agent-tools mcp login {}", server.name);
    match store.load() {
        Err(e) => status("oauth", e, true),
        Ok(None) if oauth.is_none() => status(
            "none",
            format!("no token stored (if the server asks for one: {login})"),
            false,
        ),
        Ok(file) => {
            let file = file.unwrap_or_default();
            if file
                .credentials
                .as_ref()
                .and_then(|c| c.token_response.as_ref())
                .is_none()
            {
                return status("oauth", format!("not logged in; {login}"), true);
            }
            let refresh = refreshable(&file);
            let expiry = match expires_at(&file) {
                Some(at) if at > now_secs() => {
                    format!("token expires in {}", human(at - now_secs()))
                }
                Some(_) if refresh => "token expired; it is refreshed on the next use".to_owned(),
                Some(_) => format!("token expired and cannot be refreshed; {login}"),
                None => "token without an expiry".to_owned(),
            };
            let mut detail = format!(
                "logged in; {expiry}{}",
                if refresh { " (refreshable)" } else { "" }
            );
            if !file.required_scopes.is_empty() {
                detail.push_str(&format!(
                    "; the server asked for scope \"{}\" the token lacks: {login}",
                    file.required_scopes.join(" ")
                ));
            }
            let expired_for_good = expires_at(&file).is_some_and(|at| at <= now_secs()) && !refresh;
            status("oauth", detail, expired_for_good)
        }
    }
}

/// A duration for people: "42 s", "12 min", "3 h", "2 days".
fn human(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs} s"),
        120..7200 => format!("{} min", secs / 60),
        7200..172_800 => format!("{} h", secs / 3600),
        _ => format!("{} days", secs / 86_400),
    }
}

/// Opens `url` in the person's browser: the program `$BROWSER` names (its words, with `%s`
/// replaced by the URL or the URL added at the end, as `gh` and Python's `webbrowser` do),
/// else `xdg-open` (or `open` on macOS). Returns the program that was started, or why none
/// could be.
pub fn open_browser(url: &str) -> Result<String, String> {
    let mut candidates: Vec<Vec<String>> = Vec::new();
    if let Ok(browser) = std::env::var("BROWSER") {
        for entry in browser.split(':').filter(|e| !e.trim().is_empty()) {
            let words: Vec<String> = entry.split_whitespace().map(str::to_owned).collect();
            let words = if words.iter().any(|w| w.contains("%s")) {
                words.iter().map(|w| w.replace("%s", url)).collect()
            } else {
                let mut w = words;
                w.push(url.to_owned());
                w
            };
            candidates.push(words);
        }
    }
    let system = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    candidates.push(vec![system.to_owned(), url.to_owned()]);
    let mut tried = Vec::new();
    for words in candidates {
        let Some((program, args)) = words.split_first() else {
            continue;
        };
        let spawned = std::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        match spawned {
            Ok(mut child) => {
                // Reaped in the background: a browser launcher returns at once, a
                // headless fetcher when it is done.
                std::thread::spawn(move || {
                    let _ = child.wait();
                });
                return Ok(program.clone());
            }
            Err(e) => tried.push(format!("{program}: {e}")),
        }
    }
    Err(tried.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_gives_the_code_or_the_refusal() {
        let ok = callback_of("http://localhost:1/callback?code=abc&state=xyz&iss=https%3A%2F%2Fas")
            .unwrap();
        assert_eq!(ok.code, "abc");
        assert_eq!(ok.csrf_token, "xyz");
        assert_eq!(ok.issuer.as_deref(), Some("https://as"));
        let check_err = |url: &str, expected: &str| {
            let err = callback_of(url).err().unwrap_or_default();
            assert!(err.contains(expected), "{url}: {err}");
        };
        check_err(
            "http://localhost:1/callback?error=access_denied&error_description=no+way&state=x",
            "refused: access_denied: no way",
        );
        check_err("http://localhost:1/callback?state=x", "missing code");
        check_err("not a url", "not the redirected URL");
    }

    #[test]
    fn only_web_addresses_go_to_the_browser() {
        for ok in [
            "https://auth.example.com/authorize?x=1",
            "http://127.0.0.1:8080/authorize",
            "http://localhost/authorize",
            "http://[::1]:1/a",
        ] {
            assert!(check_openable(ok).is_ok(), "{ok}");
        }
        for bad in [
            "file:///home/me/Downloads/evil.desktop",
            "javascript:alert(1)",
            "data:text/html,<script>x</script>",
            "http://auth.example.com/authorize",
            "ftp://auth.example.com/a",
            "vscode://extension/x",
            "not a url",
        ] {
            assert!(check_openable(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human(5), "5 s");
        assert_eq!(human(3599), "59 min");
        assert_eq!(human(3 * 3600), "3 h");
        assert_eq!(human(5 * 86_400), "5 days");
    }

    #[tokio::test]
    async fn the_callback_listener_takes_the_callback_and_ignores_the_rest() {
        let callback = Callback::bind(None).await.unwrap();
        let port: u16 = callback
            .redirect_uri
            .trim_start_matches("http://localhost:")
            .trim_end_matches("/callback")
            .parse()
            .unwrap();
        let client = tokio::spawn(async move {
            let get = |path: &'static str| async move {
                let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap();
                s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
                    .await
                    .unwrap();
                let mut out = String::new();
                s.read_to_string(&mut out).await.unwrap();
                out
            };
            let missing = get("/favicon.ico").await;
            let done = get("/callback?code=c&state=s").await;
            (missing, done)
        });
        let url = callback.wait().await;
        assert_eq!(url, "http://localhost/callback?code=c&state=s");
        let (missing, done) = client.await.unwrap();
        assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
        assert!(done.starts_with("HTTP/1.1 200"), "{done}");
    }
}
