//! Across files, against pyright and typescript-language-server: an edit that changes a
//! signature reports the callers it broke in other files (never opened before), but not
//! their older errors; workspaceSymbol finds symbols in files never opened, also files
//! created after the server started, and concurrent first calls wait for the server alike;
//! hover text is clean.

use std::path::Path;

use serde_json::json;
use tool_core::{FileDiagnostic, LspManager};

use crate::common::{Lang, Session};

/// A project whose `util` is used by `main` and `other` (which has an error of its own)
/// and not by `lonely`.
fn project(lang: Lang) -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, root) = test_support::tempdir();
    let files: &[(&str, &str)] = match lang {
        Lang::TypeScript => &[
            (
                "tsconfig.json",
                "{\"compilerOptions\": {\"strict\": true, \"target\": \"es2020\", \"module\": \"commonjs\"}, \"include\": [\"*.ts\"]}\n",
            ),
            (
                "util.ts",
                "export function scale(x: number): number {\n  return x * 2;\n}\n\nexport const unit = 1;\n",
            ),
            (
                "main.ts",
                "import { scale } from \"./util\";\n\nexport const a = scale(2);\n",
            ),
            (
                "other.ts",
                "import { scale, unit } from \"./util\";\n\nexport function b(): number {\n  return scale(unit) + 1;\n}\n\nexport const bad: number = \"already broken\";\n",
            ),
            ("lonely.ts", "export const z: number = 3;\n"),
        ],
        Lang::Python => &[
            (
                "pyproject.toml",
                "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n",
            ),
            (
                "util.py",
                "def scale(x: int) -> int:\n    return x * 2\n\n\nUNIT = 1\n",
            ),
            ("main.py", "from util import scale\n\nA = scale(2)\n"),
            (
                "other.py",
                "from util import UNIT, scale\n\n\ndef b() -> int:\n    return scale(UNIT) + 1\n\n\nBAD: int = \"already broken\"\n",
            ),
            ("lonely.py", "Z: int = 3\n"),
        ],
    };
    for (name, text) in files {
        std::fs::write(root.join(name), text).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    (dir, root)
}

fn ext(lang: Lang) -> &'static str {
    match lang {
        Lang::Python => "py",
        Lang::TypeScript => "ts",
    }
}

/// `util` with a second parameter, which breaks both callers.
fn broken_util(lang: Lang) -> &'static str {
    match lang {
        Lang::TypeScript => {
            "export function scale(x: number, y: number): number {\n  return x * y;\n}\n\nexport const unit = 1;\n"
        }
        Lang::Python => "def scale(x: int, y: int) -> int:\n    return x * y\n\n\nUNIT = 1\n",
    }
}

/// (file, line, message part) of each diagnostic, sorted.
fn brief(diagnostics: &[FileDiagnostic], root: &Path) -> Vec<(String, u32, String)> {
    let mut out: Vec<(String, u32, String)> = diagnostics
        .iter()
        .map(|d| {
            (
                d.path
                    .strip_prefix(root)
                    .unwrap_or(&d.path)
                    .display()
                    .to_string(),
                d.line,
                d.message.clone(),
            )
        })
        .collect();
    out.sort();
    out
}

