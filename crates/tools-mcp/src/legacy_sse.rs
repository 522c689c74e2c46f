//! The legacy HTTP+SSE transport of protocol 2024-11-05 (`"type": "sse"`), which rmcp no
//! longer has: the client opens a `GET` event stream, whose first `endpoint` event names
//! the address to `POST` messages to (relative to the stream's URL, and on the same
//! origin: a server cannot send the client's messages elsewhere); the server's messages
//! arrive as `message` events on the stream, whichever request they answer.
//!
//! When the stream ends, the transport ends with it; the manager connects again on the
//! next use (a new stream is a new session in this protocol). The bearer token, when the
//! server needs one, comes from the same [`Tokens`] as streamable HTTP's.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::HeaderMap;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::oauth::Tokens;

/// How long the server has to name its endpoint after the stream opened.
const ENDPOINT_WAIT: Duration = Duration::from_secs(30);

/// The largest event accepted (a message of the server).
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// What went wrong with the legacy transport.
#[derive(Debug, thiserror::Error)]
pub enum LegacySseError {
    /// The HTTP client failed (no connection, TLS, timeout)
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    /// The server answered with an error status
    #[error("HTTP {status}")]
    Status {
        /// The status code
        status: u16,
        /// Its `WWW-Authenticate`, if any
        challenge: String,
    },
    /// The server broke the protocol
    #[error("{0}")]
    Protocol(String),
    /// The stream has ended
    #[error("the event stream has ended; the next call connects again")]
    Closed,
}

/// Where requests go and what they carry.
#[derive(Clone)]
struct Poster {
    http: reqwest::Client,
    headers: HeaderMap,
    bearer: Option<String>,
    tokens: Option<Arc<Tokens>>,
}

impl Poster {
    async fn token(&self) -> Result<Option<String>, LegacySseError> {
        if self.bearer.is_some() {
            return Ok(self.bearer.clone());
        }
        match &self.tokens {
            Some(tokens) => tokens
                .bearer()
                .await
                .map_err(|e| LegacySseError::Protocol(format!("OAuth: {e}"))),
            None => Ok(None),
        }
    }

