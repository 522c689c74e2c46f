//! WebFetch against a local server: the safety catalogue's web rows (38–46), redirects,
//! caps, conversion, binary bodies, the cache, permissions and the summariser hook.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use tool_core::{PermissionMode, RuleBehavior, Summariser, ToolError};
use tools_web::{MAX_BODY_BYTES, TRUNCATION_MARKER};

use crate::server::{Reply, Server};
use crate::{FakeDns, Session, is_under, local_settings, session_with_dns};

const PAGE: &str = "<html><head><title>Local page</title><script>var secret = 1;</script></head><body><h1>Hello</h1><p>From the <b>local</b> server.</p></body></html>";

async fn page_server() -> Server {
    Server::start(|_| Reply::ok("text/html; charset=utf-8", PAGE)).await
}

#[track_caller]
fn assert_refused(result: &tool_core::CallResult, fragment: &str) {
    assert!(result.is_error, "{result:#?}");
    let text = result.text();
    assert!(text.contains(fragment), "expected {fragment:?} in {text}");
}

// Row 38: loopback, IPv6 loopback, localhost and the metadata address are refused before
// any connection.
#[tokio::test]
async fn row38_local_addresses_are_refused_before_connecting() {
    let server = page_server().await;
    let port = server.addr.port();
    let session = Session::new(
        json!({"webFetch": {"allowHttpHosts": ["127.0.0.1", "[::1]", "localhost", "169.254.169.254"]}}),
    );
    for (url, why) in [
        (
            format!("http://127.0.0.1:{port}/"),
            "127.0.0.1 is a loopback address",
        ),
        (
            format!("http://[::1]:{port}/"),
            "[::1] is a loopback address",
        ),
        (
            format!("http://localhost:{port}/"),
            "localhost is a loopback address",
        ),
        (
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "169.254.169.254 is a link-local (cloud metadata) address",
        ),
    ] {
        let result = session.fetch(&url).await;
        assert_refused(&result, "Refusing to fetch");
        assert_refused(&result, why);
        assert_refused(&result, "allowPrivateHosts");
    }
    assert_eq!(server.hits(), 0);
}

// Row 38, the other way: the same fetch passes once the settings allow the host.
#[tokio::test]
async fn row38_an_allowed_host_passes_the_guard() {
    let server = page_server().await;
    let result = Session::local().fetch(&server.url("/")).await;
    assert!(!result.is_error, "{result:#?}");
    assert!(result.text().contains("# Hello"), "{}", result.text());
    assert!(!result.text().contains("secret"), "{}", result.text());
    assert_eq!(server.hits(), 1);
    assert_eq!(result.data["code"], 200);
    assert_eq!(result.data["url"], server.url("/"));
}

