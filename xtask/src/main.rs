//! `cargo xtask`: the project's automation, written in Rust instead of shell.
//!
//! Subcommands: `ci` (the whole CI sequence), `peers` (install the real peers the tests need),
//! `schemas` (regenerate the insta schema snapshots), `bench` (compare our binary against a
//! baseline tool) and `tidy` (source hygiene and architecture checks). Run `cargo xtask help`
//! for the details.

#![allow(
    clippy::print_stdout,
    reason = "xtask is a command-line tool: stdout is its interface"
)]

mod bench;
mod ci;
mod cmd;
mod conformance;
mod peers;
mod schemas;
mod tidy;

use std::fmt;
use std::process::ExitCode;

use anyhow::Result;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  ci [--dry-run]             run the whole CI sequence (fmt, tidy, clippy, feature matrix,
                             peers, tests, doc tests, cargo-deny); --dry-run prints the
                             commands instead of running them
  peers [--dry-run]          install the real peers the tests need (npm, PyPI, Debian)
                             into $AGENT_TOOLS_PEERS_DIR (default ~/.cache/agent-tools/peers)
  conformance [--server | --client] [--runs N] [--bin PATH] [SCENARIO...]
                             run the MCP conformance suite against `agent-tools serve --http`
                             (server scenarios) and the MCP client (client scenarios, N times
                             each); fails on a failure not in
                             xtask/conformance-expected-failures.txt and on a listed one
                             that passes
  schemas                    regenerate the insta schema snapshots and list changed .snap files
  bench [--runs N] [NAME...] run benchmarks (default: all), median of N runs (default 10)
  bench --list               list the benchmarks
  bench soak [--soak-seconds N] [--soak-sessions N]
                             the serve soak (default 300 s, 100 clients)
  tidy [--report]            check source hygiene and the architecture's invariants
                             (dependency rules, shell spawns, import cycles, references
                             outside the repository, function lengths); --report also
                             prints every crate's import cycles and the longest functions
  help                       print this message
";

/// A parsed command line.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    Ci {
        dry_run: bool,
    },
    Peers {
        dry_run: bool,
    },
    Conformance(conformance::Options),
    /// What the conformance suite runs for a client scenario (internal)
    ConformanceAdapter(Vec<String>),
    Schemas,
    Bench(bench::Options),
    Tidy {
        report: bool,
    },
    Help,
}

/// A command-line mistake: reported with the usage text and exit status 2.
#[derive(Debug)]
struct UsageError(String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn usage_error(message: impl Into<String>) -> UsageError {
    UsageError(message.into())
}

fn parse(args: &[String]) -> Result<Command, UsageError> {
    let Some((first, rest)) = args.split_first() else {
        return Err(usage_error("missing command"));
    };
    match first.as_str() {
        "ci" => Ok(Command::Ci {
            dry_run: parse_dry_run(rest)?,
        }),
        "peers" => Ok(Command::Peers {
            dry_run: parse_dry_run(rest)?,
        }),
        "conformance" => parse_conformance(rest).map(Command::Conformance),
        "conformance-adapter" => Ok(Command::ConformanceAdapter(rest.to_vec())),
        "schemas" => {
            no_args("schemas", rest)?;
            Ok(Command::Schemas)
        }
        "tidy" => match rest {
            [] => Ok(Command::Tidy { report: false }),
            [flag] if flag == "--report" => Ok(Command::Tidy { report: true }),
            [arg, ..] => Err(usage_error(format!(
                "`tidy` takes only `--report`, got `{arg}`"
            ))),
        },
        "bench" => parse_bench(rest).map(Command::Bench),
        "help" | "-h" | "--help" => Ok(Command::Help),
        other => Err(usage_error(format!("unknown command `{other}`"))),
    }
}

fn no_args(command: &str, rest: &[String]) -> Result<(), UsageError> {
    match rest.first() {
        None => Ok(()),
        Some(arg) => Err(usage_error(format!(
            "`{command}` takes no arguments, got `{arg}`"
        ))),
    }
}

fn parse_dry_run(rest: &[String]) -> Result<bool, UsageError> {
    let mut dry_run = false;
    for arg in rest {
        match arg.as_str() {
            "--dry-run" | "-n" => dry_run = true,
            other => return Err(usage_error(format!("unexpected argument `{other}`"))),
        }
    }
    Ok(dry_run)
}

fn parse_conformance(rest: &[String]) -> Result<conformance::Options, UsageError> {
    let mut options = conformance::Options {
        runs: 1,
        ..conformance::Options::default()
    };
    let mut iter = rest.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--server" => options.server_only = true,
            "--bin" => {
                let value = iter.next().ok_or_else(|| {
                    usage_error("`--bin` needs the path of an agent-tools binary")
                })?;
                options.bin = Some(value.into());
            }
            "--client" => options.client_only = true,
            "--runs" => {
                let value = iter
                    .next()
                    .ok_or_else(|| usage_error("`--runs` needs a number"))?;
                options.runs = match value.parse::<usize>() {
                    Ok(n) if n > 0 => n,
                    _ => {
                        return Err(usage_error(format!(
                            "`--runs` needs a positive integer, got `{value}`"
                        )));
                    }
                };
            }
            other if other.starts_with('-') => {
                return Err(usage_error(format!(
                    "unknown option `{other}` for `conformance`"
                )));
            }
            other => options.scenarios.push(other.to_owned()),
        }
    }
    if options.server_only && options.client_only {
        return Err(usage_error("`--server` and `--client` exclude each other"));
    }
    Ok(options)
}

