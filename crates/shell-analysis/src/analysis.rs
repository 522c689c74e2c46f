//! A command line as a whole: every simple command it runs (through wrappers, shell code,
//! option values), each in every spelling deny rules are matched against, what makes the
//! line need a person's approval whatever the rules say, and what cannot be resolved before
//! it runs.

use std::collections::BTreeSet;

use crate::parse::{Form, ParseError, Script, SimpleCommand, Word, is_identifier, parse};
use crate::programs::{self, base_name};
use crate::readonly;

/// At most this many simple commands are examined; more asks.
pub const MAX_SUBCOMMANDS: usize = 50;

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

/// Something about a line that cannot be known before it runs: the word, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    /// The word (or construct) that could not be resolved
    pub word: String,
    /// Why
    pub why: String,
    /// It is a runner of the project's own code (`make`, `npm test`, `cargo build`): what
    /// it runs is in the project's files, not on the line. A deny rule refuses it like any
    /// other unresolved word, but a person's allow rule for the command covers it (the
    /// person approved running the project's code)
    pub project_code: bool,
}

impl Unresolved {
    /// From a reason that names the word in backquotes (its first backquoted part), or the
    /// `fallback` word.
    pub fn new(why: impl Into<String>, fallback: &str) -> Self {
        let why = why.into();
        let word = why
            .split('`')
            .nth(1)
            .filter(|w| !w.is_empty())
            .unwrap_or(fallback)
            .to_owned();
        Unresolved {
            word,
            why,
            project_code: false,
        }
    }

    /// A runner of the project's own code (see [`Unresolved::project_code`]).
    pub fn project_code(why: impl Into<String>, fallback: &str) -> Self {
        Unresolved {
            project_code: true,
            ..Unresolved::new(why, fallback)
        }
    }
}

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

/// One simple command of a line, as the checks see it.
#[derive(Debug, Clone)]
pub struct Candidate {
    text: String,
    deny_texts: Vec<String>,
    command: SimpleCommand,
    issue: Option<String>,
    safety: Vec<String>,
    wrappers: Vec<String>,
    deny_only: bool,
}

impl Candidate {
    /// It runs inside a project script that a command of the line runs (`npm test` runs
    /// package.json's `test`): deny rules hold for it, but approving the command that runs
    /// the script approves it.
    pub fn deny_only(&self) -> bool {
        self.deny_only
    }

    /// The command after stripping safe wrappers and safe assignments: what allow rules
    /// match.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// What deny and ask rules are matched against: the command in every spelling (with and
    /// without its wrappers, its program by base name).
    pub fn deny_texts(&self) -> &[String] {
        &self.deny_texts
    }

    /// The command (safe wrappers stripped), for classification.
    pub fn command(&self) -> &SimpleCommand {
        &self.command
    }

    /// Why it cannot be allowed by its words.
    pub fn issue(&self) -> Option<&str> {
        self.issue.as_deref()
    }

    /// Writes that always need a person (`git config` changing the configuration).
    pub fn safety(&self) -> &[String] {
        &self.safety
    }

    /// The safe wrappers stripped in front of it (`timeout`, `nice`, …).
    pub fn wrappers(&self) -> &[String] {
        &self.wrappers
    }

    /// Whether it only reads (the read-only list, and not nested in a substitution or a
    /// script).
    pub fn is_read_only(&self) -> bool {
        self.issue.is_none()
            && !self.command.nested
            && readonly::is_read_only_command(&self.command)
    }
}

/// A shell script a line runs (`bash FILE`, `source FILE`, `./script.sh`): the host reads it
/// and adds its commands with [`Analysis::include_script`].
#[derive(Debug, Clone)]
pub struct ScriptFile {
    /// The word naming it
    pub file: Word,
    /// What runs it (for messages)
    pub via: String,
    /// How deep in wrappers and shell code it is run
    pub depth: usize,
    /// Whether it is run by its path, so it is a shell script only if its `#!` says so
    pub direct: bool,
}

/// What a command line does, as far as can be known before it runs.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    candidates: Vec<Candidate>,
    issues: Vec<String>,
    unresolved: Vec<Unresolved>,
    cd_targets: Vec<Word>,
    script_files: Vec<ScriptFile>,
    package_scripts: Vec<PackageScript>,
    flow: Flow,
}

