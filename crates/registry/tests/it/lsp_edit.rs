//! Edit and the language servers together, as an agent uses them: after an LSP call
//! started the server, an Edit that changes a function's signature reports, in its own
//! result, the callers it broke in other files (which nothing had opened), and the edit that
//! puts it back reports nothing. Against typescript-language-server and pyright, installed
//! by `cargo xtask peers`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{PermissionMode, ToolContext, ToolPool};
use tools_lsp::{LanguageServerConfig, LanguageServers, LspConfig};

struct Project {
    pool: ToolPool,
    ctx: ToolContext,
    root: PathBuf,
    _dir: tempfile::TempDir,
}

impl Project {
    fn new(files: &[(&str, &str)], exts: &str, bin: &Path) -> Project {
        let (dir, root) = test_support::tempdir();
        for (name, text) in files {
            std::fs::write(root.join(name), text).unwrap();
        }
        let mut server = LanguageServerConfig::new(bin.display().to_string(), &["--stdio"]);
        // The edit's report needs a server that has loaded the project, which the LSP call
        // waits for; on a busy machine loading takes longer than the default startup time
        // (15 s), so the servers get as long as they need: what is tested is the report,
        // not the bound.
        server.startup_timeout = Duration::from_secs(300);
        let config = LspConfig::empty().with_server(exts, server);
        let ctx = ToolContext::builder(&root)
            .state_dir(root.join(".state"))
            .mode(PermissionMode::AcceptEdits)
            .lsp(Arc::new(LanguageServers::new(config, &root)))
            .build();
        let pool = ToolPool::new(registry::ToolRegistry::new().base_tools().to_vec());
        Project {
            pool,
            ctx,
            root,
            _dir: dir,
        }
    }

    async fn call(&self, tool: &str, input: Value) -> String {
        let result = self.pool.call(tool, input.clone(), &self.ctx).await;
        let text = result.text();
        assert!(!result.is_error, "{tool} {input}: {text}");
        text
    }

    async fn edit(&self, file: &str, old: &str, new: &str) -> String {
        let path = self.root.join(file).display().to_string();
        self.call("Read", json!({"file_path": path})).await;
        self.call(
            "Edit",
            json!({"file_path": path, "old_string": old, "new_string": new}),
        )
        .await
    }
}

/// Starts the server with an LSP call on `util`, changes `old` to `new` in it and expects
/// `broken` in the Edit's result; the edit back reports no diagnostics.
async fn check(project: &Project, util: &str, old: &str, new: &str, broken: &str) {
    project
        .call(
            "LSP",
            json!({"operation": "documentSymbol", "filePath": util}),
        )
        .await;
    let text = project.edit(util, old, new).await;
    assert!(text.contains(broken), "{text}\n--- expected:\n{broken}");
    // `other`'s own error (line 5) was there before: it is not reported.
    let other = util.replace("util", "other");
    assert!(!text.contains(&format!("{other}:5:")), "{text}");
    let back = project.edit(util, new, old).await;
    assert!(!back.contains("diagnostics"), "{back}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_edit_reports_the_callers_it_broke() {
    let Some(bin) = test_support::peers::bin("typescript-language-server") else {
        return;
    };
    let project = Project::new(
        &[
            (
                "tsconfig.json",
                "{\"compilerOptions\": {\"strict\": true, \"target\": \"es2020\", \"module\": \"commonjs\"}, \"include\": [\"*.ts\"]}\n",
            ),
            (
                "util.ts",
                "export function scale(x: number): number {\n  return x * 2;\n}\n",
            ),
            (
                "main.ts",
                "import { scale } from \"./util\";\n\nexport const a = scale(2);\n",
            ),
            (
                "other.ts",
                "import { scale } from \"./util\";\n\nexport const b = scale(3) + 1;\n\nexport const bad: number = \"already broken\";\n",
            ),
        ],
        "ts",
        &bin,
    );
    check(
        &project,
        "util.ts",
        "scale(x: number): number {\n  return x * 2;",
        "scale(x: number, y: number): number {\n  return x * y;",
        "\n\nNew diagnostics in 2 other files using what this change touched:\nmain.ts:3:18: error: Expected 2 arguments, but got 1. [typescript]\nother.ts:3:18: error: Expected 2 arguments, but got 1. [typescript]",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_edit_reports_the_callers_it_broke() {
    let Some(bin) = test_support::peers::bin("pyright-langserver") else {
        return;
    };
    let project = Project::new(
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n",
            ),
            ("util.py", "def scale(x: int) -> int:\n    return x * 2\n"),
            ("main.py", "from util import scale\n\nA = scale(2)\n"),
            (
                "other.py",
                "from util import scale\n\nB = scale(3) + 1\n\nBAD: int = \"already broken\"\n",
            ),
        ],
        "py",
        &bin,
    );
    check(
        &project,
        "util.py",
        "def scale(x: int) -> int:\n    return x * 2",
        "def scale(x: int, y: int) -> int:\n    return x * y",
        "\n\nNew diagnostics in 2 other files using what this change touched:\nmain.py:3:5: error: Argument missing for parameter \"y\" [Pyright]\nother.py:3:5: error: Argument missing for parameter \"y\" [Pyright]",
    )
    .await;
}
