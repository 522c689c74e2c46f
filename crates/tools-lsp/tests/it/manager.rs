//! The manager against real servers: diagnostics after an edit and after its fix, restart
//! after a kill, every process gone after drop.

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use tool_core::LspManager;

use crate::common::{Lang, Session, manager, project};

const PY_BROKEN: &str = "from models import Dog, make_dog\n\n\ndef greet(count: int) -> str:\n    dog = make_dog(\"rex\")\n    return dog.speak() * count\n\n\ndef main() -> None:\n    total: int = greet(2)\n    print(total)\n";

const TS_BROKEN: &str = "import { makeSquare, Shape } from \"./shapes\";\n\nfunction total(shapes: Shape[]): number {\n  return shapes.reduce((sum, s) => sum + s.area(), 0);\n}\n\nexport function main(): number {\n  const sq = makeSquare(2);\n  const label: string = total([sq]);\n  return label.length;\n}\n";

fn process_exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false)
}

async fn edit_brings_and_fix_clears_a_diagnostic(
    lang: Lang,
    file: &str,
    broken: &str,
    fixed: &str,
    needle: &str,
) {
    let (_dir, root) = project(lang);
    let Some(s) = Session::new(lang, &root) else {
        return;
    };
    let path = root.join(file);
    // No server runs yet: an edit does not start one and reports nothing.
    let none = s.servers.did_change_diagnostics(&path, fixed).await;
    assert!(matches!(none.as_deref(), Ok([])), "{none:?}");
    assert!(s.servers.running().await.is_empty());
    // Start the server through the tool; the file is clean.
    let text = s.op("diagnostics", file, 1, 1).await;
    assert_eq!(text, format!("No diagnostics in {file}."));
    // The edit's diagnostics come back from the hook.
    std::fs::write(&path, broken).unwrap_or_else(|e| panic!("{e}"));
    let new = s
        .servers
        .did_change_diagnostics(&path, broken)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        new.iter().any(|d| d.severity == "error"
            && d.line == 10 - u32::from(lang == Lang::TypeScript)
            && d.message.contains(needle)),
        "{new:?}"
    );
    let shown = new[0].display(&root);
    assert!(shown.starts_with(&format!("{file}:")), "{shown}");
    // The diagnostics operation sees it, for the file and for every open file.
    let text = s.op("diagnostics", file, 1, 1).await;
    assert!(
        text.contains(needle) && text.contains(": error: "),
        "{text}"
    );
    let (is_error, all) = s.call(json!({"operation": "diagnostics"})).await;
    assert!(!is_error && all.contains(needle), "{all}");
    // The fix clears it, and reports nothing new.
    std::fs::write(&path, fixed).unwrap_or_else(|e| panic!("{e}"));
    let new = s
        .servers
        .did_change_diagnostics(&path, fixed)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(new.is_empty(), "{new:?}");
    let text = s.op("diagnostics", file, 1, 1).await;
    assert_eq!(text, format!("No diagnostics in {file}."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_edit_brings_and_fix_clears_a_diagnostic() {
    edit_brings_and_fix_clears_a_diagnostic(
        Lang::Python,
        "main.py",
        PY_BROKEN,
        crate::common::PY_MAIN,
        "is not assignable to declared type \"int\"",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_edit_brings_and_fix_clears_a_diagnostic() {
    edit_brings_and_fix_clears_a_diagnostic(
        Lang::TypeScript,
        "main.ts",
        TS_BROKEN,
        crate::common::TS_MAIN,
        "Type 'number' is not assignable to type 'string'",
    )
    .await;
}

async fn killed_server_is_restarted(lang: Lang, file: &str, line: u32, character: u32) {
    let (_dir, root) = project(lang);
    let Some(s) = Session::new(lang, &root) else {
        return;
    };
    let first = s.op("hover", file, line, character).await;
    let running = s.servers.running().await;
    assert_eq!(running.len(), 1, "{running:?}");
    let pid = running[0].pid;
    assert_eq!(running[0].root, root);
    // Kill the whole group, as a crash or the OOM killer would.
    let status = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .status()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success());
    for _ in 0..3000 {
        if !process_exists(pid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The next call starts a new server and answers the same. (Should the kill land while
    // that call talks to the dying server, the call says so, and the one after restarts.)
    let input =
        json!({"operation": "hover", "filePath": file, "line": line, "character": character});
    let (is_error, mut again) = s.call(input.clone()).await;
    if is_error {
        assert!(
            again.contains("it will be restarted on the next call"),
            "{again}"
        );
        again = s.op("hover", file, line, character).await;
    }
    assert_eq!(again, first);
    let running = s.servers.running().await;
    assert_eq!(running.len(), 1, "{running:?}");
    assert_ne!(running[0].pid, pid);
    // Dropping the manager stops the new server and its whole group.
    let new_pid = running[0].pid;
    drop(s);
    assert!(
        !process_exists(new_pid),
        "server {new_pid} outlived its manager"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_pyright_is_restarted_by_the_next_call() {
    killed_server_is_restarted(Lang::Python, "main.py", 5, 11).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_typescript_server_is_restarted_by_the_next_call() {
    killed_server_is_restarted(Lang::TypeScript, "main.ts", 8, 14).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_every_server_and_the_next_call_starts_again() {
    let (_dir, root) = project(Lang::Python);
    let Some(servers) = manager(Lang::Python, &root) else {
        return;
    };
    let main = root.join("main.py");
    let symbols = servers
        .request(
            &main,
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": format!("file://{}", main.display())}}),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(symbols.to_string().contains("greet"), "{symbols}");
    let pid = servers.running().await[0].pid;
    servers.shutdown().await;
    assert!(servers.running().await.is_empty());
    assert!(!process_exists(pid));
    let diagnostics = servers
        .diagnostics(Some(&main))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
}
