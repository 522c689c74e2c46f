//! The `webfetch` benchmark: `agent-tools call WebFetch` fetching a generated 2 MB HTML page
//! from a server on 127.0.0.1 and converting it to Markdown, against `curl` (the fetch alone)
//! and, when python3 is installed, a python3 fetch plus `html.parser` text extraction. It also
//! reports our peak resident memory when `/usr/bin/time` is available.

use std::fmt::Write as _;
use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use super::{Comparison, Ctx};
use crate::cmd::Cmd;

/// The size the generated page reaches (at least).
const PAGE_BYTES: usize = 2 * 1024 * 1024;

/// A documentation-like page: navigation, sections with headings, paragraphs with links,
/// inline code and emphasis, lists, tables and code blocks, a footer and scripts.
pub fn page() -> String {
    let mut html = String::with_capacity(PAGE_BYTES + 64 * 1024);
    html.push_str("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Benchmark manual</title><style>body{font-family:sans-serif}</style><script>window.analytics=[];</script></head><body>");
    html.push_str("<nav><ul><li><a href=\"/\">Home</a></li><li><a href=\"/guide\">Guide</a></li><li><a href=\"/api\">API</a></li></ul></nav><main><article><h1>Benchmark manual</h1>");
    let mut section: usize = 0;
    while html.len() < PAGE_BYTES {
        section += 1;
        let _ = write!(
            html,
            "<h2 id=\"s{section}\">Section {section}: configuring the widget</h2>"
        );
        for p in 0..4 {
            let _ = write!(
                html,
                "<p>Paragraph {p} of section {section} explains how the <code>widget_{section}</code> option interacts with <a href=\"/api/widget/{section}#p{p}\">the widget API</a>. It is <em>usually</em> safe to leave it at its default, but <strong>large deployments</strong> should raise it, measure, and keep the value that gives the best latency under load.</p>"
            );
        }
        let _ = write!(
            html,
            "<ul><li>Default: {section}</li><li>Range: 1 to {}</li><li>See also <a href=\"#s{}\">section {}</a></li></ul>",
            section * 10,
            section.saturating_sub(1).max(1),
            section.saturating_sub(1).max(1)
        );
        let _ = write!(
            html,
            "<table><thead><tr><th>Key</th><th>Type</th><th>Default</th></tr></thead><tbody><tr><td>widget_{section}.size</td><td>integer</td><td>{section}</td></tr><tr><td>widget_{section}.name</td><td>string</td><td>\"w{section}\"</td></tr></tbody></table>"
        );
        let _ = write!(
            html,
            "<pre><code class=\"language-toml\">[widget_{section}]\nsize = {section}\nname = \"w{section}\"\n</code></pre>"
        );
    }
    html.push_str("</article></main><footer><p>© Example. All rights reserved.</p></footer><script>track(document.title);</script></body></html>");
    html
}

/// Answers every request on 127.0.0.1 with `body` as `text/html`, from background threads
/// that live as long as the process.
pub fn serve(body: Vec<u8>) -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding the benchmark server")?;
    let addr = listener.local_addr()?;
    let body = Arc::new(body);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let body = Arc::clone(&body);
            std::thread::spawn(move || {
                let _ = answer(stream, &body);
            });
        }
    });
    Ok(addr)
}

fn answer(mut stream: TcpStream, body: &[u8]) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let header = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(header.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

const PYTHON_BASELINE: &str = r#"
import sys, urllib.request
from html.parser import HTMLParser
class Text(HTMLParser):
    def __init__(self):
        super().__init__(); self.skip = 0; self.out = []
    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "head"): self.skip += 1
    def handle_endtag(self, tag):
        if tag in ("script", "style", "head") and self.skip: self.skip -= 1
    def handle_data(self, data):
        if not self.skip: self.out.append(data)
html = urllib.request.urlopen(sys.argv[1]).read().decode("utf-8")
p = Text(); p.feed(html); sys.stdout.write("".join(p.out)[:100000])
"#;

/// Peak resident memory of one run of `cmd`, in KB, through `/usr/bin/time -f %M`.
fn peak_rss_kb(cmd: &Cmd, scratch: &Path) -> Option<u64> {
    let time = Path::new("/usr/bin/time");
    if !time.is_file() {
        return None;
    }
    let out = scratch.join("webfetch-rss.txt");
    let command = cmd.to_command().ok()?;
    let program = command.get_program().to_owned();
    let args: Vec<_> = command.get_args().map(|a| a.to_owned()).collect();
    let mut timed = std::process::Command::new(time);
    timed
        .args(["-f", "%M", "-o"])
        .arg(&out)
        .arg(program)
        .args(args)
        .envs(
            command
                .get_envs()
                .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))),
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(dir) = command.get_current_dir() {
        timed.current_dir(dir);
    }
    let status = timed.status().ok()?;
    if !status.success() {
        return None;
    }
    fs::read_to_string(&out)
        .ok()?
        .trim()
        .lines()
        .last()?
        .trim()
        .parse()
        .ok()
}

/// `agent-tools call WebFetch` on the 2 MB page vs `curl` and python3.
pub fn webfetch(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let page = page();
    let size_mb = page.len() as f64 / (1024.0 * 1024.0);
    let addr = serve(page.into_bytes())?;
    let url = format!("http://{addr}/manual.html");
    let home = ctx.scratch.join("webfetch-home");
    fs::create_dir_all(&home).with_context(|| format!("creating {}", home.display()))?;
    let settings = ctx.scratch.join("webfetch-settings.json");
    fs::write(
        &settings,
        r#"{"webFetch": {"allowHttpHosts": ["127.0.0.1"], "allowPrivateHosts": ["127.0.0.1"]},
"permissions": {"allow": ["WebFetch(domain:127.0.0.1)"]}}"#,
    )
    .with_context(|| format!("writing {}", settings.display()))?;
    let input = format!(r#"{{"url": "{url}", "prompt": "Summarise the manual"}}"#);
    let ours = Cmd::new(&ctx.bin)
        .args(["call", "WebFetch"])
        .arg(&input)
        .arg("--settings")
        .arg(&settings)
        .env("AGENT_TOOLS_HOME", &home)
        .cwd(&ctx.scratch);
    let case = format!("fetch + convert {size_mb:.1} MB HTML");
    let mut results = vec![
        ctx.compare(
            &case,
            &ours,
            &Cmd::new("curl")
                .args(["-sS", "--fail", "-o", "/dev/null"])
                .arg(&url),
            "curl, fetch only",
        )?,
    ];
    if Cmd::new("python3").arg("--version").succeeds_quietly() {
        results.push(ctx.compare(
            &case,
            &ours,
            &Cmd::new("python3").args(["-c", PYTHON_BASELINE]).arg(&url),
            "python3 html.parser",
        )?);
    }
    match peak_rss_kb(&ours, &ctx.scratch) {
        Some(kb) => println!(
            "webfetch: peak resident memory of agent-tools: {:.1} MB",
            kb as f64 / 1024.0
        ),
        None => println!("webfetch: peak memory not measured (/usr/bin/time is missing)"),
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_2_mb_of_html_and_is_served() {
        let page = page();
        assert!(page.len() >= PAGE_BYTES, "{}", page.len());
        assert!(page.len() < PAGE_BYTES + 16 * 1024, "{}", page.len());
        assert!(page.ends_with("</html>"));
        let addr = serve(b"<p>hi</p>".to_vec()).unwrap();
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
        assert!(reply.ends_with("\r\n\r\n<p>hi</p>"), "{reply}");
    }
}
