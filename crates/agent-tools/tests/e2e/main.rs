//! End-to-end tests of the `agent-tools` binary: the command line (`list`, `schema`, `call`,
//! `batch`), Glob through `call`, permissions from flags and settings files, the file
//! tools against a racing symbolic-link swap and the shell's lifecycle guarantees (as root
//! and as an unprivileged user), shell permissions against an attacker, project trust,
//! `.mcp.json` servers that must not hold a command up, session events, and `doctor`.
//!
//! Every run gets its own temporary working directory (`--cwd`) and state directory
//! (`AGENT_TOOLS_HOME`, also used as `HOME`), so no test reads or writes the real home.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agents;
mod analysis;
mod batch;
mod call;
mod cli;
mod clients;
mod config_named;
mod definitions;
mod doctor;
mod events;
mod home_categories;
mod hosted;
mod index;
mod jail;
mod lifecycle;
mod live;
mod mcp_limits;
mod mcp_login;
mod mcp_startup;
mod permissions;
mod planted_git;
mod profile_codex;
mod profile_gemini;
mod profiles;
mod race;
mod serve;
mod serve_deploy;
mod serve_eras;
mod serve_fleet;
mod serve_http;
mod shell;
mod state_home;
mod state_tokens;
mod tasks;
mod trust;
mod worktree;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;
use tempfile::TempDir;
use test_support::Tree;

/// The `agent-tools` binary Cargo built for these tests, with the features they were built
/// with (`--all-features` in CI, which includes `agent-triggers`).
pub fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_agent-tools"))
}

// The tests expect every default tool in the binary: say so rather than fail one by one.
#[cfg(not(all(
    feature = "fs",
    feature = "shell",
    feature = "web",
    feature = "lsp",
    feature = "agent",
    feature = "mcp",
    feature = "v2-todo"
)))]
compile_error!(
    "the end-to-end tests drive a binary with at least the default features: build them \
     without --no-default-features"
);

/// The `agent-tools` binary with its `agent-triggers` feature (cron tools and Monitor): the
/// one under test when these tests were built with that feature (CI builds them with every
/// feature). Otherwise it is built once per test process with `cargo build --features
/// agent-triggers` into its own target directory beside the one under test (`e2e-triggers`),
/// so the binary under test is never replaced; Cargo rebuilds it when a source changed, so
/// it is never stale.
pub fn triggers_binary() -> &'static Path {
    if cfg!(feature = "agent-triggers") {
        return binary();
    }
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        // <target>/<profile>/agent-tools
        let profile_dir = binary().parent().expect("the profile directory");
        let target_dir = profile_dir
            .parent()
            .expect("the profile directory lives in the target directory");
        let scratch = target_dir.join("e2e-triggers");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        command
            .args(["build", "-p", "agent-tools", "--features", "agent-triggers"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("CARGO_TARGET_DIR", &scratch);
        let profile = profile_dir.file_name().expect("a profile name");
        if profile == "release" {
            command.arg("--release");
        }
        let status = command
            .status()
            .expect("cargo build -p agent-tools --features agent-triggers");
        assert!(status.success(), "the agent-triggers build failed");
        let built = scratch.join(profile).join("agent-tools");
        assert!(built.is_file(), "no binary at {}", built.display());
        built
    })
}

/// A temporary project to run the binary in, plus a temporary state directory.
pub struct Project {
    tree: Tree,
    home: TempDir,
}

impl Project {
    /// A project with `tree` created in it: `"a/b.rs"` is an empty file, `"a/"` a
    /// directory, `"f = text"` a file with that content, `"l -> target"` a symlink. Files
    /// get the same modification time ([`test_support::FIXED_MTIME`]).
    pub fn new(tree: &[&str]) -> Self {
        Project {
            tree: Tree::new(tree),
            home: tempfile::tempdir().expect("a temporary state directory"),
        }
    }

    /// Adds one entry written as in [`Project::new`].
    pub fn add(&self, entry: &str) {
        self.tree.add(entry);
    }

    /// The canonical project directory.
    pub fn root(&self) -> &Path {
        self.tree.root()
    }

    /// The canonical project directory as text.
    pub fn root_str(&self) -> &str {
        self.root().to_str().expect("a UTF-8 temp path")
    }

    /// The state directory given as `AGENT_TOOLS_HOME`.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// Approves the project's own files as they are now (`agent-tools trust --yes`), as a
    /// person would before a test that needs their MCP servers or wider settings.
    pub fn trust(&self) {
        self.run(&["trust", "--yes"], None).assert_code(0);
    }

