//! What a bash command line will run, found without running it: the analysis behind
//! agent-tools' shell permissions. Pure: no I/O, no processes, no file system; a host adds
//! what only the file system can tell (the scripts a line runs, the configuration a program
//! reads) through [`Analysis`].
//!
//! # Overview
//!
//! - [`parse`] turns a line into the simple commands bash will run (tree-sitter-bash), with
//!   their words as bash passes them — quotes removed, `$'…'` decoded, braces expanded,
//!   continuations joined — including those nested in substitutions, here-documents and
//!   control flow ([`Script`], [`SimpleCommand`], [`Word`]).
//! - [`analyse`] follows every wrapper and runner to the command it runs (`env`, `nice`,
//!   `timeout`, `xargs`, `find -exec`, `sudo`, `sh -c`, `git -c alias.x=!…`, `tar -I`,
//!   `sort --compress-program`, …) and yields an [`Analysis`]: every command in every
//!   spelling deny rules must be matched against ([`Analysis::find_match`]), what needs a
//!   person whatever the rules say, and what cannot be resolved before the line runs
//!   ([`Unresolved`]).
//! - Options are parsed as each program parses them ([`Table::parse_args`]: GNU
//!   `getopt_long`'s unique prefixes, attached values, bundles and `--`, git's parse-options
//!   with `--no-` negations), from a table of every option the program accepts
//!   ([`option_table`]), each classified ([`Effect`]: reads a file, writes, runs a program,
//!   …). An option a table does not list makes the command not read-only, and unresolved.
//! - [`classify`] says whether a line only reads ([`Verdict`]), and [`read_operands`] which
//!   paths a read-only command reads and how, for the Read rules.
//!
//! # What the classification promises, and what it does not
//!
//! A line is [`Verdict::ReadOnly`] when every command it runs is on the read-only list with
//! options its table classifies as reading, every word is plain, and nothing writes a file.
//! That is a judgement about the command line, not about the programs: a read-only command
//! still runs what the files it reads steer it to (git's `core.fsmonitor`, textconv drivers
//! and pager of a repository's configuration, a `rust-toolchain.toml` naming a toolchain
//! binary). **The boundary is the read-only jail the host runs auto-approved commands in**
//! (no write anywhere, no network, secrets masked); the classification only chooses between
//! asking a person and running there, so a misclassification costs nothing it could not.
//!
//! Deny rules are different: they hold in every mode, outside any jail. For them the
//! analysis promises that every program the line names — directly, through wrappers,
//! through shell code, through options that name a program — is among [`Analysis`]'s
//! commands, and that a line where that cannot be known (a computed command name, code read
//! from standard input, an option a table does not know, a runner that executes the
//! project's own recipes or scripts: `make`, `npm run`, `cargo build`) is
//! [`Verdict::Unresolved`], which the host refuses under any deny rule naming Bash. It does
//! not see inside programs: a script file run by an interpreter (`python3 tool.py`) is that
//! interpreter's own code, and the deny rule must name the interpreter.
//!
//! # Example
//!
//! ```
//! use shell_analysis::{Verdict, analyse, classify};
//!
//! assert_eq!(classify("git log --oneline -5 | head -n 3"), Verdict::ReadOnly);
//! // A unique prefix is the option: `--outp` is `--output`, which writes.
//! assert!(matches!(classify("sort --outp=x file"), Verdict::NeedsApproval { .. }));
//! // A computed program name cannot be resolved before the line runs.
//! match classify("x=rm; $x v") {
//!     Verdict::Unresolved(u) => assert_eq!(u.word, "$x"),
//!     other => panic!("{other:?}"),
//! }
//! // Wrappers are followed: a deny rule for `rm` sees through `nice` and `env`.
//! let a = analyse("nice -n 5 env A=1 rm -f v").expect("it parses");
//! assert_eq!(a.find_match(|t| t.starts_with("rm ")), Some("rm -f v"));
//! ```

mod analysis;
mod getopt;
mod parse;
mod programs;
mod readonly;
mod tables;

pub use analysis::{
    Analysis, Candidate, MAX_SUBCOMMANDS, PackageScript, Program, ScriptFile, Unresolved, analyse,
    is_shell_script, path_words,
};
pub use getopt::{Arg, Effect, Found, Opt, OptError, Parsed, Style, Table, TableError};
pub use parse::{Form, ParseError, Redirect, Script, SimpleCommand, Word, parse};
pub use programs::base_name;
pub use readonly::{
    Access, ReadOperand, escape_option, is_read_only_command, read_only_programs, read_operands,
};
pub use tables::{check as check_tables, programs as tabled_programs, table as option_table};

/// What a command line is, as far as running it unasked goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every command only reads (see the crate documentation for what that promises)
    ReadOnly,
    /// It may write or run something: a person (or an allow rule) must approve it
    NeedsApproval {
        /// Why
        reason: String,
    },
    /// Something it would run cannot be known before it runs: never read-only, and refused
    /// under any deny rule
    Unresolved(Unresolved),
}

/// Classifies a command line.
pub fn classify(command: &str) -> Verdict {
    let analysis = match analyse(command) {
        Ok(a) => a,
        Err(e) => {
            return Verdict::Unresolved(Unresolved::new(
                format!("the command does not parse: {e}"),
                &command.chars().take(80).collect::<String>(),
            ));
        }
    };
    if let Some(u) = analysis.unresolved().first() {
        return Verdict::Unresolved(u.clone());
    }
    if analysis.is_read_only() {
        return Verdict::ReadOnly;
    }
    let reason = analysis
        .issues()
        .first()
        .cloned()
        .or_else(|| {
            analysis.candidates().iter().find_map(|c| {
                c.issue().map(str::to_owned).or_else(|| {
                    (!c.is_read_only()).then(|| match escape_option(c.command()) {
                        Some(o) => format!("`{}` uses `{o}`, which does more than read", c.text()),
                        None => format!("`{}` is not on the read-only list", c.text()),
                    })
                })
            })
        })
        .unwrap_or_else(|| "it has too many commands to check".to_owned());
    Verdict::NeedsApproval { reason }
}

/// The programs a command line runs, each with its arguments as bash passes them; `Err`
/// with what cannot be resolved when they cannot all be known before it runs.
pub fn programs(command: &str) -> Result<Vec<Program>, Unresolved> {
    let analysis = analyse(command).map_err(|e| {
        Unresolved::new(
            format!("the command does not parse: {e}"),
            &command.chars().take(80).collect::<String>(),
        )
    })?;
    match analysis.unresolved().first() {
        Some(u) => Err(u.clone()),
        None => Ok(analysis.programs()),
    }
}
