//! Shell-aware permissions: `Bash(...)` rules matched against each simple command of a
//! parsed command line (never against the raw string), every program a line runs found
//! through wrappers, shells and option values, deny rules that hold in every mode, the Read
//! and Edit rules and the protected paths applied to the paths a command names, and the
//! read-only commands allowed without asking.
//!
//! The order of the checks, and how it differs from the reference:
//! 1. Deny rules, matched against the whole line and against every program the line runs,
//!    in every spelling bash accepts (quotes, `$'…'`, line continuations, braces, paths,
//!    wrappers, `sh -c`, `eval`, `trap`, `git -c alias.x=!…`, `find -exec`, …).
//! 2. A line whose programs cannot all be known before it runs (a computed command name,
//!    code from standard input, an inline interpreter program, an alias, a variable bash
//!    evaluates as code) is denied when any deny rule names Bash — in every mode, bypass
//!    included; otherwise it asks. The reference asked, which bypass turned into allow.
//! 3. Paths: an operand or input redirection a Read deny rule covers is denied (the
//!    reference let `cat .env` through a `Read(.env)` deny); a write to a path an Edit deny
//!    rule covers is denied; a write to a protected path asks in every mode.
//! 4. Content ask rules, then dangerous `rm` targets, then `dangerouslyDisableSandbox`,
//!    which always needs its own approval (an allow rule for the command is not enough,
//!    unlike the reference).
//! 5. Allow: an exact rule for the whole line, or every subcommand allowed by a rule (a
//!    wildcard rule does not cover an option that makes a reading command write or run a
//!    program), by the read-only list (whose operands must pass the Read check, as the
//!    Read tool's would), or by acceptEdits. Anything unclassifiable asks.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tool_core::{
    AskKind, Beneath, CommandPattern, PermissionDecision, PermissionMode, PermissionRule,
    RuleBehavior, SourcedRule, ToolContext, path,
};

use crate::operands::{self, Bases, Resolved};
use crate::parse::{Form, Script, SimpleCommand, Word, is_identifier, parse};
use crate::programs::{self, base_name};
use crate::readonly::{self, Access};

/// At most this many simple commands are examined; more asks.
pub const MAX_SUBCOMMANDS: usize = 50;

/// At most this many entries are walked to find a denied file beneath a directory a
/// command reads recursively.
const MAX_WALK: usize = 50_000;

/// How deep wrappers and shell code are followed.
const MAX_REPARSE: usize = 6;

/// Environment variables whose assignment in front of a command changes nothing about what
/// it runs, so it is stripped before matching. Every other variable may (PATH, LD_PRELOAD,
/// BASH_ENV, GIT_*, PAGER, EDITOR, …), which makes the programs unknown.
const SAFE_ENV: &[&str] = &[
    "GOOS",
    "GOARCH",
    "CGO_ENABLED",
    "GO111MODULE",
    "RUST_LOG",
    "RUST_BACKTRACE",
    "CARGO_TERM_COLOR",
    "NODE_ENV",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "LANG",
    "LANGUAGE",
    "TERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "TZ",
    "COLUMNS",
    "LINES",
    "CI",
];

fn is_safe_env(name: &str) -> bool {
    SAFE_ENV.contains(&name) || name.starts_with("LC_")
}

/// Shell variables of lower case are the script's own; an upper-case name may be one the
/// environment already exports (and so reaches every program started later).
fn is_local_name(name: &str) -> bool {
    is_identifier(name) && !name.chars().any(|c| c.is_ascii_uppercase())
}

/// One command to judge.
#[derive(Debug, Clone)]
struct Candidate {
    /// The command after stripping safe wrappers and safe assignments: what allow rules match
    text: String,
    /// What deny and ask rules are matched against: the command in every spelling
    deny_texts: Vec<String>,
    /// The command (safe wrappers stripped) for classification
    command: SimpleCommand,
    /// Why it cannot be allowed by its words
    issue: Option<String>,
    /// Writes that always need a person
    safety: Vec<String>,
    /// The safe wrappers stripped in front of it (`timeout`, `nice`, …)
    wrappers: Vec<String>,
}

/// What a command line does, as far as can be known before it runs.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    candidates: Vec<Candidate>,
    issues: Vec<String>,
    opaque: Vec<String>,
    cd_targets: Vec<Word>,
    /// Shell scripts the line runs: the file, what runs it, how deep, and whether it is run
    /// by its path (then only read when it is a shell script)
    script_files: Vec<(Word, String, usize, bool)>,
}

/// The largest shell script the check reads to see what it runs.
const MAX_SCRIPT_BYTES: u64 = 256 * 1024;
/// At most this many script files are read for one line.
const MAX_SCRIPT_FILES: usize = 16;

/// Names assigned on the line with a value that may hide code, and names whose value bash
/// evaluates as arithmetic or as a name.
#[derive(Default)]
struct Flow {
    tainted: BTreeSet<String>,
    evaluated: BTreeSet<String>,
}

fn push_unique(list: &mut Vec<String>, item: impl Into<String>) {
    let item = item.into();
    if !list.contains(&item) {
        list.push(item);
    }
}

/// Analyses a command line. Parse errors are reported by the tool's validation; here they
/// deny, so nothing unparsable can run.
pub fn analyse(command: &str) -> Result<Analysis, String> {
    analyse_in(command, None)
}