// Row 39: numeric and mapped spellings of loopback are normalised, then refused; allowed,
// they reach the server as 127.0.0.1.
#[tokio::test]
async fn row39_numeric_forms_of_loopback_are_refused() {
    let server = page_server().await;
    let port = server.addr.port();
    let session =
        Session::new(json!({"webFetch": {"allowHttpHosts": ["127.0.0.1", "[::ffff:7f00:1]"]}}));
    for url in [
        format!("http://2130706433:{port}/"),
        format!("http://0x7f.1:{port}/"),
        format!("http://0177.0.0.1:{port}/"),
        format!("http://127.1:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
    ] {
        assert_refused(&session.fetch(&url).await, "Refusing to fetch");
    }
    assert_eq!(server.hits(), 0);
    let allowed = Session::local();
    for url in [
        format!("http://2130706433:{port}/"),
        format!("http://0x7f.1:{port}/"),
    ] {
        let result = allowed.fetch(&url).await;
        assert!(!result.is_error, "{url}: {result:#?}");
    }
    assert_eq!(server.hits(), 2);
}

// Row 40: a redirect to the metadata address is handed back, not followed; the follow-up
// call is refused by the guard.
#[tokio::test]
async fn row40_redirect_to_metadata_is_not_followed() {
    let server =
        Server::start(|_| Reply::redirect(302, "http://169.254.169.254/latest/meta-data/")).await;
    let session = Session::local();
    let result = session.fetch(&server.url("/go")).await;
    assert!(!result.is_error, "{result:#?}");
    let text = result.text();
    assert!(text.starts_with("REDIRECT DETECTED"), "{text}");
    assert!(
        text.contains("Redirect URL: http://169.254.169.254/latest/meta-data/"),
        "{text}"
    );
    assert!(text.contains("Status: 302 Found"), "{text}");
    assert_eq!(result.data["code"], 302);
    let again = session
        .fetch("http://169.254.169.254/latest/meta-data/")
        .await;
    assert_refused(&again, "link-local (cloud metadata)");
    assert_eq!(server.hits(), 1);
}

// Row 41: a name with a public and a private address is refused.
#[tokio::test]
async fn row41_a_name_with_any_private_address_is_refused() {
    let server = page_server().await;
    let port = server.addr.port();
    let dns = Arc::new(FakeDns::new(&[(
        "mixed.example",
        &["8.8.8.8", "127.0.0.1"],
    )]));
    let session = session_with_dns(
        json!({"webFetch": {"allowHttpHosts": ["mixed.example"]}}),
        Arc::clone(&dns),
    );
    let result = session
        .fetch(&format!("http://mixed.example:{port}/"))
        .await;
    assert_refused(
        &result,
        "mixed.example resolves to 127.0.0.1, a loopback address",
    );
    assert_eq!(server.hits(), 0);
}

// Row 42: a rebinding resolver (public first, loopback afterwards) never gets a second
// lookup: the connection goes to the vetted address only, so the local server is never hit.
#[tokio::test]
async fn row42_rebinding_cannot_redirect_the_connection() {
    let server = page_server().await;
    let port = server.addr.port();
    // The first answer is a vetted address (127.0.0.2, allowed for this host by settings)
    // where nothing listens; the second would be the server's 127.0.0.1. All traffic stays
    // on loopback: tests never connect anywhere else.
    let dns = Arc::new(
        FakeDns::new(&[("rebind.example", &["127.0.0.2"])]).then("rebind.example", &["127.0.0.1"]),
    );
    let session = session_with_dns(
        json!({"webFetch": {"allowHttpHosts": ["rebind.example"], "allowPrivateHosts": ["rebind.example"], "connectTimeoutSeconds": 1, "timeoutSeconds": 3}}),
        Arc::clone(&dns),
    );
    let result = session
        .fetch(&format!("http://rebind.example:{port}/"))
        .await;
    assert!(result.is_error, "{result:#?}");
    assert_eq!(dns.lookups.load(Ordering::SeqCst), 1);
    assert_eq!(server.hits(), 0);
}

// The name path with the host exempt: resolved by the (fake) resolver, pinned to its answer.
#[tokio::test]
async fn an_allowed_name_connects_to_its_resolved_address() {
    let server = page_server().await;
    let port = server.addr.port();
    let dns = Arc::new(FakeDns::new(&[("intranet.example", &["127.0.0.1"])]));
    let session = session_with_dns(
        json!({"webFetch": {"allowHttpHosts": ["intranet.example"], "allowPrivateHosts": ["intranet.example"]}}),
        Arc::clone(&dns),
    );
    let result = session
        .fetch(&format!("http://intranet.example:{port}/"))
        .await;
    assert!(!result.is_error, "{result:#?}");
    assert_eq!(
        server.requests()[0].header("host"),
        Some(format!("intranet.example:{port}").as_str())
    );
    // Not exempt: the same name is refused.
    let strict = session_with_dns(
        json!({"webFetch": {"allowHttpHosts": ["intranet.example"]}}),
        dns,
    );
    let refused = strict
        .fetch(&format!("http://intranet.example:{port}/x"))
        .await;
    assert_refused(
        &refused,
        "intranet.example resolves to 127.0.0.1, a loopback address",
    );
    assert_eq!(server.hits(), 1);
}

// Row 43: schemes other than http and https.
#[tokio::test]
async fn row43_other_schemes_are_refused() {
    let session = Session::local();
    for (url, scheme) in [
        ("file:///etc/passwd", "file"),
        ("gopher://example.com/1", "gopher"),
        ("ftp://example.com/pub/x", "ftp"),
        ("data:text/plain,hello", "data"),
    ] {
        let result = session.fetch(url).await;
        assert_refused(&result, &format!("\"{scheme}:\" URLs are refused"));
    }
}

// Row 44: a body that stalls trips the idle-read limit; one that trickles trips the total
// deadline. Both report the partial content.
#[tokio::test]
async fn row44_slow_bodies_time_out_with_a_partial_content_error() {
    let server = Server::start(|r| {
        if r.path == "/stall" {
            Reply::Drip {
                content_type: "text/plain",
                chunk: b"x".to_vec(),
                every: Duration::from_secs(10),
                count: 3,
            }
        } else {
            Reply::Drip {
                content_type: "text/plain",
                chunk: b"y".to_vec(),
                every: Duration::from_millis(50),
                count: 10_000,
            }
        }
    })
    .await;
    let idle = Session::new(json!({"webFetch": {
        "allowHttpHosts": ["127.0.0.1"], "allowPrivateHosts": ["127.0.0.1"],
        "readTimeoutSeconds": 0.5
    }}));
    let result = idle.fetch(&server.url("/stall")).await;
    assert_refused(&result, "stopped sending data: nothing arrived for 0.5 s");
    assert_refused(
        &result,
        "1B of the body had arrived and was discarded (partial content)",
    );
    let total = Session::new(json!({"webFetch": {
        "allowHttpHosts": ["127.0.0.1"], "allowPrivateHosts": ["127.0.0.1"],
        "timeoutSeconds": 1, "readTimeoutSeconds": 5
    }}));
    let result = total.fetch(&server.url("/trickle")).await;
    assert_refused(&result, "took longer than 1 s");
    assert_refused(&result, "(partial content)");
}

/// 32 MB of zeros, gzipped (about 32 KB on the wire), made once.
fn gzip_bomb() -> &'static [u8] {
    static BOMB: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BOMB.get_or_init(|| {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let block = vec![0u8; 1024 * 1024];
        for _ in 0..32 {
            encoder.write_all(&block).unwrap();
        }
        encoder.finish().unwrap()
    })
}

