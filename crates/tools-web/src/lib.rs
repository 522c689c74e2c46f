//! Web tools for agent-tools: [`WebFetch`] and [`WebSearch`], safe by construction.
//!
//! # Overview
//!
//! - [`WebFetch`] fetches a URL and returns Markdown (HTML, through readability with the
//!   whole page as the fallback), text (other text types, decoded from their charset), or a
//!   note with the path of the saved file (binary bodies). When the host puts a
//!   [`tool_core::Summariser`] in the context's services (`Arc<dyn Summariser>`), the
//!   prompt is applied to the content by it; otherwise the content comes back with a note
//!   that no summariser ran.
//! - [`WebSearch`] asks a [`SearchProvider`] — [`Searxng`] (a SearXNG instance's JSON API),
//!   [`Brave`] (the Brave Search API), or one the host puts in the services as
//!   `Arc<dyn SearchProvider>` — and lists titles and URLs, filtered by domain.
//! - [`tools`] returns both, ready for a pool.
//!
//! # Safety
//!
//! Every fetch goes through the SSRF guard (`guard.rs`): IP-literal hosts are
//! checked before anything happens (the WHATWG parser has already turned `2130706433`,
//! `0x7f.1` and `[::ffff:127.0.0.1]` into the loopback addresses they are), and names are
//! resolved by a reqwest resolver that checks *every* address and hands reqwest only the
//! checked ones, so the connection goes to a vetted address and a second, rebinding lookup
//! never happens. No proxy is used (a proxy would resolve names out of the guard's sight).
//! Redirects are followed by hand, at most 10, only on the same host (± `www.`), scheme and
//! port, each hop checked again; other redirects are handed back to the model, as the
//! reference does. Only `http` and `https`; no credentials in URLs; URLs of at most 2,000
//! characters; http upgraded to https. Bodies: 10 MB of *decoded* bytes read while
//! streaming (a gzip bomb stops there), a 60 s total deadline, a connect limit and an
//! idle-read limit; content truncated at 100,000 characters. HTML is converted on a thread
//! with a 64 MB stack, and a page nesting elements more than 400 deep becomes plain text
//! (the converters recurse; a hostile page could otherwise overflow the stack). Pages are
//! cached per session for 15 minutes (50 MB, least recently used out).
//!
//! # Permissions
//!
//! WebFetch: `WebFetch(domain:host)` rules (deny, then ask, then allow; `domain:*.host` for
//! subdomains), then the reference's preapproved documentation hosts, otherwise ask with a
//! suggested `WebFetch(domain:host)` rule. A deny or ask rule also applies to preapproved
//! hosts (the reference lets the list win). WebSearch asks unless a `WebSearch` rule allows it.
//!
//! # Settings
//!
//! Read from the `webFetch` and `webSearch` sections of the settings files (later files
//! override earlier ones key by key):
//!
//! ```json
//! {
//!   "webFetch": {
//!     "allowHttpHosts": ["localhost"],
//!     "allowPrivateHosts": ["localhost", "10.0.0.5"],
//!     "timeoutSeconds": 60,
//!     "connectTimeoutSeconds": 10,
//!     "readTimeoutSeconds": 20
//!   },
//!   "webSearch": {
//!     "provider": "searxng",
//!     "searxngUrl": "http://localhost:8888",
//!     "braveApiKeyEnv": "BRAVE_API_KEY",
//!     "braveUrl": "https://api.search.brave.com/res/v1/web/search",
//!     "maxResults": 10,
//!     "timeoutSeconds": 30
//!   }
//! }
//! ```
//!
//! - `webFetch.allowHttpHosts`: hosts fetched over plain http (others are upgraded).
//! - `webFetch.allowPrivateHosts`: hosts exempt from the SSRF guard (a name, or an address
//!   as written in URLs); single-label names listed here are accepted too.
//! - `webFetch.*Seconds`: the total, connect and idle-read limits.
//! - `webSearch.provider`: `searxng` or `brave`; when absent, SearXNG if `searxngUrl` is
//!   set, else Brave if its key variable is set, else a provider the host supplies.
//! - `webSearch.searxngUrl`: the instance (its `search.formats` must include `json`).
//! - `webSearch.braveApiKeyEnv`: the name of the environment variable that holds the Brave
//!   key (default `BRAVE_API_KEY`); the key itself never goes in a settings file.
//! - `webSearch.braveUrl`: the endpoint (for proxies and tests).
//! - `webSearch.maxResults` (1–20, default 10) and `webSearch.timeoutSeconds` (default 30).
//!
//! Search providers are configured by the user and are not behind the SSRF guard: a
//! self-hosted SearXNG on localhost is the common case.
//!
//! # Example
//!
//! ```
//! use serde_json::json;
//! use tool_core::{ToolContext, ToolPool};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let ctx = ToolContext::builder(std::env::temp_dir()).build();
//! let pool = ToolPool::new(tools_web::tools());
//! // The guard refuses loopback addresses in every spelling, before any connection.
//! let result = pool
//!     .call("WebFetch", json!({"url": "http://0x7f.1:8080/", "prompt": "summarise"}), &ctx)
//!     .await;
//! assert!(result.is_error);
//! assert!(result.text().contains("127.0.0.1 is a loopback address"));
//! # }
//! ```

