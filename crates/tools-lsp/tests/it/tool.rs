//! The LSP tool's operations against pyright and typescript-language-server: every
//! operation returns the right location or symbol, as readable text (snapshots).

use serde_json::json;

use crate::common::{Lang, Session, project};

/// Runs each (operation, file, line, character) and snapshots its text as `<prefix>_<op>`.
async fn snapshot_all(s: &Session, prefix: &str, cases: &[(&str, &str, u32, u32)]) {
    for (op, file, line, ch) in cases {
        let text = s.op(op, file, *line, *ch).await;
        insta::assert_snapshot!(
            format!("{prefix}_{op}"),
            text,
            &format!("{op} {file}:{line}:{ch}")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_operations_find_the_right_places() {
    let (_dir, root) = project(Lang::Python);
    let Some(s) = Session::new(Lang::Python, &root) else {
        return;
    };
    snapshot_all(
        &s,
        "python",
        &[
            // `make_dog` in `dog = make_dog("rex")`
            ("goToDefinition", "main.py", 5, 11),
            ("findReferences", "models.py", 11, 5),
            ("hover", "main.py", 5, 11),
            ("documentSymbol", "models.py", 1, 1),
            ("workspaceSymbol", "main.py", 5, 11),
            // `greet`
            ("prepareCallHierarchy", "main.py", 4, 5),
            ("incomingCalls", "main.py", 4, 5),
            ("outgoingCalls", "main.py", 4, 5),
            ("diagnostics", "main.py", 1, 1),
        ],
    )
    .await;
    // The position's word is the default query; an explicit one wins.
    let (is_error, text) = s
        .call(json!({"operation": "workspaceSymbol", "filePath": "main.py", "query": "Animal"}))
        .await;
    assert!(!is_error, "{text}");
    assert!(text.contains("Animal (Class) - models.py:1:7"), "{text}");
    // pyright has no implementation provider: the error says so.
    let (is_error, text) = s
        .call(json!({"operation": "goToImplementation", "filePath": "models.py", "line": 2, "character": 9}))
        .await;
    assert!(is_error);
    assert!(
        text.contains("Error performing goToImplementation: the language server pyright-langserver does not support textDocument/implementation"),
        "{text}"
    );
    // Structured output as the reference has it.
    let result = s
        .pool
        .call("LSP", json!({"operation": "findReferences", "filePath": "models.py", "line": 11, "character": 5}), &s.ctx)
        .await;
    let data = result.data.clone();
    assert_eq!(data["operation"], "findReferences");
    assert_eq!(data["filePath"], "models.py");
    assert_eq!(data["resultCount"], 3);
    assert_eq!(data["fileCount"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_operations_find_the_right_places() {
    let (_dir, root) = project(Lang::TypeScript);
    let Some(s) = Session::new(Lang::TypeScript, &root) else {
        return;
    };
    snapshot_all(
        &s,
        "typescript",
        &[
            // `makeSquare` in `const sq = makeSquare(2);`: the declaration, not the import
            ("goToDefinition", "main.ts", 8, 14),
            ("findReferences", "shapes.ts", 12, 17),
            ("hover", "main.ts", 8, 14),
            ("documentSymbol", "shapes.ts", 1, 1),
            ("workspaceSymbol", "main.ts", 8, 14),
            // `area` of the interface
            ("goToImplementation", "shapes.ts", 2, 3),
            // `total`
            ("prepareCallHierarchy", "main.ts", 3, 10),
            ("incomingCalls", "main.ts", 3, 10),
            // `main`
            ("outgoingCalls", "main.ts", 7, 17),
            ("diagnostics", "main.ts", 1, 1),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitignored_locations_are_left_out() {
    let (_dir, root) = project(Lang::Python);
    let git_found = std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_ok();
    if !test_support::peers::require("git", git_found) {
        return;
    }
    let Some(s) = Session::new(Lang::Python, &root) else {
        return;
    };
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&root)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::create_dir_all(root.join("build")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(root.join(".gitignore"), "build/\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        root.join("build/generated.py"),
        "from models import make_dog\n\nmake_dog(\"a\")\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // What the repository's configuration and attributes name never runs: `git
    // check-ignore` runs hardened.
    let marker = root.join("planted-ran");
    let program = format!("touch '{}' #", marker.display());
    for (key, value) in [
        ("core.fsmonitor", program.as_str()),
        ("filter.evil.clean", program.as_str()),
        ("filter.evil.process", program.as_str()),
        ("diff.evil.textconv", program.as_str()),
        ("core.pager", program.as_str()),
        ("core.hooksPath", root.to_str().unwrap_or_default()),
    ] {
        git(&["config", key, value]);
    }
    std::fs::write(root.join(".gitattributes"), "* filter=evil diff=evil\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let text = s.op("findReferences", "models.py", 11, 5).await;
    assert!(text.contains("main.py"), "{text}");
    assert!(!text.contains("generated.py"), "{text}");
    assert!(!marker.exists(), "a planted program ran");
}
