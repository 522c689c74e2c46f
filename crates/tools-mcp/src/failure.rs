//! What went wrong with an HTTP server's connection, in one line for the model and the
//! person: the kind (refused, DNS, TLS, 401 needing a login, 403 scope, HTTP status,
//! protocol version, timeout) and, where there is one, the command or setting that fixes
//! it. The caller puts the server's name and URL in front.

use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::config::{Grant, HttpKind, ServerConfig, Transport};
use crate::legacy_sse::LegacySseError;

/// An error and its sources, "outer: inner: innermost" (TLS problems are in the sources).
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = e.source();
    }
    text
}

/// How the server authenticates, for the fix a refusal needs.
fn login_fix(server: &ServerConfig) -> String {
    match &server.transport {
        Transport::Http {
            bearer_token: Some(_),
            ..
        } => "check the token in the environment variable bearerTokenEnvVar names".to_owned(),
        Transport::Http {
            oauth: Some(oauth), ..
        } if !matches!(oauth.grant, Grant::AuthorizationCode) => {
            "check oauth.clientId and its secret or key in .mcp.json".to_owned()
        }
        _ => format!("run: agent-tools mcp login {}", server.name),
    }
}

fn kind(server: &ServerConfig) -> HttpKind {
    match &server.transport {
        Transport::Http { kind, .. } => *kind,
        Transport::Stdio { .. } => HttpKind::Streamable,
    }
}

/// The scope a `403 insufficient_scope` challenge asks for, quoted, or "".
fn scope_of(challenge: &str) -> String {
    let lower = challenge.to_ascii_lowercase();
    let Some(at) = lower.find("scope=\"") else {
        return String::new();
    };
    let rest = &challenge[at + 7..];
    match rest.find('"') {
        Some(end) => format!(" \"{}\"", &rest[..end]),
        None => String::new(),
    }
}

/// A failure of the HTTP client itself (no answer, or no usable one).
fn client_problem(server: &ServerConfig, text: &str) -> String {
    let lower = text.to_lowercase();
    if lower.contains("certificate") || lower.contains("unknownissuer") || lower.contains("tls") {
        return format!(
            "TLS: {text}; the server's certificate is not trusted: if a private CA signed it, name that CA's PEM file in \"caCertFile\" for this server in .mcp.json"
        );
    }
    if lower.contains("connection refused") {
        return format!(
            "refused: nothing accepts connections there (is the server running?): {text}"
        );
    }
    if lower.contains("dns error")
        || lower.contains("failed to lookup")
        || lower.contains("name or service not known")
    {
        return format!("DNS: the host name does not resolve: {text}");
    }
    if lower.contains("timed out") || lower.contains("timeout") {
        return format!("timeout: {text}");
    }
    if lower.contains("404") || lower.contains("405") {
        let hint = match kind(server) {
            HttpKind::Streamable => {
                "check the url (a streamable HTTP endpoint often ends in /mcp; a server that only speaks the older HTTP+SSE transport needs \"type\": \"sse\" and its /sse url)"
            }
            HttpKind::Sse => {
                "check the url (an HTTP+SSE endpoint often ends in /sse; a server that speaks streamable HTTP needs \"type\": \"http\")"
            }
        };
        return format!("HTTP: {text}; {hint}");
    }
    format!("HTTP: {text}")
}

/// The streamable HTTP client's error as a kind and a fix.
fn streamable_problem(
    server: &ServerConfig,
    error: &StreamableHttpError<reqwest::Error>,
) -> String {
    match error {
        StreamableHttpError::AuthRequired(_) => {
            format!("needs a login (HTTP 401); {}", login_fix(server))
        }
        StreamableHttpError::InsufficientScope(e) => format!(
            "the token lacks scope{} the server asks for (HTTP 403 insufficient_scope); {}",
            scope_of(&e.www_authenticate_header),
            login_fix(server)
        ),
        StreamableHttpError::Auth(e) => format!("OAuth: {e}; {}", login_fix(server)),
        StreamableHttpError::Client(e) => client_problem(server, &chain(e)),
        StreamableHttpError::HttpStatus(e) => client_problem(server, &format!("HTTP {}", e.status)),
        StreamableHttpError::UnexpectedContentType(content_type) => format!(
            "protocol: the server answered with content type {} where streamable HTTP sends JSON or an event stream; if it speaks the older HTTP+SSE transport, use \"type\": \"sse\"",
            content_type.as_deref().unwrap_or("(none)")
        ),
        other => client_problem(server, &chain(other)),
    }
}

