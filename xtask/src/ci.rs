//! `cargo xtask ci`: the whole CI sequence, in order, failing fast.
//!
//! Steps: the tools (rustfmt, clippy and cargo-nextest, each installed when missing), rustfmt,
//! tidy, clippy, the `cargo check` feature matrix, the declarations of tools-fs per feature
//! set (snapshots), peers, nextest, doc tests, the search index's differential test on the
//! Linux tree (release binary), the MCP conformance suite (`cargo xtask conformance`), cargo-deny (installed when missing), `cargo package`. Each step prints its
//! name and duration; the first failure stops the run with a message naming the step and the
//! command that failed. So a machine with Rust, Node, Python and the package registries needs
//! nothing else: `.ci/run` only sets the target directory and calls this.
//!
//! The tests run with `HOME` set to a fresh, empty directory in `/var/tmp` (outside the
//! sandbox's writable `/tmp`, see `TestHome::for_this_run`), with `CARGO_HOME` and
//! `RUSTUP_HOME` pinned to the real ones: a test that depends on where the real home is, or
//! on what it holds (a git identity, a shell start-up file), fails here rather than on a
//! user's machine.
//!
//! The end-to-end tests (agent-tools' `e2e` test binary) need no step of their own: Cargo
//! builds the binary they drive (`CARGO_BIN_EXE_agent-tools`) with the features of the test
//! run, and `--all-features` includes `agent-triggers`, which the cron and Monitor tests
//! need.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use crate::cmd::{Cmd, secs};
use crate::{conformance, peers, tidy};

/// Crates checked alone with `--no-default-features`.
const LIB_CRATES: &[&str] = &[
    "tool-core",
    "search-index",
    "sandbox",
    "shell-analysis",
    "tools-fs",
    "tools-shell",
    "tools-web",
    "tools-lsp",
    "tools-agent",
    "tools-mcp",
];

/// Features of the `registry` crate, each checked alone.
const REGISTRY_FEATURES: &[&str] = &[
    "fs",
    "shell",
    "web",
    "lsp",
    "agent",
    "mcp",
    "agent-triggers",
    "v2-todo",
];

/// Feature sets the binary is checked with: it forwards the registry's features, and each
/// command degrades when one is off.
const BINARY_FEATURE_SETS: &[&[&str]] = &[
    &["--no-default-features"],
    &["--no-default-features", "--features", "fs,shell"],
    &["--features", "agent-triggers"],
];

/// Feature sets of tools-fs whose declarations are checked against their own snapshots
/// (the tests step covers every feature): Read's description and schema say what the build
/// does.
const TOOLS_FS_FEATURE_SETS: &[&[&str]] = &[
    &["--no-default-features"],
    &["--no-default-features", "--features", "images"],
    &["--no-default-features", "--features", "pdf"],
];

/// The cargo-deny release CI installs when `cargo deny` is missing.
const CARGO_DENY: &str = "cargo-deny@0.20.2";

/// The cargo-nextest release CI installs when `cargo nextest` is missing.
const CARGO_NEXTEST: &str = "cargo-nextest@0.9.143";

/// A tool a step needs: how to tell it is there, and how to install it.
struct Tool {
    name: &'static str,
    probe: Cmd,
    install: Cmd,
}

/// The tools the steps need beyond cargo itself, installed by the first step when missing
/// (cargo-deny is installed by its own step, which comes last).
fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "rustfmt",
            probe: cargo(&["fmt", "--version"]),
            install: Cmd::new("rustup").args(["component", "add", "rustfmt"]),
        },
        Tool {
            name: "clippy",
            probe: cargo(&["clippy", "--version"]),
            install: Cmd::new("rustup").args(["component", "add", "clippy"]),
        },
        Tool {
            name: "cargo-nextest",
            probe: cargo(&["nextest", "--version"]),
            install: cargo(&["install", "--locked", CARGO_NEXTEST]),
        },
    ]
}