// Row 45: an endless body and a gzip bomb both stop at the cap on decoded bytes.
#[tokio::test]
async fn row45_huge_and_compressed_bodies_stop_at_the_cap() {
    let server = Server::start(|r| {
        if r.path == "/bomb" {
            Reply::Full {
                status: 200,
                headers: vec![
                    ("Content-Type".into(), "text/plain".into()),
                    ("Content-Encoding".into(), "gzip".into()),
                ],
                body: gzip_bomb().to_vec(),
            }
        } else {
            Reply::Endless {
                content_type: "text/plain",
            }
        }
    })
    .await;
    assert!(gzip_bomb().len() < 1024 * 1024);
    let session = Session::local();
    for path in ["/endless", "/bomb"] {
        let result = session.fetch(&server.url(path)).await;
        assert!(!result.is_error, "{path}: {}", result.text());
        assert_eq!(result.data["bytes"], MAX_BODY_BYTES, "{path}");
        // The model gets a preview and a spill file (the output budget); the data has it all.
        let text = result.data["result"].as_str().unwrap();
        assert!(text.contains(TRUNCATION_MARKER), "{path}");
        assert!(
            text.ends_with(
                "[The response was larger than 10.0MB; only the first 10.0MB were read.]"
            ),
            "{path}"
        );
    }
    let bomb_request = &server.requests()[1];
    assert!(
        bomb_request
            .header("accept-encoding")
            .unwrap_or_default()
            .contains("gzip")
    );
}

// Row 46: a redirect loop stops at the limit.
#[tokio::test]
async fn row46_redirect_loops_stop_at_the_limit() {
    let server = Server::start(|r| {
        let n: u32 = r.path.trim_start_matches("/loop/").parse().unwrap_or(0);
        Reply::redirect(302, &format!("/loop/{}", n + 1))
    })
    .await;
    let result = Session::local().fetch(&server.url("/loop/0")).await;
    assert_refused(&result, "Too many redirects (exceeded 10)");
    assert_eq!(server.hits(), 11);
}

