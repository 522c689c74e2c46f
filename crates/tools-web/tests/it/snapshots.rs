//! Snapshots of what the model sees: rendered WebFetch results (WebSearch's are in
//! `search.rs`; both tools' schemas and descriptions are snapshotted with every other tool's
//! by the registry's tests).

use serde_json::json;

use crate::Session;
use crate::server::{Reply, Server};

#[tokio::test]
async fn webfetch_output_for_an_article() {
    let html = r#"<!doctype html><html><head><title>Release notes</title><style>body{}</style></head>
<body><nav><a href="/">Home</a> | <a href="/blog">Blog</a></nav>
<main><h1>Release notes</h1>
<p>Version 2.0 brings a new parser, faster builds, and a smaller binary. The parser handles every input the old one did, and reports errors with the line and column.</p>
<h2>Upgrading</h2>
<p>Run <code>tool upgrade</code>, then rebuild. Configuration files from version 1 keep working; the <a href="/docs/config">configuration guide</a> lists the new keys.</p>
<ul><li>New parser</li><li>Faster builds</li></ul>
<pre><code>tool upgrade --to 2.0</code></pre>
</main><footer>© Example</footer><script>track()</script></body></html>"#;
    let server = Server::start(move |_| Reply::ok("text/html; charset=utf-8", html)).await;
    let result = Session::local().fetch(&server.url("/notes")).await;
    let port = server.addr.port().to_string();
    insta::with_settings!({filters => vec![(port.as_str(), "[port]")]}, {
        insta::assert_json_snapshot!(result, {".data.durationMs" => "[duration]"});
    });
}

#[tokio::test]
async fn webfetch_output_for_a_refused_url() {
    let result = Session::new(json!({}))
        .fetch("http://[::ffff:169.254.169.254]/latest/meta-data/")
        .await;
    insta::assert_json_snapshot!(result);
}