/// The environment the test steps run in: a fresh `HOME`, the real cargo and rustup homes.
#[derive(Debug, Clone)]
pub struct TestHome {
    /// The fresh home, in `/var/tmp` (see [`TestHome::for_this_run`])
    home: PathBuf,
    cargo_home: PathBuf,
    rustup_home: PathBuf,
}

impl TestHome {
    /// A fresh home for this run (not created yet), keeping this process's cargo and rustup
    /// homes (`$CARGO_HOME` and `$RUSTUP_HOME`, else `~/.cargo` and `~/.rustup`).
    fn for_this_run() -> Result<Self> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .context("HOME is not set")?;
        let or_home = |var: &str, default: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map_or_else(|| home.join(default), PathBuf::from)
        };
        // In /var/tmp rather than /tmp: every sandbox may write /tmp, so a home there is
        // inside its writable roots, and each test's sandbox would put placeholders for the
        // home's protected names (`.bashrc`, `.gitconfig`, `.claude`, …) into the one home
        // all the tests share, each removing them when it ends while others bind them —
        // a race in bubblewrap itself, which no real session has (sessions sharing a home
        // share one process's placeholders or meet rarely). The tests do not depend on
        // where the home is either way (the sandbox's own tests put a home under /tmp).
        let tmp = Path::new("/var/tmp");
        let dir = if tmp.is_dir() {
            tmp.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        Ok(TestHome {
            home: dir.join(format!("agent-tools-ci-home-{}", std::process::id())),
            cargo_home: or_home("CARGO_HOME", ".cargo"),
            rustup_home: or_home("RUSTUP_HOME", ".rustup"),
        })
    }

    /// Creates the home empty (anything left under its name goes first).
    fn create(&self) -> Result<()> {
        self.remove();
        fs::create_dir_all(&self.home)
            .with_context(|| format!("cannot create {}", self.home.display()))
    }

    fn remove(&self) {
        let _ = fs::remove_dir_all(&self.home);
    }

    /// `cmd` with this home.
    fn apply(&self, cmd: Cmd) -> Cmd {
        cmd.env("HOME", &self.home)
            .env("CARGO_HOME", &self.cargo_home)
            .env("RUSTUP_HOME", &self.rustup_home)
    }
}

/// What a step does.
enum Action {
    /// Install the missing tools.
    Tools(Vec<Tool>),
    /// External commands, run in order.
    Commands(Vec<Cmd>),
    /// The tidy check, in-process.
    Tidy,
    /// The peers installer, in-process.
    Peers,
    /// The MCP conformance suite, in-process.
    Conformance,
    /// Install cargo-deny if missing, then run its offline checks.
    Deny,
}

/// One named CI step.
struct Step {
    name: &'static str,
    action: Action,
}

fn cargo(args: &[&str]) -> Cmd {
    Cmd::new("cargo").args(args)
}

/// The feature matrix: every category crate alone, the registry bare and with each feature,
/// the binary with a few feature sets, then the whole workspace with every feature. Library
/// targets only, but for the binary.
fn feature_matrix() -> Vec<Cmd> {
    let mut cmds: Vec<Cmd> = LIB_CRATES
        .iter()
        .map(|krate| cargo(&["check", "-p", krate, "--no-default-features", "--lib"]))
        .collect();
    cmds.push(cargo(&[
        "check",
        "-p",
        "registry",
        "--no-default-features",
        "--lib",
    ]));
    cmds.extend(REGISTRY_FEATURES.iter().map(|feature| {
        cargo(&[
            "check",
            "-p",
            "registry",
            "--no-default-features",
            "--features",
            feature,
            "--lib",
        ])
    }));
    cmds.extend(BINARY_FEATURE_SETS.iter().map(|set| {
        let mut args = vec!["check", "-p", "agent-tools"];
        args.extend_from_slice(set);
        cargo(&args)
    }));
    cmds.push(cargo(&["check", "--workspace", "--all-features", "--lib"]));
    cmds
}