/// Analyses a command line that will run in `cwd`: shell scripts it runs are read from
/// there and checked as part of it.
fn analyse_in(command: &str, cwd: Option<&Path>) -> Result<Analysis, String> {
    let script = parse(command).map_err(|e| e.0)?;
    let mut analysis = Analysis::default();
    let mut flow = Flow::default();
    collect(&script, &mut analysis, &mut flow, 0);
    if let Some(cwd) = cwd {
        read_scripts(&mut analysis, &mut flow, cwd);
    }
    if let Some(name) = flow.evaluated.intersection(&flow.tainted).next() {
        push_unique(
            &mut analysis.opaque,
            format!(
                "the value of `{name}`, set on this line from data that may hold code, which bash evaluates as arithmetic or as a name (running any `$(…)` hidden in it)"
            ),
        );
    }
    // cd combined with git can make git read a planted repository's config (the bare-repo
    // `core.fsmonitor` escape); more than one cd makes paths hard to follow.
    let names: Vec<&str> = analysis
        .candidates
        .iter()
        .filter_map(|c| c.command.name())
        .collect();
    let cds = names.iter().filter(|n| **n == "cd").count();
    if cds > 1 {
        push_unique(&mut analysis.issues, "more than one `cd`");
    }
    if cds > 0 && names.contains(&"git") {
        push_unique(&mut analysis.issues, "`cd` combined with `git`");
    }
    Ok(analysis)
}

/// Reads the shell scripts the line runs (`bash FILE`, `source FILE`, `./script.sh`) and
/// checks their commands as part of the line. A script written by the line itself, one that
/// cannot be read whole, or one reached through a `cd` cannot be known before the line
/// runs.
fn read_scripts(a: &mut Analysis, flow: &mut Flow, cwd: &Path) {
    // Everything the line may write.
    let mut written: Vec<PathBuf> = Vec::new();
    for c in &a.candidates {
        let mut words: Vec<Word> = c
            .command
            .redirects
            .iter()
            .filter(|r| r.writes_file())
            .filter_map(|r| r.target.clone())
            .collect();
        // The operands of a command that is neither read-only nor a shell running a script
        // (whose operand is the script it reads).
        let runs_script = c.command.name().is_some_and(|n| {
            matches!(
                base_name(n),
                "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "source" | "."
            )
        });
        if readonly::read_operands(&c.command).is_none() && !runs_script {
            words.extend(path_words(&c.command));
        }
        for w in words {
            if w.known {
                written.push(path::canonicalize_lenient(&path::resolve(cwd, &w.text)));
            }
        }
    }
    let mut read = 0;
    while let Some((file, via, depth, direct)) = a.script_files.pop() {
        read += 1;
        if read > MAX_SCRIPT_FILES {
            push_unique(&mut a.opaque, "more shell scripts than the check reads");
            return;
        }
        if !a.cd_targets.is_empty() && !file.text.starts_with('/') {
            push_unique(
                &mut a.opaque,
                format!("{via} runs a script after a `cd`, which the check cannot locate"),
            );
            continue;
        }
        let target = path::canonicalize_lenient(&path::resolve(cwd, &file.text));
        if written.contains(&target) {
            push_unique(
                &mut a.opaque,
                format!("{via} runs {}, which this command writes first", file.text),
            );
            continue;
        }
        let Ok(meta) = std::fs::metadata(&target) else {
            // Nothing to run; bash will say so.
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        if meta.len() > MAX_SCRIPT_BYTES {
            push_unique(
                &mut a.opaque,
                format!("{via} runs {}, too large a script to check", file.text),
            );
            continue;
        }
        let Ok(bytes) = std::fs::read(&target) else {
            push_unique(
                &mut a.opaque,
                format!("{via} runs {}, which the check cannot read", file.text),
            );
            continue;
        };
        if direct && !is_shell_script(&bytes) {
            // A program of another kind (a binary, a Python script): its own program.
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let code = text.strip_prefix("#!").map_or(text.as_ref(), |rest| {
            rest.split_once('\n').map_or("", |(_, body)| body)
        });
        push_unique(&mut a.issues, format!("{via} running a shell script"));
        match parse(code) {
            Ok(inner) => {
                let before = a.candidates.len();
                collect(&inner, a, flow, depth + 1);
                for c in &mut a.candidates[before..] {
                    c.command.nested = true;
                }
            }
            Err(e) => push_unique(
                &mut a.opaque,
                format!(
                    "{via} runs {}, a script that does not parse ({e})",
                    file.text
                ),
            ),
        }
    }
}

/// Whether a file run by its path is a shell script: a shell `#!` line, or text with none
/// (which the kernel refuses and bash then runs itself).
fn is_shell_script(bytes: &[u8]) -> bool {
    if bytes.starts_with(b"\x7fELF") {
        return false;
    }
    let Some(rest) = bytes.strip_prefix(b"#!") else {
        return !bytes.iter().take(512).any(|b| *b == 0);
    };
    let line = rest.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split_whitespace();
    let interpreter = parts.next().map(base_name).unwrap_or_default();
    let interpreter = if interpreter == "env" {
        parts
            .find(|p| !p.starts_with('-'))
            .map(base_name)
            .unwrap_or_default()
    } else {
        interpreter
    };
    matches!(
        interpreter,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "busybox"
    )
}

fn collect(script: &Script, a: &mut Analysis, flow: &mut Flow, depth: usize) {
    for i in &script.issues {
        push_unique(&mut a.issues, i.clone());
    }
    for o in &script.opaque {
        push_unique(&mut a.opaque, o.clone());
    }
    flow.evaluated
        .extend(script.arithmetic_names.iter().cloned());
    for cmd in &script.commands {
        command(cmd, a, flow, depth);
    }
}

/// Judges an assignment: whether it can change what runs, and whether its value may hide
/// code.
fn assign(name: &str, value: &Word, exported: bool, a: &mut Analysis, flow: &mut Flow) {
    if exported && !is_safe_env(name) {
        push_unique(
            &mut a.opaque,
            format!(
                "the environment variable `{name}` passed to the programs it starts (it may change what they run)"
            ),
        );
    } else if !exported && !is_safe_env(name) && !is_local_name(name) {
        push_unique(
            &mut a.opaque,
            format!("an assignment to `{name}`, which may change what later commands run"),
        );
    }
    let clean = value.known && !value.glob && !value.text.contains(['$', '`', '[', ']']);
    if !clean {
        flow.tainted.insert(name.to_owned());
    }
}

/// The names `$x`, `${x…}` in a word's source text.
fn referenced_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        rest = &rest[pos + 1..];
        let r = rest.strip_prefix('{').unwrap_or(rest);
        let r = r.strip_prefix('!').unwrap_or(r);
        let name: String = r
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if is_identifier(&name) {
            out.push(name);
        }
    }
    out
}

