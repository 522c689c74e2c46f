//! WebSearch against in-process servers that answer in SearXNG's and Brave's real JSON
//! formats: requests, parsing, domain filters, provider errors, configuration errors,
//! validation and permissions.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{PermissionMode, RuleBehavior, ToolError};
use tools_web::{NOT_CONFIGURED, SearchHit, SearchProvider};

use crate::Session;
use crate::server::{Reply, Server};

/// A SearXNG `/search?format=json` answer, trimmed from a real instance's.
fn searxng_answer(query: &str) -> Value {
    json!({
        "query": query,
        "number_of_results": 0,
        "results": [
            {
                "url": "https://tokio.rs/",
                "title": "Tokio - An asynchronous Rust runtime",
                "content": "Tokio is an event-driven, non-blocking I/O platform for writing asynchronous applications with the Rust programming language.",
                "engine": "duckduckgo",
                "parsed_url": ["https", "tokio.rs", "/", "", "", ""],
                "template": "default.html",
                "engines": ["duckduckgo", "brave"],
                "positions": [1, 1],
                "publishedDate": null,
                "thumbnail": "",
                "score": 4.0,
                "category": "general",
                "priority": ""
            },
            {
                "url": "https://docs.rs/tokio/latest/tokio/",
                "title": "tokio - Rust",
                "content": "A runtime for writing reliable network applications without compromising speed.",
                "engine": "google",
                "parsed_url": ["https", "docs.rs", "/tokio/latest/tokio/", "", "", ""],
                "template": "default.html",
                "engines": ["google"],
                "positions": [2],
                "publishedDate": null,
                "score": 0.5,
                "category": "general"
            },
            {
                "url": "https://github.com/smol-rs/smol",
                "title": "GitHub - smol-rs/smol: A small and fast async runtime for Rust",
                "content": "",
                "engine": "bing",
                "parsed_url": ["https", "github.com", "/smol-rs/smol", "", "", ""],
                "template": "default.html",
                "engines": ["bing"],
                "positions": [3],
                "score": 0.33,
                "category": "general"
            }
        ],
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": ["rust async runtime comparison"],
        "unresponsive_engines": [["wikidata", "timeout"]]
    })
}

/// A Brave `/res/v1/web/search` answer, trimmed from the API's documented shape.
fn brave_answer(query: &str) -> Value {
    json!({
        "query": {
            "original": query,
            "show_strict_warning": false,
            "is_navigational": false,
            "is_news_breaking": false,
            "spellcheck_off": true,
            "country": "us",
            "bad_results": false,
            "should_fallback": false,
            "postal_code": "",
            "city": "",
            "header_country": "",
            "more_results_available": true,
            "state": ""
        },
        "mixed": {
            "type": "mixed",
            "main": [{"type": "web", "index": 0, "all": false}, {"type": "web", "index": 1, "all": false}],
            "top": [],
            "side": []
        },
        "type": "search",
        "web": {
            "type": "search",
            "results": [
                {
                    "title": "<strong>Tokio</strong> - An asynchronous <strong>Rust</strong> runtime",
                    "url": "https://tokio.rs/",
                    "is_source_local": false,
                    "is_source_both": false,
                    "description": "Tokio is an asynchronous <strong>runtime</strong> for the <strong>Rust</strong> programming language &amp; more.",
                    "page_age": "2025-01-10T00:00:00",
                    "profile": {"name": "Tokio", "url": "https://tokio.rs/", "long_name": "tokio.rs", "img": "https://imgs.search.brave.com/x"},
                    "language": "en",
                    "family_friendly": true,
                    "type": "search_result",
                    "subtype": "generic",
                    "is_live": false,
                    "meta_url": {"scheme": "https", "netloc": "tokio.rs", "hostname": "tokio.rs", "favicon": "https://imgs.search.brave.com/y", "path": ""},
                    "age": "January 10, 2025"
                },
                {
                    "title": "GitHub - smol-rs/smol",
                    "url": "https://github.com/smol-rs/smol",
                    "is_source_local": false,
                    "is_source_both": false,
                    "description": "A small and fast <strong>async</strong> runtime.",
                    "language": "en",
                    "family_friendly": true,
                    "type": "search_result",
                    "subtype": "generic",
                    "meta_url": {"scheme": "https", "netloc": "github.com", "hostname": "github.com", "favicon": "", "path": "› smol-rs › smol"}
                }
            ],
            "family_friendly": true
        }
    })
}

