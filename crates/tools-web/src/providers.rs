//! Search providers: the trait WebSearch calls, SearXNG's JSON API and the Brave Search API,
//! and the choice of provider from the settings.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::StatusCode;
use reqwest::header::ACCEPT;
use serde::Serialize;
use serde_json::Value;
use tool_core::{ToolContext, ToolError};
use url::Url;

use crate::fetch::chain;
use crate::settings::SearchSettings;

/// The most bytes of a provider's response read.
const MAX_RESPONSE_BYTES: usize = 5 * 1024 * 1024;
/// The environment variable holding the Brave key when the settings name none.
pub const DEFAULT_BRAVE_KEY_ENV: &str = "BRAVE_API_KEY";
/// The public Brave web-search endpoint.
pub const BRAVE_ENDPOINT: &str = "https://api.search.brave.com/res/v1/web/search";

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchHit {
    /// The page title
    pub title: String,
    /// The page URL
    pub url: String,
    /// A short extract, when the provider gives one
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
}

/// A search engine WebSearch can ask. Hosts may provide their own as
/// `Arc<dyn SearchProvider>` in the context's services.
#[async_trait]
pub trait SearchProvider: Send + Sync {
    /// The name shown in results (`searxng`, `brave`, ...).
    fn name(&self) -> &str;
    /// Up to `max_results` results for `query`, best first. Errors say what to fix.
    async fn search(&self, query: &str, max_results: usize) -> Result<Vec<SearchHit>, ToolError>;
}
impl tool_core::ServiceType for dyn SearchProvider {}

fn http_client(timeout: Duration) -> Result<reqwest::Client, ToolError> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!(
            "agent-tools/",
            env!("CARGO_PKG_VERSION"),
            " (WebSearch)"
        ))
        .build()
        .map_err(|e| ToolError::fatal(format!("could not build the HTTP client: {}", chain(&e))))
}

/// Sends `request` and reads at most [`MAX_RESPONSE_BYTES`] of JSON.
async fn get_json(
    provider: &str,
    request: reqwest::RequestBuilder,
) -> Result<(StatusCode, Value), ToolError> {
    let mut response = request
        .send()
        .await
        .map_err(|e| ToolError::fatal(format!("{provider} search failed: {}", chain(&e))))?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ToolError::fatal(format!("{provider} search failed: {}", chain(&e))))?
    {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(ToolError::fatal(format!(
                "{provider} answered with more than {}; refusing to read it",
                tool_core::format_size(MAX_RESPONSE_BYTES)
            )));
        }
        body.extend_from_slice(&chunk);
    }
    let value = if status.is_success() {
        serde_json::from_slice(&body).map_err(|e| {
            ToolError::fatal(format!(
                "{provider} did not answer with the expected JSON ({e})"
            ))
        })?
    } else {
        serde_json::from_slice(&body).unwrap_or(Value::Null)
    };
    Ok((status, value))
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// A SearXNG instance, through its JSON API (`/search?q=...&format=json`).
#[derive(Debug, Clone)]
pub struct Searxng {
    search_url: Url,
    client: reqwest::Client,
}