/// The server runs with `first` open; `util` changes its signature (on disk, then through
/// the hook as Edit does); both callers are reported, nothing else; the fix reports
/// nothing and the callers are clean again.
async fn signature_change_reports_the_broken_callers(lang: Lang, first: &str) {
    let (_dir, root) = project(lang);
    let Some(s) = Session::new(lang, &root) else {
        return;
    };
    let first = format!("{first}.{}", ext(lang));
    s.op("documentSymbol", &first, 1, 1).await;
    let util = root.join(format!("util.{}", ext(lang)));
    let original = std::fs::read_to_string(&util).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&util, broken_util(lang)).unwrap_or_else(|e| panic!("{e}"));
    let new = s
        .servers
        .did_change_diagnostics(&util, broken_util(lang))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let got = brief(&new, &root);
    let (main_line, other_line, message) = match lang {
        Lang::TypeScript => (3, 4, "Expected 2 arguments, but got 1."),
        Lang::Python => (3, 5, "Argument missing for parameter \"y\""),
    };
    let e = ext(lang);
    assert_eq!(
        got,
        [
            (format!("main.{e}"), main_line, message.to_owned()),
            (format!("other.{e}"), other_line, message.to_owned()),
        ],
        "opened first: {first}; {new:#?}"
    );
    assert!(new.iter().all(|d| d.severity == "error"), "{new:#?}");
    // The fix brings nothing new; the callers are clean again (their own error stays).
    std::fs::write(&util, &original).unwrap_or_else(|e| panic!("{e}"));
    let fixed = s
        .servers
        .did_change_diagnostics(&util, &original)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(fixed.is_empty(), "{fixed:#?}");
    let main = s.op("diagnostics", &format!("main.{e}"), 1, 1).await;
    assert_eq!(main, format!("No diagnostics in main.{e}."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_signature_change_reports_callers_in_other_files() {
    signature_change_reports_the_broken_callers(Lang::TypeScript, "util").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_signature_change_reports_callers_in_other_files() {
    signature_change_reports_the_broken_callers(Lang::Python, "util").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_edit_of_a_file_the_server_never_had_open_reports_its_callers() {
    signature_change_reports_the_broken_callers(Lang::TypeScript, "lonely").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_edit_of_a_file_the_server_never_had_open_reports_its_callers() {
    signature_change_reports_the_broken_callers(Lang::Python, "lonely").await;
}

/// workspaceSymbol from `from` for `query`; the text.
async fn symbols(s: &Session, from: &str, query: &str) -> String {
    let (is_error, text) = s
        .call(json!({"operation": "workspaceSymbol", "filePath": from, "query": query}))
        .await;
    assert!(!is_error, "{text}");
    text
}

async fn workspace_symbols_cover_files_never_opened(lang: Lang) {
    let (_dir, root) = project(lang);
    let e = ext(lang);
    let (volume, area) = match lang {
        Lang::TypeScript => (
            "export function volume(side: number): number {\n  return side * side * side;\n}\n",
            "export function area(w: number, h: number): number {\n  return w * h;\n}\n",
        ),
        Lang::Python => (
            "def volume(side: int) -> int:\n    return side * side * side\n",
            "def area(w: int, h: int) -> int:\n    return w * h\n",
        ),
    };
    std::fs::write(root.join(format!("solid.{e}")), volume).unwrap_or_else(|e| panic!("{e}"));
    let Some(s) = Session::new(lang, &root) else {
        return;
    };
    // Three first calls at once: each waits until the server is ready, and each finds the
    // symbol in a file nothing opened or imports.
    let from = format!("lonely.{e}");
    let main = format!("main.{e}");
    let (a, b, c) = tokio::join!(
        symbols(&s, &from, "volume"),
        symbols(&s, &from, "volume"),
        symbols(&s, &main, "volume"),
    );
    for text in [a, b, c] {
        assert!(
            text.contains(&format!("volume (Function) - solid.{e}:1:")),
            "{text}"
        );
    }
    // A file created after the server started, as a shell command would.
    let folder = if lang == Lang::TypeScript { "" } else { "pkg/" };
    if !folder.is_empty() {
        std::fs::create_dir_all(root.join(folder)).unwrap_or_else(|e| panic!("{e}"));
    }
    let shapes = format!("{folder}shapes.{e}");
    std::fs::write(root.join(&shapes), area).unwrap_or_else(|e| panic!("{e}"));
    let text = symbols(&s, &from, "area").await;
    assert!(
        text.contains(&format!("area (Function) - {shapes}:1:")),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_workspace_symbols_cover_files_never_opened() {
    workspace_symbols_cover_files_never_opened(Lang::Python).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_workspace_symbols_cover_files_never_opened() {
    workspace_symbols_cover_files_never_opened(Lang::TypeScript).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_hover_is_clean_text() {
    let (_dir, root) = project(Lang::Python);
    std::fs::write(
        root.join("doc.py"),
        "def f(x: int) -> int:\n    \"\"\"Doubles <x> & more.\n\n    Args:\n        x: the_value\n    \"\"\"\n    return x * 2\n\n\nf(1)\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let Some(s) = Session::new(Lang::Python, &root) else {
        return;
    };
    let text = s.op("hover", "doc.py", 10, 1).await;
    assert!(text.contains("Doubles <x> & more."), "{text}");
    assert!(text.contains("\n    x: the_value"), "{text}");
    for raw in ["&nbsp;", "&lt;", "&gt;", "&amp;", "\\_"] {
        assert!(!text.contains(raw), "{raw} in {text}");
    }
}