/// The checks of builtins that evaluate an operand as a name, a subscript or arithmetic.
fn evaluated_operands(cmd: &SimpleCommand, a: &mut Analysis, flow: &mut Flow) {
    let Some(e) = programs::evaluation(cmd) else {
        return;
    };
    let name = cmd
        .words
        .first()
        .map(|w| w.text.clone())
        .unwrap_or_default();
    if let Some(why) = e.opaque {
        push_unique(&mut a.opaque, why);
    }
    for n in e.assigned {
        flow.tainted.insert(n);
    }
    for w in e.evaluated {
        if !w.known {
            flow.evaluated.extend(referenced_names(&w.text));
            // The value is only known at run time; whether it can hide code depends on where
            // it came from: tainted names are caught above, the environment is the host's.
            continue;
        }
        if w.text.contains(['$', '`']) {
            push_unique(
                &mut a.opaque,
                format!("`{name}` evaluates code hidden in its operand `{}`", w.text),
            );
            continue;
        }
        // Names inside the operand (`x`, `a[i]`, `x+y`) are evaluated too.
        let mut ident = String::new();
        for c in w.text.chars().chain(std::iter::once(' ')) {
            if c.is_ascii_alphanumeric() || c == '_' {
                ident.push(c);
            } else {
                if is_identifier(&ident) {
                    flow.evaluated.insert(std::mem::take(&mut ident));
                }
                ident.clear();
            }
        }
    }
}

fn command(cmd: &SimpleCommand, a: &mut Analysis, flow: &mut Flow, depth: usize) {
    if depth > MAX_REPARSE {
        push_unique(&mut a.opaque, "commands nested too deeply to follow");
        return;
    }
    match cmd.form {
        Form::Assignment => {
            for (name, value) in &cmd.assignments {
                assign(name, value, false, a, flow);
            }
            return;
        }
        Form::Declaration | Form::Unset => {
            let keyword = cmd.words.first().map(|w| w.text.as_str()).unwrap_or("");
            let exported = keyword == "export"
                || cmd
                    .words
                    .iter()
                    .any(|w| w.text.starts_with('-') && w.text.contains('x'));
            for (name, value) in &cmd.assignments {
                assign(name, value, exported, a, flow);
            }
            for w in cmd.words.iter().skip(1) {
                let bare = w.text.split(['[', '=']).next().unwrap_or_default();
                if w.text.starts_with('-') || w.text.starts_with('+') {
                    continue;
                }
                if !w.known {
                    push_unique(&mut a.opaque, format!("`{keyword}` of a computed name"));
                } else if (exported || keyword == "unset") && !is_safe_env(bare)
                    || !is_local_name(bare) && !is_safe_env(bare)
                {
                    push_unique(
                        &mut a.opaque,
                        format!("`{keyword} {bare}`, which may change what later commands run"),
                    );
                }
            }
            evaluated_operands(cmd, a, flow);
        }
        Form::Test => evaluated_operands(cmd, a, flow),
        Form::Simple => {}
    }
    let mut cand = normalise(cmd, a, flow);
    if let Some(first) = cand.command.words.first()
        && (first.glob || !first.known)
    {
        let why = if first.glob {
            "a glob pattern in command position"
        } else {
            "a variable or substitution in command position"
        };
        push_unique(&mut a.opaque, why);
        push_unique(&mut a.issues, why);
    }
    if cmd.form != Form::Simple {
        cand.deny_texts.push(cand.text.clone());
        a.candidates.push(cand);
        return;
    }
    if cand.command.name() == Some("cd")
        && let Some(target) = cand.command.words.get(1)
    {
        a.cd_targets.push(target.clone());
    }
    evaluated_operands(&cand.command, a, flow);
    let u = programs::unwrap(&cand.command);
    if u.wrapper {
        // Every suffix of a wrapper's words, in case its options hide where the command
        // starts.
        let words = &cand.command.words;
        for i in 1..words.len().min(64) {
            push_unique(&mut cand.deny_texts, program_text(&words[i..]));
            push_unique(&mut cand.deny_texts, join(&words[i..]));
        }
    }
    for o in &u.opaque {
        push_unique(&mut a.opaque, o.clone());
    }
    for i in &u.issues {
        push_unique(&mut a.issues, i.clone());
    }
    cand.safety.extend(u.safety.iter().cloned());
    for (file, via) in &u.script_files {
        a.script_files
            .push((file.clone(), via.clone(), depth, false));
    }
    // A script run by its path (`./build.sh`): read too, when it is a shell script.
    if let Some(first) = cand.command.words.first()
        && first.known
        && first.text.contains('/')
    {
        if first.text.starts_with("/proc/") || first.text.starts_with("/dev/") {
            push_unique(&mut a.opaque, format!("a program run from {}", first.text));
        }
        a.script_files
            .push((first.clone(), format!("`{}`", first.text), depth, true));
    }
    for inner in &u.inner {
        if inner.words.first().is_some_and(|w| !w.known) {
            push_unique(
                &mut a.opaque,
                "a wrapper running a command whose name is only known at run time",
            );
        }
        command(inner, a, flow, depth + 1);
    }
    for (code, via) in &u.scripts {
        push_unique(&mut a.issues, format!("{via} running shell code"));
        if depth + 1 > MAX_REPARSE {
            push_unique(&mut a.opaque, "commands nested too deeply to follow");
            continue;
        }
        match parse(code) {
            Ok(inner) => {
                let before = a.candidates.len();
                collect(&inner, a, flow, depth + 1);
                for c in &mut a.candidates[before..] {
                    c.command.nested = true;
                }
            }
            Err(e) => push_unique(
                &mut a.opaque,
                format!("shell code run by {via} that does not parse ({e})"),
            ),
        }
    }
    for t in [cand.text.clone(), program_text(&cand.command.words)] {
        push_unique(&mut cand.deny_texts, t);
    }
    a.candidates.push(cand);
}

