//! OAuth for HTTP servers, the session's side: each request carries the server's access
//! token ([`AuthedHttp`], rmcp's HTTP client with a token source), an expired token is
//! refreshed before it is sent, and a token the server rejects is refreshed once and the
//! request sent again. A person's tokens come from `agent-tools mcp login` (`login.rs`) and
//! live in the state directory (`oauth_store.rs`); a machine client (`"grant":
//! "client_credentials"` or `"enterprise"`) obtains its own in each session and keeps them
//! in memory.
//!
//! When no token can be had, the request goes out without one and the server's 401 ends
//! it: the error says `run: agent-tools mcp login NAME`. A `403 insufficient_scope`
//! records the scopes the server asked for, so that the next login asks for them too.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::stream::BoxStream;
use oauth2::TokenResponse;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, ClientCredentialsConfig, JwtSigningAlgorithm,
    OAuthClientConfig, WWWAuthenticateParams,
};
use rmcp::transport::streamable_http_client::SseError;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use crate::config::{Grant, OAuthConfig};
use crate::oauth_store::{FileCredentials, TokenFile, TokenStore};

/// A token this close to its expiry is refreshed before it is sent.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// When the stored access token expires (Unix seconds), if the server said.
pub(crate) fn expires_at(file: &TokenFile) -> Option<u64> {
    let creds = file.credentials.as_ref()?;
    let token = creds.token_response.as_ref()?;
    Some(creds.token_received_at? + token.expires_in()?.as_secs())
}

/// The stored access token, and whether it is still good for [`REFRESH_MARGIN`].
fn stored_token(file: &TokenFile) -> Option<(String, bool)> {
    let token = file.credentials.as_ref()?.token_response.as_ref()?;
    let fresh = match expires_at(file) {
        Some(at) => {
            let lifetime = token.expires_in().map_or(0, |d| d.as_secs());
            let margin = REFRESH_MARGIN.as_secs().min(lifetime / 2).max(1);
            now_secs() + margin < at
        }
        None => true,
    };
    Some((token.access_token().secret().clone(), fresh))
}

/// Whether the stored tokens include a refresh token.
pub(crate) fn refreshable(file: &TokenFile) -> bool {
    file.credentials
        .as_ref()
        .and_then(|c| c.token_response.as_ref())
        .is_some_and(|t| t.refresh_token().is_some())
}

/// An authorization manager for `url`: metadata from `file`, the client it logged in with,
/// tokens in `store`. Used to refresh.
async fn manager_for(
    url: &str,
    store: &TokenStore,
    file: &TokenFile,
    http: Option<&reqwest::Client>,
) -> Result<AuthorizationManager, AuthError> {
    let mut manager = AuthorizationManager::new(url).await?;
    if let Some(http) = http {
        manager.with_client(http.clone())?;
    }
    manager.set_credential_store(FileCredentials(store.clone()));
    let metadata = file
        .metadata
        .clone()
        .ok_or(AuthError::AuthorizationRequired)?;
    manager.set_metadata(metadata);
    let client = file
        .client
        .clone()
        .ok_or(AuthError::AuthorizationRequired)?;
    let mut config = OAuthClientConfig::new(client.client_id, client.redirect_uri);
    if let Some(secret) = client.client_secret {
        config = config.with_client_secret(secret);
    }
    manager.configure_client(config)?;
    Ok(manager)
}

/// A machine client's token, kept in memory.
#[derive(Default)]
struct Machine {
    token: Option<(String, Option<Instant>)>,
    /// Scopes a `403 insufficient_scope` asked for beyond the configured ones
    extra_scopes: Vec<String>,
}

/// Where one server's requests get their token.
pub(crate) struct Tokens {
    server: String,
    url: String,
    grant: Grant,
    config: OAuthConfig,
    store: TokenStore,
    /// The HTTP client for the OAuth requests, when the server needs a `caCertFile`
    http: Option<reqwest::Client>,
    machine: tokio::sync::Mutex<Machine>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("server", &self.server)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// Why a token could not be had, as the message of an [`AuthError`].
fn failed(what: &str, e: impl std::fmt::Display) -> AuthError {
    AuthError::OAuthError(format!("{what}: {e}"))
}

impl Tokens {
    pub(crate) fn new(
        server: &str,
        url: &str,
        config: Option<&OAuthConfig>,
        store: TokenStore,
        http: Option<reqwest::Client>,
    ) -> Self {
        let config = config.cloned().unwrap_or_default();
        Tokens {
            server: server.to_owned(),
            url: url.to_owned(),
            grant: config.grant.clone(),
            config,
            store,
            http,
            machine: tokio::sync::Mutex::new(Machine::default()),
        }
    }

