//! `.mcp.json`: the MCP servers of a project, in the format Claude Code and other clients use
//! (`{"mcpServers": {name: {command, args, env} | {type: "http", url, headers}}}`). Its
//! servers start only once a person approved them ([`load_project_config`]).
//!
//! Strings may use `${VAR}` and `${VAR:-default}`; an HTTP server's bearer token comes from
//! the environment variable named by `bearerTokenEnvVar` (never from the file itself).
//!
//! An `https` server is checked against the system's trusted certificate authorities (on
//! Linux the system store, which `SSL_CERT_FILE` and `SSL_CERT_DIR` replace for the whole
//! process). One whose certificate a private CA signed names that CA in `caCertFile`: a PEM
//! file (one or more certificates; a relative path starts at the project root) trusted in
//! addition to the system ones, for that server only.
//!
//! A mistake in one server's entry (an unset `${VAR}`, an unknown `type`, a missing
//! `command`) skips that server only: it comes back as a [`SkippedServer`] naming the server
//! and the problem, and the other servers start.
//!
//! `"type": "sse"` is the legacy HTTP+SSE transport of protocol 2024-11-05 (a `GET` stream
//! that names the address to `POST` to); `"type": "http"` is streamable HTTP. Either may
//! carry `"oauth"`: how agent-tools identifies itself to the server's authorization server
//! ([`OAuthConfig`]; without it, a server that answers 401 is logged in to with dynamic
//! client registration).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tool_core::{MCP_JSON, McpApproval, SettingsLayer, ToolContext, ToolError, TrustStore};

/// How long a server may take to start and list its tools (the reference's `MCP_TIMEOUT`).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one `tools/call` may take before it is cancelled (`MCP_TOOL_TIMEOUT`).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// The largest message a server may send, in bytes (`MCP_MAX_MESSAGE_BYTES`, or a server's
/// `maxMessageBytes`): 64 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC over stdin/stdout
    Stdio {
        /// The program
        command: String,
        /// Its arguments
        args: Vec<String>,
        /// Environment added to the minimal inherited one
        env: BTreeMap<String, String>,
        /// Working directory (default: the project root)
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP, or the legacy HTTP+SSE transport
    Http {
        /// The endpoint, such as `http://127.0.0.1:3000/mcp` (for SSE, the `GET` stream's
        /// address, such as `http://127.0.0.1:3000/sse`)
        url: String,
        /// Which of the two HTTP transports
        kind: HttpKind,
        /// Extra headers
        headers: BTreeMap<String, String>,
        /// The bearer token, read from the environment variable the config names
        bearer_token: Option<Secret>,
        /// `caCertFile`: PEM certificates of extra authorities trusted for this server
        ca_cert_file: Option<PathBuf>,
        /// `oauth`: the client's identity at the server's authorization server
        oauth: Option<Box<OAuthConfig>>,
    },
}

/// Which HTTP transport a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpKind {
    /// Streamable HTTP (protocol 2025-03-26 and later): `"type": "http"`
    Streamable,
    /// HTTP+SSE (protocol 2024-11-05): `"type": "sse"`
    Sse,
}

impl HttpKind {
    /// How `.mcp.json` names it.
    pub fn name(self) -> &'static str {
        match self {
            HttpKind::Streamable => "http",
            HttpKind::Sse => "sse",
        }
    }
}

/// A value that must never be printed (a secret from the environment or `.mcp.json`):
/// its `Debug` form is `Secret(..)`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// How agent-tools obtains tokens for an HTTP server that requires OAuth (`"oauth"` in its
/// `.mcp.json` entry; every field optional).
///
/// The client identity follows the MCP authorization specification's order of preference:
/// a client registered with the authorization server in advance (`clientId`, and
/// `clientSecret` for a confidential client), a client ID metadata document
/// (`clientMetadataUrl`, an `https` URL where the document is published) when the
/// authorization server supports them, then dynamic client registration (RFC 7591).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OAuthConfig {
    /// `clientId`: a client registered in advance
    pub client_id: Option<String>,
    /// `clientSecret`: its secret (usually `${VAR}`)
    pub client_secret: Option<Secret>,
    /// `scopes`: what to ask for, instead of what the server's challenge or metadata names
    pub scopes: Vec<String>,
    /// `callbackPort`: the loopback port the authorization server redirects to (a client
    /// registered in advance often names one); default: any free port
    pub callback_port: Option<u16>,
    /// `clientMetadataUrl`: the `https` URL of this client's metadata document
    pub client_metadata_url: Option<String>,
    /// `grant`: how tokens are obtained
    pub grant: Grant,
}