fn parse_bench(rest: &[String]) -> Result<bench::Options, UsageError> {
    let mut options = bench::Options::default();
    let mut iter = rest.iter();
    while let Some(arg) = iter.next() {
        let runs_value = if arg == "--runs" {
            Some(
                iter.next()
                    .ok_or_else(|| usage_error("`--runs` needs a number"))?
                    .as_str(),
            )
        } else {
            arg.strip_prefix("--runs=")
        };
        if let Some(value) = runs_value {
            options.runs = match value.parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(usage_error(format!(
                        "`--runs` needs a positive integer, got `{value}`"
                    )));
                }
            };
        } else if let Some(flag) = ["--soak-seconds", "--soak-sessions"]
            .into_iter()
            .find(|f| arg == f || arg.starts_with(&format!("{f}=")))
        {
            let value = match arg.strip_prefix(&format!("{flag}=")) {
                Some(v) => v,
                None => iter
                    .next()
                    .ok_or_else(|| usage_error(format!("`{flag}` needs a number")))?
                    .as_str(),
            };
            let n = match value.parse::<u64>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(usage_error(format!(
                        "`{flag}` needs a positive integer, got `{value}`"
                    )));
                }
            };
            if flag == "--soak-seconds" {
                options.soak.seconds = n;
            } else {
                options.soak.sessions = usize::try_from(n).unwrap_or(usize::MAX);
            }
        } else if arg == "--list" {
            options.list = true;
        } else if arg.starts_with('-') {
            return Err(usage_error(format!("unknown option `{arg}` for `bench`")));
        } else {
            options.names.push(arg.clone());
        }
    }
    Ok(options)
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Ci { dry_run } => ci::run(&cmd::workspace_root()?, dry_run),
        Command::Peers { dry_run } => peers::run(&peers::peers_dir()?, dry_run),
        Command::Conformance(options) => conformance::run(&cmd::workspace_root()?, &options),
        Command::ConformanceAdapter(_) => Ok(()),
        Command::Schemas => schemas::run(&cmd::workspace_root()?),
        Command::Bench(options) => bench::run(&cmd::workspace_root()?, &options),
        Command::Tidy { report } => tidy::run(&cmd::workspace_root()?, report),
        Command::Help => {
            print!("{USAGE}");
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match parse(&args) {
        Ok(command) => command,
        Err(err) => {
            eprintln!("xtask: {err}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // The adapter's exit status is the agent-tools command's.
    if let Command::ConformanceAdapter(rest) = &command {
        return conformance::adapter(rest).unwrap_or_else(|err| {
            eprintln!("xtask conformance-adapter: {err:#}");
            ExitCode::FAILURE
        });
    }
    match run(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn parses_subcommands() {
        assert_eq!(
            parse(&args(&["ci"])).unwrap(),
            Command::Ci { dry_run: false }
        );
        assert_eq!(
            parse(&args(&["ci", "--dry-run"])).unwrap(),
            Command::Ci { dry_run: true }
        );
        assert_eq!(
            parse(&args(&["peers"])).unwrap(),
            Command::Peers { dry_run: false }
        );
        assert_eq!(parse(&args(&["schemas"])).unwrap(), Command::Schemas);
        assert_eq!(
            parse(&args(&["tidy"])).unwrap(),
            Command::Tidy { report: false }
        );
        assert_eq!(
            parse(&args(&["tidy", "--report"])).unwrap(),
            Command::Tidy { report: true }
        );
        assert_eq!(parse(&args(&["--help"])).unwrap(), Command::Help);
    }

    #[test]
    fn parses_bench_options() {
        let Command::Bench(options) = parse(&args(&["bench", "--runs", "3", "glob"])).unwrap()
        else {
            panic!("not a bench command");
        };
        assert_eq!(options.runs, 3);
        assert_eq!(options.names, vec!["glob".to_owned()]);
        let Command::Bench(options) = parse(&args(&["bench", "--runs=5"])).unwrap() else {
            panic!("not a bench command");
        };
        assert_eq!(options.runs, 5);
        assert!(options.names.is_empty());
        let Command::Bench(options) = parse(&args(&["bench"])).unwrap() else {
            panic!("not a bench command");
        };
        assert_eq!(options.runs, 10);
        assert_eq!(options.soak, bench::Soak::default());
        let Command::Bench(options) = parse(&args(&[
            "bench",
            "soak",
            "--soak-seconds",
            "30",
            "--soak-sessions=20",
        ]))
        .unwrap() else {
            panic!("not a bench command");
        };
        assert_eq!(
            options.soak,
            bench::Soak {
                seconds: 30,
                sessions: 20
            }
        );
    }

    #[test]
    fn rejects_bad_command_lines() {
        assert!(parse(&[]).is_err());
        assert!(parse(&args(&["nope"])).is_err());
        assert!(parse(&args(&["ci", "--fast"])).is_err());
        assert!(parse(&args(&["tidy", "extra"])).is_err());
        assert!(parse(&args(&["bench", "--runs", "0"])).is_err());
        assert!(parse(&args(&["bench", "--runs"])).is_err());
        assert!(parse(&args(&["bench", "--runs", "x"])).is_err());
        assert!(parse(&args(&["bench", "--fast"])).is_err());
        assert!(parse(&args(&["bench", "--soak-seconds", "0"])).is_err());
        assert!(parse(&args(&["bench", "--soak-sessions"])).is_err());
    }
}