impl Searxng {
    /// The instance at `base` (its root, or its `/search` endpoint).
    pub fn new(base: &str, timeout: Duration) -> Result<Self, ToolError> {
        let mut url = Url::parse(base).map_err(|e| {
            ToolError::respond(format!(
                "webSearch.searxngUrl \"{base}\" is not a valid URL ({e})"
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::respond(format!(
                "webSearch.searxngUrl \"{base}\" must be an http or https URL"
            )));
        }
        if !url.path().trim_end_matches('/').ends_with("/search") {
            let path = format!("{}/search", url.path().trim_end_matches('/'));
            url.set_path(&path);
        }
        url.set_query(None);
        Ok(Searxng {
            search_url: url,
            client: http_client(timeout)?,
        })
    }
}

#[async_trait]
impl SearchProvider for Searxng {
    fn name(&self) -> &str {
        "searxng"
    }

    async fn search(&self, query: &str, max_results: usize) -> Result<Vec<SearchHit>, ToolError> {
        let mut url = self.search_url.clone();
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json")
            .append_pair("pageno", "1");
        let request = self.client.get(url).header(ACCEPT, "application/json");
        let (status, body) = get_json("SearXNG", request).await?;
        if status == StatusCode::FORBIDDEN {
            return Err(ToolError::fatal(format!(
                "the SearXNG instance at {} refused the JSON API (403 Forbidden): add `json` to `search.formats` in its settings.yml",
                self.search_url
            )));
        }
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Err(ToolError::fatal(
                "the SearXNG instance is rate-limiting requests (429 Too Many Requests); try again later",
            ));
        }
        if !status.is_success() {
            return Err(ToolError::fatal(format!(
                "the SearXNG instance at {} answered {status}",
                self.search_url
            )));
        }
        let results = body
            .get("results")
            .and_then(Value::as_array)
            .ok_or_else(|| ToolError::fatal("SearXNG's answer has no `results` list"))?;
        Ok(results
            .iter()
            .filter_map(|r| {
                Some(SearchHit {
                    url: str_field(r, "url")?,
                    title: str_field(r, "title").unwrap_or_else(|| "(untitled)".to_owned()),
                    snippet: str_field(r, "content"),
                })
            })
            .take(max_results)
            .collect())
    }
}

/// The Brave Search API (`/res/v1/web/search`, key in `X-Subscription-Token`).
#[derive(Clone)]
pub struct Brave {
    endpoint: Url,
    key: String,
    client: reqwest::Client,
}

impl std::fmt::Debug for Brave {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Brave")
            .field("endpoint", &self.endpoint.as_str())
            .finish_non_exhaustive()
    }
}

impl Brave {
    /// The API at `endpoint` with `key`.
    pub fn new(endpoint: &str, key: String, timeout: Duration) -> Result<Self, ToolError> {
        let endpoint = Url::parse(endpoint).map_err(|e| {
            ToolError::respond(format!(
                "webSearch.braveUrl \"{endpoint}\" is not a valid URL ({e})"
            ))
        })?;
        Ok(Brave {
            endpoint,
            key,
            client: http_client(timeout)?,
        })
    }
}

/// Brave marks matches with `<strong>` and escapes entities; the model gets plain text.
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
}

#[async_trait]
impl SearchProvider for Brave {
    fn name(&self) -> &str {
        "brave"
    }

    async fn search(&self, query: &str, max_results: usize) -> Result<Vec<SearchHit>, ToolError> {
        let count = max_results.clamp(1, 20).to_string();
        let mut url = self.endpoint.clone();
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("count", &count);
        let request = self
            .client
            .get(url)
            .header(ACCEPT, "application/json")
            .header("X-Subscription-Token", &self.key);
        let (status, body) = get_json("Brave Search", request).await?;
        match status {
            s if s.is_success() => {}
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                return Err(ToolError::fatal(format!(
                    "the Brave Search API refused the API key ({status}); check the key in the environment variable named by webSearch.braveApiKeyEnv"
                )));
            }
            StatusCode::TOO_MANY_REQUESTS => {
                return Err(ToolError::fatal(
                    "the Brave Search API rate limit was reached (429 Too Many Requests); try again later",
                ));
            }
            _ => {
                let detail = body
                    .pointer("/error/detail")
                    .and_then(Value::as_str)
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default();
                return Err(ToolError::fatal(format!(
                    "the Brave Search API answered {status}{detail}"
                )));
            }
        }
        let results = match body.pointer("/web/results") {
            Some(Value::Array(r)) => r.as_slice(),
            // No `web` section: Brave found nothing.
            _ => &[],
        };
        Ok(results
            .iter()
            .filter_map(|r| {
                Some(SearchHit {
                    url: str_field(r, "url")?,
                    title: str_field(r, "title")
                        .map(|t| plain(&t))
                        .unwrap_or_else(|| "(untitled)".to_owned()),
                    snippet: str_field(r, "description").map(|d| plain(&d)),
                })
            })
            .take(max_results)
            .collect())
    }
}

