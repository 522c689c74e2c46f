//! What the model sees before any server runs: every bad input with a clear error (the
//! schema and the description are snapshotted by the registry's tests).

use std::sync::Arc;

use serde_json::json;
use tool_core::{ToolContext, ToolPool};
use tools_lsp::{LanguageServerConfig, LanguageServers, LspConfig};

struct Fixture {
    pool: ToolPool,
    ctx: ToolContext,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let (dir, root) = test_support::tempdir();
    std::fs::write(root.join("a.py"), "x = 1\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(root.join("notes.xyz"), "hello\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir(root.join("pkg.py")).unwrap_or_else(|e| panic!("{e}"));
    let big = std::fs::File::create(root.join("big.py")).unwrap_or_else(|e| panic!("{e}"));
    big.set_len(11 * 1024 * 1024)
        .unwrap_or_else(|e| panic!("{e}"));
    // A server that cannot start: only reached if validation lets a call through.
    let config = LspConfig::empty().with_server(
        "py",
        LanguageServerConfig::new("/nonexistent/langserver", &[]),
    );
    let ctx = ToolContext::builder(&root)
        .state_dir(root.join(".state"))
        .lsp(Arc::new(LanguageServers::new(config, &root)))
        .build();
    Fixture {
        pool: ToolPool::new(tools_lsp::tools()),
        ctx,
        _dir: dir,
    }
}

async fn check(input: serde_json::Value, expected: &str) {
    let f = fixture();
    let result = f.pool.call("LSP", input.clone(), &f.ctx).await;
    let text = result.text();
    assert!(result.is_error, "{input}: {text}");
    let text = text.replace(&f.ctx.cwd().display().to_string(), "<root>");
    assert!(
        text.contains(expected),
        "{input}:\n{text}\nexpected: {expected}"
    );
}

#[tokio::test]
async fn bad_inputs_get_clear_errors() {
    check(
        json!({"operation": "hover"}),
        "filePath is required for hover",
    )
    .await;
    check(
        json!({"operation": "hover", "filePath": "a.py"}),
        "line is required for hover (1-based",
    )
    .await;
    check(
        json!({"operation": "hover", "filePath": "a.py", "line": 1}),
        "character is required for hover",
    )
    .await;
    check(
        json!({"operation": "hover", "filePath": "a.py", "line": 0, "character": 1}),
        "The parameter `line` must be at least 1 but was 0",
    )
    .await;
    check(
        json!({"operation": "hover", "filePath": "b.py", "line": 1, "character": 1}),
        "File does not exist: <root>/b.py",
    )
    .await;
    check(
        json!({"operation": "documentSymbol", "filePath": "pkg.py"}),
        "Path is not a file: <root>/pkg.py",
    )
    .await;
    check(
        json!({"operation": "hover", "filePath": "notes.xyz", "line": 1, "character": 1}),
        "No LSP server available for file type: .xyz",
    )
    .await;
    check(
        json!({"operation": "documentSymbol", "filePath": "big.py"}),
        "File too large for LSP analysis",
    )
    .await;
    check(
        json!({"operation": "hover", "filePath": "a.py", "line": 9, "character": 1}),
        "line 9 is past the end of <root>/a.py (2 lines)",
    )
    .await;
    check(
        json!({"operation": "rename", "filePath": "a.py"}),
        "operation",
    )
    .await;
    check(json!({"operation": "hover", "file": "a.py"}), "file").await;
    check(
        json!({"operation": "hover", "filePath": "a.py", "line": 1, "character": 1}),
        "Error performing hover: the language server command `/nonexistent/langserver` was not found",
    )
    .await;
}

#[tokio::test]
async fn diagnostics_of_open_files_when_none_are_open() {
    let f = fixture();
    let result = f
        .pool
        .call("LSP", json!({"operation": "diagnostics"}), &f.ctx)
        .await;
    assert!(!result.is_error, "{}", result.text());
    assert!(
        result
            .text()
            .starts_with("No diagnostics in the files open"),
        "{}",
        result.text()
    );
}

#[tokio::test]
async fn without_a_manager_the_error_says_what_to_configure() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap_or_else(|e| panic!("{e}"));
    let ctx = ToolContext::builder(dir.path())
        .state_dir(dir.path().join(".state"))
        .build();
    let pool = ToolPool::new(tools_lsp::tools());
    let result = pool
        .call(
            "LSP",
            json!({"operation": "hover", "filePath": "a.py", "line": 1, "character": 1}),
            &ctx,
        )
        .await;
    assert!(result.is_error);
    assert!(
        result
            .text()
            .contains("No LSP server available for file type: .py"),
        "{}",
        result.text()
    );
}

/// The tool is LSP and deferred (its schema and description are snapshotted with every
/// other tool's by the registry's tests).
#[test]
fn the_tool_is_lsp_and_deferred() {
    let tool = tools_lsp::tools().remove(0);
    assert_eq!(tool.name(), "LSP");
    assert!(tool.is_deferred());
}
