//! `cargo xtask ci`: the whole CI sequence, in order, failing fast.
//!
//! Steps: rustfmt, tidy, clippy, the `cargo check` feature matrix, peers, nextest, doc tests,
//! the MCP conformance suite (`cargo xtask conformance`), cargo-deny, `cargo package`. Each step prints its name and duration; the first failure stops the run with a
//! message naming the step and the command that failed.
//!
//! The end-to-end tests (agent-tools' `e2e` test binary) need no step of their own: Cargo
//! builds the binary they drive (`CARGO_BIN_EXE_agent-tools`) with the features of the test
//! run, and `--all-features` includes `agent-triggers`, which the cron and Monitor tests
//! need.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};

use crate::cmd::{Cmd, secs};
use crate::{conformance, peers, tidy};

/// Crates checked alone with `--no-default-features`.
const LIB_CRATES: &[&str] = &[
    "tool-core",
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

/// The cargo-deny release CI installs when `cargo deny` is missing.
const CARGO_DENY: &str = "cargo-deny@0.20.2";

/// What a step does.
enum Action {
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

fn steps(peers_dir: &Path) -> Vec<Step> {
    vec![
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
            name: "peers",
            action: Action::Peers,
        },
        Step {
            name: "tests",
            // With every feature: the end-to-end tests' binary then has `agent-triggers`.
            action: Action::Commands(vec![with_peers_env(
                cargo(&[
                    "nextest",
                    "run",
                    "--workspace",
                    "--all-features",
                    "--profile",
                    "ci",
                ]),
                peers_dir,
            )]),
        },
        Step {
            name: "doc tests",
            action: Action::Commands(vec![with_peers_env(
                cargo(&["test", "--workspace", "--all-features", "--doc"]),
                peers_dir,
            )]),
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

fn run_step(root: &Path, peers_dir: &Path, step: &Step, dry_run: bool) -> Result<()> {
    match &step.action {
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
    let steps = steps(&peers_dir);
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
        let result = run_step(root, &peers_dir, step, dry_run);
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
        let names: Vec<&str> = steps(Path::new("/p")).iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "fmt",
                "tidy",
                "clippy",
                "feature matrix",
                "peers",
                "tests",
                "doc tests",
                "conformance",
                "cargo-deny",
                "package"
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