/// How tokens are obtained.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Grant {
    /// `"authorization_code"` (the default): a person logs in with `agent-tools mcp login`;
    /// the session refreshes the tokens it was given
    #[default]
    AuthorizationCode,
    /// `"client_credentials"`: a machine client with no person; each session obtains its
    /// own tokens with `clientId` and `clientSecret`, or a signed assertion
    ClientCredentials {
        /// `privateKeyFile`: a PEM private key for `private_key_jwt` client authentication
        /// (instead of `clientSecret`)
        private_key: Option<PathBuf>,
        /// `signingAlgorithm`: RS256, RS384, RS512, ES256 (the default) or ES384
        algorithm: String,
    },
    /// `"enterprise"`: enterprise-managed authorization (an identity provider's ID token
    /// exchanged for an identity assertion grant, then for an access token)
    Enterprise(EnterpriseConfig),
}

/// `oauth.idp` of an `"enterprise"` grant: the identity provider, and where its ID token is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnterpriseConfig {
    /// `issuer`: the identity provider's issuer URL
    pub issuer: String,
    /// `tokenEndpoint`: where the ID token is exchanged
    pub token_endpoint: String,
    /// `clientId`: agent-tools' client at the identity provider
    pub client_id: String,
    /// `clientSecret`: its secret, when it has one
    pub client_secret: Option<Secret>,
    /// `idTokenEnv`: the environment variable holding the person's ID token
    pub id_token: Secret,
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The name under `mcpServers`
    pub name: String,
    /// How to reach it
    pub transport: Transport,
    /// Start-up limit
    pub startup_timeout: Duration,
    /// Per-call limit
    pub call_timeout: Duration,
    /// The largest message the server may send, in bytes (`maxMessageBytes`; default
    /// `MCP_MAX_MESSAGE_BYTES`, else [`DEFAULT_MAX_MESSAGE_BYTES`]): a larger one ends the
    /// call it answers with an error naming the server and the limit, and is never held in
    /// memory whole
    pub max_message_bytes: usize,
}

/// A server of `.mcp.json` that is not started because its entry has a problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedServer {
    /// The name under `mcpServers`
    pub name: String,
    /// What is wrong and what to do, starting with `mcpServers.<name>:`
    pub reason: String,
}

/// The servers of a `.mcp.json`: those that can start, and those whose entries have a
/// problem. Both are sorted by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpConfig {
    /// Servers to start
    pub servers: Vec<ServerConfig>,
    /// Servers left out, with why
    pub skipped: Vec<SkippedServer>,
}

impl McpConfig {
    /// Whether there is nothing at all (no server to start and none skipped).
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty() && self.skipped.is_empty()
    }
}

