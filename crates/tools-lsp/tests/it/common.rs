//! Managers of the peer servers (found with `test_support::peers`) and small projects.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tools_lsp::{LanguageServerConfig, LanguageServers, LspConfig};

/// Which server a project uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Python,
    TypeScript,
}

impl Lang {
    pub fn binary(self) -> &'static str {
        match self {
            Lang::Python => "pyright-langserver",
            Lang::TypeScript => "typescript-language-server",
        }
    }

    pub fn extensions(self) -> &'static str {
        match self {
            Lang::Python => "py,pyi",
            Lang::TypeScript => "ts,tsx,js",
        }
    }
}

/// A manager for `lang` only, with the peer binary; `None` when the peer is missing.
pub fn manager(lang: Lang, cwd: &Path) -> Option<LanguageServers> {
    let binary = test_support::peers::bin(lang.binary())?;
    let mut server = LanguageServerConfig::new(binary.display().to_string(), &["--stdio"]);
    // What the tests check needs a server that has loaded the project, which calls wait
    // for within its startup time; on a busy machine loading takes longer than the default
    // (15 s), so the servers get as long as they need: the tests are about the answers, not
    // the bound.
    server.startup_timeout = Duration::from_secs(300);
    let config = LspConfig::empty().with_server(lang.extensions(), server);
    Some(LanguageServers::new(config, cwd))
}

pub const PY_MODELS: &str = "\
class Animal:
    def speak(self) -> str:
        return \"...\"


class Dog(Animal):
    def speak(self) -> str:
        return \"woof\"


def make_dog(name: str) -> Dog:
    \"\"\"Builds a dog.\"\"\"
    return Dog()
";

pub const PY_MAIN: &str = "\
from models import Dog, make_dog


def greet(count: int) -> str:
    dog = make_dog(\"rex\")
    return dog.speak() * count


def main() -> None:
    print(greet(2))
    print(greet(3))
";

pub const TS_SHAPES: &str = "\
export interface Shape {
  area(): number;
}

export class Square implements Shape {
  constructor(private side: number) {}
  area(): number {
    return this.side * this.side;
  }
}

export function makeSquare(side: number): Square {
  return new Square(side);
}
";

pub const TS_MAIN: &str = "\
import { makeSquare, Shape } from \"./shapes\";

function total(shapes: Shape[]): number {
  return shapes.reduce((sum, s) => sum + s.area(), 0);
}

export function main(): number {
  const sq = makeSquare(2);
  return total([sq]) + total([makeSquare(3)]);
}
";

/// A small project for `lang` in a fresh temporary folder (canonical path).
pub fn project(lang: Lang) -> (tempfile::TempDir, PathBuf) {
    let (dir, root) = test_support::tempdir();
    let files: &[(&str, &str)] = match lang {
        Lang::Python => &[
            (
                "pyproject.toml",
                "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n",
            ),
            ("models.py", PY_MODELS),
            ("main.py", PY_MAIN),
        ],
        Lang::TypeScript => &[
            (
                "tsconfig.json",
                "{\"compilerOptions\": {\"strict\": true, \"target\": \"es2020\", \"module\": \"commonjs\"}, \"include\": [\"*.ts\"]}\n",
            ),
            ("shapes.ts", TS_SHAPES),
            ("main.ts", TS_MAIN),
        ],
    };
    for (name, text) in files {
        std::fs::write(root.join(name), text).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    (dir, root)
}

/// A pool with the LSP tool and a context whose manager serves `lang`.
pub struct Session {
    pub pool: tool_core::ToolPool,
    pub ctx: tool_core::ToolContext,
    pub servers: std::sync::Arc<LanguageServers>,
    _state: tempfile::TempDir,
}

impl Session {
    pub fn new(lang: Lang, root: &Path) -> Option<Session> {
        let servers = std::sync::Arc::new(manager(lang, root)?);
        let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ctx = tool_core::ToolContext::builder(root)
            .state_dir(state.path())
            .lsp(servers.clone())
            .build();
        Some(Session {
            pool: tool_core::ToolPool::new(tools_lsp::tools()),
            ctx,
            servers,
            _state: state,
        })
    }

    /// Calls LSP and returns (is_error, text).
    pub async fn call(&self, input: serde_json::Value) -> (bool, String) {
        let result = self.pool.call("LSP", input, &self.ctx).await;
        (result.is_error, result.text())
    }

    /// Calls LSP with `op` at `file:line:character`; the call must succeed.
    pub async fn op(&self, op: &str, file: &str, line: u32, character: u32) -> String {
        let (is_error, text) = self
            .call(serde_json::json!({"operation": op, "filePath": file, "line": line, "character": character}))
            .await;
        assert!(!is_error, "{op} {file}:{line}:{character} failed: {text}");
        text
    }
}
