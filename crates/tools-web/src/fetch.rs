//! The guarded HTTP fetch: URL checks, the SSRF-guarded client, manual redirects (same host
//! followed, other hosts handed back), and a body read under a byte cap, an idle-read limit
//! and a total deadline.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use tokio::time::Instant;
use tool_core::{CancellationToken, ToolError};
use url::Url;

use crate::guard::{
    Blocked, Exemptions, GuardResolver, HostLookup, check_remote, check_url_host, find_blocked,
    normalize_host,
};
use crate::settings::FetchSettings;

/// The most decoded body bytes read (so a gzip bomb stops here too).
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
/// The most redirects followed.
pub const MAX_REDIRECTS: usize = 10;
/// The longest URL accepted.
pub const MAX_URL_CHARS: usize = 2000;

const TOOL: &str = "WebFetch";
const USER_AGENT: &str = concat!("agent-tools/", env!("CARGO_PKG_VERSION"), " (WebFetch)");

/// A fetched page.
#[derive(Debug, Clone)]
pub struct Page {
    /// The URL the body came from (after same-host redirects)
    pub url: Url,
    /// The response status
    pub status: StatusCode,
    /// The `Content-Type` header
    pub content_type: Option<String>,
    /// The decoded body, at most [`MAX_BODY_BYTES`]
    pub body: Vec<u8>,
    /// Whether the body was longer than the cap and cut
    pub truncated: bool,
}

/// What a fetch ends with.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// A response that is not a followed redirect
    Page(Page),
    /// A redirect the fetch does not follow (another host, scheme or port): the model decides
    Redirect {
        /// The URL that answered with the redirect
        from: Url,
        /// Where it points
        to: Url,
        /// The redirect status
        status: StatusCode,
    },
}

/// Parses and checks a URL from the model, upgrading http to https unless the host may use
/// plain http. The message of an error is what the model reads.
pub fn prepare_url(raw: &str, settings: &FetchSettings) -> Result<Url, String> {
    let raw = raw.trim();
    if raw.chars().count() > MAX_URL_CHARS {
        return Err(format!(
            "The URL is {} characters long; WebFetch accepts URLs of at most {MAX_URL_CHARS} characters.",
            raw.chars().count()
        ));
    }
    let mut url = Url::parse(raw)
        .map_err(|_| format!("Invalid URL \"{raw}\". The URL provided could not be parsed."))?;
    check_scheme_and_credentials(&url)?;
    let host = url.host_str().map(normalize_host).unwrap_or_default();
    if host.is_empty() {
        return Err(format!("Invalid URL \"{raw}\": it has no host name."));
    }
    let exempt = Exemptions::new(&settings.allow_private_hosts);
    let is_name = matches!(url.host(), Some(url::Host::Domain(_)));
    if is_name && !host.contains('.') && host != "localhost" && !exempt.contains(&host) {
        return Err(format!(
            "Invalid URL \"{raw}\": the host name \"{host}\" has a single label; WebFetch fetches public hosts such as example.com."
        ));
    }
    if url.scheme() == "http"
        && !settings
            .allow_http_hosts
            .iter()
            .any(|h| normalize_host(h) == host)
    {
        // Infallible for http -> https.
        let _ = url.set_scheme("https");
    }
    Ok(url)
}

fn check_scheme_and_credentials(url: &Url) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "WebFetch only fetches http and https URLs; \"{}:\" URLs are refused.",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "URLs with credentials (user:password@host) are refused; remove them from the URL."
                .to_owned(),
        );
    }
    Ok(())
}

/// The refusal the model reads when the guard stops a fetch.
pub fn refusal(blocked: &Blocked) -> ToolError {
    ToolError::respond(format!(
        "Refusing to fetch: {blocked}. WebFetch connects only to public internet addresses (this guards against requests to local services and cloud metadata). If this host is yours and trusted, add it to \"webFetch\": {{\"allowPrivateHosts\": [...]}} in the settings."
    ))
}

/// Hosts equal modulo a leading `www.`.
fn same_site(a: &str, b: &str) -> bool {
    let strip = |h: &str| {
        let h = normalize_host(h);
        h.strip_prefix("www.").map(str::to_owned).unwrap_or(h)
    };
    strip(a) == strip(b)
}