#[tokio::test]
async fn same_host_redirects_are_followed() {
    let server = Server::start(|r| match r.path.as_str() {
        "/old" => Reply::redirect(301, "/middle"),
        "/middle" => Reply::redirect(307, "http://127.0.0.1:1/new"),
        _ => Reply::ok("text/plain", format!("you reached {}", r.path)),
    })
    .await;
    // /old is followed; /middle points at another port of the same host: handed back.
    let result = Session::local().fetch(&server.url("/old")).await;
    assert!(
        result.text().starts_with("REDIRECT DETECTED"),
        "{}",
        result.text()
    );
    assert!(
        result
            .text()
            .contains(&format!("Original URL: {}", server.url("/middle")))
    );

    let chain = Server::start(|r| match r.path.as_str() {
        "/a" => Reply::redirect(302, "/b"),
        "/b" => Reply::redirect(308, "c?x=1"),
        _ => Reply::ok("text/plain", format!("you reached {}", r.path)),
    })
    .await;
    let result = Session::local().fetch(&chain.url("/a")).await;
    assert!(!result.is_error, "{result:#?}");
    assert!(
        result.text().ends_with("you reached /c?x=1"),
        "{}",
        result.text()
    );
    assert_eq!(result.data["url"], chain.url("/c?x=1"));
    assert_eq!(chain.hits(), 3);
}

#[tokio::test]
async fn www_variants_count_as_the_same_host() {
    let server = Server::start(|r| {
        if r.path == "/start" {
            let port = r
                .header("host")
                .and_then(|h| h.rsplit(':').next())
                .unwrap_or("0")
                .to_owned();
            Reply::redirect(302, &format!("http://www.example.test:{port}/end"))
        } else {
            Reply::ok(
                "text/plain",
                format!("host {}", r.header("host").unwrap_or_default()),
            )
        }
    })
    .await;
    let port = server.addr.port();
    let dns = Arc::new(FakeDns::new(&[
        ("example.test", &["127.0.0.1"]),
        ("www.example.test", &["127.0.0.1"]),
    ]));
    let hosts = ["example.test", "www.example.test"];
    let session = session_with_dns(
        json!({"webFetch": {"allowHttpHosts": hosts, "allowPrivateHosts": hosts}}),
        dns,
    );
    let result = session
        .fetch(&format!("http://example.test:{port}/start"))
        .await;
    assert!(!result.is_error, "{result:#?}");
    assert!(
        result
            .text()
            .ends_with(&format!("host www.example.test:{port}")),
        "{}",
        result.text()
    );
}