/// Adds the environment tests need to find the peers.
fn with_peers_env(cmd: Cmd, peers_dir: &Path) -> Cmd {
    cmd.env("AGENT_TOOLS_REQUIRE_PEERS", "1")
        .env("AGENT_TOOLS_PEERS_DIR", peers_dir)
        .env_prepend_path("PATH", peers_dir.join("node_modules/.bin"))
        .env_prepend_path("PATH", peers_dir.join("cargo/bin"))
        .env_prepend_path("PYTHONPATH", peers_dir.join("py"))
}

fn steps(peers_dir: &Path, home: &TestHome) -> Vec<Step> {
    let tests = |cmd: Cmd| home.apply(with_peers_env(cmd, peers_dir));
    vec![
        Step {
            name: "tools",
            action: Action::Tools(tools()),
        },
        Step {
            name: "fmt",
            action: Action::Commands(vec![cargo(&["fmt", "--all", "--check"])]),
        },
        Step {
            name: "tidy",
            action: Action::Tidy,
        },
        Step {
            name: "clippy",
            action: Action::Commands(vec![cargo(&[
                "clippy",
                "--workspace",
                "--all-targets",
                "--all-features",
                "--",
                "-D",
                "warnings",
            ])]),
        },
        Step {
            name: "feature matrix",
            action: Action::Commands(feature_matrix()),
        },
        Step {
            name: "declarations",
            action: Action::Commands(
                TOOLS_FS_FEATURE_SETS
                    .iter()
                    .map(|set| {
                        let mut args = vec!["test", "-p", "tools-fs", "--lib"];
                        args.extend_from_slice(set);
                        args.push("the_declaration_says_what_this_build_reads");
                        tests(cargo(&args))
                    })
                    .collect(),
            ),
        },
        Step {
            name: "peers",
            action: Action::Peers,
        },
        Step {
            name: "tests",
            // With every feature: the end-to-end tests' binary then has `agent-triggers`.
            action: Action::Commands(vec![tests(cargo(&[
                "nextest",
                "run",
                "--workspace",
                "--all-features",
                "--profile",
                "ci",
            ]))]),
        },
        Step {
            name: "doc tests",
            action: Action::Commands(vec![tests(cargo(&[
                "test",
                "--workspace",
                "--all-features",
                "--doc",
            ]))]),
        },
        Step {
            name: "index differential",
            // The search index against the scan on the Linux tree, with the release binary:
            // 300 generated queries take about 3 minutes on two busy cores (the full run,
            // AGENT_TOOLS_INDEX_DIFF_QUERIES=2000, about 15).
            action: Action::Commands(vec![
                with_peers_env(
                    cargo(&["xtask", "bench", "--runs", "1", "index-diff-linux"]),
                    peers_dir,
                )
                .env("AGENT_TOOLS_INDEX_DIFF_QUERIES", "300"),
            ]),
        },
        Step {
            name: "conformance",
            action: Action::Conformance,
        },
        Step {
            name: "cargo-deny",
            action: Action::Deny,
        },
        Step {
            name: "package",
            // Every crate must stay packageable: versions on internal dependencies, the
            // licence files, metadata. Not verified by building (the tests built them).
            action: Action::Commands(vec![cargo(&[
                "package",
                "--workspace",
                "--no-verify",
                "--allow-dirty",
            ])]),
        },
    ]
}

fn deny_check() -> Cmd {
    cargo(&["deny", "check", "bans", "licenses", "sources"])
}

fn deny_install() -> Cmd {
    cargo(&["install", "--locked", CARGO_DENY])
}