/// The query parameter `name` of a request path, decoded.
fn param(path: &str, name: &str) -> Option<String> {
    let url = url::Url::parse(&format!("http://x{path}")).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

async fn searxng_server() -> Server {
    Server::start(|r| {
        let q = param(&r.path, "q").unwrap_or_default();
        if param(&r.path, "format").as_deref() != Some("json") {
            return Reply::status(403, "text/html", "<h1>403 Forbidden</h1>");
        }
        Reply::ok("application/json", searxng_answer(&q).to_string())
    })
    .await
}

fn searxng_session(server: &Server) -> Session {
    Session::new(json!({"webSearch": {"provider": "searxng", "searxngUrl": server.url("/")}}))
}

#[tokio::test]
async fn searxng_results_are_listed_with_a_reminder() {
    let server = searxng_server().await;
    let result = searxng_session(&server)
        .call("WebSearch", json!({"query": "rust async runtime"}))
        .await;
    assert!(!result.is_error, "{result:#?}");
    let request = &server.requests()[0];
    assert!(request.path.starts_with("/search?"), "{}", request.path);
    assert_eq!(
        param(&request.path, "q").as_deref(),
        Some("rust async runtime")
    );
    insta::assert_snapshot!(result.text());
    assert_eq!(result.data["provider"], "searxng");
    assert_eq!(result.data["results"].as_array().unwrap().len(), 3);
    assert_eq!(result.data["results"][2].get("snippet"), None);
}

#[tokio::test]
async fn searxng_results_are_filtered_by_domain() {
    let server = searxng_server().await;
    let session = searxng_session(&server);
    let allowed = session
        .call(
            "WebSearch",
            json!({"query": "tokio", "allowed_domains": ["docs.rs"]}),
        )
        .await;
    let urls: Vec<&str> = allowed.data["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["url"].as_str().unwrap())
        .collect();
    assert_eq!(urls, ["https://docs.rs/tokio/latest/tokio/"]);
    let blocked = session
        .call(
            "WebSearch",
            json!({"query": "tokio", "blocked_domains": ["https://github.com", "tokio.rs"]}),
        )
        .await;
    assert_eq!(blocked.data["results"].as_array().unwrap().len(), 1);
    let none = session
        .call(
            "WebSearch",
            json!({"query": "tokio", "allowed_domains": ["example.org"]}),
        )
        .await;
    assert!(
        none.text()
            .contains("No results found after applying the domain filters"),
        "{}",
        none.text()
    );
}

#[tokio::test]
async fn searxng_without_the_json_format_says_how_to_enable_it() {
    let server = Server::start(|_| Reply::status(403, "text/html", "<h1>403 Forbidden</h1>")).await;
    let result = searxng_session(&server)
        .call("WebSearch", json!({"query": "tokio"}))
        .await;
    assert!(result.is_error);
    assert!(
        result
            .text()
            .contains("add `json` to `search.formats` in its settings.yml"),
        "{}",
        result.text()
    );
}

/// The name of an environment variable every test process has, standing in for the key
/// (tests cannot set variables: `set_var` is unsafe and the workspace forbids unsafe code).
const KEY_VAR: &str = "CARGO_MANIFEST_DIR";

fn key() -> String {
    std::env::var(KEY_VAR).unwrap()
}

async fn brave_server() -> Server {
    let expected = key();
    Server::start(move |r| {
        if r.header("x-subscription-token") != Some(expected.as_str()) {
            return Reply::status(
                401,
                "application/json",
                json!({"type": "ErrorResponse", "error": {"id": "x", "status": 401, "code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The provided subscription token is invalid."}, "time": 1}).to_string(),
            );
        }
        let q = param(&r.path, "q").unwrap_or_default();
        Reply::ok("application/json", brave_answer(&q).to_string())
    })
    .await
}

fn brave_session(server: &Server, var: &str) -> Session {
    Session::new(json!({"webSearch": {
        "provider": "brave",
        "braveApiKeyEnv": var,
        "braveUrl": server.url("/res/v1/web/search"),
        "maxResults": 5
    }}))
}

#[tokio::test]
async fn brave_results_are_listed_as_plain_text() {
    let server = brave_server().await;
    let result = brave_session(&server, KEY_VAR)
        .call("WebSearch", json!({"query": "rust async runtime"}))
        .await;
    assert!(!result.is_error, "{result:#?}");
    let request = &server.requests()[0];
    assert!(
        request.path.starts_with("/res/v1/web/search?"),
        "{}",
        request.path
    );
    assert_eq!(
        param(&request.path, "q").as_deref(),
        Some("rust async runtime")
    );
    assert_eq!(param(&request.path, "count").as_deref(), Some("5"));
    assert_eq!(request.header("accept"), Some("application/json"));
    insta::assert_snapshot!(result.text());
    assert_eq!(result.data["provider"], "brave");
}

#[tokio::test]
async fn brave_blocked_domains_drop_results() {
    let server = brave_server().await;
    let result = brave_session(&server, KEY_VAR)
        .call(
            "WebSearch",
            json!({"query": "async", "blocked_domains": ["github.com"]}),
        )
        .await;
    let urls: Vec<&str> = result.data["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["url"].as_str().unwrap())
        .collect();
    assert_eq!(urls, ["https://tokio.rs/"]);
}

#[tokio::test]
async fn brave_key_problems_are_explained() {
    let server = brave_server().await;
    // A key the API refuses.
    let refused = brave_session(&server, "PATH")
        .call("WebSearch", json!({"query": "tokio"}))
        .await;
    assert!(refused.is_error);
    assert!(
        refused
            .text()
            .contains("the Brave Search API refused the API key (401 Unauthorized)"),
        "{}",
        refused.text()
    );
    // No key at all.
    let missing = brave_session(&server, "AGENT_TOOLS_TEST_NO_SUCH_VARIABLE_7F3A")
        .call("WebSearch", json!({"query": "tokio"}))
        .await;
    assert!(missing.is_error);
    assert!(missing.text().contains("the environment variable AGENT_TOOLS_TEST_NO_SUCH_VARIABLE_7F3A (named by webSearch.braveApiKeyEnv) is not set"), "{}", missing.text());
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn without_a_provider_the_error_says_how_to_configure_one() {
    let result = Session::new(json!({}))
        .call("WebSearch", json!({"query": "tokio"}))
        .await;
    assert!(result.is_error);
    assert!(result.text().contains(NOT_CONFIGURED), "{}", result.text());
    let unknown = Session::new(json!({"webSearch": {"provider": "bing"}}))
        .call("WebSearch", json!({"query": "tokio"}))
        .await;
    assert!(
        unknown
            .text()
            .contains("webSearch.provider \"bing\" is not known"),
        "{}",
        unknown.text()
    );
    let no_url = Session::new(json!({"webSearch": {"provider": "searxng"}}))
        .call("WebSearch", json!({"query": "tokio"}))
        .await;
    assert!(
        no_url.text().contains("webSearch.searxngUrl is not set"),
        "{}",
        no_url.text()
    );
}

struct Fixed;

#[async_trait]
impl SearchProvider for Fixed {
    fn name(&self) -> &str {
        "host"
    }
    async fn search(&self, query: &str, max_results: usize) -> Result<Vec<SearchHit>, ToolError> {
        Ok(vec![SearchHit {
            title: format!("About {query} [{max_results}]"),
            url: "https://example.com/a".to_owned(),
            snippet: Some("  spaced \n  out  ".to_owned()),
        }])
    }
}

#[tokio::test]
async fn a_host_provider_is_used_when_the_settings_name_none() {
    let provider: Arc<dyn SearchProvider> = Arc::new(Fixed);
    let session = Session::build(json!({}), PermissionMode::BypassPermissions, &[], |b| {
        b.service(provider)
    });
    let result = session.call("WebSearch", json!({"query": "tokio"})).await;
    assert!(!result.is_error, "{result:#?}");
    assert!(
        result
            .text()
            .contains("1. [About tokio 10](https://example.com/a)\n   spaced out\n"),
        "{}",
        result.text()
    );
    assert_eq!(result.data["provider"], "host");
}

#[tokio::test]
async fn invalid_input_is_refused_with_the_reference_messages() {
    let session = Session::new(json!({}));
    for (input, message) in [
        (json!({"query": "  "}), "Error: Missing query"),
        (
            json!({"query": "x"}),
            "The parameter `query` must be at least 2 character(s) long",
        ),
        (
            json!({"query": " x "}),
            "Error: The query must be at least 2 characters long",
        ),
        (
            json!({"query": "tokio", "allowed_domains": ["a.com"], "blocked_domains": ["b.com"]}),
            "Error: Cannot specify both allowed_domains and blocked_domains in the same request",
        ),
    ] {
        let result = session.call("WebSearch", input).await;
        assert!(result.is_error);
        assert!(result.text().contains(message), "{}", result.text());
    }
}

#[tokio::test]
async fn websearch_asks_unless_a_rule_allows_it() {
    let server = searxng_server().await;
    let settings = json!({"webSearch": {"searxngUrl": server.url("")}});
    let default = Session::with(settings.clone(), PermissionMode::Default, &[]);
    let denied = default.call("WebSearch", json!({"query": "tokio"})).await;
    assert!(denied.is_error);
    assert!(
        denied.text().contains("the allow rule \"WebSearch\""),
        "{}",
        denied.text()
    );
    assert_eq!(server.hits(), 0);
    let allowed = Session::with(
        settings,
        PermissionMode::Default,
        &[(RuleBehavior::Allow, "WebSearch")],
    );
    let result = allowed.call("WebSearch", json!({"query": "tokio"})).await;
    assert!(!result.is_error, "{result:#?}");
    assert_eq!(server.hits(), 1);
}