    /// Whether a person logs in for this server (rather than the session getting tokens).
    pub(crate) fn needs_login(&self) -> bool {
        matches!(self.grant, Grant::AuthorizationCode)
    }

    /// The token to send, refreshed first when it is about to expire; `None` when there is
    /// none (the server's 401 then asks for a login).
    pub(crate) async fn bearer(&self) -> Result<Option<String>, AuthError> {
        if !self.needs_login() {
            return self.machine_token(false).await.map(Some);
        }
        let file = self.store.load().map_err(AuthError::CredentialStoreError)?;
        match file.as_ref().and_then(stored_token) {
            None => Ok(None),
            Some((token, true)) => Ok(Some(token)),
            Some((stale, false)) => self.refresh(&stale).await,
        }
    }

    /// The server rejected `sent` (401): a newer stored token (a login since), or a refresh.
    pub(crate) async fn rejected(&self, sent: &str) -> Result<Option<String>, AuthError> {
        if !self.needs_login() {
            self.machine.lock().await.token = None;
            return self.machine_token(true).await.map(Some);
        }
        self.refresh(sent).await
    }

    /// Refreshes the stored tokens unless another process already replaced `stale`; `None`
    /// when they cannot be refreshed (no refresh token, or it was refused).
    async fn refresh(&self, stale: &str) -> Result<Option<String>, AuthError> {
        let store = self.store.clone();
        let lock = tokio::task::spawn_blocking(move || store.lock())
            .await
            .map_err(|e| failed("the refresh lock", e))?
            .map_err(AuthError::CredentialStoreError)?;
        let file = self
            .store
            .load()
            .map_err(AuthError::CredentialStoreError)?
            .unwrap_or_default();
        if let Some((token, fresh)) = stored_token(&file)
            && (fresh && token != stale)
        {
            return Ok(Some(token));
        }
        if !refreshable(&file) {
            return Ok(None);
        }
        let manager = manager_for(&self.url, &self.store, &file, self.http.as_ref()).await?;
        let outcome = manager.refresh_token().await;
        drop(lock);
        match outcome {
            Ok(response) => Ok(Some(response.access_token().secret().clone())),
            Err(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Notes the scopes a `403 insufficient_scope` challenge names: the next login (or a
    /// machine client's next token) asks for them too.
    pub(crate) async fn insufficient(&self, challenge: &str) {
        let base = url::Url::parse(&self.url).ok();
        let Some(base) = base else { return };
        let params = WWWAuthenticateParams::parse(challenge, &base);
        let scopes: Vec<String> = params
            .scope
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        if scopes.is_empty() {
            return;
        }
        if self.needs_login() {
            let _ = self.store.update(|f| {
                for scope in scopes {
                    if !f.required_scopes.contains(&scope) {
                        f.required_scopes.push(scope);
                    }
                }
            });
        } else {
            let mut machine = self.machine.lock().await;
            for scope in scopes {
                if !machine.extra_scopes.contains(&scope) && !self.config.scopes.contains(&scope) {
                    machine.extra_scopes.push(scope);
                }
            }
            machine.token = None;
        }
    }

    /// A machine client's token: the one in memory while it is good, else a new one.
    async fn machine_token(&self, renew: bool) -> Result<String, AuthError> {
        let mut machine = self.machine.lock().await;
        if !renew
            && let Some((token, until)) = &machine.token
            && until.is_none_or(|u| Instant::now() + REFRESH_MARGIN < u)
        {
            return Ok(token.clone());
        }
        let mut scopes = self.config.scopes.clone();
        scopes.extend(machine.extra_scopes.iter().cloned());
        let (token, lifetime) = match &self.grant {
            Grant::Enterprise(idp) => self.enterprise_token(idp, &scopes).await?,
            _ => self.client_credentials_token(&scopes).await?,
        };
        machine.token = Some((token.clone(), lifetime.map(|l| Instant::now() + l)));
        Ok(token)
    }

    /// An authorization manager for this server with its authorization server's metadata
    /// (and that metadata).
    async fn discovered(
        &self,
    ) -> Result<
        (
            AuthorizationManager,
            rmcp::transport::auth::AuthorizationMetadata,
        ),
        AuthError,
    > {
        let mut manager = AuthorizationManager::new(self.url.as_str()).await?;
        if let Some(http) = &self.http {
            manager.with_client(http.clone())?;
        }
        let resolution = manager.resolve_metadata().await?;
        manager.set_metadata(resolution.metadata.clone());
        Ok((manager, resolution.metadata))
    }

    async fn client_credentials_token(
        &self,
        scopes: &[String],
    ) -> Result<(String, Option<Duration>), AuthError> {
        let client_id = self.config.client_id.clone().unwrap_or_default();
        let config = match &self.grant {
            Grant::ClientCredentials {
                private_key: Some(path),
                algorithm,
            } => {
                let pem = tokio::fs::read(path)
                    .await
                    .map_err(|e| failed(&format!("oauth.privateKeyFile {}", path.display()), e))?;
                ClientCredentialsConfig::PrivateKeyJwt {
                    client_id,
                    signing_key: pem,
                    signing_algorithm: signing_algorithm(algorithm),
                    token_endpoint_audience: None,
                    scopes: scopes.to_vec(),
                    resource: Some(self.url.clone()),
                }
            }
            _ => ClientCredentialsConfig::ClientSecret {
                client_id,
                client_secret: self
                    .config
                    .client_secret
                    .as_ref()
                    .map(|s| s.expose().to_owned())
                    .unwrap_or_default(),
                scopes: scopes.to_vec(),
                resource: Some(self.url.clone()),
            },
        };
        let (mut manager, _) = self.discovered().await?;
        manager.validate_client_credentials_metadata(&config)?;
        manager.configure_client_credentials(&config)?;
        // rmcp's exchange holds a form serializer across an await, so its future cannot
        // move between threads: it runs to completion on a blocking thread of its own.
        let runtime = tokio::runtime::Handle::current();
        let response = tokio::task::spawn_blocking(move || {
            runtime.block_on(async move { manager.exchange_client_credentials(&config).await })
        })
        .await
        .map_err(|e| failed("the client credentials exchange", e))??;
        Ok((
            response.access_token().secret().clone(),
            response.expires_in(),
        ))
    }

    async fn enterprise_token(
        &self,
        idp: &crate::config::EnterpriseConfig,
        scopes: &[String],
    ) -> Result<(String, Option<Duration>), AuthError> {
        use rmcp::transport::auth::default_oauth_http_client;
        use rmcp::transport::auth::enterprise::{
            EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
        };
        let (_, metadata) = self.discovered().await?;
        let issuer = metadata.issuer.clone().ok_or_else(|| {
            failed(
                "enterprise authorization",
                "the authorization server's metadata names no issuer",
            )
        })?;
        let auth = |secret: Option<&crate::config::Secret>| match secret {
            Some(s) => EmaClientAuthentication::ClientSecretBasic(oauth2::ClientSecret::new(
                s.expose().to_owned(),
            )),
            None => EmaClientAuthentication::None,
        };
        let identity = EmaAuthorizationServer::new(
            idp.issuer.clone(),
            idp.token_endpoint.clone(),
            idp.client_id.clone(),
        )
        .with_client_authentication(auth(idp.client_secret.as_ref()));
        let resource_server = EmaAuthorizationServer::new(
            issuer,
            metadata.token_endpoint.clone(),
            self.config.client_id.clone().unwrap_or_default(),
        )
        .with_client_authentication(auth(self.config.client_secret.as_ref()));
        let http = default_oauth_http_client()?;
        let token = EmaExchangeRequest::new_with_id_token(
            identity,
            resource_server,
            &self.url,
            idp.id_token.expose(),
        )
        .with_scopes(scopes.iter().cloned())
        .exchange(&http, &http)
        .await
        .map_err(|e| failed("enterprise authorization", e))?;
        Ok((token.access_token.secret().clone(), token.expires_in))
    }
}

fn signing_algorithm(name: &str) -> JwtSigningAlgorithm {
    match name {
        "RS256" => JwtSigningAlgorithm::RS256,
        "RS384" => JwtSigningAlgorithm::RS384,
        "RS512" => JwtSigningAlgorithm::RS512,
        "ES384" => JwtSigningAlgorithm::ES384,
        _ => JwtSigningAlgorithm::ES256,
    }
}

/// rmcp's streamable HTTP client over reqwest, with each request's bearer token from
/// [`Tokens`] (when the server has no fixed token): refreshed before it expires, refreshed
/// once more when the server rejects it, and the scopes of a `403 insufficient_scope`
/// noted.
///
/// It also says when the session's own `GET` stream has been opened (or refused): the
/// connection waits for that before its first request, so a server that answers a request
/// on the `GET` stream finds it open, in order, every time.
#[derive(Clone)]
pub(crate) struct AuthedHttp {
    pub(crate) inner: reqwest::Client,
    pub(crate) tokens: Option<Arc<Tokens>>,
    pub(crate) stream_opened: Arc<tokio::sync::watch::Sender<bool>>,
}

type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

impl AuthedHttp {
    async fn with_token<T, F, Fut>(&self, given: Option<String>, call: F) -> HttpResult<T>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = HttpResult<T>>,
    {
        let Some(tokens) = &self.tokens else {
            return call(given).await;
        };
        let token = match given {
            Some(token) => Some(token),
            None => tokens.bearer().await?,
        };
        match call(token.clone()).await {
            Err(StreamableHttpError::AuthRequired(challenge)) => {
                let Some(sent) = token else {
                    return Err(StreamableHttpError::AuthRequired(challenge));
                };
                match tokens.rejected(&sent).await? {
                    Some(fresh) if fresh != sent => call(Some(fresh)).await,
                    _ => Err(StreamableHttpError::AuthRequired(challenge)),
                }
            }
            Err(StreamableHttpError::InsufficientScope(e)) => {
                tokens.insufficient(&e.www_authenticate_header).await;
                Err(StreamableHttpError::InsufficientScope(e))
            }
            other => other,
        }
    }
}

impl StreamableHttpClient for AuthedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let initialize = matches!(
            &message,
            ClientJsonRpcMessage::Request(r)
                if matches!(r.request, rmcp::model::ClientRequest::InitializeRequest(_))
        );
        let response = self
            .with_token(auth_header, |token| {
                self.inner.post_message_with_response_limits(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    token,
                    custom_headers.clone(),
                    limits,
                )
            })
            .await;
        // Without a session there is no GET stream to wait for.
        if initialize
            && matches!(
                &response,
                Ok(StreamableHttpPostResponse::Json(_, None)
                    | StreamableHttpPostResponse::Sse(_, None))
            )
        {
            self.stream_opened.send_replace(true);
        }
        response
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        self.with_token(auth_header, |token| {
            self.inner.delete_session(
                uri.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let standalone = session_id.is_some() && last_event_id.is_none();
        let opened = self
            .with_token(auth_header, |token| {
                self.inner.get_stream_with_max_sse_event_size(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    token,
                    custom_headers.clone(),
                    max_sse_event_size,
                )
            })
            .await;
        if standalone {
            self.stream_opened.send_replace(true);
        }
        opened
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::transport::auth::{OAuthTokenResponse, StoredCredentials};

    fn file_with(expires_in: Option<u64>, received: u64, refresh: bool) -> TokenFile {
        let mut json = serde_json::json!({"access_token": "at", "token_type": "bearer"});
        if let Some(e) = expires_in {
            json["expires_in"] = e.into();
        }
        if refresh {
            json["refresh_token"] = "rt".into();
        }
        let response: OAuthTokenResponse = serde_json::from_value(json).unwrap();
        TokenFile {
            credentials: Some(StoredCredentials::new(
                "client".into(),
                Some(response),
                Vec::new(),
                Some(received),
            )),
            ..TokenFile::default()
        }
    }

    #[test]
    fn a_token_is_refreshed_shortly_before_it_expires() {
        let now = now_secs();
        let check = |expires_in: Option<u64>, age: u64, fresh: bool| {
            let file = file_with(expires_in, now - age, false);
            assert_eq!(
                stored_token(&file),
                Some(("at".to_owned(), fresh)),
                "{expires_in:?} {age}"
            );
        };
        check(Some(3600), 0, true);
        check(Some(3600), 3500, true);
        check(Some(3600), 3541, false);
        check(Some(3600), 7200, false);
        // A short-lived token is refreshed in the second half of its life.
        check(Some(10), 4, true);
        check(Some(10), 6, false);
        // Without an expiry the token is used until the server refuses it.
        check(None, 1_000_000, true);
        assert_eq!(stored_token(&TokenFile::default()), None);
        assert!(refreshable(&file_with(Some(1), now, true)));
        assert!(!refreshable(&file_with(Some(1), now, false)));
        assert_eq!(expires_at(&file_with(Some(60), 100, false)), Some(160));
    }
}