mod cache;
mod convert;
mod fetch;
mod guard;
mod preapproved;
mod providers;
mod settings;
mod web_fetch;
mod web_search;

use std::sync::Arc;

pub use cache::{CachedPage, FetchCache};
pub use convert::{MAX_CONTENT_CHARS, MAX_NESTING, TRUNCATION_MARKER};
pub use fetch::{MAX_BODY_BYTES, MAX_REDIRECTS, MAX_URL_CHARS};
pub use guard::{Blocked, HostLookup, SystemLookup};
pub use preapproved::{PREAPPROVED, is_preapproved};
pub use providers::{
    BRAVE_ENDPOINT, Brave, DEFAULT_BRAVE_KEY_ENV, NOT_CONFIGURED, SearchHit, SearchProvider,
    Searxng,
};
pub use settings::{FetchSettings, SearchSettings};
pub use web_fetch::{WebFetch, WebFetchInput, WebFetchOutput};
pub use web_search::{WebSearch, WebSearchInput, WebSearchOutput};

/// What a host gives the web tools; every part is optional.
#[derive(Clone, Default)]
pub struct WebServices {
    /// Where WebSearch searches (else the settings' `webSearch` section, else it refuses)
    pub search: Option<Arc<dyn SearchProvider>>,
    /// What applies WebFetch's prompt to a page (else the page comes back with a note)
    pub summariser: Option<Arc<dyn tool_core::Summariser>>,
    /// How WebFetch resolves host names (else the system resolver)
    pub lookup: Option<Arc<dyn HostLookup>>,
}

/// Wires the web tools' services into a session being built, each under the type the tools
/// read, so none can be installed under a type nothing reads.
///
/// ```
/// use std::sync::Arc;
/// let dir = tempfile::tempdir()?;
/// let searxng = tools_web::Searxng::new("http://127.0.0.1:8888", std::time::Duration::from_secs(10))?;
/// let search: Arc<dyn tools_web::SearchProvider> = Arc::new(searxng);
/// let services = tools_web::WebServices { search: Some(search), ..Default::default() };
/// let ctx = tools_web::install(tool_core::ToolContext::builder(dir.path()), services).build();
/// assert!(ctx.services().get::<Arc<dyn tools_web::SearchProvider>>().is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn install(
    mut builder: tool_core::ToolContextBuilder,
    services: WebServices,
) -> tool_core::ToolContextBuilder {
    if let Some(search) = services.search {
        builder = builder.service(search);
    }
    if let Some(summariser) = services.summariser {
        builder = builder.service(summariser);
    }
    if let Some(lookup) = services.lookup {
        builder = builder.service(lookup);
    }
    builder
}

/// Every tool of this crate, ready for a pool.
pub fn tools() -> Vec<Arc<dyn tool_core::Tool>> {
    vec![
        Arc::new(tool_core::Typed::new(WebFetch)),
        Arc::new(tool_core::Typed::new(WebSearch)),
    ]
}