/// A package.json script a line runs (`npm test`): the host reads it, adds its code with
/// [`Analysis::include_package_script`], or leaves it unresolved.
#[derive(Debug, Clone)]
pub struct PackageScript {
    /// The package manager (`npm`, `pnpm`, `yarn`)
    pub runner: String,
    /// The script's name (`test`; `pretest` and `posttest` run with it)
    pub script: String,
    /// What stays unresolved unless the host resolves it
    pub unresolved: Unresolved,
    /// How deep in wrappers and shell code it is run
    pub depth: usize,
}

/// Names assigned on the line with a value that may hide code, and names whose value bash
/// evaluates as arithmetic or as a name.
#[derive(Debug, Clone, Default)]
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

/// Analyses a command line. A line that does not parse is an error: nothing unparsable can
/// be judged, so nothing unparsable runs.
pub fn analyse(command: &str) -> Result<Analysis, ParseError> {
    let script = parse(command)?;
    let mut analysis = Analysis::default();
    analysis.collect(&script, 0);
    analysis.finish();
    Ok(analysis)
}

impl Analysis {
    /// Every simple command, nested ones and those wrappers run included.
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }

    /// Why the line needs a person's approval whatever the rules say (a write redirection,
    /// `eval`, a shell running code, …).
    pub fn issues(&self) -> &[String] {
        &self.issues
    }

    /// What cannot be known before the line runs; under a deny rule naming Bash, a line with
    /// any is refused.
    pub fn unresolved(&self) -> &[Unresolved] {
        &self.unresolved
    }

    /// The targets of `cd` on the line, in order.
    pub fn cd_targets(&self) -> &[Word] {
        &self.cd_targets
    }

    /// Takes the shell scripts the line runs that the host has not read yet.
    pub fn take_script_files(&mut self) -> Vec<ScriptFile> {
        std::mem::take(&mut self.script_files)
    }

    /// Takes the package.json scripts the line runs that the host has not resolved yet.
    pub fn take_package_scripts(&mut self) -> Vec<PackageScript> {
        std::mem::take(&mut self.package_scripts)
    }

    /// Resolves a package.json script: `code` holds each script it runs (`pretest`, `test`,
    /// `posttest`: those the file defines), checked as shell code; with none, nothing runs
    /// (the package manager reports the missing script).
    pub fn include_package_script(&mut self, p: &PackageScript, code: &[(String, String)]) {
        self.unresolved.retain(|u| *u != p.unresolved);
        for (name, text) in code {
            let file = ScriptFile {
                file: Word::plain(format!("package.json:{name}")),
                via: format!("`{} {}`", p.runner, p.script),
                depth: p.depth,
                direct: false,
            };
            self.include(&file, text, true);
        }
        self.finish();
    }

    /// Marks something of the line as unresolved (the host found it: a script it cannot
    /// read, a program steered by a file in the project).
    pub fn add_unresolved(&mut self, u: Unresolved) {
        if !self.unresolved.contains(&u) {
            self.unresolved.push(u);
        }
    }

    /// Marks the line as needing approval whatever the rules say.
    pub fn add_issue(&mut self, issue: impl Into<String>) {
        push_unique(&mut self.issues, issue);
    }

    /// Adds the commands of a shell script the line runs (`code`, read by the host from
    /// `file`), as nested commands.
    pub fn include_script(&mut self, file: &ScriptFile, code: &str) {
        self.add_issue(format!("{} running a shell script", file.via));
        self.include(file, code, false);
    }

    fn include(&mut self, file: &ScriptFile, code: &str, deny_only: bool) {
        let code = code.strip_prefix("#!").map_or(code, |rest| {
            rest.split_once('\n').map_or("", |(_, body)| body)
        });
        match parse(code) {
            Ok(inner) => {
                let before = self.candidates.len();
                self.collect(&inner, file.depth + 1);
                for c in &mut self.candidates[before..] {
                    c.command.nested = true;
                    c.deny_only |= deny_only;
                }
            }
            Err(e) => self.add_unresolved(Unresolved::new(
                format!(
                    "{} runs {}, a script that does not parse ({e})",
                    file.via, file.file.text
                ),
                &file.file.text,
            )),
        }
        self.finish();
    }

    /// The first text of any command that `matches` (a deny rule's matcher): the rule then
    /// denies the line.
    pub fn find_match(&self, matches: impl Fn(&str) -> bool) -> Option<&str> {
        self.candidates
            .iter()
            .flat_map(|c| c.deny_texts.iter())
            .find(|t| matches(t))
            .map(String::as_str)
    }

    /// Whether the whole line only reads: nothing unresolved or needing approval, and every
    /// command on the read-only list.
    pub fn is_read_only(&self) -> bool {
        self.issues.is_empty()
            && self.unresolved.is_empty()
            && !self.candidates.is_empty()
            && self.candidates.len() <= MAX_SUBCOMMANDS
            && self.candidates.iter().all(Candidate::is_read_only)
    }

    /// The programs the line runs, each with its arguments as bash passes them: the base
    /// name of every simple command's program, those run by wrappers and shell code
    /// included, and the wrappers themselves.
    pub fn programs(&self) -> Vec<Program> {
        let mut out: Vec<Program> = Vec::new();
        for c in &self.candidates {
            for w in &c.wrappers {
                let p = Program {
                    name: w.clone(),
                    argv: vec![w.clone()],
                    nested: c.command.nested,
                };
                if !out.iter().any(|o| o.name == p.name) {
                    out.push(p);
                }
            }
            if let Some(first) = c.command.words.first() {
                out.push(Program {
                    name: base_name(&first.text).to_owned(),
                    argv: c.command.words.iter().map(|w| w.text.clone()).collect(),
                    nested: c.command.nested,
                });
            }
        }
        out
    }

    fn collect(&mut self, script: &Script, depth: usize) {
        for i in &script.issues {
            self.add_issue(i.clone());
        }
        self.flow
            .evaluated
            .extend(script.arithmetic_names.iter().cloned());
        for cmd in &script.commands {
            self.command(cmd, depth);
        }
        // After the commands, which name the word when they can.
        for o in &script.opaque {
            self.add_unresolved(Unresolved::new(o.clone(), "the command line"));
        }
    }

    /// The checks that need the whole line.
    fn finish(&mut self) {
        if let Some(name) = self.flow.evaluated.intersection(&self.flow.tainted).next() {
            let why = format!(
                "the value of `{name}`, set on this line from data that may hold code, which bash evaluates as arithmetic or as a name (running any `$(…)` hidden in it)"
            );
            self.add_unresolved(Unresolved::new(why, name));
        }
        // cd combined with git can make git read a planted repository's config (the
        // bare-repo `core.fsmonitor` escape); more than one cd makes paths hard to follow.
        let names: Vec<String> = self
            .candidates
            .iter()
            .filter_map(|c| c.command.name().map(str::to_owned))
            .collect();
        let cds = names.iter().filter(|n| *n == "cd").count();
        if cds > 1 {
            self.add_issue("more than one `cd`");
        }
        if cds > 0 && names.iter().any(|n| base_name(n) == "git") {
            self.add_issue("`cd` combined with `git`");
            self.add_unresolved(Unresolved::new(
                "`git` after a `cd`: the repository it reads (and the programs its configuration names) is only known when the line runs",
                "cd",
            ));
        }
    }

    /// Judges an assignment: whether it can change what runs, and whether its value may
    /// hide code.
    fn assign(&mut self, name: &str, value: &Word, exported: bool) {
        if exported && !is_safe_env(name) {
            self.add_unresolved(Unresolved::new(
                format!(
                    "the environment variable `{name}` passed to the programs it starts (it may change what they run)"
                ),
                name,
            ));
        } else if !exported && !is_safe_env(name) && !is_local_name(name) {
            self.add_unresolved(Unresolved::new(
                format!("an assignment to `{name}`, which may change what later commands run"),
                name,
            ));
        }
        let clean = value.known && !value.glob && !value.text.contains(['$', '`', '[', ']']);
        if !clean {
            self.flow.tainted.insert(name.to_owned());
        }
    }

    /// The checks of builtins that evaluate an operand as a name, a subscript or
    /// arithmetic.
    fn evaluated_operands(&mut self, cmd: &SimpleCommand) {
        let Some(e) = programs::evaluation(cmd) else {
            return;
        };
        let name = cmd
            .words
            .first()
            .map(|w| w.text.clone())
            .unwrap_or_default();
        if let Some(why) = e.opaque {
            self.add_unresolved(Unresolved::new(why, &name));
        }
        for n in e.assigned {
            self.flow.tainted.insert(n);
        }
        for w in e.evaluated {
            if !w.known {
                self.flow.evaluated.extend(referenced_names(&w.text));
                // The value is only known at run time; whether it can hide code depends on
                // where it came from: tainted names are caught in `finish`, the environment
                // is the host's.
                continue;
            }
            if w.text.contains(['$', '`']) {
                self.add_unresolved(Unresolved::new(
                    format!("`{name}` evaluates code hidden in its operand `{}`", w.text),
                    &w.text,
                ));
                continue;
            }
            // Names inside the operand (`x`, `a[i]`, `x+y`) are evaluated too.
            let mut ident = String::new();
            for c in w.text.chars().chain(std::iter::once(' ')) {
                if c.is_ascii_alphanumeric() || c == '_' {
                    ident.push(c);
                } else {
                    if is_identifier(&ident) {
                        self.flow.evaluated.insert(std::mem::take(&mut ident));
                    }
                    ident.clear();
                }
            }
        }
    }

    fn command(&mut self, cmd: &SimpleCommand, depth: usize) {
        if depth > MAX_REPARSE {
            self.add_unresolved(Unresolved::new(
                "commands nested too deeply to follow",
                &cmd.text(),
            ));
            return;
        }
        match cmd.form {
            Form::Assignment => {
                for (name, value) in &cmd.assignments {
                    self.assign(name, value, false);
                }
                return;
            }
            Form::Declaration | Form::Unset => self.declaration(cmd),
            Form::Test => self.evaluated_operands(cmd),
            Form::Simple => {}
        }
        let mut cand = self.normalise(cmd);
        if let Some(first) = cand.command.words.first()
            && (first.glob || !first.known)
        {
            let why = if first.glob {
                "a glob pattern in command position"
            } else {
                "a variable or substitution in command position"
            };
            self.add_unresolved(Unresolved::new(
                format!("{why} (`{}`)", first.text),
                &first.text,
            ));
            self.add_issue(why);
        }
        if cmd.form != Form::Simple {
            cand.deny_texts.push(cand.text.clone());
            self.candidates.push(cand);
            return;
        }
        if cand.command.name() == Some("cd")
            && let Some(target) = cand.command.words.get(1)
        {
            self.cd_targets.push(target.clone());
        }
        self.evaluated_operands(&cand.command.clone());
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
        self.unwrapped(&mut cand, &u, depth);
        self.scripts(&u.scripts, depth);
        for t in [cand.text.clone(), program_text(&cand.command.words)] {
            push_unique(&mut cand.deny_texts, t);
        }
        self.candidates.push(cand);
    }

    /// A declaration (`export`, `declare`, `local`, `readonly`, …) or `unset`: what it
    /// assigns, and names whose change may alter what later commands run.
    fn declaration(&mut self, cmd: &SimpleCommand) {
        let keyword = cmd.words.first().map(|w| w.text.as_str()).unwrap_or("");
        let exported = keyword == "export"
            || cmd
                .words
                .iter()
                .any(|w| w.text.starts_with('-') && w.text.contains('x'));
        for (name, value) in &cmd.assignments {
            self.assign(name, value, exported);
        }
        for w in cmd.words.iter().skip(1) {
            let bare = w.text.split(['[', '=']).next().unwrap_or_default();
            if w.text.starts_with('-') || w.text.starts_with('+') {
                continue;
            }
            if !w.known {
                self.add_unresolved(Unresolved::new(
                    format!("`{keyword}` of a computed name"),
                    &w.text,
                ));
            } else if (exported || keyword == "unset") && !is_safe_env(bare)
                || !is_local_name(bare) && !is_safe_env(bare)
            {
                self.add_unresolved(Unresolved::new(
                    format!("`{keyword} {bare}`, which may change what later commands run"),
                    bare,
                ));
            }
        }
        self.evaluated_operands(cmd);
    }

    /// Records what unwrapping `cand`'s command found: opaque parts, project code, issues,
    /// script files, and the commands it runs (followed at `depth + 1`).
    fn unwrapped(&mut self, cand: &mut Candidate, u: &programs::Unwrapped, depth: usize) {
        let fallback = cand.command.text();
        for o in &u.opaque {
            self.add_unresolved(Unresolved::new(o.clone(), &fallback));
        }
        for p in &u.project {
            let u2 = Unresolved::project_code(p.clone(), &fallback);
            if let Some(script) = &u.package_script {
                self.package_scripts.push(PackageScript {
                    runner: base_name(&cand.command.words[0].text).to_owned(),
                    script: script.clone(),
                    unresolved: u2.clone(),
                    depth,
                });
            }
            self.add_unresolved(u2);
        }
        for i in &u.issues {
            self.add_issue(i.clone());
        }
        cand.safety.extend(u.safety.iter().cloned());
        for (file, via) in &u.script_files {
            self.script_files.push(ScriptFile {
                file: file.clone(),
                via: via.clone(),
                depth,
                direct: false,
            });
        }
        // A script run by its path (`./build.sh`): read too, when it is a shell script.
        if let Some(first) = cand.command.words.first()
            && first.known
            && first.text.contains('/')
        {
            if first.text.starts_with("/proc/") || first.text.starts_with("/dev/") {
                self.add_unresolved(Unresolved::new(
                    format!("a program run from `{}`", first.text),
                    &first.text,
                ));
            }
            self.script_files.push(ScriptFile {
                file: first.clone(),
                via: format!("`{}`", first.text),
                depth,
                direct: true,
            });
        }
        for inner in &u.inner {
            if let Some(w) = inner.words.first().filter(|w| !w.known) {
                self.add_unresolved(Unresolved::new(
                    format!(
                        "a wrapper running a command whose name is only known at run time (`{}`)",
                        w.text
                    ),
                    &w.text,
                ));
            }
            self.command(inner, depth + 1);
        }
    }

    /// Shell code a command runs (`sh -c CODE`, `git rebase --exec CODE`), parsed and
    /// collected at `depth + 1`.
    fn scripts(&mut self, scripts: &[(String, String)], depth: usize) {
        for (code, via) in scripts {
            self.add_issue(format!("{via} running shell code"));
            if depth + 1 > MAX_REPARSE {
                self.add_unresolved(Unresolved::new(
                    "commands nested too deeply to follow",
                    code,
                ));
                continue;
            }
            match parse(code) {
                Ok(inner) => {
                    let before = self.candidates.len();
                    self.collect(&inner, depth + 1);
                    for c in &mut self.candidates[before..] {
                        c.command.nested = true;
                    }
                }
                Err(e) => self.add_unresolved(Unresolved::new(
                    format!("shell code run by {via} that does not parse ({e})"),
                    code,
                )),
            }
        }
    }

    /// Strips safe assignments and safe wrappers; records the texts deny rules are matched
    /// against.
    fn normalise(&mut self, cmd: &SimpleCommand) -> Candidate {
        let mut command = cmd.clone();
        let mut issue = None;
        if cmd.form == Form::Simple {
            for (name, value) in &cmd.assignments {
                self.assign(name, value, true);
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
        while let Some(stripped) = programs::strip_safe_wrapper(&command.words) {
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
            deny_only: false,
        }
    }
}

/// A program a line runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// Its base name (`/usr/bin/rm` → `rm`)
    pub name: String,
    /// Its words as bash passes them, the program first
    pub argv: Vec<String>,
    /// Whether it runs inside a substitution, shell code or a script rather than at the top
    /// of the line
    pub nested: bool,
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

/// The words of a command that may name paths: its non-option operands and the values of
/// `--opt=VALUE` / `key=VALUE` operands; URLs are left out.
pub fn path_words(cmd: &SimpleCommand) -> Vec<Word> {
    let mut out = Vec::new();
    for w in cmd.words.iter().skip(1) {
        if w.text.contains("://") {
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

/// Whether a file run by its path is a shell script: a shell `#!` line, or text with none
/// (which the kernel refuses and bash then runs itself).
pub fn is_shell_script(bytes: &[u8]) -> bool {
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
            assert_eq!(
                !a.unresolved.is_empty(),
                opaque,
                "{cmd}: {:?}",
                a.unresolved
            );
        }
    }
}