/// Installs each missing tool; a tool that cannot be installed fails the step with what to
/// do about it.
fn ensure_tools(root: &Path, tools: &[Tool], dry_run: bool) -> Result<()> {
    for tool in tools {
        if dry_run {
            println!("$ {}", tool.probe);
            println!("$ {}    # only when the line above fails", tool.install);
            continue;
        }
        if tool.probe.clone().cwd(root).succeeds_quietly() {
            println!("$ {}: ok", tool.probe);
            continue;
        }
        println!("{} is missing; installing it", tool.name);
        println!("$ {}", tool.install);
        tool.install.clone().cwd(root).run().with_context(|| {
            format!(
                "{} is missing and `{}` could not install it; install {} by hand and run again",
                tool.name, tool.install, tool.name
            )
        })?;
        if !tool.probe.clone().cwd(root).succeeds_quietly() {
            bail!(
                "{} was installed but `{}` still fails; check that it is on PATH",
                tool.name,
                tool.probe
            );
        }
    }
    Ok(())
}

fn run_step(root: &Path, peers_dir: &Path, step: &Step, dry_run: bool) -> Result<()> {
    match &step.action {
        Action::Tools(tools) => ensure_tools(root, tools, dry_run),
        Action::Commands(cmds) => {
            for cmd in cmds {
                println!("$ {cmd}");
                if !dry_run {
                    cmd.clone().cwd(root).run()?;
                }
            }
            Ok(())
        }
        Action::Tidy => {
            if dry_run {
                println!("(in-process) tidy: check {}", root.display());
                Ok(())
            } else {
                tidy::run(root, false)
            }
        }
        Action::Peers => peers::run(peers_dir, dry_run),
        Action::Conformance => {
            if dry_run {
                println!("(in-process) conformance: every server and client scenario");
                Ok(())
            } else {
                conformance::run(
                    root,
                    &conformance::Options {
                        runs: 1,
                        ..conformance::Options::default()
                    },
                )
            }
        }
        Action::Deny => {
            let version = cargo(&["deny", "--version"]);
            let install = deny_install();
            let check = deny_check();
            if dry_run {
                println!("$ {version}");
                println!("$ {install}    # only when the line above fails");
                println!("$ {check}");
                return Ok(());
            }
            if version.clone().cwd(root).succeeds_quietly() {
                println!("$ {version}: ok");
            } else {
                println!("cargo-deny is missing; installing {CARGO_DENY} (≈8 min the first time)");
                println!("$ {install}");
                install.cwd(root).run()?;
            }
            println!("$ {check}");
            check.cwd(root).run()
        }
    }
}

/// Runs every step in order; stops at the first failure.
pub fn run(root: &Path, dry_run: bool) -> Result<()> {
    let peers_dir = peers::peers_dir()?;
    let home = TestHome::for_this_run()?;
    let steps = steps(&peers_dir, &home);
    if !dry_run {
        home.create()?;
    }
    let result = run_steps(root, &peers_dir, &steps, dry_run);
    home.remove();
    result
}

fn run_steps(root: &Path, peers_dir: &Path, steps: &[Step], dry_run: bool) -> Result<()> {
    let total = steps.len();
    let started = Instant::now();
    println!(
        "xtask ci: {total} steps in {}, peers in {}{}",
        root.display(),
        peers_dir.display(),
        if dry_run {
            " (dry run: commands are printed, not run)"
        } else {
            ""
        }
    );
    let mut timings: Vec<(&str, Duration)> = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        let number = index + 1;
        println!("\n==> xtask ci: step {number}/{total}: {}", step.name);
        let step_started = Instant::now();
        let result = run_step(root, peers_dir, step, dry_run);
        let elapsed = step_started.elapsed();
        if let Err(err) = result {
            print_timings(&timings);
            return Err(anyhow!(
                "ci step {number}/{total} `{}` FAILED after {}: {err:#}",
                step.name,
                secs(elapsed)
            ));
        }
        println!(
            "<== xtask ci: step {number}/{total}: {} ok in {}",
            step.name,
            secs(elapsed)
        );
        timings.push((step.name, elapsed));
    }
    print_timings(&timings);
    let verb = if dry_run { "listed" } else { "passed" };
    println!(
        "xtask ci: all {total} steps {verb} in {}",
        secs(started.elapsed())
    );
    Ok(())
}