/// A redirect is followed only when it keeps the scheme and port, carries no credentials and
/// stays on the same host modulo `www.` (the reference's rule).
pub fn follows(from: &Url, to: &Url) -> bool {
    from.scheme() == to.scheme()
        && from.port_or_known_default() == to.port_or_known_default()
        && to.username().is_empty()
        && to.password().is_none()
        && same_site(
            from.host_str().unwrap_or_default(),
            to.host_str().unwrap_or_default(),
        )
}

/// The guarded client: every name resolved through the guard, no proxy (a proxy would
/// resolve names itself, out of the guard's sight), no automatic redirects.
pub fn client(
    settings: &FetchSettings,
    lookup: Arc<dyn HostLookup>,
) -> Result<reqwest::Client, ToolError> {
    let exempt = Exemptions::new(&settings.allow_private_hosts);
    reqwest::Client::builder()
        .dns_resolver(GuardResolver::new(lookup, exempt))
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(settings.connect_timeout)
        .user_agent(USER_AGENT)
        .build()
        .map_err(|e| ToolError::fatal(format!("could not build the HTTP client: {}", chain(&e))))
}

/// An error and its sources, joined.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![err.to_string()];
    let mut current = err.source();
    while let Some(e) = current {
        let s = e.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        current = e.source();
    }
    parts.join(": ")
}

fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// Fetches `start`, following same-host redirects, under the settings' limits.
pub async fn fetch(
    start: Url,
    settings: &FetchSettings,
    lookup: Arc<dyn HostLookup>,
    cancel: &CancellationToken,
) -> Result<Outcome, ToolError> {
    let client = client(settings, lookup)?;
    let exempt = Exemptions::new(&settings.allow_private_hosts);
    let deadline = Instant::now() + settings.timeout;
    let mut url = start;
    let mut redirects = 0;
    loop {
        check_scheme_and_credentials(&url).map_err(ToolError::respond)?;
        check_url_host(&url, &exempt).map_err(|b| refusal(&b))?;
        let request = client
            .get(url.clone())
            .header(
                ACCEPT,
                "text/markdown, text/html;q=0.9, text/plain;q=0.8, */*;q=0.5",
            )
            .send();
        let response = tokio::select! {
            () = cancel.cancelled() => return Err(ToolError::Cancelled { tool: TOOL.to_owned() }),
            () = tokio::time::sleep_until(deadline) => {
                return Err(ToolError::fatal(format!(
                    "Fetching {url} took longer than {} without a response; gave up.",
                    seconds(settings.timeout)
                )));
            }
            r = request => r,
        };
        let response = match response {
            Ok(r) => r,
            Err(e) => {
                if let Some(blocked) = find_blocked(&e) {
                    return Err(refusal(blocked));
                }
                return Err(ToolError::fatal(format!(
                    "Could not fetch {url}: {}",
                    chain(&e)
                )));
            }
        };
        if let Some(remote) = response.remote_addr() {
            check_remote(url.host_str().unwrap_or_default(), remote, &exempt)
                .map_err(|b| refusal(&b))?;
        }
        let status = response.status();
        if status.is_redirection()
            && let Some(location) = response.headers().get(LOCATION)
        {
            let target = location
                .to_str()
                .ok()
                .and_then(|l| url.join(l).ok())
                .ok_or_else(|| {
                    ToolError::respond(format!(
                        "{url} answered {status} with a Location header that is not a valid URL."
                    ))
                })?;
            if !follows(&url, &target) {
                return Ok(Outcome::Redirect {
                    from: url,
                    to: target,
                    status,
                });
            }
            redirects += 1;
            if redirects > MAX_REDIRECTS {
                return Err(ToolError::respond(format!(
                    "Too many redirects (exceeded {MAX_REDIRECTS})"
                )));
            }
            url = target;
            continue;
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let (body, truncated) = read_body(response, &url, settings, deadline, cancel).await?;
        return Ok(Outcome::Page(Page {
            url,
            status,
            content_type,
            body,
            truncated,
        }));
    }
}

/// Reads at most [`MAX_BODY_BYTES`] decoded bytes, with an idle limit per read and the
/// overall deadline; never trusts `Content-Length`.
async fn read_body(
    mut response: reqwest::Response,
    url: &Url,
    settings: &FetchSettings,
    deadline: Instant,
    cancel: &CancellationToken,
) -> Result<(Vec<u8>, bool), ToolError> {
    let mut body: Vec<u8> = Vec::new();
    loop {
        let next = tokio::select! {
            () = cancel.cancelled() => return Err(ToolError::Cancelled { tool: TOOL.to_owned() }),
            () = tokio::time::sleep_until(deadline) => {
                return Err(ToolError::fatal(format!(
                    "Fetching {url} took longer than {}; {} of the body had arrived and was discarded (partial content).",
                    seconds(settings.timeout),
                    tool_core::format_size(body.len())
                )));
            }
            r = tokio::time::timeout(settings.read_timeout, response.chunk()) => r,
        };
        let chunk = match next {
            Err(_) => {
                return Err(ToolError::fatal(format!(
                    "{url} stopped sending data: nothing arrived for {}; {} of the body had arrived and was discarded (partial content).",
                    seconds(settings.read_timeout),
                    tool_core::format_size(body.len())
                )));
            }
            Ok(Err(e)) => {
                return Err(ToolError::fatal(format!(
                    "Reading the response from {url} failed after {}: {}",
                    tool_core::format_size(body.len()),
                    chain(&e)
                )));
            }
            Ok(Ok(None)) => return Ok((body, false)),
            Ok(Ok(Some(chunk))) => chunk,
        };
        let room = MAX_BODY_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_prepare(raw: &str, settings: &FetchSettings, expected: Result<&str, &str>) {
        let got = prepare_url(raw, settings);
        match expected {
            Ok(url) => assert_eq!(got.as_ref().map(Url::as_str), Ok(url), "{raw}"),
            Err(fragment) => {
                let err = got.unwrap_err();
                assert!(err.contains(fragment), "{raw}: {err}");
            }
        }
    }

    #[test]
    fn urls_are_checked_and_upgraded() {
        let d = FetchSettings::default();
        check_prepare("http://example.com/a", &d, Ok("https://example.com/a"));
        check_prepare("https://example.com", &d, Ok("https://example.com/"));
        check_prepare(
            "not a url",
            &d,
            Err("Invalid URL \"not a url\". The URL provided could not be parsed."),
        );
        check_prepare("file:///etc/passwd", &d, Err("\"file:\" URLs are refused"));
        check_prepare(
            "gopher://example.com/",
            &d,
            Err("\"gopher:\" URLs are refused"),
        );
        check_prepare("ftp://example.com/x", &d, Err("\"ftp:\" URLs are refused"));
        check_prepare("https://u:p@example.com/", &d, Err("credentials"));
        check_prepare("https://intranet/", &d, Err("single label"));
        let long = format!("https://example.com/{}", "a".repeat(2000));
        check_prepare(&long, &d, Err("at most 2000 characters"));
        let s = FetchSettings {
            allow_http_hosts: vec!["127.0.0.1".into()],
            allow_private_hosts: vec!["intranet".into()],
            ..FetchSettings::default()
        };
        check_prepare("http://127.0.0.1:8080/x", &s, Ok("http://127.0.0.1:8080/x"));
        check_prepare("http://2130706433/", &s, Ok("http://127.0.0.1/"));
        check_prepare("http://intranet/", &s, Ok("https://intranet/"));
    }

    #[track_caller]
    fn check_follow(from: &str, to: &str, expected: bool) {
        let (from, to) = (Url::parse(from).unwrap(), Url::parse(to).unwrap());
        assert_eq!(follows(&from, &to), expected, "{from} -> {to}");
    }

    #[test]
    fn redirect_rule() {
        check_follow("https://a.com/x", "https://a.com/y", true);
        check_follow("https://a.com/x", "https://www.a.com/y", true);
        check_follow("https://www.a.com/x", "https://a.com/y", true);
        check_follow("https://a.com/x", "https://b.com/y", false);
        check_follow("https://a.com/x", "http://a.com/y", false);
        check_follow("https://a.com/x", "https://a.com:8443/y", false);
        check_follow("https://a.com/x", "https://u:p@a.com/y", false);
        check_follow("https://a.com:443/x", "https://a.com/y", true);
        check_follow("https://a.com/x", "https://evil.a.com/y", false);
    }
}