    /// Sends `request` (built again for a retry) with the token, refreshing a rejected one
    /// once.
    async fn send(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, LegacySseError> {
        let token = self.token().await?;
        let attempt = |token: Option<&String>| {
            let mut request = build().headers(self.headers.clone());
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            request.send()
        };
        let response = attempt(token.as_ref()).await?;
        let response = match (response.status().as_u16(), &token, &self.tokens) {
            (401, Some(sent), Some(tokens)) if self.bearer.is_none() => {
                match tokens
                    .rejected(sent)
                    .await
                    .map_err(|e| LegacySseError::Protocol(format!("OAuth: {e}")))?
                {
                    Some(fresh) if &fresh != sent => attempt(Some(&fresh)).await?,
                    _ => response,
                }
            }
            _ => response,
        };
        if response.status().is_success() {
            return Ok(response);
        }
        let challenge = response
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        if response.status().as_u16() == 403
            && challenge.contains("insufficient_scope")
            && let Some(tokens) = &self.tokens
        {
            tokens.insufficient(&challenge).await;
        }
        Err(LegacySseError::Status {
            status: response.status().as_u16(),
            challenge,
        })
    }
}

/// A connection over the legacy HTTP+SSE transport.
pub(crate) struct LegacySse {
    poster: Poster,
    endpoint: url::Url,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    /// Ends the stream's reader
    stop: CancellationToken,
}

impl Drop for LegacySse {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The `endpoint` event's URI, resolved against the stream's URL; it must stay on the
/// stream's origin.
fn endpoint_of(base: &url::Url, data: &str) -> Result<url::Url, String> {
    let endpoint = base
        .join(data.trim())
        .map_err(|e| format!("the server named the endpoint {data:?}, which is not a URI: {e}"))?;
    if endpoint.origin() != base.origin() {
        return Err(format!(
            "the server named the endpoint {endpoint}, on another origin than its event stream {base}; agent-tools does not send its messages there"
        ));
    }
    Ok(endpoint)
}

impl LegacySse {
    /// Opens the event stream at `url` and waits for the endpoint.
    pub(crate) async fn connect(
        http: reqwest::Client,
        url: &str,
        headers: HeaderMap,
        bearer: Option<String>,
        tokens: Option<Arc<Tokens>>,
    ) -> Result<Self, LegacySseError> {
        let base = url::Url::parse(url).map_err(|e| LegacySseError::Protocol(e.to_string()))?;
        let poster = Poster {
            http,
            headers,
            bearer,
            tokens,
        };
        let response = poster
            .send(|| {
                poster
                    .http
                    .get(base.clone())
                    .header(reqwest::header::ACCEPT, "text/event-stream")
            })
            .await?;
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        if !content_type.starts_with("text/event-stream") {
            return Err(LegacySseError::Protocol(format!(
                "the server answered the GET with content type {content_type:?}, not an event stream; if it speaks streamable HTTP, use \"type\": \"http\""
            )));
        }
        let (tx, incoming) = mpsc::channel(64);
        let (endpoint_tx, endpoint_rx) = tokio::sync::oneshot::channel();
        let stop = CancellationToken::new();
        let reader_stop = stop.clone();
        let reader_base = base.clone();
        tokio::spawn(async move {
            let mut events = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
            let mut endpoint_tx = Some(endpoint_tx);
            loop {
                let event = tokio::select! {
                    () = reader_stop.cancelled() => break,
                    event = events.next() => event,
                };
                let Some(Ok(event)) = event else { break };
                let data = event.data.unwrap_or_default();
                if data.len() > MAX_EVENT_BYTES {
                    break;
                }
                match event.event.as_deref() {
                    Some("endpoint") => {
                        if let Some(sender) = endpoint_tx.take() {
                            let _ = sender.send(endpoint_of(&reader_base, &data));
                        }
                    }
                    None | Some("message") => {
                        let Ok(message) =
                            serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&data)
                        else {
                            continue;
                        };
                        if tx.send(message).await.is_err() {
                            break;
                        }
                    }
                    Some(_) => {}
                }
            }
        });
        let endpoint = match tokio::time::timeout(ENDPOINT_WAIT, endpoint_rx).await {
            Ok(Ok(Ok(endpoint))) => endpoint,
            Ok(Ok(Err(why))) => {
                stop.cancel();
                return Err(LegacySseError::Protocol(why));
            }
            Ok(Err(_)) => {
                return Err(LegacySseError::Protocol(
                    "the event stream ended before the server named its endpoint".to_owned(),
                ));
            }
            Err(_) => {
                stop.cancel();
                return Err(LegacySseError::Protocol(format!(
                    "the server named no endpoint within {}s of opening the event stream",
                    ENDPOINT_WAIT.as_secs()
                )));
            }
        };
        Ok(LegacySse {
            poster,
            endpoint,
            incoming,
            stop,
        })
    }
}

impl Transport<RoleClient> for LegacySse {
    type Error = LegacySseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let poster = self.poster.clone();
        let endpoint = self.endpoint.clone();
        let stopped = self.stop.is_cancelled();
        async move {
            if stopped {
                return Err(LegacySseError::Closed);
            }
            let body =
                serde_json::to_vec(&item).map_err(|e| LegacySseError::Protocol(e.to_string()))?;
            poster
                .send(|| {
                    poster
                        .http
                        .post(endpoint.clone())
                        .header(reqwest::header::CONTENT_TYPE, "application/json")
                        .body(body.clone())
                })
                .await
                .map(drop)
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.stop.cancel();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_stays_on_the_stream_origin() {
        let base = url::Url::parse("http://127.0.0.1:3001/sse").unwrap();
        let check = |data: &str, expected: Result<&str, &str>| {
            let got = endpoint_of(&base, data);
            match expected {
                Ok(url) => assert_eq!(got.map(|u| u.to_string()).as_deref(), Ok(url), "{data}"),
                Err(part) => {
                    let err = got.err().unwrap_or_default();
                    assert!(err.contains(part), "{data}: {err}");
                }
            }
        };
        check(
            "/message?sessionId=abc",
            Ok("http://127.0.0.1:3001/message?sessionId=abc"),
        );
        check(
            "messages/?session_id=1",
            Ok("http://127.0.0.1:3001/messages/?session_id=1"),
        );
        check("http://127.0.0.1:3001/m", Ok("http://127.0.0.1:3001/m"));
        for elsewhere in [
            "http://evil.example/m",
            "https://127.0.0.1:3001/m",
            "http://127.0.0.1:3002/m",
            "//evil.example/m",
            "http://localhost:3001/m",
        ] {
            check(elsewhere, Err("on another origin"));
        }
    }
}