impl From<Vec<ServerConfig>> for McpConfig {
    fn from(servers: Vec<ServerConfig>) -> Self {
        McpConfig {
            servers,
            skipped: Vec::new(),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawFile {
    #[serde(default)]
    mcp_servers: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(alias = "bearer_token_env_var")]
    bearer_token_env_var: Option<String>,
    #[serde(alias = "ca_cert_file")]
    ca_cert_file: Option<String>,
    oauth: Option<RawOAuth>,
    startup_timeout_ms: Option<u64>,
    tool_timeout_ms: Option<u64>,
    max_message_bytes: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawOAuth {
    client_id: Option<String>,
    client_secret: Option<String>,
    #[serde(default)]
    scopes: Vec<String>,
    callback_port: Option<u16>,
    client_metadata_url: Option<String>,
    grant: Option<String>,
    private_key_file: Option<String>,
    signing_algorithm: Option<String>,
    idp: Option<RawIdp>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawIdp {
    issuer: String,
    token_endpoint: String,
    client_id: String,
    client_secret: Option<String>,
    id_token_env: String,
}

/// The signing algorithms `private_key_jwt` accepts.
const SIGNING_ALGORITHMS: &[&str] = &["RS256", "RS384", "RS512", "ES256", "ES384"];

/// `oauth` of a server's entry, or what is wrong with it (the message names the field).
fn parse_oauth(
    raw: RawOAuth,
    root: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<OAuthConfig, String> {
    let ex = |s: &str| expand(s, lookup);
    let client_id = raw.client_id.as_deref().map(ex).transpose()?;
    let client_secret = raw
        .client_secret
        .as_deref()
        .map(|s| ex(s).map(Secret))
        .transpose()?;
    if let Some(url) = &raw.client_metadata_url {
        let parsed = url::Url::parse(url)
            .map_err(|e| format!("oauth.clientMetadataUrl {url:?} is not a URL: {e}"))?;
        if parsed.scheme() != "https" || parsed.path() == "/" {
            return Err(format!(
                "oauth.clientMetadataUrl must be an https URL with a path (where the client's metadata document is published), not {url:?}"
            ));
        }
    }
    if raw.callback_port == Some(0) {
        return Err("oauth.callbackPort must be a port between 1 and 65535".to_owned());
    }
    if client_secret.is_some() && client_id.is_none() {
        return Err(
            "oauth.clientSecret needs oauth.clientId (the client it belongs to)".to_owned(),
        );
    }
    let grant = match raw.grant.as_deref().unwrap_or("authorization_code") {
        "authorization_code" => {
            if raw.private_key_file.is_some()
                || raw.signing_algorithm.is_some()
                || raw.idp.is_some()
            {
                return Err(
                    "oauth.privateKeyFile, oauth.signingAlgorithm and oauth.idp need \"grant\": \"client_credentials\" or \"enterprise\"".to_owned(),
                );
            }
            Grant::AuthorizationCode
        }
        "client_credentials" => {
            if client_id.is_none() {
                return Err("\"grant\": \"client_credentials\" needs oauth.clientId".to_owned());
            }
            let private_key = raw
                .private_key_file
                .as_deref()
                .map(|p| ex(p).map(|p| root.join(p)))
                .transpose()?;
            if private_key.is_none() == client_secret.is_none() {
                return Err(
                    "\"grant\": \"client_credentials\" needs exactly one of oauth.clientSecret and oauth.privateKeyFile".to_owned(),
                );
            }
            let algorithm = raw.signing_algorithm.unwrap_or_else(|| "ES256".to_owned());
            if !SIGNING_ALGORITHMS.contains(&algorithm.as_str()) {
                return Err(format!(
                    "oauth.signingAlgorithm {algorithm:?} is not supported; use one of {}",
                    SIGNING_ALGORITHMS.join(", ")
                ));
            }
            Grant::ClientCredentials {
                private_key,
                algorithm,
            }
        }
        "enterprise" => {
            let Some(idp) = raw.idp else {
                return Err("\"grant\": \"enterprise\" needs oauth.idp (issuer, tokenEndpoint, clientId, idTokenEnv)".to_owned());
            };
            if client_id.is_none() {
                return Err("\"grant\": \"enterprise\" needs oauth.clientId".to_owned());
            }
            let id_token = lookup(&idp.id_token_env).ok_or_else(|| {
                format!(
                    "oauth.idp.idTokenEnv names {}, which is not set in the environment",
                    idp.id_token_env
                )
            })?;
            Grant::Enterprise(EnterpriseConfig {
                issuer: ex(&idp.issuer)?,
                token_endpoint: ex(&idp.token_endpoint)?,
                client_id: ex(&idp.client_id)?,
                client_secret: idp
                    .client_secret
                    .as_deref()
                    .map(|s| ex(s).map(Secret))
                    .transpose()?,
                id_token: Secret(id_token),
            })
        }
        other => {
            return Err(format!(
                "oauth.grant {other:?} is not supported; use \"authorization_code\", \"client_credentials\" or \"enterprise\""
            ));
        }
    };
    Ok(OAuthConfig {
        client_id,
        client_secret,
        scopes: raw.scopes,
        callback_port: raw.callback_port,
        client_metadata_url: raw.client_metadata_url,
        grant,
    })
}

/// Expands `${VAR}` and `${VAR:-default}` from `lookup`; an unset variable without a default
/// is an error naming it.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed `${{` in `{text}`"));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match (lookup(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(format!("environment variable {name} is not set"));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn env_duration(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis)
}

/// Parses the text of a `.mcp.json` (`path` only names it in errors). Servers come back
/// sorted by name, so they load in a deterministic order. A file that is not valid JSON (or
/// whose `mcpServers` is not an object) is an error; a problem in one server's entry only
/// skips that server ([`McpConfig::skipped`]).
pub fn parse_config(
    text: &str,
    path: &Path,
    root: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<McpConfig, ToolError> {
    let file: RawFile = serde_json::from_str(text).map_err(|e| ToolError::Settings {
        path: path.to_path_buf(),
        message: format!("not a valid .mcp.json: {e}"),
    })?;
    Ok(parse_servers(file, root, lookup))
}

fn parse_servers(file: RawFile, root: &Path, lookup: &dyn Fn(&str) -> Option<String>) -> McpConfig {
    let defaults = Defaults {
        startup: env_duration("MCP_TIMEOUT").unwrap_or(DEFAULT_STARTUP_TIMEOUT),
        call: env_duration("MCP_TOOL_TIMEOUT").unwrap_or(DEFAULT_CALL_TIMEOUT),
        message_bytes: std::env::var("MCP_MAX_MESSAGE_BYTES")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(DEFAULT_MAX_MESSAGE_BYTES),
    };
    let mut config = McpConfig::default();
    for (name, raw) in file.mcp_servers {
        match parse_server(&name, raw, root, lookup, &defaults) {
            Ok(server) => config.servers.push(server),
            Err(problem) => config.skipped.push(SkippedServer {
                reason: format!("mcpServers.{name}: {problem}"),
                name,
            }),
        }
    }
    config
}

/// The default limits, from `MCP_TIMEOUT`, `MCP_TOOL_TIMEOUT` and `MCP_MAX_MESSAGE_BYTES`
/// or built in.
struct Defaults {
    startup: Duration,
    call: Duration,
    message_bytes: usize,
}

/// One server's entry, or what is wrong with it.
fn parse_server(
    name: &str,
    raw: Value,
    root: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
    defaults: &Defaults,
) -> Result<ServerConfig, String> {
    let mut raw: RawServer = serde_json::from_value(raw).map_err(|e| e.to_string())?;
    let kind = raw
        .kind
        .clone()
        .unwrap_or_else(|| if raw.url.is_some() { "http" } else { "stdio" }.to_owned());
    let transport = match kind.as_str() {
        "stdio" => stdio_transport(&raw, root, lookup)?,
        "http" | "streamable-http" | "streamableHttp" => {
            http_transport(&mut raw, HttpKind::Streamable, root, lookup)?
        }
        "sse" => http_transport(&mut raw, HttpKind::Sse, root, lookup)?,
        other => {
            return Err(format!(
                "transport type \"{other}\" is not supported; use \"stdio\", \"http\" or \"sse\""
            ));
        }
    };
    Ok(ServerConfig {
        name: name.to_owned(),
        transport,
        startup_timeout: raw
            .startup_timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(defaults.startup),
        call_timeout: raw
            .tool_timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(defaults.call),
        max_message_bytes: match raw.max_message_bytes {
            Some(0) => return Err("maxMessageBytes must be at least 1".to_owned()),
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            None => defaults.message_bytes,
        },
    })
}

/// The transport of a stdio server entry: its command, arguments, environment and working
/// directory, expanded.
fn stdio_transport(
    raw: &RawServer,
    root: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Transport, String> {
    let ex = |s: &str| expand(s, lookup);
    if raw.ca_cert_file.is_some() {
        return Err("\"caCertFile\" applies to http servers only; remove it".to_owned());
    }
    if raw.oauth.is_some() {
        return Err("\"oauth\" applies to http and sse servers only; remove it".to_owned());
    }
    let command = raw
        .command
        .as_deref()
        .ok_or_else(|| "a stdio server needs \"command\"".to_owned())?;
    let mut env = BTreeMap::new();
    for (k, v) in &raw.env {
        env.insert(k.clone(), ex(v)?);
    }
    Ok(Transport::Stdio {
        command: ex(command)?,
        args: raw.args.iter().map(|a| ex(a)).collect::<Result<_, _>>()?,
        env,
        cwd: raw
            .cwd
            .as_deref()
            .map(|c| ex(c).map(|c| root.join(c)))
            .transpose()?,
    })
}

/// The transport of an http or sse server entry: its URL, headers, token and CA, checked
/// against each other. Takes the entry's `oauth` block.
fn http_transport(
    raw: &mut RawServer,
    kind: HttpKind,
    root: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Transport, String> {
    let ex = |s: &str| expand(s, lookup);
    let url = raw
        .url
        .as_deref()
        .ok_or_else(|| "an http server needs \"url\"".to_owned())?;
    let mut headers = BTreeMap::new();
    for (k, v) in &raw.headers {
        headers.insert(k.clone(), ex(v)?);
    }
    let bearer_token = match &raw.bearer_token_env_var {
        Some(var) => Some(Secret(lookup(var).ok_or_else(|| {
            format!("bearerTokenEnvVar names {var}, which is not set in the environment")
        })?)),
        None => None,
    };
    let url = ex(url)?;
    let ca_cert_file = raw
        .ca_cert_file
        .as_deref()
        .map(|c| ex(c).map(|c| root.join(c)))
        .transpose()?;
    if ca_cert_file.is_some() && !url.starts_with("https://") {
        return Err(format!(
            "\"caCertFile\" is for https servers, but the url is {url}"
        ));
    }
    let parsed = url::Url::parse(&url).map_err(|e| format!("the url {url:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "the url {url:?} must start with http:// or https://"
        ));
    }
    let oauth = raw
        .oauth
        .take()
        .map(|o| parse_oauth(o, root, lookup).map(Box::new))
        .transpose()?;
    if oauth.is_some() && bearer_token.is_some() {
        return Err(
            "\"oauth\" and \"bearerTokenEnvVar\" both give the server a token; keep one".to_owned(),
        );
    }
    Ok(Transport::Http {
        url,
        kind,
        headers,
        bearer_token,
        ca_cert_file,
        oauth,
    })
}

/// Reads the `.mcp.json` of the session's project (its original working directory) and
/// returns the servers that may start; no file means no servers.
///
/// The file is part of the project, so anyone may have written it: a server starts only
/// when a person approved the file's exact content (`agent-tools trust`, recorded in the
/// state directory) or the session's settings enable it (`enabledMcpjsonServers`,
/// `enableAllProjectMcpServers` in the user settings, a `--settings` file or an approved
/// project file), and never when `disabledMcpjsonServers` names it. The settings are the
/// context's `Arc<Vec<SettingsLayer>>` service; without one only approvals count. Servers
/// that may not start are left out before their entries are read, so a mistake in one of
/// them is no error. A problem in an allowed server's entry skips that server only
/// ([`McpConfig::skipped`]).
pub fn load_project_config(ctx: &ToolContext) -> Result<McpConfig, ToolError> {
    let root = ctx.original_cwd();
    let path = root.join(MCP_JSON);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(McpConfig::default()),
        Err(e) => return Err(ToolError::io(&path, e)),
    };
    let layers = ctx.services().get::<Arc<Vec<SettingsLayer>>>();
    let approval = McpApproval::new(
        root,
        &bytes,
        &TrustStore::in_state_dir(ctx.state_dir()),
        layers.as_deref().map_or(&[], Vec::as_slice),
    )?;
    let bad = |message: String| ToolError::Settings {
        path: path.clone(),
        message,
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| bad(format!("not UTF-8 text: {e}")))?;
    let mut file: RawFile =
        serde_json::from_str(text).map_err(|e| bad(format!("not a valid .mcp.json: {e}")))?;
    file.mcp_servers.retain(|name, _| approval.allows(name));
    Ok(parse_servers(file, root, &|name| std::env::var(name).ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".to_owned()),
            "HOST" => Some("127.0.0.1".to_owned()),
            _ => None,
        }
    }

    fn parse(text: &str) -> Result<McpConfig, String> {
        parse_config(text, Path::new(".mcp.json"), Path::new("/p"), &lookup)
            .map_err(|e| e.to_string())
    }

    /// The servers of `text`, which must have no skipped entry.
    fn good(text: &str) -> Vec<ServerConfig> {
        let config = parse(text).unwrap();
        assert!(config.skipped.is_empty(), "{:?}", config.skipped);
        config.servers
    }

    #[test]
    fn expansion() {
        let check = |input: &str, expected: Result<&str, &str>| {
            let got = expand(input, &lookup);
            assert_eq!(got.as_deref().map_err(String::as_str), expected, "{input}");
        };
        check("plain", Ok("plain"));
        check("http://${HOST}:1/mcp", Ok("http://127.0.0.1:1/mcp"));
        check("${NOPE:-x}", Ok("x"));
        check("${NOPE}", Err("environment variable NOPE is not set"));
        check("${HOST", Err("unclosed `${` in `${HOST`"));
    }

    #[test]
    fn servers_of_both_kinds_sorted_by_name() {
        let servers = good(
            r#"{"mcpServers": {
                "web": {"type": "http", "url": "http://${HOST}:9/mcp", "headers": {"X-A": "b"}, "bearerTokenEnvVar": "TOKEN"},
                "fs": {"command": "npx", "args": ["-y", "server"], "env": {"K": "${HOST}"}, "toolTimeoutMs": 500}
            }}"#,
        );
        assert_eq!(servers[0].name, "fs");
        assert_eq!(servers[0].call_timeout, Duration::from_millis(500));
        assert!(
            matches!(&servers[0].transport, Transport::Stdio { env, .. } if env["K"] == "127.0.0.1")
        );
        assert!(matches!(&servers[1].transport,
            Transport::Http { url, bearer_token: Some(t), ca_cert_file: None, .. } if url == "http://127.0.0.1:9/mcp" && t.expose() == "s3cret"));
        let servers = good(
            r#"{"mcpServers": {"tls": {"url": "https://${HOST}/mcp", "caCertFile": "certs/ca.pem"}}}"#,
        );
        assert!(matches!(&servers[0].transport,
            Transport::Http { ca_cert_file: Some(p), .. } if p == Path::new("/p/certs/ca.pem")));
    }

    #[test]
    fn legacy_sse_servers_parse_like_http_ones() {
        let servers = good(
            r#"{"mcpServers": {"old": {"type": "sse", "url": "http://${HOST}:3001/sse", "headers": {"X-A": "b"}}}}"#,
        );
        assert!(matches!(&servers[0].transport,
            Transport::Http { url, kind: HttpKind::Sse, oauth: None, .. } if url == "http://127.0.0.1:3001/sse"));
    }

    #[test]
    fn oauth_settings_are_checked_field_by_field() {
        let oauth = |entry: &str| -> Result<OAuthConfig, String> {
            let text = format!(
                r#"{{"mcpServers": {{"s": {{"url": "https://h/mcp", "oauth": {entry}}}}}}}"#
            );
            let config = parse(&text).unwrap();
            match (config.servers.first(), config.skipped.first()) {
                (
                    Some(ServerConfig {
                        transport: Transport::Http { oauth: Some(o), .. },
                        ..
                    }),
                    _,
                ) => Ok(o.as_ref().clone()),
                (_, Some(skipped)) => Err(skipped.reason.clone()),
                _ => Err("no oauth".to_owned()),
            }
        };
        let full = oauth(
            r#"{"clientId": "c", "clientSecret": "${TOKEN}", "scopes": ["a", "b"], "callbackPort": 8976}"#,
        )
        .unwrap();
        assert_eq!(full.client_id.as_deref(), Some("c"));
        assert_eq!(
            full.client_secret.as_ref().map(Secret::expose),
            Some("s3cret")
        );
        assert_eq!(full.scopes, ["a", "b"]);
        assert_eq!(full.callback_port, Some(8976));
        assert_eq!(full.grant, Grant::AuthorizationCode);
        // The secret never shows in a debug print.
        assert!(!format!("{full:?}").contains("s3cret"));
        let machine = oauth(
            r#"{"grant": "client_credentials", "clientId": "c", "privateKeyFile": "k.pem", "signingAlgorithm": "RS256"}"#,
        )
        .unwrap();
        assert_eq!(
            machine.grant,
            Grant::ClientCredentials {
                private_key: Some(PathBuf::from("/p/k.pem")),
                algorithm: "RS256".into()
            }
        );
        let check = |entry: &str, expected: &str| {
            let err = oauth(entry).unwrap_err();
            assert!(err.contains(expected), "{entry}: {err}");
            assert!(err.starts_with("mcpServers.s: "), "{err}");
        };
        check(
            r#"{"clientSecret": "x"}"#,
            "oauth.clientSecret needs oauth.clientId",
        );
        check(
            r#"{"clientMetadataUrl": "http://h/doc.json"}"#,
            "must be an https URL with a path",
        );
        check(
            r#"{"clientMetadataUrl": "https://h/"}"#,
            "must be an https URL with a path",
        );
        check(r#"{"callbackPort": 0}"#, "between 1 and 65535");
        check(r#"{"callbackPort": 70000}"#, "invalid value");
        check(r#"{"scope": "a"}"#, "unknown field `scope`");
        check(
            r#"{"grant": "password"}"#,
            "oauth.grant \"password\" is not supported",
        );
        check(r#"{"grant": "client_credentials"}"#, "needs oauth.clientId");
        check(
            r#"{"grant": "client_credentials", "clientId": "c"}"#,
            "exactly one of oauth.clientSecret and oauth.privateKeyFile",
        );
        check(
            r#"{"grant": "client_credentials", "clientId": "c", "clientSecret": "s", "privateKeyFile": "k"}"#,
            "exactly one of",
        );
        check(
            r#"{"grant": "client_credentials", "clientId": "c", "clientSecret": "s", "signingAlgorithm": "HS256"}"#,
            "\"HS256\" is not supported",
        );
        check(
            r#"{"privateKeyFile": "k"}"#,
            "need \"grant\": \"client_credentials\"",
        );
        check(
            r#"{"grant": "enterprise", "clientId": "c"}"#,
            "needs oauth.idp",
        );
        check(
            r#"{"grant": "enterprise", "clientId": "c", "idp": {"issuer": "i", "tokenEndpoint": "t", "clientId": "x", "idTokenEnv": "NOPE"}}"#,
            "idTokenEnv names NOPE, which is not set",
        );
        check(r#"{"clientId": "${MY_API_KEY}"}"#, "MY_API_KEY is not set");
    }

    #[test]
    fn a_broken_file_is_an_error() {
        for text in ["{", r#"{"mcpServers": []}"#, r#"{"mcpServers": 1}"#] {
            let err = parse(text).unwrap_err();
            assert!(err.contains("not a valid .mcp.json"), "{text}: {err}");
        }
    }

    #[test]
    fn a_mistake_in_one_entry_skips_that_server_only() {
        // Each bad entry sits between two good ones; the good ones still load.
        let check = |entry: &str, reason: &str| {
            let text = format!(
                r#"{{"mcpServers": {{"a": {{"command": "x"}}, "bad": {entry}, "z": {{"url": "http://${{HOST}}/mcp"}}}}}}"#
            );
            let config = parse(&text).unwrap();
            let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, ["a", "z"], "{entry}");
            assert_eq!(config.skipped.len(), 1, "{entry}");
            assert_eq!(config.skipped[0].name, "bad");
            let got = &config.skipped[0].reason;
            assert!(got.starts_with("mcpServers.bad: "), "{got}");
            assert!(got.contains(reason), "{entry}: {got}");
        };
        check("{}", "a stdio server needs \"command\"");
        check("[1]", "invalid type");
        check(r#"{"args": "x", "command": "y"}"#, "invalid type");
        check(r#"{"type": "http"}"#, "needs \"url\"");
        check(r#"{"type": "ws", "url": "x"}"#, "\"ws\" is not supported");
        check(r#"{"type": "sse"}"#, "needs \"url\"");
        check(
            r#"{"url": "ftp://h/mcp"}"#,
            "must start with http:// or https://",
        );
        check(r#"{"url": "not a url"}"#, "is not a URL");
        check(
            r#"{"command": "x", "oauth": {}}"#,
            "\"oauth\" applies to http and sse servers only",
        );
        check(
            r#"{"url": "http://h/mcp", "bearerTokenEnvVar": "TOKEN", "oauth": {}}"#,
            "keep one",
        );
        check(
            r#"{"url": "x", "bearerTokenEnvVar": "MISSING"}"#,
            "MISSING, which is not set",
        );
        check(
            r#"{"command": "x", "caCertFile": "ca.pem"}"#,
            "\"caCertFile\" applies to http servers only",
        );
        check(
            r#"{"url": "http://127.0.0.1:1/mcp", "caCertFile": "ca.pem"}"#,
            "\"caCertFile\" is for https servers, but the url is http://127.0.0.1:1/mcp",
        );
        // An unset variable anywhere in the entry.
        for entry in [
            r#"{"command": "${MY_API_KEY}"}"#,
            r#"{"command": "x", "args": ["--key", "${MY_API_KEY}"]}"#,
            r#"{"command": "x", "env": {"KEY": "${MY_API_KEY}"}}"#,
            r#"{"command": "x", "cwd": "${MY_API_KEY}"}"#,
            r#"{"url": "http://h/${MY_API_KEY}"}"#,
            r#"{"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${MY_API_KEY}"}}"#,
            r#"{"url": "https://h/mcp", "caCertFile": "${MY_API_KEY}"}"#,
        ] {
            check(entry, "environment variable MY_API_KEY is not set");
        }
        check(r#"{"command": "${HOST"}"#, "unclosed `${`");
    }
}
