//! Seeded violations: each architecture check run against a fake workspace in a temporary
//! folder, clean first, then with one violation written in.

use std::fs;
use std::path::{Path, PathBuf};

use super::{Problem, check_references, cycles, deps, shell};

/// The fake workspace's cycle exceptions: one synthetic entry (the real list is empty), for
/// the cycle of four tools-agent modules the clean workspace has.
const FAKE_CYCLE_EXCEPTIONS: &[(&str, &[&str])] =
    &[("tools-agent", &["agent", "plan", "runs", "team"])];

/// A fake workspace under the system's temporary folder, removed when dropped.
struct Fake {
    root: PathBuf,
}

impl Fake {
    /// A clean workspace: every crate the rules know, each depending as allowed.
    fn clean(name: &str) -> Fake {
        let root =
            std::env::temp_dir().join(format!("xtask-tidy-seeded-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let fake = Fake { root };
        fake.write("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n");
        // Every crate's tests may use test-support, tool-core's included.
        fake.manifest(
            "tool-core",
            &[],
            "[dev-dependencies]\ntest-support.workspace = true\n",
        );
        fake.manifest("test-support", &[], "tempfile = \"3\"\n");
        for category in deps::CATEGORIES {
            let extra = if category == "tools-mcp" {
                "rmcp = { version = \"1\", features = [\n    \"server\",\n] }\n"
            } else {
                ""
            };
            fake.manifest(category, &["tool-core"], extra);
        }
        let mut all = vec!["tool-core"];
        all.extend(deps::CATEGORIES);
        fake.manifest("registry", &all, "");
        // The binary reaches the tools through the registry and tool-core; its end-to-end
        // tests use test-support.
        fake.manifest(
            "agent-tools",
            &["registry", "tool-core"],
            "[dev-dependencies]\ntest-support.workspace = true\ntempfile = \"3\"\n",
        );
        // The examples, outside `crates/`, use the library crates and, in their tests,
        // test-support.
        fake.write(
            "examples/Cargo.toml",
            "[package]\nname = \"examples\"\n\n[dependencies]\nregistry.workspace = true\n\
             tool-core.workspace = true\ntools-fs.workspace = true\nreqwest = \"1\"\n\n\
             [dev-dependencies]\ntest-support.workspace = true\n",
        );
        fake.write("examples/src/bin/demo.rs", "//! A demo.\nfn main() {}\n");
        fake.write(
            "crates/tools-fs/src/lib.rs",
            "//! Files.\nmod a;\nmod b;\npub use a::A;\n",
        );
        fake.write(
            "crates/tools-fs/src/a.rs",
            "//! A.\nuse crate::b::B;\npub struct A(B);\n",
        );
        fake.write(
            "crates/tools-fs/src/b.rs",
            "//! B (no `crate::a` here: comments do not count).\npub struct B;\n\
             #[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n",
        );
        fake.write(
            "crates/tools-shell/src/lib.rs",
            "//! Shell.\nfn f() { std::process::Command::new(\"bash\"); }\n",
        );
        fake.write(
            "crates/tools-lsp/src/server.rs",
            "//! A server.\nfn f(p: &str) { Command::new(p); Command::new(\"git\"); }\n",
        );
        fake.write(
            "docs/notes.md",
            "# Notes\n\nEverything a contributor needs is here.\n",
        );
        // The agent crate's import cycle is listed as an exception.
        fake.write(
            "crates/tools-agent/src/agent.rs",
            "//! A.\nuse crate::team::T;\n",
        );
        fake.write(
            "crates/tools-agent/src/team.rs",
            "//! T.\nuse crate::{agent, plan};\n",
        );
        fake.write(
            "crates/tools-agent/src/plan.rs",
            "//! P.\nuse super::runs::R;\n",
        );
        fake.write(
            "crates/tools-agent/src/runs.rs",
            "//! R.\nuse crate::agent::A;\n",
        );
        fake
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.root.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(path, text).unwrap();
    }

    fn manifest(&self, krate: &str, internal: &[&str], extra: &str) {
        let mut text = format!("[package]\nname = \"{krate}\"\n\n[dependencies]\n");
        for dep in internal {
            text.push_str(&format!("{dep}.workspace = true\n"));
        }
        text.push_str(extra);
        self.write(&format!("crates/{krate}/Cargo.toml"), &text);
    }

    /// Every architecture check's problems, as `path:line: message` lines.
    fn problems(&self) -> Vec<String> {
        let mut problems: Vec<Problem> = Vec::new();
        check_references(&self.root, &[], &mut problems).unwrap();
        deps::check(&self.root, &mut problems).unwrap();
        shell::check(&self.root, &mut problems).unwrap();
        cycles::check_with(&self.root, FAKE_CYCLE_EXCEPTIONS, &mut problems).unwrap();
        problems.iter().map(ToString::to_string).collect()
    }

    fn path(&self) -> &Path {
        &self.root
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// Asserts exactly one problem, at `at`, mentioning every one of `words`.
fn assert_one(problems: &[String], at: &str, words: &[&str]) {
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].starts_with(at), "{problems:#?}");
    for word in words {
        assert!(problems[0].contains(word), "no `{word}` in {problems:#?}");
    }
}

#[test]
fn a_clean_workspace_passes() {
    let fake = Fake::clean("clean");
    assert!(fake.path().is_dir());
    assert_eq!(fake.problems(), Vec::<String>::new());
}

#[test]
fn a_category_depending_on_another_fails() {
    let fake = Fake::clean("category");
    fake.manifest("tools-web", &["tool-core", "tools-fs"], "");
    assert_one(
        &fake.problems(),
        "crates/tools-web/Cargo.toml:6: ",
        &[
            "`tools-web` depends on `tools-fs`",
            "[dependencies]",
            "never on another category",
        ],
    );
}

#[test]
fn a_category_may_use_another_in_its_tests_only() {
    let fake = Fake::clean("dev");
    fake.write(
        "crates/tools-web/Cargo.toml",
        "[package]\nname = \"tools-web\"\n[dependencies]\ntool-core.workspace = true\n\
         [dev-dependencies]\ntools-fs.workspace = true\nregistry.workspace = true\n",
    );
    assert_one(
        &fake.problems(),
        "crates/tools-web/Cargo.toml:7: ",
        &["depends on `registry` in [dev-dependencies]"],
    );
}

#[test]
fn test_support_outside_dev_dependencies_fails() {
    let fake = Fake::clean("test-support");
    fake.manifest("tools-fs", &["tool-core", "test-support"], "");
    assert_one(
        &fake.problems(),
        "crates/tools-fs/Cargo.toml:6: ",
        &[
            "`tools-fs` depends on `test-support` in [dependencies]",
            "shared by the tests only",
        ],
    );
    fake.manifest("tools-fs", &["tool-core"], "");
    fake.write(
        "crates/agent-tools/Cargo.toml",
        "[package]\nname = \"agent-tools\"\n[dependencies]\nregistry.workspace = true\n\
         [build-dependencies]\ntest-support.workspace = true\n",
    );
    assert_one(
        &fake.problems(),
        "crates/agent-tools/Cargo.toml:6: ",
        &["`agent-tools` depends on `test-support` in [build-dependencies]"],
    );
    // test-support itself depends on no crate of the workspace.
    fake.write(
        "crates/agent-tools/Cargo.toml",
        "[package]\nname = \"agent-tools\"\n",
    );
    fake.manifest("test-support", &["tool-core"], "");
    assert_one(
        &fake.problems(),
        "crates/test-support/Cargo.toml:5: ",
        &[
            "`test-support` depends on `tool-core`",
            "no crate of the workspace",
        ],
    );
}

#[test]
fn rmcp_outside_tools_mcp_fails() {
    let fake = Fake::clean("rmcp");
    fake.write(
        "crates/tools-lsp/Cargo.toml",
        "[package]\nname = \"tools-lsp\"\n\n[target.'cfg(unix)'.dependencies]\n\
         tool-core.workspace = true\nrmcp = { workspace = true }\n",
    );
    assert_one(
        &fake.problems(),
        "crates/tools-lsp/Cargo.toml:6: ",
        &[
            "`tools-lsp` depends on `rmcp`",
            "only crate that speaks the MCP wire format",
        ],
    );
}

#[test]
fn http_in_tool_core_fails() {
    let fake = Fake::clean("http");
    fake.manifest("tool-core", &[], "hyper-util = \"1\"\n");
    assert_one(
        &fake.problems(),
        "crates/tool-core/Cargo.toml:5: ",
        &["`hyper-util`", "no HTTP, MCP or LSP dependency"],
    );
}

#[test]
fn the_binary_past_the_registry_fails() {
    let fake = Fake::clean("binary");
    fake.manifest("agent-tools", &["registry", "tool-core", "tools-shell"], "");
    assert_one(
        &fake.problems(),
        "crates/agent-tools/Cargo.toml:7: ",
        &["`tools-shell`", "through the registry and tool-core"],
    );
}

#[test]
fn mcp_in_the_binary_fails() {
    let fake = Fake::clean("binary-rmcp");
    fake.manifest("agent-tools", &["registry", "tool-core"], "rmcp = \"1\"\n");
    assert_one(
        &fake.problems(),
        "crates/agent-tools/Cargo.toml:7: ",
        &["`rmcp`", "only crate that speaks the MCP wire format"],
    );
}

#[test]
fn a_stale_exception_fails() {
    let fake = Fake::clean("stale");
    fake.manifest("agent-tools", &["registry", "tool-core", "tools-agent"], "");
    let mut rules = deps::RULES.to_vec();
    rules.push(deps::Rule::Exception(
        "agent-tools",
        &["tools-agent", "tools-shell"],
    ));
    let mut problems: Vec<Problem> = Vec::new();
    deps::check_with(fake.path(), &rules, &mut problems).unwrap();
    let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_one(
        &problems,
        "crates/agent-tools/Cargo.toml:1: ",
        &["no longer depends on `tools-shell`", "Rule::Exception"],
    );
}

#[test]
fn an_unknown_crate_fails() {
    let fake = Fake::clean("unknown");
    fake.manifest("tools-extra", &["tool-core"], "");
    assert_one(
        &fake.problems(),
        "crates/tools-extra/Cargo.toml:1: ",
        &["`tools-extra` has no dependency rule"],
    );
}

#[test]
fn a_stray_outside_reference_fails() {
    let fake = Fake::clean("refs");
    let cite = concat!("DESIGN", ".md \u{a7}4");
    fake.write(
        "crates/tools-fs/src/b.rs",
        &format!("//! B.\n\n/// Atomic, as {cite} says.\npub struct B;\n"),
    );
    let problems = fake.problems();
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems
            .iter()
            .all(|p| p.starts_with("crates/tools-fs/src/b.rs:3: cites"))
    );
    fake.write("crates/tools-fs/src/b.rs", "//! B.\npub struct B;\n");
    fake.write("README.md", concat!("See ../", "shared/notes.\n"));
    assert_one(
        &fake.problems(),
        "README.md:1: ",
        &["a folder outside the repository"],
    );
}

#[test]
fn reference_exceptions_are_per_file_and_shrink() {
    let fake = Fake::clean("refs-exceptions");
    fake.write(
        "crates/tools-agent/src/todo.rs",
        concat!("//! Todo (reference \u{a7}", "4).\n"),
    );
    let mut problems = Vec::new();
    check_references(
        fake.path(),
        &["crates/tools-agent/src/todo.rs"],
        &mut problems,
    )
    .unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    check_references(
        fake.path(),
        &["crates/tools-agent/src/ask.rs"],
        &mut problems,
    )
    .unwrap();
    let found: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found[0].starts_with("crates/tools-agent/src/todo.rs:1: cites"));
    assert!(found[1].starts_with("crates/tools-agent/src/ask.rs:1: cites no outside document"));
}