/// The message when nothing is configured: it says how to configure a provider.
pub const NOT_CONFIGURED: &str = "WebSearch has no search provider configured. Add one to the \"webSearch\" section of a settings file (~/.agent-tools/settings.json or .agent-tools/settings.json):
- SearXNG (self-hosted or a public instance with the JSON format enabled): {\"webSearch\": {\"provider\": \"searxng\", \"searxngUrl\": \"http://localhost:8888\"}}
- Brave Search API: {\"webSearch\": {\"provider\": \"brave\", \"braveApiKeyEnv\": \"BRAVE_API_KEY\"}}, with the key in that environment variable.";

fn brave_from(settings: &SearchSettings) -> Result<Arc<dyn SearchProvider>, ToolError> {
    let var = settings
        .brave_api_key_env
        .clone()
        .unwrap_or_else(|| DEFAULT_BRAVE_KEY_ENV.to_owned());
    let key = std::env::var(&var)
        .ok()
        .filter(|k| !k.trim().is_empty())
        .ok_or_else(|| {
            ToolError::respond(format!(
                "WebSearch is configured to use the Brave Search API, but the environment variable {var} (named by webSearch.braveApiKeyEnv) is not set. Set it to a Brave Search API key, or configure SearXNG instead."
            ))
        })?;
    let endpoint = settings.brave_url.as_deref().unwrap_or(BRAVE_ENDPOINT);
    Ok(Arc::new(Brave::new(
        endpoint,
        key.trim().to_owned(),
        settings.timeout,
    )?))
}

fn searxng_from(settings: &SearchSettings) -> Result<Arc<dyn SearchProvider>, ToolError> {
    let url = settings.searxng_url.as_deref().ok_or_else(|| {
        ToolError::respond(
            "webSearch.provider is \"searxng\" but webSearch.searxngUrl is not set: give the URL of the instance, such as \"http://localhost:8888\".",
        )
    })?;
    Ok(Arc::new(Searxng::new(url, settings.timeout)?))
}

/// The provider for this session: `webSearch.provider` when set; else one the host put in
/// the services; else SearXNG when `searxngUrl` is set; else Brave when `braveApiKeyEnv` is
/// set; else an error that says how to configure one.
pub fn provider_for(
    ctx: &ToolContext,
    settings: &SearchSettings,
) -> Result<Arc<dyn SearchProvider>, ToolError> {
    match settings.provider.as_deref() {
        Some("searxng") => return searxng_from(settings),
        Some("brave") => return brave_from(settings),
        Some(other) => {
            return Err(ToolError::respond(format!(
                "webSearch.provider \"{other}\" is not known: use \"searxng\" or \"brave\"."
            )));
        }
        None => {}
    }
    if let Some(host) = ctx.services().get::<Arc<dyn SearchProvider>>() {
        return Ok(host);
    }
    if settings.searxng_url.is_some() {
        return searxng_from(settings);
    }
    if settings.brave_api_key_env.is_some() {
        return brave_from(settings);
    }
    Err(ToolError::respond(NOT_CONFIGURED))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brave_markup_becomes_plain_text() {
        assert_eq!(
            plain("The <strong>Rust</strong> book &amp; more &lt;3 &#39;x&#39;"),
            "The Rust book & more <3 'x'"
        );
    }

    #[test]
    fn searxng_urls_point_at_the_search_endpoint() {
        for (base, expected) in [
            ("http://localhost:8888", "http://localhost:8888/search"),
            ("http://localhost:8888/", "http://localhost:8888/search"),
            (
                "https://example.org/searx",
                "https://example.org/searx/search",
            ),
            (
                "https://example.org/search?q=x",
                "https://example.org/search",
            ),
        ] {
            let s = Searxng::new(base, Duration::from_secs(1)).unwrap();
            assert_eq!(s.search_url.as_str(), expected);
        }
        assert!(Searxng::new("ftp://x", Duration::from_secs(1)).is_err());
        assert!(Searxng::new("not a url", Duration::from_secs(1)).is_err());
    }
}