fn print_timings(timings: &[(&str, Duration)]) {
    if timings.is_empty() {
        return;
    }
    println!("\nxtask ci: step timings");
    for (name, elapsed) in timings {
        println!("  {name:<16} {:>9}", secs(*elapsed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_matrix_covers_every_crate_and_feature() {
        let lines: Vec<String> = feature_matrix().iter().map(ToString::to_string).collect();
        assert_eq!(
            lines.len(),
            LIB_CRATES.len() + 1 + REGISTRY_FEATURES.len() + BINARY_FEATURE_SETS.len() + 1
        );
        assert_eq!(
            lines[0],
            "cargo check -p tool-core --no-default-features --lib"
        );
        assert!(
            lines.contains(
                &"cargo check -p registry --no-default-features --features agent-triggers --lib"
                    .to_owned()
            )
        );
        assert!(lines.contains(
            &"cargo check -p agent-tools --no-default-features --features fs,shell".to_owned()
        ));
        assert_eq!(
            lines.last().map(String::as_str),
            Some("cargo check --workspace --all-features --lib")
        );
    }

    #[test]
    fn steps_are_in_order() {
        let names: Vec<&str> = steps(Path::new("/p"), &home())
            .iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(
            names,
            [
                "tools",
                "fmt",
                "tidy",
                "clippy",
                "feature matrix",
                "declarations",
                "peers",
                "tests",
                "doc tests",
                "index differential",
                "conformance",
                "cargo-deny",
                "package"
            ]
        );
    }

    fn home() -> TestHome {
        TestHome {
            home: PathBuf::from("/tmp/h"),
            cargo_home: PathBuf::from("/c"),
            rustup_home: PathBuf::from("/r"),
        }
    }

    #[test]
    fn the_tests_run_in_a_fresh_home_with_the_real_cargo_and_rustup() {
        let all = steps(Path::new("/p"), &home());
        for name in ["tests", "doc tests"] {
            let step = all.iter().find(|s| s.name == name).unwrap();
            let Action::Commands(cmds) = &step.action else {
                panic!("{name} runs commands");
            };
            let line = cmds[0].to_string();
            assert!(
                line.contains("HOME=/tmp/h CARGO_HOME=/c RUSTUP_HOME=/r"),
                "{line}"
            );
            assert!(line.contains("AGENT_TOOLS_PEERS_DIR=/p"), "{line}");
        }
        // The fresh home is in /var/tmp, outside every sandbox's writable roots.
        let real = TestHome::for_this_run().unwrap();
        assert!(real.home.starts_with("/var/tmp"), "{real:?}");
        assert_ne!(
            Some(real.home.as_os_str()),
            std::env::var_os("HOME").as_deref()
        );
    }

    #[test]
    fn the_first_step_installs_the_missing_tools_pinned() {
        let lines: Vec<String> = tools().iter().map(|t| t.install.to_string()).collect();
        assert_eq!(
            lines,
            [
                "rustup component add rustfmt",
                "rustup component add clippy",
                "cargo install --locked cargo-nextest@0.9.143"
            ]
        );
    }

    #[test]
    fn test_steps_carry_the_peers_environment() {
        let cmd = with_peers_env(cargo(&["nextest", "run"]), Path::new("/p"));
        assert_eq!(
            cmd.to_string(),
            "AGENT_TOOLS_REQUIRE_PEERS=1 AGENT_TOOLS_PEERS_DIR=/p \
             PATH=/p/node_modules/.bin:/p/cargo/bin:$PATH PYTHONPATH=/p/py:$PYTHONPATH cargo nextest run"
        );
    }
}