#[test]
fn an_import_cycle_fails() {
    let fake = Fake::clean("cycle");
    fake.write(
        "crates/tools-fs/src/b.rs",
        "//! B.\nuse super::{a::A};\npub struct B(Box<A>);\n",
    );
    assert_one(
        &fake.problems(),
        "crates/tools-fs/src:1: ",
        &[
            "import cycle between the modules {a, b}",
            "a → b (",
            "b → a (crates/tools-fs/src/b.rs:2)",
        ],
    );
}

#[test]
fn a_folder_module_is_one_node() {
    let fake = Fake::clean("folder");
    fake.write("crates/tools-fs/src/c/mod.rs", "//! C.\nmod d;\n");
    fake.write(
        "crates/tools-fs/src/c/d.rs",
        "//! D.\nuse super::super::a::A;\nuse super::D2;\n",
    );
    fake.write("crates/tools-fs/src/a.rs", "//! A.\nuse crate::c::d::D;\n");
    assert_one(&fake.problems(), "crates/tools-fs/src:1: ", &["{a, c}"]);
}

#[test]
fn a_cycle_growing_past_its_exception_fails_and_a_stale_one_too() {
    let fake = Fake::clean("cycle-exception");
    fake.write(
        "crates/tools-agent/src/skill.rs",
        "//! S.\nuse crate::runs::R;\n",
    );
    fake.write(
        "crates/tools-agent/src/runs.rs",
        "//! R.\nuse crate::{agent::A, skill};\n",
    );
    assert_one(
        &fake.problems(),
        "crates/tools-agent/src:1: ",
        &["{agent, plan, runs, skill, team}"],
    );

    let fake = Fake::clean("cycle-stale");
    fake.write("crates/tools-agent/src/plan.rs", "//! P.\n");
    fake.write("crates/tools-agent/src/runs.rs", "//! R.\n");
    let problems = fake.problems();
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].contains("`plan` is in no import cycle any more"),
        "{problems:#?}"
    );
    assert!(
        problems[1].contains("`runs` is in no import cycle any more"),
        "{problems:#?}"
    );
}

