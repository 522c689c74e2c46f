//! Every option a program's own help lists is in its table: `PROGRAM --help` for GNU and
//! util-linux programs, `help NAME` for bash builtins, `git CMD -h` and `git CMD
//! --git-completion-helper` for git. These are the versions this machine (and CI, the same
//! image) installs; a newer program with a new option fails here until the option is
//! classified.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use shell_analysis::{option_table, tabled_programs};

/// Programs with a table that `cargo xtask peers` installs (from Debian, as root) when they
/// are missing: without them the check fails under `AGENT_TOOLS_REQUIRE_PEERS=1` and is
/// skipped, with a note, otherwise. Debian names fd `fdfind`.
const PEERS: &[(&str, &str)] = &[
    ("sudo", "sudo"),
    ("tree", "tree"),
    ("fd", "fdfind"),
    ("fdfind", "fdfind"),
];

/// ripgrep, the version `cargo xtask peers` pins (`xtask/src/peers.rs`), installed under the
/// peers directory: its table was written from this version's help.
const RIPGREP: &str = "ripgrep 15.2.0";

/// Programs whose help also names options in its descriptions (`--no-…` negations, aliases,
/// `--nj` after a wrapped line): every `--name` anywhere in their help must be known.
const MENTIONS: &[&str] = &["rg", "fd", "fdfind", "man", "tree", "hostname", "ps"];

/// Tables with no help to check them against: `find`'s leading options (its expression is
/// checked by the read-only tests), `which` (a shell script without `--help`), `getconf`,
/// and the bash keywords and builtins `time`, `exec`, `builtin`, `command`, `true`, `false`,
/// `expr` whose options `help` does not list one per line.
const NO_HELP: &[&str] = &[
    "find", "which", "getconf", "time", "exec", "builtin", "command", "true", "false", "expr",
];

/// Words of a help text that look like options but are not: `cut` and `numfmt` explain
/// the range `-M` (from the first to the M'th field); rg's help mentions find's `--print0`.
const NOT_OPTIONS: &[(&str, &str)] = &[("cut", "-M"), ("numfmt", "-M"), ("rg", "--print0")];

/// bash builtins: their help is `help NAME`.
const BUILTINS: &[&str] = &["pwd", "cd", "type", "printf"];