    /// Makes the project a git repository.
    pub fn git_init(&self) {
        let status = Command::new("git")
            .args(["init", "-q"])
            .current_dir(self.root())
            .env("HOME", self.home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .expect("git init");
        assert!(status.success(), "git init failed");
    }

    /// Runs `agent-tools --cwd <root> ARGS` with `stdin` (or an empty one).
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Run {
        self.run_in(self.root(), args, stdin)
    }

    /// Runs `agent-tools --cwd CWD ARGS` with `stdin` (or an empty one).
    pub fn run_in(&self, cwd: &Path, args: &[&str], stdin: Option<&str>) -> Run {
        self.run_program(binary(), cwd, args, stdin)
    }

    /// `agent-tools --cwd <root> ARGS` with the project's home, not started yet: for a test
    /// that talks to the binary while it runs (`serve`, `batch`) and sets its streams.
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_of(binary(), self.root(), args)
    }

    /// `PROGRAM --cwd CWD ARGS` in the project's root with its home: how every test starts
    /// the binary (or `program`, a copy of it elsewhere).
    pub fn command_of(&self, program: &Path, cwd: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(program);
        command
            .arg("--cwd")
            .arg(cwd)
            .args(args)
            .current_dir(self.root())
            .env("AGENT_TOOLS_HOME", self.home.path())
            .env("HOME", self.home.path());
        command
    }

    /// [`Project::run_in`] with `program`, a copy of the binary elsewhere.
    pub fn run_program(
        &self,
        program: &Path,
        cwd: &Path,
        args: &[&str],
        stdin: Option<&str>,
    ) -> Run {
        let mut child = self
            .command_of(program, cwd, args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn agent-tools");
        if let Some(text) = stdin {
            let mut pipe = child.stdin.take().expect("stdin pipe");
            pipe.write_all(text.as_bytes()).expect("write stdin");
        }
        let output = child.wait_with_output().expect("wait for agent-tools");
        Run {
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            code: output
                .status
                .code()
                .expect("agent-tools exited by a signal"),
            stdout: String::from_utf8(output.stdout).expect("UTF-8 stdout"),
            stderr: String::from_utf8(output.stderr).expect("UTF-8 stderr"),
        }
    }
}

/// What one run of the binary produced.
#[derive(Debug)]
pub struct Run {
    /// The arguments after `--cwd DIR`
    pub args: Vec<String>,
    /// The exit status
    pub code: i32,
    /// Standard output
    pub stdout: String,
    /// Standard error
    pub stderr: String,
}

impl Run {
    /// Asserts the exit status.
    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "exit status of {self:#?}");
        self
    }

    /// Every stdout line parsed as JSON.
    #[track_caller]
    pub fn lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}\n{self:#?}"))
            })
            .collect()
    }

    /// The one result line of `call`, checked to have the shape of `tool_core::CallResult`.
    #[track_caller]
    pub fn result(&self) -> Value {
        let lines = self.lines();
        assert_eq!(lines.len(), 1, "one result line expected: {self:#?}");
        let line = lines.into_iter().next().expect("one line");
        assert_result_shape(&line);
        line
    }
}

/// Asserts that `line` is `{"tool", "is_error", "content", "data"}` (plus the optional
/// `retryable`).
#[track_caller]
pub fn assert_result_shape(line: &Value) {
    let obj = line.as_object().expect("a result line is an object");
    for key in ["tool", "is_error", "content", "data"] {
        assert!(obj.contains_key(key), "missing `{key}` in {line}");
    }
    assert!(
        obj.keys()
            .all(|k| ["tool", "is_error", "content", "data", "retryable"].contains(&k.as_str())),
        "unexpected key in {line}"
    );
    assert!(line["tool"].is_string(), "{line}");
    assert!(line["is_error"].is_boolean(), "{line}");
    assert!(line["content"].is_array(), "{line}");
}

/// The text blocks of a result line, joined by newlines.
pub fn text(line: &Value) -> String {
    line["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `filenames` of a Glob result line.
#[track_caller]
pub fn filenames(line: &Value) -> Vec<String> {
    line["data"]["filenames"]
        .as_array()
        .unwrap_or_else(|| panic!("no data.filenames in {line}"))
        .iter()
        .map(|f| f.as_str().expect("a file name").to_owned())
        .collect()
}

/// Peak resident memory of process `pid`, in KiB (VmHWM).
pub(crate) fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