#[tokio::test]
async fn cross_host_redirects_are_handed_back() {
    let server = Server::start(|r| {
        if r.path == "/moved" {
            let port = r
                .header("host")
                .and_then(|h| h.rsplit(':').next())
                .unwrap_or("0")
                .to_owned();
            Reply::redirect(301, &format!("http://localhost:{port}/target"))
        } else {
            Reply::ok("text/plain", "target")
        }
    })
    .await;
    let session = Session::local();
    let result = session
        .call(
            "WebFetch",
            json!({"url": server.url("/moved"), "prompt": "Find the API list"}),
        )
        .await;
    assert!(!result.is_error, "{result:#?}");
    let text = result.text();
    let port = server.addr.port();
    assert!(
        text.contains(&format!("Redirect URL: http://localhost:{port}/target")),
        "{text}"
    );
    assert!(text.contains("Status: 301 Moved Permanently"), "{text}");
    assert!(text.contains("- prompt: \"Find the API list\""), "{text}");
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn non_utf8_charsets_are_decoded() {
    let server = Server::start(|r| match r.path.as_str() {
        // "Привет, мир" in windows-1251, declared in the header
        "/cp1251" => Reply::ok(
            "text/html; charset=windows-1251",
            b"<html><body><p>\xcf\xf0\xe8\xe2\xe5\xf2, \xec\xe8\xf0</p></body></html>".to_vec(),
        ),
        // declared only in a <meta>
        "/meta" => Reply::ok(
            "text/html",
            b"<html><head><meta charset=\"iso-8859-1\"></head><body><p>caf\xe9 cr\xe8me</p></body></html>".to_vec(),
        ),
        // Shift_JIS plain text: "日本語"
        _ => Reply::ok("text/plain; charset=Shift_JIS", b"\x93\xfa\x96\x7b\x8c\xea".to_vec()),
    })
    .await;
    let session = Session::local();
    assert!(
        session
            .fetch(&server.url("/cp1251"))
            .await
            .text()
            .contains("Привет, мир")
    );
    assert!(
        session
            .fetch(&server.url("/meta"))
            .await
            .text()
            .contains("café crème")
    );
    assert!(
        session
            .fetch(&server.url("/sjis"))
            .await
            .text()
            .ends_with("日本語")
    );
}

#[tokio::test]
async fn other_text_passes_through() {
    let json_body = r#"{"name": "agent-tools", "tags": ["<b>not html</b>"]}"#;
    let server = Server::start(move |r| match r.path.as_str() {
        "/data.json" => Reply::ok("application/json", json_body),
        "/readme.md" => Reply::ok("text/markdown", "# Title\n\n*emphasis*"),
        _ => Reply::ok("text/css", "p { color: red }"),
    })
    .await;
    let session = Session::local();
    let result = session.fetch(&server.url("/data.json")).await;
    assert!(result.text().ends_with(json_body), "{}", result.text());
    assert!(
        session
            .fetch(&server.url("/readme.md"))
            .await
            .text()
            .ends_with("# Title\n\n*emphasis*")
    );
    assert!(
        session
            .fetch(&server.url("/style.css"))
            .await
            .text()
            .ends_with("p { color: red }")
    );
}

#[tokio::test]
async fn binary_bodies_are_saved_to_a_file() {
    let png: Vec<u8> = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"
        .iter()
        .copied()
        .chain(0..=255u8)
        .collect();
    let body = png.clone();
    let server = Server::start(move |_| Reply::ok("image/png", body.clone())).await;
    let session = Session::local();
    let result = session.fetch(&server.url("/images/logo.png")).await;
    assert!(!result.is_error, "{result:#?}");
    let text = result.text();
    assert!(
        text.starts_with(
            "[Binary content (image/png, 272B) was not converted to text; it is saved to "
        ),
        "{text}"
    );
    let path = text
        .split("saved to ")
        .nth(1)
        .and_then(|rest| rest.split(". Use the Read tool").next())
        .map(std::path::PathBuf::from)
        .unwrap();
    assert!(
        is_under(&path, &session.state_dir().join("web-fetch")),
        "{}",
        path.display()
    );
    assert!(
        path.to_string_lossy().ends_with("-logo.png"),
        "{}",
        path.display()
    );
    assert_eq!(std::fs::read(&path).unwrap(), png);
    assert!(!text.contains("No summariser"), "{text}");
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(session.state_dir().join("web-fetch"))
        .unwrap()
        .collect();
    assert_eq!(names.len(), 1);
}

#[tokio::test]
async fn error_statuses_are_errors_with_the_start_of_the_body() {
    let server = Server::start(|_| {
        Reply::status(
            404,
            "text/html",
            "<html><body><h1>Not here</h1><p>Try /docs.</p></body></html>",
        )
    })
    .await;
    let result = Session::local().fetch(&server.url("/missing")).await;
    assert!(result.is_error, "{result:#?}");
    let text = result.text();
    assert!(
        text.starts_with(&format!(
            "Request failed with status code 404 (Not Found) for {}.",
            server.url("/missing")
        )),
        "{text}"
    );
    assert!(text.contains("Try /docs."), "{text}");
}

#[tokio::test]
async fn pages_are_cached_per_session_by_url() {
    let server = page_server().await;
    let session = Session::local();
    let first = session.fetch(&server.url("/cached")).await;
    let second = session.fetch(&server.url("/cached")).await;
    assert_eq!(first.text(), second.text());
    assert_eq!(server.hits(), 1);
    // Another session has its own cache.
    Session::local().fetch(&server.url("/cached")).await;
    assert_eq!(server.hits(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_fetches_share_one_cache() {
    const PAGES: usize = 16;
    let server = page_server().await;
    let session = Session::local();
    let pool = Arc::new(tool_core::ToolPool::new(tools_web::tools()));
    let barrier = Arc::new(tokio::sync::Barrier::new(PAGES));
    let calls: Vec<_> = (0..PAGES)
        .map(|n| {
            let (pool, ctx, barrier) =
                (Arc::clone(&pool), session.ctx.clone(), Arc::clone(&barrier));
            let url = server.url(&format!("/page{n}"));
            tokio::spawn(async move {
                barrier.wait().await;
                pool.call(
                    "WebFetch",
                    json!({"url": url, "prompt": "What does the page say?"}),
                    &ctx,
                )
                .await
            })
        })
        .collect();
    for call in calls {
        let result = call.await.unwrap();
        assert!(!result.is_error, "{result:#?}");
    }
    assert_eq!(server.hits(), PAGES);
    // Had two first calls each made a cache, the pages kept in the lost one would be fetched
    // again.
    for n in 0..PAGES {
        session.fetch(&server.url(&format!("/page{n}"))).await;
    }
    assert_eq!(server.hits(), PAGES);
}

#[tokio::test]
async fn without_a_summariser_the_content_comes_back_with_a_note() {
    let server = page_server().await;
    let text = Session::local().fetch(&server.url("/")).await.text();
    assert!(
        text.starts_with("[No summariser is available in this host, so the prompt was not applied"),
        "{text}"
    );
}

struct Echo;

#[async_trait]
impl Summariser for Echo {
    async fn summarise(&self, content: &str, prompt: &str) -> Result<String, ToolError> {
        let first = prompt.lines().next().unwrap_or_default();
        Ok(format!(
            "{first} -> {} chars, starts {:?}",
            content.chars().count(),
            content.chars().take(7).collect::<String>()
        ))
    }
}

struct Broken;

#[async_trait]
impl Summariser for Broken {
    async fn summarise(&self, _content: &str, _prompt: &str) -> Result<String, ToolError> {
        Err(ToolError::respond("sampling is not supported"))
    }
}

#[tokio::test]
async fn a_host_summariser_applies_the_prompt() {
    let server = page_server().await;
    let summariser: Arc<dyn Summariser> = Arc::new(Echo);
    let session = Session::build(
        local_settings(),
        PermissionMode::BypassPermissions,
        &[],
        |b| b.service(summariser),
    );
    let result = session
        .call(
            "WebFetch",
            json!({"url": server.url("/"), "prompt": "List the headings"}),
        )
        .await;
    assert!(!result.is_error, "{result:#?}");
    assert!(
        result.text().starts_with("List the headings -> "),
        "{}",
        result.text()
    );
    assert!(
        result.text().ends_with("starts \"# Hello\""),
        "{}",
        result.text()
    );
    assert_eq!(result.data["result"], result.text());

    let broken: Arc<dyn Summariser> = Arc::new(Broken);
    let session = Session::build(
        local_settings(),
        PermissionMode::BypassPermissions,
        &[],
        |b| b.service(broken),
    );
    let text = session.fetch(&server.url("/")).await.text();
    assert!(
        text.starts_with("[The summariser failed (sampling is not supported)"),
        "{text}"
    );
    assert!(text.contains("# Hello"), "{text}");
}

#[tokio::test]
async fn permissions_follow_domain_rules() {
    let server = page_server().await;
    let url = server.url("/");
    // No rule and nobody to ask: denied, naming the rule that would allow it.
    let default = Session::with(local_settings(), PermissionMode::Default, &[]);
    let result = default.fetch(&url).await;
    assert_refused(&result, "WebFetch(domain:127.0.0.1)");
    let allowed = Session::with(
        local_settings(),
        PermissionMode::Default,
        &[(RuleBehavior::Allow, "WebFetch(domain:127.0.0.1)")],
    );
    assert!(!allowed.fetch(&url).await.is_error);
    let denied = Session::with(
        local_settings(),
        PermissionMode::BypassPermissions,
        &[(RuleBehavior::Deny, "WebFetch(domain:127.0.0.1)")],
    );
    assert_refused(
        &denied.fetch(&url).await,
        "WebFetch denied access to domain:127.0.0.1.",
    );
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn preapproved_hosts_need_no_rule_but_deny_rules_still_win() {
    use tool_core::{PermissionDecision, TypedTool};
    use tools_web::{WebFetch, WebFetchInput};
    let input = |url: &str| WebFetchInput {
        url: url.to_owned(),
        prompt: "p".to_owned(),
    };
    let session = Session::with(json!({}), PermissionMode::Default, &[]);
    let decision = WebFetch
        .check_permission(&input("https://docs.python.org/3/"), &session.ctx)
        .await;
    assert_eq!(decision, PermissionDecision::Allow);
    let decision = WebFetch
        .check_permission(&input("http://docs.python.org/3/"), &session.ctx)
        .await;
    assert_eq!(
        decision,
        PermissionDecision::Allow,
        "http is upgraded first"
    );
    let decision = WebFetch
        .check_permission(&input("https://example.com/"), &session.ctx)
        .await;
    assert!(
        matches!(decision, PermissionDecision::Ask { ref suggestions, .. } if suggestions[0].to_string() == "WebFetch(domain:example.com)"),
        "{decision:?}"
    );
    let strict = Session::with(
        json!({}),
        PermissionMode::Default,
        &[(RuleBehavior::Deny, "WebFetch(domain:docs.python.org)")],
    );
    let decision = WebFetch
        .check_permission(&input("https://docs.python.org/3/"), &strict.ctx)
        .await;
    assert_eq!(
        decision,
        PermissionDecision::deny("WebFetch denied access to domain:docs.python.org.")
    );
}

#[tokio::test]
async fn bad_urls_name_the_problem() {
    let session = Session::local();
    assert_refused(
        &session.fetch("not a url").await,
        "Invalid URL \"not a url\". The URL provided could not be parsed.",
    );
    assert_refused(
        &session.fetch("https://user:pw@example.com/").await,
        "credentials",
    );
    assert_refused(
        &session
            .fetch(&format!("https://example.com/{}", "x".repeat(2000)))
            .await,
        "at most 2000 characters",
    );
    assert_refused(&session.fetch("https://intranet/").await, "single label");
    let bad = Session::new(json!({"webFetch": {"allowPrivateHosts": "127.0.0.1"}}));
    assert_refused(
        &bad.fetch("https://example.com/").await,
        "`webFetch.allowPrivateHosts` must be a list of strings",
    );
}

#[tokio::test]
async fn http_is_upgraded_unless_allowed() {
    let server = page_server().await;
    // Allowed past the guard but not for plain http: the fetch speaks TLS to a plain server
    // and fails; the server saw no HTTP request line it could log as a path.
    let session = Session::new(
        json!({"webFetch": {"allowPrivateHosts": ["127.0.0.1"], "connectTimeoutSeconds": 1}}),
    );
    let result = session.fetch(&server.url("/plain")).await;
    assert_refused(
        &result,
        &format!("Could not fetch https://{}/plain", server.addr),
    );
    assert!(server.requests().iter().all(|r| r.path != "/plain"));
}

#[tokio::test]
async fn a_hostile_deeply_nested_page_cannot_crash_the_process() {
    let n = 50_000;
    let html = format!(
        "<html><body>{}bottom{}</body></html>",
        "<div><b>".repeat(n),
        "</b></div>".repeat(n)
    );
    let server = Server::start(move |_| Reply::ok("text/html", html.clone())).await;
    let result = Session::local().fetch(&server.url("/deep")).await;
    assert!(!result.is_error, "{}", result.text());
    assert!(
        result
            .text()
            .ends_with("so it was converted to plain text.]\n\nbottom"),
        "{}",
        result.text()
    );
}

#[tokio::test]
async fn cancelling_a_fetch_stops_it_promptly() {
    let server = Server::start(|_| Reply::Drip {
        content_type: "text/plain",
        chunk: b"z".to_vec(),
        every: Duration::from_millis(100),
        count: 10_000,
    })
    .await;
    let session = Session::local();
    let token = session.ctx.cancel_token().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel();
    });
    let result = session.fetch(&server.url("/slow")).await;
    assert_refused(&result, "WebFetch was cancelled before it completed");
}