#[test]
fn a_shell_outside_tools_shell_fails() {
    let fake = Fake::clean("shell");
    fake.write(
        "crates/tools-agent/src/worktree.rs",
        "//! Worktrees.\nfn f() {\n    let _ = tokio::process::Command::new(\"sh\")\n        .arg(\"-c\");\n}\n",
    );
    assert_one(
        &fake.problems(),
        "crates/tools-agent/src/worktree.rs:3: ",
        &[
            "starts the shell `sh`",
            "only tools-shell runs shell command lines",
        ],
    );
}

#[test]
fn the_examples_depending_on_the_binary_fails() {
    let fake = Fake::clean("examples");
    fake.write(
        "examples/Cargo.toml",
        "[package]\nname = \"examples\"\n\n[dependencies]\nagent-tools.workspace = true\n",
    );
    assert_one(
        &fake.problems(),
        "examples/Cargo.toml:5: ",
        &["`examples` depends on `agent-tools`", "never the binary"],
    );
}

#[test]
fn a_shell_in_the_examples_fails() {
    let fake = Fake::clean("examples-shell");
    fake.write(
        "examples/src/bin/demo.rs",
        "//! A demo.\nfn main() {\n    std::process::Command::new(\"bash\");\n}\n",
    );
    assert_one(
        &fake.problems(),
        "examples/src/bin/demo.rs:3: ",
        &["starts the shell `bash`"],
    );
}