/// The words joined, the program named by its base name (`/usr/bin/rm -f x` → `rm -f x`).
fn program_text(words: &[Word]) -> String {
    let mut texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    if let Some(first) = texts.first_mut()
        && first.contains('/')
    {
        *first = base_name(first);
    }
    texts.join(" ")
}

fn join(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Strips safe assignments and safe wrappers; records the texts deny rules are matched
/// against.
fn normalise(cmd: &SimpleCommand, a: &mut Analysis, flow: &mut Flow) -> Candidate {
    let mut command = cmd.clone();
    let mut issue = None;
    if cmd.form == Form::Simple {
        for (name, value) in &cmd.assignments {
            assign(name, value, true, a, flow);
        }
        let unsafe_assignment = command
            .assignments
            .iter()
            .find(|(name, value)| !(value.literal && is_safe_env(name)));
        if let Some((name, _)) = unsafe_assignment {
            issue = Some(format!(
                "the environment assignment `{name}=...` in front of the command"
            ));
        } else {
            command.assignments.clear();
        }
    }
    if let Some(r) = cmd.redirects.iter().find(|r| r.writes_file()) {
        let target = r.target.as_ref().map(|t| t.text.as_str()).unwrap_or("?");
        issue = Some(format!(
            "a redirection that writes a file (`{} {target}`)",
            r.op
        ));
    }
    let mut deny_texts = vec![join(&command.words), program_text(&command.words)];
    let mut wrappers = Vec::new();
    while let Some(stripped) = strip_safe_wrapper(&command.words) {
        if let Some(w) = command.words.first() {
            wrappers.push(base_name(&w.text).to_owned());
        }
        command.words = stripped;
        push_unique(&mut deny_texts, join(&command.words));
        push_unique(&mut deny_texts, program_text(&command.words));
    }
    Candidate {
        text: join(&command.words),
        deny_texts,
        command,
        issue,
        safety: Vec::new(),
        wrappers,
    }
}

/// `timeout`, `time`, `nice`, `nohup`, `stdbuf` with strictly parsed options: the words of
/// the wrapped command, or `None`. Allow rules see the wrapped command (reference).
fn strip_safe_wrapper(words: &[Word]) -> Option<Vec<Word>> {
    let first = words.first().filter(|w| w.literal)?.text.as_str();
    let rest = &words[1..];
    let lit = |i: usize| rest.get(i).filter(|w| w.literal).map(|w| w.text.as_str());
    let mut i = 0;
    match first {
        "time" => {
            if lit(0) == Some("-p") {
                i = 1;
            }
        }
        "nohup" => {
            if lit(0) == Some("--") {
                i = 1;
            }
        }
        "nice" => match lit(0) {
            Some("-n") => i = 2,
            Some(a)
                if a.starts_with("-n") || (a.starts_with('-') && a[1..].parse::<i32>().is_ok()) =>
            {
                i = 1
            }
            Some(a) if a.starts_with("--adjustment=") => i = 1,
            Some(a) if a.starts_with('-') => return None,
            _ => {}
        },
        "stdbuf" => {
            while let Some(a) = lit(i) {
                if matches!(a, "-i" | "-o" | "-e") {
                    i += 2;
                } else if a.starts_with("-i")
                    || a.starts_with("-o")
                    || a.starts_with("-e")
                    || a.starts_with("--input=")
                    || a.starts_with("--output=")
                    || a.starts_with("--error=")
                {
                    i += 1;
                } else if a.starts_with('-') {
                    return None;
                } else {
                    break;
                }
            }
        }
        "timeout" => {
            while let Some(a) = lit(i) {
                match a {
                    "--preserve-status" | "--foreground" | "-v" | "--verbose" => i += 1,
                    "-s" | "--signal" | "-k" | "--kill-after" => i += 2,
                    a if a.starts_with("--signal=") || a.starts_with("--kill-after=") => i += 1,
                    a if a.starts_with('-') => return None,
                    _ => break,
                }
            }
            // The duration.
            let d = lit(i)?;
            let digits = d.trim_end_matches(['s', 'm', 'h', 'd']);
            if digits.is_empty() || digits.parse::<f64>().is_err() {
                return None;
            }
            i += 1;
        }
        _ => return None,
    }
    let inner = rest.get(i..)?;
    (!inner.is_empty() && inner[0].known).then(|| inner.to_vec())
}

/// The file a program name runs: a path as it is (relative to `cwd`), a bare name looked up
/// in `PATH`.
fn program_file(name: &str, cwd: &Path) -> Option<PathBuf> {
    if name.contains('/') {
        let p = path::resolve(cwd, name);
        return p.is_file().then_some(p);
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Whether two files are the same program: the same inode (a hard or symbolic link), or a
/// byte-for-byte copy.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    if (ma.dev(), ma.ino()) == (mb.dev(), mb.ino()) {
        return true;
    }
    ma.len() == mb.len()
        && ma.len() <= 64 * 1024 * 1024
        && matches!((std::fs::read(a), std::fs::read(b)), (Ok(x), Ok(y)) if x == y)
}

/// For every command whose program is the same file as one a deny rule names (a copy or a
/// link made under another name), its text with the denied program's name.
fn same_program_texts(
    analysis: &Analysis,
    rules: &[SourcedRule],
    tools: &[&str],
    cwd: &Path,
) -> Vec<String> {
    let denied: Vec<(String, PathBuf)> = rules
        .iter()
        .filter(|r| r.behavior == RuleBehavior::Deny && tools.contains(&r.rule.tool.as_str()))
        .filter_map(|r| {
            let content = r.rule.content.as_deref()?;
            let program = content
                .split([' ', ':', '*'])
                .next()
                .filter(|p| !p.is_empty())?;
            let file = program_file(program, cwd)?;
            Some((base_name(program).to_owned(), file))
        })
        .collect();
    if denied.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for c in &analysis.candidates {
        let Some(first) = c.command.words.first().filter(|w| w.known) else {
            continue;
        };
        if denied
            .iter()
            .any(|(name, _)| name == base_name(&first.text))
        {
            continue;
        }
        let Some(file) = program_file(&first.text, cwd) else {
            continue;
        };
        for (name, denied_file) in &denied {
            if same_file(&file, denied_file) {
                let mut words: Vec<&str> =
                    c.command.words.iter().map(|w| w.text.as_str()).collect();
                words[0] = name;
                out.push(words.join(" "));
            }
        }
    }
    out
}

/// Escapes a command for use as exact rule content.
fn exact_content(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn rule_matches(rule: &SourcedRule, tools: &[&str], text: &str) -> bool {
    tools.contains(&rule.rule.tool.as_str())
        && rule
            .rule
            .content
            .as_deref()
            .is_some_and(|c| CommandPattern::parse(c).matches(text))
}

/// Whether an allow rule covers a candidate: exactly, or by prefix or wildcard unless the
/// command uses an option that makes a reading command write or run a program.
fn allowed_by(rule: &SourcedRule, tools: &[&str], c: &Candidate) -> bool {
    if !rule_matches(rule, tools, &c.text) {
        return false;
    }
    let exact =
        rule.rule.content.as_deref().is_some_and(|content| {
            matches!(CommandPattern::parse(content), CommandPattern::Exact(_))
        });
    exact || readonly::escape_option(&c.command).is_none()
}

/// The `rm`/`rmdir` targets that always ask: the root, top-level system directories, the
/// home directory and its ancestors, the working directory and its ancestors.
fn dangerous_rm(cmd: &SimpleCommand, cwd: &Path) -> Option<String> {
    let name = base_name(cmd.name()?);
    if !matches!(name, "rm" | "rmdir") {
        return None;
    }
    let home = path::home_dir();
    for w in cmd.words.iter().skip(1) {
        let t = w.text.as_str();
        if t.starts_with('-') && t.len() > 1 {
            continue;
        }
        let expanded = match (t.strip_prefix('~'), &home) {
            (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
                format!("{}{rest}", h.display())
            }
            _ => t.to_owned(),
        };
        let expanded = if t.starts_with("$HOME") || t.starts_with("${HOME}") {
            match &home {
                Some(h) => t.replacen("${HOME}", &h.display().to_string(), 1).replacen(
                    "$HOME",
                    &h.display().to_string(),
                    1,
                ),
                None => "/".to_owned(),
            }
        } else {
            expanded
        };
        // `dir/*` is as bad as `dir`.
        let trimmed = expanded.trim_end_matches("/*").trim_end_matches('*');
        let target = if trimmed.is_empty() {
            // `/*` is the root; a bare `*` is everything in the working directory.
            if expanded.starts_with('/') {
                PathBuf::from("/")
            } else {
                cwd.to_path_buf()
            }
        } else {
            path::resolve(cwd, trimmed)
        };
        let target = path::normalize(&target);
        let depth = target.components().count();
        let critical = depth <= 2
            || (target.starts_with("/usr") && depth <= 3)
            || path::is_within(cwd, &target)
            || home.as_ref().is_some_and(|h| path::is_within(h, &target));
        if critical {
            return Some(format!(
                "Dangerous rm operation detected: `{}` would remove {}, a critical directory. This always needs explicit approval.",
                cmd.text(),
                target.display()
            ));
        }
    }
    None
}

/// acceptEdits mode allows these file-system commands when every path argument is inside
/// the working directories.
fn accept_edits_allows(cmd: &SimpleCommand, ctx: &ToolContext) -> bool {
    let Some(name) = cmd.name() else {
        return false;
    };
    if !matches!(
        name,
        "mkdir" | "touch" | "rm" | "rmdir" | "mv" | "cp" | "sed"
    ) {
        return false;
    }
    if cmd.words.iter().any(|w| !w.literal) || cmd.redirects.iter().any(|r| r.writes_file()) {
        return false;
    }
    if name == "sed"
        && programs::unwrap(cmd)
            .issues
            .iter()
            .any(|i| i.contains("sed"))
    {
        return false;
    }
    let cwd = ctx.cwd();
    cmd.words
        .iter()
        .skip(1)
        .filter(|w| !w.text.starts_with('-'))
        .all(|w| {
            name == "sed" && !w.text.contains('/')
                || ctx.is_in_working_dirs(&path::resolve(&cwd, &w.text))
        })
}

/// The words of a command that may name paths: its non-option operands and the values of
/// `--opt=VALUE` / `key=VALUE` operands; URLs are left out.
fn path_words(cmd: &SimpleCommand) -> Vec<Word> {
    let mut out = Vec::new();
    for w in cmd.words.iter().skip(1) {
        if operands::is_url(&w.text) {
            continue;
        }
        if w.text.starts_with('-') {
            if let Some((_, v)) = w.text.split_once('=')
                && !v.is_empty()
            {
                out.push(Word {
                    text: v.to_owned(),
                    ..w.clone()
                });
            }
            continue;
        }
        out.push(w.clone());
        if let Some((k, v)) = w.text.split_once('=')
            && is_identifier(k)
            && !v.is_empty()
        {
            out.push(Word {
                text: v.to_owned(),
                ..w.clone()
            });
        }
    }
    out
}

/// What the paths of a command line say about it.
#[derive(Default)]
struct PathVerdict {
    deny: Option<String>,
    safety: Option<String>,
    /// Whether some operand is only known at run time
    unknown: bool,
}

/// Holds the paths of every candidate to the Read and Edit rules and the protected paths.
fn check_paths(analysis: &Analysis, ctx: &ToolContext) -> PathVerdict {
    let engine = ctx.permissions();
    let bases = Bases::new(&ctx.cwd(), &analysis.cd_targets);
    let mut v = PathVerdict::default();
    let read_rules = engine.has_rules("Read", RuleBehavior::Deny);
    let resolve = |w: &Word, v: &mut PathVerdict| -> Vec<PathBuf> {
        match operands::resolve(w, &bases) {
            Resolved::Paths(p) => p,
            Resolved::Unknown => {
                v.unknown = true;
                Vec::new()
            }
        }
    };
    for c in &analysis.candidates {
        let cmd = &c.command;
        let reading = readonly::read_operands(cmd);
        // Reads: the operands of a read-only command, every path-like word of another one,
        // and input redirections.
        let mut reads: Vec<Word> = match &reading {
            Some(ops) => ops.iter().map(|o| o.word.clone()).collect(),
            None if cmd.form == Form::Test => Vec::new(),
            None => path_words(cmd),
        };
        reads.extend(
            cmd.redirects
                .iter()
                .filter(|r| r.reads_file())
                .filter_map(|r| r.target.clone()),
        );
        if read_rules {
            for w in &reads {
                for p in resolve(w, &mut v) {
                    if let PermissionDecision::Deny { reason } = engine.check_read_path(&p, ctx) {
                        v.deny.get_or_insert(format!(
                            "`{}` reads {}: {reason}",
                            c.text,
                            p.display()
                        ));
                    }
                }
            }
            // A recursive read reaches what lies beneath.
            for op in reading.iter().flatten() {
                if !(op.recursive && op.access == Access::Content) {
                    continue;
                }
                for p in resolve(&op.word, &mut v) {
                    if !p.is_dir() {
                        continue;
                    }
                    match engine.read_denied_beneath(&p, ctx, MAX_WALK) {
                        Beneath::Clear => {}
                        Beneath::Denied(file, rule) => {
                            v.deny.get_or_insert(format!(
                                "`{}` reads {} recursively, which includes {}, denied by {rule}; use the Grep tool, which skips denied files, or name the files to read",
                                c.text,
                                p.display(),
                                file.display()
                            ));
                        }
                        Beneath::TooMany => {
                            v.deny.get_or_insert(format!(
                                "`{}` reads {} recursively, too large a tree to check against the Read deny rules; use the Grep tool, which skips denied files, or narrow the path",
                                c.text,
                                p.display()
                            ));
                        }
                    }
                }
            }
        }
        // Writes: output redirections of every command, and the path-like words of a
        // command that is not read-only.
        let mut writes: Vec<Word> = cmd
            .redirects
            .iter()
            .filter(|r| r.writes_file())
            .filter_map(|r| r.target.clone())
            .collect();
        if reading.is_none() && cmd.form == Form::Simple {
            writes.extend(path_words(cmd));
        }
        for w in &writes {
            for p in resolve(w, &mut v) {
                match engine.check_write_path(&p, ctx) {
                    PermissionDecision::Deny { reason } => {
                        v.deny.get_or_insert(format!(
                            "`{}` writes {}: {reason}",
                            c.text,
                            p.display()
                        ));
                    }
                    PermissionDecision::Ask {
                        kind: AskKind::SafetyCheck,
                        reason,
                        ..
                    } => {
                        v.safety
                            .get_or_insert(format!("`{}` may write {reason}", c.text));
                    }
                    _ => {}
                }
            }
        }
        if let Some(s) = c.safety.first() {
            v.safety.get_or_insert(s.clone());
        }
    }
    v
}

/// Whether the read-only command's operands all pass the Read check (inside the working
/// directories, or allowed by a Read rule), as the Read tool's would.
fn reads_allowed(c: &Candidate, bases: &Bases, ctx: &ToolContext) -> bool {
    let Some(ops) = readonly::read_operands(&c.command) else {
        return false;
    };
    let inputs = c
        .command
        .redirects
        .iter()
        .filter(|r| r.reads_file())
        .filter_map(|r| r.target.clone());
    ops.into_iter()
        .map(|o| o.word)
        .chain(inputs)
        .all(|w| match operands::resolve(&w, bases) {
            Resolved::Paths(ps) => ps.iter().all(|p| {
                matches!(
                    ctx.permissions().check_read_path(p, ctx),
                    PermissionDecision::Allow
                )
            }),
            Resolved::Unknown => false,
        })
}

/// The permission check of Bash (and Monitor, whose rules are Bash's).
pub fn check(command: &str, ctx: &ToolContext, tool: &str) -> PermissionDecision {
    check_with(command, ctx, tool, false)
}

/// How a command will run, for the checks that depend on it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Running {
    /// The call asks for `dangerouslyDisableSandbox`
    pub disable_sandbox: bool,
    /// The settings enable the sandbox
    pub sandbox_enabled: bool,
    /// The settings honour `dangerouslyDisableSandbox`
    pub unsandboxed_allowed: bool,
}

/// The permission check for a call that may ask to leave the sandbox.
pub fn check_with(
    command: &str,
    ctx: &ToolContext,
    tool: &str,
    disable_sandbox: bool,
) -> PermissionDecision {
    let settings = sandbox::SandboxSettings::from_context(ctx).unwrap_or_default();
    check_running(
        command,
        ctx,
        tool,
        Running {
            disable_sandbox,
            sandbox_enabled: settings.enabled,
            unsandboxed_allowed: settings.allow_unsandboxed_commands,
        },
    )
}

/// The permission check, with how the command will run.
pub fn check_running(
    command: &str,
    ctx: &ToolContext,
    tool: &str,
    running: Running,
) -> PermissionDecision {
    let analysis = match analyse_in(command, Some(&ctx.cwd())) {
        Ok(a) => a,
        Err(e) => return PermissionDecision::deny(e),
    };
    let tools: Vec<&str> = if tool == "Bash" {
        vec!["Bash"]
    } else {
        vec!["Bash", tool]
    };
    let rules = ctx.permissions().rules();
    let of = |b: RuleBehavior| rules.iter().filter(move |r| r.behavior == b);
    let whole = command.trim();

    // 1. Deny: the whole line, then every program in every spelling, then programs that
    // are the same file as a denied one under another name.
    let aliases = same_program_texts(&analysis, &rules, &tools, &ctx.cwd());
    for rule in of(RuleBehavior::Deny) {
        let hit = rule_matches(rule, &tools, whole)
            .then(|| whole.to_owned())
            .or_else(|| {
                analysis.candidates.iter().find_map(|c| {
                    c.deny_texts
                        .iter()
                        .find(|t| rule_matches(rule, &tools, t))
                        .cloned()
                })
            })
            .or_else(|| {
                aliases
                    .iter()
                    .find(|t| rule_matches(rule, &tools, t))
                    .cloned()
            });
        if let Some(text) = hit {
            return PermissionDecision::deny(format!(
                "Permission to use {tool} with command {text} has been denied."
            ));
        }
    }
    // 2. Programs that cannot be known: denied while a deny rule names Bash.
    if let Some(why) = analysis.opaque.first()
        && let Some(rule) = of(RuleBehavior::Deny).find(|r| tools.contains(&r.rule.tool.as_str()))
    {
        return PermissionDecision::deny(format!(
            "Permission to use {tool} has been denied: the programs this command runs cannot all be known before it runs ({why}), and the deny rule {rule} is in force, so such a command is refused in every mode. Name every program literally (no variables, substitutions, aliases or code read from elsewhere in command position)."
        ));
    }
    // 3. Paths against the Read and Edit rules and the protected paths.
    let unsandboxed = !running.sandbox_enabled || running.disable_sandbox;
    let paths = check_paths(&analysis, ctx);
    if let Some(reason) = paths.deny {
        return PermissionDecision::deny(format!(
            "Permission to use {tool} has been denied: {reason}"
        ));
    }
    if paths.unknown && unsandboxed && ctx.permissions().has_rules("Read", RuleBehavior::Deny) {
        return PermissionDecision::deny(format!(
            "Permission to use {tool} has been denied: Read deny rules are in force and this command names a path only known when it runs, while it would run outside the sandbox (which otherwise keeps denied files unreadable). Name its paths literally."
        ));
    }
    // 4. Content ask rules hold even in bypass.
    for rule in of(RuleBehavior::Ask) {
        let hit = rule_matches(rule, &tools, whole)
            || analysis
                .candidates
                .iter()
                .any(|c| c.deny_texts.iter().any(|t| rule_matches(rule, &tools, t)));
        if hit {
            return PermissionDecision::Ask {
                reason: format!("Permission rule {rule} requires approval for this {tool} command"),
                suggestions: Vec::new(),
                kind: AskKind::Rule(Box::new(rule.clone())),
            };
        }
    }
    // Protected paths and critical rm targets: safety checks that no rule or mode skips.
    if let Some(reason) = paths.safety {
        return PermissionDecision::Ask {
            reason: format!("{reason}; protected paths always need explicit approval"),
            suggestions: Vec::new(),
            kind: AskKind::SafetyCheck,
        };
    }
    let cwd = ctx.cwd();
    if let Some(reason) = analysis
        .candidates
        .iter()
        .find_map(|c| dangerous_rm(&c.command, &cwd))
    {
        return PermissionDecision::Ask {
            reason,
            suggestions: Vec::new(),
            kind: AskKind::SafetyCheck,
        };
    }
    // Leaving the sandbox needs its own approval, whatever allows the command.
    if running.disable_sandbox && running.sandbox_enabled {
        if !running.unsandboxed_allowed {
            return PermissionDecision::deny(
                "dangerouslyDisableSandbox is not allowed: the settings set sandbox.allowUnsandboxedCommands to false. Run the command inside the sandbox.",
            );
        }
        return PermissionDecision::Ask {
            reason: format!(
                "Run outside of the sandbox (dangerouslyDisableSandbox): `{}`",
                whole.chars().take(200).collect::<String>()
            ),
            suggestions: Vec::new(),
            kind: AskKind::Unsandboxed,
        };
    }
    // An allow rule that is exactly this whole command line (no wildcard: a whole-string
    // glob is the over-granting bug class) allows it as written.
    if of(RuleBehavior::Allow).any(|r| {
        tools.contains(&r.rule.tool.as_str())
            && r.rule.content.as_deref().is_some_and(
                |c| matches!(CommandPattern::parse(c), CommandPattern::Exact(ref e) if e == whole),
            )
    }) {
        return PermissionDecision::Allow;
    }
    let suggestions = suggestions(&analysis, &rules, &tools);
    if analysis.candidates.len() > MAX_SUBCOMMANDS {
        return PermissionDecision::Ask {
            reason: format!(
                "This {tool} command has more than {MAX_SUBCOMMANDS} subcommands; each one cannot be checked"
            ),
            suggestions: Vec::new(),
            kind: AskKind::Default,
        };
    }
    // 5. Constructs that cannot be judged from their words ask whatever the rules say;
    // otherwise every subcommand must be allowed by a rule, the read-only list or
    // acceptEdits.
    let mut issues: Vec<String> = Vec::new();
    for i in analysis
        .issues
        .iter()
        .chain(analysis.opaque.iter())
        .cloned()
        .chain(analysis.candidates.iter().filter_map(|c| c.issue.clone()))
    {
        push_unique(&mut issues, i);
    }
    let mode = ctx.permission_mode();
    let bases = Bases::new(&cwd, &analysis.cd_targets);
    let pending: Vec<&Candidate> = analysis
        .candidates
        .iter()
        .filter(|c| {
            let by_rule = of(RuleBehavior::Allow).any(|r| allowed_by(r, &tools, c));
            let read_only = !c.command.nested && reads_allowed(c, &bases, ctx);
            let edits = mode == PermissionMode::AcceptEdits && accept_edits_allows(&c.command, ctx);
            !(by_rule || read_only || edits) || c.issue.is_some()
        })
        .collect();
    if issues.is_empty() && pending.is_empty() && !analysis.candidates.is_empty() {
        return PermissionDecision::Allow;
    }
    let mut parts: Vec<String> = Vec::new();
    for c in &pending {
        push_unique(&mut parts, c.text.clone());
    }
    let mut reason = if analysis.candidates.len() > 1 && !parts.is_empty() {
        format!(
            "This {tool} command contains multiple operations. The following parts require approval: {}",
            parts.join(", ")
        )
    } else if !parts.is_empty() {
        format!("{tool} command `{}` requires approval", parts.join(", "))
    } else {
        format!("This {tool} command requires approval")
    };
    if !issues.is_empty() {
        reason.push_str(&format!(
            "; it contains {}, which always needs approval",
            issues.join(", ")
        ));
    }
    // The rules for the parts that need approval come first (a headless denial names the
    // first one).
    let needed: Vec<String> = parts.iter().map(|p| exact_content(p)).collect();
    let (mut suggestions, rest): (Vec<PermissionRule>, Vec<PermissionRule>) = suggestions
        .into_iter()
        .partition(|r| r.content.as_ref().is_some_and(|c| needed.contains(c)));
    suggestions.extend(rest);
    PermissionDecision::Ask {
        reason,
        suggestions,
        kind: AskKind::Default,
    }
}

/// Whether a person's choice allows some part of an allowed `command` — an allow rule (the
/// whole line's, or a subcommand's) or acceptEdits for what it lets edit — rather than only
/// its read-only classification (which runs the command in the read-only jail).
pub fn allowed_by_person(command: &str, ctx: &ToolContext, tool: &str) -> bool {
    let Ok(analysis) = analyse_in(command, Some(&ctx.cwd())) else {
        return false;
    };
    let tools: Vec<&str> = if tool == "Bash" {
        vec!["Bash"]
    } else {
        vec!["Bash", tool]
    };
    let rules = ctx.permissions().rules();
    let allows = |r: &&SourcedRule| r.behavior == RuleBehavior::Allow;
    let whole = command.trim();
    let exact = rules.iter().filter(allows).any(|r| {
        tools.contains(&r.rule.tool.as_str())
            && r.rule.content.as_deref().is_some_and(
                |c| matches!(CommandPattern::parse(c), CommandPattern::Exact(ref e) if e == whole),
            )
    });
    let edits = ctx.permission_mode() == PermissionMode::AcceptEdits;
    exact
        || analysis.candidates.iter().any(|c| {
            rules
                .iter()
                .filter(allows)
                .any(|r| allowed_by(r, &tools, c))
                || (edits && accept_edits_allows(&c.command, ctx))
        })
}

/// The allow rule for exactly `command` (its whole line).
pub fn exact_rule(command: &str) -> PermissionRule {
    PermissionRule::with_content("Bash", exact_content(command.trim()))
}

/// Exact rules, one per subcommand no rule allows yet; never widened into a prefix.
fn suggestions(analysis: &Analysis, rules: &[SourcedRule], tools: &[&str]) -> Vec<PermissionRule> {
    let mut out: Vec<PermissionRule> = Vec::new();
    for c in &analysis.candidates {
        if c.text.is_empty()
            || rules
                .iter()
                .any(|r| r.behavior == RuleBehavior::Allow && allowed_by(r, tools, c))
        {
            continue;
        }
        let rule = PermissionRule::with_content("Bash", exact_content(&c.text));
        if !out.contains(&rule) {
            out.push(rule);
        }
    }
    out
}

/// The programs a command line runs, as far as they can be known before it runs: the base
/// name of every simple command's program, those run by wrappers and shell code included.
/// `Err` when the line does not parse, or says why its programs cannot all be known.
pub fn command_programs(command: &str) -> Result<Vec<String>, String> {
    let analysis = analyse(command)?;
    if let Some(why) = analysis.opaque.first() {
        return Err(why.clone());
    }
    let mut out: Vec<String> = Vec::new();
    for c in &analysis.candidates {
        if let Some(first) = c.command.words.first() {
            push_unique(&mut out, base_name(&first.text).to_owned());
        }
        // Safe wrappers stripped from the candidate run too.
        for w in &c.wrappers {
            push_unique(&mut out, w.clone());
        }
    }
    Ok(out)
}

/// Whether the whole command line only reads: it parses, nothing in it is unclassifiable,
/// and every simple command is on the read-only list.
pub fn is_read_only(command: &str) -> bool {
    let Ok(analysis) = analyse(command) else {
        return false;
    };
    analysis.issues.is_empty()
        && analysis.opaque.is_empty()
        && !analysis.candidates.is_empty()
        && analysis.candidates.len() <= MAX_SUBCOMMANDS
        && analysis.candidates.iter().all(|c| {
            c.issue.is_none() && !c.command.nested && readonly::is_read_only_command(&c.command)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_texts_cover_every_spelling() {
        let a = analyse("/usr/bin/env -i nice -n 1 $'r\\x6d' -f v").unwrap_or_default();
        let texts: Vec<&String> = a.candidates.iter().flat_map(|c| &c.deny_texts).collect();
        assert!(texts.iter().any(|t| t.as_str() == "rm -f v"), "{texts:?}");
    }

    #[test]
    fn taint_reaches_arithmetic() {
        for (cmd, opaque) in [
            ("y='a[$(rm v)]'; echo $((y))", true),
            ("read y; echo $((y))", true),
            ("for i in 1 2; do echo $((i*2)); done", false),
            ("for f in *; do echo $((f)); done", true),
            ("x=1; [[ $x -eq 1 ]]", false),
            ("read x; [[ $x -eq 1 ]]", true),
            ("test -v 'x[$(touch P)]'", true),
            ("printf -v 'a[$(id)]' 1", true),
            ("echo $((HOME))", false),
        ] {
            let a = analyse(cmd).unwrap_or_default();
            assert_eq!(!a.opaque.is_empty(), opaque, "{cmd}: {:?}", a.opaque);
        }
    }
}
