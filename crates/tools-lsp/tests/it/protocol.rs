//! The client's protocol against a scripted server (python3): the server's own requests
//! answered, a request timeout followed by `$/cancelRequest`, a crash mid-request reported and
//! the server restarted by the next call, `shutdown` and `exit` on drop, files changed on
//! disk reported to the server, an edit's diagnostics in other files pulled from a
//! server that offers pull diagnostics, and an edit beside a call that starts a server still
//! loading its project waits, like the call, until the server shows it has loaded it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::LspManager;
use tools_lsp::{LanguageServerConfig, LanguageServers, LspConfig};

const FAKE_SERVER: &str = include_str!("fake_server.py");

struct Fake {
    servers: LanguageServers,
    log: PathBuf,
    file: PathBuf,
    uri: String,
    _dir: tempfile::TempDir,
}

fn fake() -> Option<Fake> {
    fake_with(&[])
}

/// The scripted server with extra arguments (`pull`).
fn fake_with(extra: &[&str]) -> Option<Fake> {
    fake_configured(extra, |_| {})
}

/// The same, with its configuration changed by `adjust`.
fn fake_configured(extra: &[&str], adjust: impl FnOnce(&mut LanguageServerConfig)) -> Option<Fake> {
    let python = test_support::peers::on_path("python3");
    if !test_support::peers::require("python3 (for the scripted server)", python.is_some()) {
        return None;
    }
    let python = python?;
    let (dir, root) = test_support::tempdir();
    let script = root.join("fake_server.py");
    std::fs::write(&script, FAKE_SERVER).unwrap_or_else(|e| panic!("{e}"));
    let log = root.join("received.jsonl");
    let file = root.join("doc.fake");
    std::fs::write(&file, "one\ntwo\nthree\nfour\n").unwrap_or_else(|e| panic!("{e}"));
    let mut server = LanguageServerConfig::new(python.display().to_string(), &[]);
    server.args = vec![script.display().to_string(), log.display().to_string()];
    server.args.extend(extra.iter().map(|a| (*a).to_owned()));
    server.settings = Some(json!({"fake": {"answer": 42}}));
    server.request_timeout = Duration::from_millis(500);
    adjust(&mut server);
    let servers = LanguageServers::new(LspConfig::empty().with_server("fake", server), &root);
    let uri = format!("file://{}", file.display());
    Some(Fake {
        servers,
        log,
        file,
        uri,
        _dir: dir,
    })
}

