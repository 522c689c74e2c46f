//! Integration tests of tools-fs through tool-core's public execution path (`ToolPool`):
//! Glob's pattern semantics, order, cap and messages, the shared ignore policy, symlinks,
//! read-deny rules, cancellation, and snapshots of its rendered output.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod apply_patch;
mod apply_patch_codex;
mod differential;
mod edit;
mod glob;
mod grep;
mod host_limits;
mod index;
mod notebook;
mod policy;
mod race;
mod read;
mod snapshots;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;
pub use test_support::FIXED_MTIME;
use test_support::Tree;
use tool_core::{
    CallResult, PermissionEngine, PermissionMode, PermissionRule, RuleBehavior, RuleSource,
    RuleSourceKind, SourcedRule, ToolContext, ToolPool,
};

/// A temporary directory tree plus a separate state directory.
pub struct Fixture {
    tree: Tree,
    state: TempDir,
}

impl Fixture {
    /// Creates `tree`: `"a/b.rs"` is an empty file, `"a/"` a directory, `"f = text"` a file
    /// with that content (`\n` written as `\\n`), `"l -> target"` a symlink. Every file gets
    /// [`FIXED_MTIME`].
    pub fn new(tree: &[&str]) -> Self {
        let fixture = Fixture {
            tree: Tree::new(&[]),
            state: tempfile::tempdir().expect("a temporary state directory"),
        };
        for entry in tree {
            fixture.add(entry);
        }
        fixture
    }

    /// Adds one entry written as in [`Fixture::new`] (`{root}` in a link's target expanded).
    pub fn add(&self, entry: &str) {
        match entry.split_once(" -> ") {
            Some((link, target)) => self.tree.symlink(link, self.expand(target)),
            None => self.tree.add(entry),
        }
    }

    /// Sets the modification time of `rel` to `since_epoch`.
    pub fn set_mtime(&self, rel: &str, since_epoch: Duration) {
        self.tree.set_mtime(rel, since_epoch);
    }

    /// The session's state directory (outside the tree).
    pub fn state_dir(&self) -> &Path {
        self.state.path()
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        self.tree.root()
    }

    /// `text` with `{root}` replaced by the canonical root.
    pub fn expand(&self, text: &str) -> String {
        text.replace("{root}", self.root().to_str().expect("a UTF-8 temp path"))
    }

    /// A context rooted here, with its own state directory and no rules.
    pub fn context(&self) -> ToolContext {
        self.context_with(PermissionMode::Default, &[])
    }

    /// A context rooted here with `mode` and command-line rules such as
    /// `(RuleBehavior::Deny, "Read(secret/**)")`.
    pub fn context_with(
        &self,
        mode: PermissionMode,
        rules: &[(RuleBehavior, &str)],
    ) -> ToolContext {
        let source = RuleSource {
            kind: RuleSourceKind::CliArg,
            file: None,
            root: self.root().to_path_buf(),
        };
        let rules = rules
            .iter()
            .map(|(behavior, text)| SourcedRule {
                rule: PermissionRule::parse(&self.expand(text)).expect("a rule"),
                behavior: *behavior,
                source: source.clone(),
            })
            .collect();
        ToolContext::builder(self.root())
            .state_dir(self.state.path())
            .mode(mode)
            .permissions(PermissionEngine::new(rules))
            .build()
    }

    /// Calls Glob with `input` (`{root}` expanded) in `ctx`.
    pub fn call(&self, ctx: &ToolContext, input: &Value) -> CallResult {
        self.call_tool(ctx, "Glob", input)
    }

    /// Calls `tool` with `input` (`{root}` expanded) in `ctx`.
    pub fn call_tool(&self, ctx: &ToolContext, tool: &str, input: &Value) -> CallResult {
        let input: Value =
            serde_json::from_str(&self.expand(&input.to_string())).expect("input is JSON");
        let pool = ToolPool::new(tools_fs::tools());
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(pool.call(tool, input, ctx))
    }

    /// The path of `rel` under the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.tree.path(rel)
    }

    /// Writes `bytes` to `rel` (creating parents).
    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        self.tree.write(rel, bytes);
    }

    /// The bytes of `rel`.
    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).expect("read")
    }

    /// Asserts that `result`'s text is `expected_lines` (`{root}` expanded), and that a
    /// successful result's data agrees with its text.
    #[track_caller]
    pub fn assert_lines(&self, result: &CallResult, expected_lines: &[&str]) {
        let expected: Vec<String> = expected_lines.iter().map(|l| self.expand(l)).collect();
        let text = result.text();
        let got: Vec<&str> = text.lines().collect();
        assert_eq!(got, expected, "{result:#?}");
        assert_eq!(result.tool, "Glob");
        if result.is_error {
            assert_eq!(result.data, Value::Null, "{result:#?}");
            return;
        }
        let names: Vec<&str> = result.data["filenames"]
            .as_array()
            .expect("filenames")
            .iter()
            .map(|f| f.as_str().expect("a name"))
            .collect();
        assert_eq!(result.data["numFiles"], names.len(), "{result:#?}");
        let truncated = result.data["truncated"].as_bool().expect("truncated");
        let listed: Vec<&str> = match got.as_slice() {
            ["No files found"] => Vec::new(),
            lines if truncated => lines[..lines.len() - 1].to_vec(),
            lines => lines.to_vec(),
        };
        assert_eq!(listed, names, "{result:#?}");
    }
}

/// Calls Glob with `input` in a fresh `tree` and asserts the result's text lines (`{root}`
/// in `input` and `expected_lines` stands for the tree's canonical root).
#[track_caller]
pub fn check(tree: &[&str], input: Value, expected_lines: &[&str]) -> CallResult {
    let fixture = Fixture::new(tree);
    let result = fixture.call(&fixture.context(), &input);
    fixture.assert_lines(&result, expected_lines);
    result
}