/// The git this machine runs first on `PATH` (CI's is 2.47 under /usr/local).
fn git() -> PathBuf {
    which("git").expect("git on PATH")
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The option names of a help text: on every line whose first non-blank character is `-`,
/// the `-x`/`--long` words before the description (two spaces or a tab), with `=VALUE`,
/// `[=VALUE]`, `<value>` and git's `[no-]` removed. Placeholders in capitals
/// (`--GTYPE-group-format`, `-NUM`) are not names.
fn help_options(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if !trimmed.starts_with('-') {
            continue;
        }
        let head = trimmed
            .split("  ")
            .next()
            .unwrap_or_default()
            .split('\t')
            .next()
            .unwrap_or_default();
        let head = head.replace("[no-]", "");
        for token in head.split([' ', ',', '|', '[']) {
            if !token.starts_with('-') || token == "-" || token == "--" {
                continue;
            }
            // clap's `--unrestricted...`: the option may be repeated.
            let token = token.trim_end_matches("...");
            let name: String = token
                .chars()
                .take_while(|c| *c != '=' && *c != '<' && *c != '[')
                .collect();
            let body = name.trim_start_matches('-');
            let valid = !body.is_empty()
                && body
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                && !body
                    .chars()
                    .any(|c| c.is_ascii_uppercase() && body.len() > 1)
                && (name.starts_with("--") || body.chars().count() == 1);
            if valid && !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// Every `--name` a help text mentions anywhere (descriptions included).
fn mentioned_options(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, _) in text.match_indices("--") {
        if i > 0 && text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '-') {
            continue;
        }
        let name: String = text[i + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let name = name.trim_end_matches('-');
        if name.starts_with(|c: char| c.is_ascii_lowercase()) {
            let name = format!("--{name}");
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// ps's BSD options in its help: a single letter in the option column, before a comma or
/// the description (`  a                   all with tty`, ` -p, p, --pid <PID>`).
fn bsd_options(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        for token in line.split_whitespace() {
            let token = token.trim_end_matches(',');
            let mut chars = token.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) if c.is_ascii_alphabetic() => {
                    if !out.contains(&token.to_owned()) {
                        out.push(token.to_owned());
                    }
                }
                _ if token.starts_with('-') || token.starts_with('<') => {}
                _ => break,
            }
        }
    }
    out
}

fn output(program: &str, args: &[&str], cwd: Option<&std::path::Path>) -> String {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("LC_ALL", "C")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null());
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{program} {args:?}: {e}"));
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn help_options_reads_the_usual_layouts() {
    let text = "  -a, --all                  do not ignore\n      --block-size=SIZE      scale\n  -I, --ignore=PATTERN\n      --color[=WHEN]\n    --[no-]cached         search\n    -O, --[no-]open-files-in-pager[=<pager>]\n  -NUM                       same as --context=NUM\n      --GTYPE-group-format=GFMT\nUsage: ls [OPTION]...\n";
    assert_eq!(
        help_options(text),
        [
            "-a",
            "--all",
            "--block-size",
            "-I",
            "--ignore",
            "--color",
            "--cached",
            "-O",
            "--open-files-in-pager"
        ]
    );
}

#[test]
fn help_extractors_read_clap_and_ps_layouts() {
    let clap = "  -u, --unrestricted...\n          overridden with --no-hidden.\n  -x, --exec <cmd>...\n  -1\n";
    assert_eq!(
        help_options(clap),
        ["-u", "--unrestricted", "-x", "--exec", "-1"]
    );
    assert_eq!(
        mentioned_options(clap),
        ["--unrestricted", "--no-hidden", "--exec"]
    );
    let ps = " -A, -e               all processes\n  a                   all with tty\n -p, p, --pid <PID>   process id\n  k,    --sort        specify\n  The selection options take\n";
    assert_eq!(bsd_options(ps), ["a", "p", "k"]);
}

#[test]
fn option_tables_are_complete() {
    if let Err(e) = shell_analysis::check_tables() {
        panic!("a table does not parse: {}", e.0);
    }
    let repo = tempfile_repo();
    let mut checked = 0;
    let mut missing: Vec<String> = Vec::new();
    for program in tabled_programs() {
        if NO_HELP.contains(&program) {
            continue;
        }
        let table = option_table(program).expect("a table");
        let texts: Vec<String> = if let Some(sub) = program.strip_prefix("git ") {
            let mut words: Vec<&str> = sub.split(' ').collect();
            let mut h = words.clone();
            h.push("-h");
            words.push("--git-completion-helper");
            let git = git();
            let git = git.to_str().expect("a UTF-8 path");
            let helper = output(git, &words, Some(&repo));
            // The helper prints names separated by spaces (`--foo= --bar -- --no-foo`).
            let helper: String = helper
                .split_whitespace()
                .filter(|w| w.starts_with("--") && w.len() > 2 && *w != "--git-completion-helper")
                .map(|w| format!("  {w}\n"))
                .collect();
            vec![output(git, &h, Some(&repo)), helper]
        } else if BUILTINS.contains(&program) {
            vec![output("bash", &["-c", &format!("help {program}")], None)]
        } else if program == "rg" {
            let Some(rg) = test_support::peers::path("cargo/bin/rg") else {
                continue;
            };
            let rg = rg.to_str().expect("a UTF-8 path");
            let version = output(rg, &["--version"], None);
            assert!(
                version.starts_with(&format!("{RIPGREP}\n")),
                "the peers' rg is not {RIPGREP} but {version}: check rg's table against its \
                 help and update RIPGREP"
            );
            vec![output(rg, &["--help"], None)]
        } else {
            let binary = PEERS
                .iter()
                .find(|(p, _)| *p == program)
                .map_or(program, |(_, b)| *b);
            if which(binary).is_none() {
                if PEERS.iter().any(|(p, _)| *p == program) {
                    test_support::peers::require(
                        &format!("{binary} (cargo xtask peers installs it from Debian)"),
                        false,
                    );
                    continue;
                }
                panic!("{program} has a table but {binary} is not on PATH");
            }
            let help: &[&str] = if program == "ps" {
                &["--help", "all"]
            } else {
                &["--help"]
            };
            vec![output(binary, help, None)]
        };
        for text in texts {
            let mut names = help_options(&text);
            if MENTIONS.contains(&program) {
                names.extend(mentioned_options(&text));
            }
            if program == "ps" {
                names.extend(bsd_options(&text));
            }
            names.sort();
            names.dedup();
            for name in names {
                if !table.knows(&name) && !NOT_OPTIONS.contains(&(program, name.as_str())) {
                    missing.push(format!("{program}: {name}"));
                }
            }
        }
        checked += 1;
    }
    let _ = std::fs::remove_dir_all(&repo);
    assert!(
        missing.is_empty(),
        "options the tables do not classify:\n{}",
        missing.join("\n")
    );
    assert!(checked >= 90, "only {checked} tables were checked");
}

/// A small repository for git's helpers, which need one.
fn tempfile_repo() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("shell-analysis-it-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let git = git();
    let _ = Command::new(&git)
        .args(["init", "-q"])
        .current_dir(&dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status();
    dir
}