fn received(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn reply_to(log: &[Value], id: &str) -> Value {
    log.iter()
        .find(|m| m["id"] == id && m.get("method").is_none())
        .cloned()
        .unwrap_or_else(|| panic!("no reply to {id} in {log:?}"))
}

impl Fake {
    async fn hover(&self, line: u32) -> Result<Value, tool_core::ToolError> {
        self.servers
            .request(
                &self.file,
                "textDocument/hover",
                json!({"textDocument": {"uri": self.uri}, "position": {"line": line, "character": 0}}),
            )
            .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_requests_are_answered() {
    let Some(f) = fake() else { return };
    let hover = f.hover(0).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(hover["contents"], "fake hover 0");
    let log = received(&f.log);
    assert_eq!(
        reply_to(&log, "c1")["result"],
        json!([{"answer": 42}, null])
    );
    assert_eq!(reply_to(&log, "c2")["result"], Value::Null);
    assert_eq!(reply_to(&log, "c3")["result"], Value::Null);
    let folders = reply_to(&log, "c4")["result"].clone();
    let root_uri = format!(
        "file://{}",
        f.file
            .parent()
            .map(Path::display)
            .map(|d| d.to_string())
            .unwrap_or_default()
    );
    assert_eq!(folders[0]["uri"], json!(root_uri), "{folders}");
    assert_eq!(reply_to(&log, "c5")["error"]["code"], -32601);
    // initialize declared what typescript-language-server needs for diagnostics, and UTF-16.
    let init = log
        .iter()
        .find(|m| m["method"] == "initialize")
        .cloned()
        .unwrap_or_default();
    let caps = &init["params"]["capabilities"];
    assert!(
        caps["textDocument"]["publishDiagnostics"].is_object(),
        "{caps}"
    );
    assert_eq!(caps["general"]["positionEncodings"], json!(["utf-16"]));
    assert_eq!(init["params"]["rootUri"], json!(root_uri));
    // didOpen came before the request, with version 1 and the text.
    let open = log
        .iter()
        .find(|m| m["method"] == "textDocument/didOpen")
        .cloned()
        .unwrap_or_default();
    assert_eq!(open["params"]["textDocument"]["version"], 1);
    assert_eq!(
        open["params"]["textDocument"]["text"],
        "one\ntwo\nthree\nfour\n"
    );
    // A 2 MB notification (under the 64 MB cap) passes through the reader.
    let hover = f.hover(3).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(hover["contents"], "fake hover 3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_request_times_out_and_is_cancelled() {
    let Some(f) = fake() else { return };
    let err = f
        .hover(1)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("did not answer textDocument/hover within 0.5 s; the request was cancelled"),
        "{err}"
    );
    // The same server still answers, and it got $/cancelRequest for the silent request.
    let hover = f.hover(0).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(hover["contents"], "fake hover 0");
    let log = received(&f.log);
    let silent = log
        .iter()
        .find(|m| m["method"] == "textDocument/hover" && m["params"]["position"]["line"] == 1)
        .map(|m| m["id"].clone())
        .unwrap_or_default();
    assert!(
        log.iter()
            .any(|m| m["method"] == "$/cancelRequest" && m["params"]["id"] == silent),
        "{log:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_request_is_reported_and_the_next_call_restarts() {
    let Some(f) = fake() else { return };
    f.hover(0).await.unwrap_or_else(|e| panic!("{e}"));
    let pid = f.servers.running().await[0].pid;
    let err = f
        .hover(2)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("the language server python3 stopped while handling textDocument/hover; it will be restarted on the next call"),
        "{err}"
    );
    let hover = f.hover(0).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(hover["contents"], "fake hover 0");
    let running = f.servers.running().await;
    assert_eq!(running.len(), 1);
    assert_ne!(running[0].pid, pid);
    // Two initializes: one per process.
    let log = received(&f.log);
    assert_eq!(
        log.iter().filter(|m| m["method"] == "initialize").count(),
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_manager_sends_shutdown_then_exit() {
    let Some(f) = fake() else { return };
    f.hover(0).await.unwrap_or_else(|e| panic!("{e}"));
    let pid = f.servers.running().await[0].pid;
    let Fake {
        servers, log, _dir, ..
    } = f;
    drop(servers);
    let log = received(&log);
    let methods: Vec<&str> = log.iter().filter_map(|m| m["method"].as_str()).collect();
    // `exit` is a notification: a server too slow to read it within the wait is killed
    // before it logs it, so only its place is checked.
    let shutdown = methods.iter().position(|m| *m == "shutdown");
    assert!(shutdown.is_some(), "{methods:?}");
    assert!(
        methods[shutdown.unwrap_or_default() + 1..]
            .iter()
            .all(|m| *m == "exit"),
        "{methods:?}"
    );
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "server {pid} outlived its manager"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_and_least_recently_used_documents_are_closed() {
    let Some(f) = fake() else { return };
    f.hover(0).await.unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_file(&f.file).unwrap_or_else(|e| panic!("{e}"));
    let err = f
        .hover(0)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("doc.fake"), "{err}");
    let closed = |log: &[Value], uri: &str| {
        log.iter().any(|m| {
            m["method"] == "textDocument/didClose" && m["params"]["textDocument"]["uri"] == uri
        })
    };
    // Past 200 open documents, the least recently used one is closed.
    let dir = f.file.parent().map(Path::to_path_buf).unwrap_or_default();
    let uri_of = |i: usize| format!("file://{}/f{i}.fake", dir.display());
    for i in 0..=200 {
        let file = dir.join(format!("f{i}.fake"));
        std::fs::write(&file, "x\n").unwrap_or_else(|e| panic!("{e}"));
        f.servers
            .request(
                &file,
                "textDocument/hover",
                json!({"textDocument": {"uri": uri_of(i)}, "position": {"line": 0, "character": 0}}),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    // (Checked after later requests: the server reads notifications in order.)
    let log = received(&f.log);
    assert!(closed(&log, &f.uri), "the deleted file stays open");
    assert!(closed(&log, &uri_of(0)), "f0 stays open");
    assert!(!closed(&log, &uri_of(1)), "f1 was closed too early");
}

fn methods(log: &[Value]) -> Vec<String> {
    log.iter()
        .filter_map(|m| m["method"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_changed_on_disk_are_reported_before_the_next_request() {
    let Some(f) = fake() else { return };
    let dir = f.file.parent().map(Path::to_path_buf).unwrap_or_default();
    std::fs::write(dir.join("old.fake"), "old\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("kept.fake"), "kept\n").unwrap_or_else(|e| panic!("{e}"));
    f.hover(0).await.unwrap_or_else(|e| panic!("{e}"));
    // As a shell command would: a new file, a deleted one, a changed closed one, and the
    // open document changed behind the client's back.
    std::fs::create_dir_all(dir.join("pkg")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("pkg/new.fake"), "new\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::remove_file(dir.join("old.fake")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("kept.fake"), "kept, longer\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&f.file, "one\ntwo\nthree\nfour\nfive\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("notes.txt"), "not a source\n").unwrap_or_else(|e| panic!("{e}"));
    f.hover(0).await.unwrap_or_else(|e| panic!("{e}"));
    let log = received(&f.log);
    let events: Vec<(String, i64)> = log
        .iter()
        .filter(|m| m["method"] == "workspace/didChangeWatchedFiles")
        .flat_map(|m| {
            m["params"]["changes"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|c| {
            let uri = c["uri"].as_str().unwrap_or_default();
            let name = uri.strip_prefix(&format!("file://{}/", dir.display()));
            (
                name.unwrap_or(uri).to_owned(),
                c["type"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            ("kept.fake".to_owned(), 2),
            ("old.fake".to_owned(), 3),
            ("pkg/new.fake".to_owned(), 1)
        ],
        "{log:#?}"
    );
    // The new file was opened, and the open document sent again with its new text.
    let new_uri = format!("file://{}/pkg/new.fake", dir.display());
    assert!(
        log.iter().any(|m| m["method"] == "textDocument/didOpen"
            && m["params"]["textDocument"]["uri"] == new_uri),
        "{log:#?}"
    );
    assert!(
        log.iter().any(|m| m["method"] == "textDocument/didChange"
            && m["params"]["contentChanges"][0]["text"] == "one\ntwo\nthree\nfour\nfive\n"),
        "{log:#?}"
    );
    // Nothing changed since: nothing more is reported.
    f.hover(0).await.unwrap_or_else(|e| panic!("{e}"));
    let again = received(&f.log);
    let count = |log: &[Value]| {
        methods(log)
            .iter()
            .filter(|m| *m == "workspace/didChangeWatchedFiles")
            .count()
    };
    assert_eq!(count(&again), count(&log));
    // initialize said the client reports watched files and can pull diagnostics.
    let init = log
        .iter()
        .find(|m| m["method"] == "initialize")
        .cloned()
        .unwrap_or_default();
    let caps = &init["params"]["capabilities"];
    assert_eq!(
        caps["workspace"]["didChangeWatchedFiles"]["dynamicRegistration"],
        true
    );
    assert!(caps["textDocument"]["diagnostic"].is_object(), "{caps}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_reports_what_it_broke_in_other_files_by_pulled_diagnostics() {
    let Some(f) = fake_with(&["pull"]) else {
        return;
    };
    let dir = f.file.parent().map(Path::to_path_buf).unwrap_or_default();
    let lib = dir.join("lib.fake");
    let caller = dir.join("caller.fake");
    std::fs::write(&lib, "thing\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&caller, "x\ncall here\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("other.fake"), "nothing\n").unwrap_or_else(|e| panic!("{e}"));
    // The server runs and has lib.fake open (as after an LSP call on it).
    let none = f
        .servers
        .diagnostics(Some(&lib))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(none.is_empty(), "{none:?}");
    std::fs::write(&lib, "thing broken\n").unwrap_or_else(|e| panic!("{e}"));
    let new = f
        .servers
        .did_change_diagnostics(&lib, "thing broken\n")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let shown: Vec<String> = new.iter().map(|d| d.display(&dir)).collect();
    assert_eq!(shown, ["caller.fake:2:1: error: call is broken [fake]"]);
    // The caller was opened and its diagnostics pulled before the change was sent.
    let log = received(&f.log);
    let at = |pred: &dyn Fn(&Value) -> bool| log.iter().position(pred);
    let caller_uri = format!("file://{}", caller.display());
    let lib_uri = format!("file://{}", lib.display());
    let opened = at(&|m| {
        m["method"] == "textDocument/didOpen" && m["params"]["textDocument"]["uri"] == caller_uri
    });
    let pulled = at(&|m| {
        m["method"] == "textDocument/diagnostic" && m["params"]["textDocument"]["uri"] == caller_uri
    });
    let changed = at(&|m| {
        m["method"] == "textDocument/didChange" && m["params"]["textDocument"]["uri"] == lib_uri
    });
    assert!(
        opened.is_some() && opened < pulled && pulled < changed,
        "{opened:?} {pulled:?} {changed:?}"
    );
    assert!(
        !methods(&log).contains(&"textDocument/publishDiagnostics".to_owned()),
        "the pull server published"
    );
    // Every open file's diagnostics, pulled.
    let all = f
        .servers
        .diagnostics(None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.len(), 1, "{all:?}");
    // The fix reports nothing new, and the caller is clean again.
    std::fs::write(&lib, "thing\n").unwrap_or_else(|e| panic!("{e}"));
    let fixed = f
        .servers
        .did_change_diagnostics(&lib, "thing\n")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(fixed.is_empty(), "{fixed:?}");
    let now = f
        .servers
        .diagnostics(Some(&caller))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(now.is_empty(), "{now:?}");
}

/// A server still loading its project answers from a partial view (typescript-language-
/// server's syntax server finds no reference in a file it has not opened). An edit made
/// while the call that started the server waits for it must wait too, within the server's
/// startup time, instead of taking the partial answer: then it finds the caller it broke.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_while_the_server_loads_waits_until_it_is_ready() {
    // The startup time is long: what is asserted is the order of events, not how long the
    // machine took; the file `loaded` ends the server's loading.
    let Some(f) = fake_configured(&["loading"], |c| {
        c.startup_timeout = Duration::from_secs(120);
        c.request_timeout = Duration::from_secs(60);
    }) else {
        return;
    };
    let dir = f.file.parent().map(Path::to_path_buf).unwrap_or_default();
    let lib = dir.join("lib.fake");
    let caller = dir.join("caller.fake");
    std::fs::write(&lib, "thing\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&caller, "x\ncall here\n").unwrap_or_else(|e| panic!("{e}"));
    let Fake {
        servers, log, _dir, ..
    } = f;
    let servers = std::sync::Arc::new(servers);
    // A call starts the server and waits for it to load.
    let call = {
        let servers = std::sync::Arc::clone(&servers);
        let lib = lib.clone();
        let uri = format!("file://{}", lib.display());
        tokio::spawn(async move {
            servers
                .request(
                    &lib,
                    "textDocument/documentSymbol",
                    json!({"textDocument": {"uri": uri}}),
                )
                .await
        })
    };
    while servers.running().await.is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Meanwhile an edit of lib, then the server finishes loading.
    let edit = {
        let servers = std::sync::Arc::clone(&servers);
        let lib = lib.clone();
        tokio::spawn(async move { servers.did_change_diagnostics(&lib, "thing broken\n").await })
    };
    std::fs::write(dir.join("loaded"), "").unwrap_or_else(|e| panic!("{e}"));
    let symbols = call.await.unwrap_or_else(|e| panic!("{e}"));
    assert!(symbols.is_ok(), "{symbols:?}");
    let new = edit
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    let shown: Vec<String> = new.iter().map(|d| d.display(&dir)).collect();
    assert_eq!(shown, ["caller.fake:2:1: error: call is broken [fake]"]);
    // Nothing asked the server who refers to lib before it had loaded the project.
    let log = received(&log);
    let loaded = log.iter().position(|m| m["fake"] == "loaded");
    let references = log
        .iter()
        .position(|m| m["method"] == "textDocument/references");
    assert!(
        loaded.is_some() && loaded < references,
        "{loaded:?} {references:?}"
    );
}