/// The legacy SSE client's error as a kind and a fix.
fn legacy_problem(server: &ServerConfig, error: &LegacySseError) -> String {
    match error {
        LegacySseError::Status { status: 401, .. } => {
            format!("needs a login (HTTP 401); {}", login_fix(server))
        }
        LegacySseError::Status {
            status: 403,
            challenge,
        } => format!(
            "refused (HTTP 403{}); {}",
            if challenge.contains("insufficient_scope") {
                format!(" insufficient_scope, scope{}", scope_of(challenge))
            } else {
                String::new()
            },
            login_fix(server)
        ),
        LegacySseError::Http(e) => client_problem(server, &chain(e)),
        other => client_problem(server, &other.to_string()),
    }
}

/// What a transport error of `server` means, when it comes from one of the HTTP clients.
fn transport_problem(
    server: &ServerConfig,
    error: &(dyn std::error::Error + 'static),
) -> Option<String> {
    if let Some(e) = error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        return Some(streamable_problem(server, e));
    }
    if let Some(e) = error.downcast_ref::<LegacySseError>() {
        return Some(legacy_problem(server, e));
    }
    None
}

/// Why the handshake with an HTTP server failed, as a kind and a fix.
pub(crate) fn handshake_problem(server: &ServerConfig, error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, context } => {
            match transport_problem(server, error.error.as_ref()) {
                Some(problem) => problem,
                None => format!("HTTP: {} (when it had to {context})", chain(error)),
            }
        }
        ClientInitializeError::NoCompatibleProtocolVersion {
            server_supported, ..
        } => format!(
            "protocol version: the server speaks {server_supported:?}, none of which agent-tools speaks (2024-11-05 to 2025-11-25); if it is an older HTTP+SSE server, use \"type\": \"sse\""
        ),
        ClientInitializeError::JsonRpcError(e) if e.message.to_lowercase().contains("version") => {
            format!(
                "protocol version: the server refused the handshake: {}",
                e.message
            )
        }
        ClientInitializeError::ConnectionClosed(why) => {
            format!("protocol: the server closed the connection during the handshake ({why})")
        }
        other => format!("protocol: {}", chain(other)),
    }
}

/// Why a request to an HTTP server failed, when it is a problem of the connection or its
/// authorization (the kind and the fix); `None` for anything else.
pub(crate) fn request_problem(server: &ServerConfig, error: &ServiceError) -> Option<String> {
    match error {
        ServiceError::TransportSend(e) => transport_problem(server, e.error.as_ref()),
        _ => None,
    }
}

/// Whether `error` is the server refusing the token (a login, or more scope, fixes it).
pub(crate) fn is_auth_refusal(error: &ServiceError) -> bool {
    let ServiceError::TransportSend(e) = error else {
        return false;
    };
    if let Some(e) = e
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return matches!(
            e,
            StreamableHttpError::AuthRequired(_) | StreamableHttpError::InsufficientScope(_)
        );
    }
    matches!(
        e.error.downcast_ref::<LegacySseError>(),
        Some(LegacySseError::Status {
            status: 401 | 403,
            ..
        })
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};
    use std::collections::BTreeMap;

    fn http(name: &str) -> ServerConfig {
        ServerConfig {
            name: name.into(),
            transport: Transport::Http {
                url: "https://mcp.example.com/mcp".into(),
                kind: HttpKind::Streamable,
                headers: BTreeMap::new(),
                bearer_token: None,
                ca_cert_file: None,
                oauth: None,
            },
            startup_timeout: std::time::Duration::from_secs(1),
            call_timeout: std::time::Duration::from_secs(1),
            max_message_bytes: crate::config::DEFAULT_MAX_MESSAGE_BYTES,
        }
    }

    #[test]
    fn each_kind_names_its_fix() {
        let server = http("github");
        let check = |error: StreamableHttpError<reqwest::Error>, expected: &str| {
            let got = streamable_problem(&server, &error);
            assert!(got.contains(expected), "{got}");
        };
        check(
            StreamableHttpError::AuthRequired(AuthRequiredError::new("Bearer".into())),
            "needs a login (HTTP 401); run: agent-tools mcp login github",
        );
        check(
            StreamableHttpError::InsufficientScope(InsufficientScopeError::new(
                "Bearer error=\"insufficient_scope\", scope=\"repo write\"".into(),
                None,
            )),
            "lacks scope \"repo write\" the server asks for (HTTP 403 insufficient_scope); run: agent-tools mcp login github",
        );
        check(
            StreamableHttpError::UnexpectedContentType(Some("text/html".into())),
            "use \"type\": \"sse\"",
        );
        let refused = client_problem(
            &server,
            "error sending request: Connection refused (os error 111)",
        );
        assert!(refused.starts_with("refused:"), "{refused}");
        let tls = client_problem(&server, "invalid peer certificate: UnknownIssuer");
        assert!(
            tls.starts_with("TLS:") && tls.contains("caCertFile"),
            "{tls}"
        );
        let missing = client_problem(&server, "HTTP 404 Not Found");
        assert!(missing.contains("\"type\": \"sse\""), "{missing}");
    }
}
