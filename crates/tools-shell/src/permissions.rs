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

use std::path::{Path, PathBuf};

use shell_analysis::{
    Access, Analysis, Candidate, Form, MAX_SUBCOMMANDS, ReadOperand, SimpleCommand, Unresolved,
    Word, analyse, base_name, escape_option, is_shell_script, path_words, read_operands,
};
use tool_core::{
    AskKind, Beneath, CommandPattern, PermissionDecision, PermissionMode, PermissionRule,
    RuleBehavior, SourcedRule, ToolContext, path,
};

use crate::operands::{self, Bases, Resolved};
use crate::steered;

/// At most this many entries are walked to find a denied file beneath a directory a
/// command reads recursively.
const MAX_WALK: usize = 50_000;

/// The largest shell script the check reads to see what it runs.
const MAX_SCRIPT_BYTES: u64 = 256 * 1024;
/// At most this many script files are read for one line.
const MAX_SCRIPT_FILES: usize = 16;

/// Analyses a command line that will run in `cwd`: shell scripts it runs are read from
/// there and checked as part of it, and programs steered by files in the project are
/// checked against them.
fn analyse_in(command: &str, cwd: &Path) -> Result<Analysis, String> {
    let mut analysis = analyse(command).map_err(|e| e.0)?;
    steered::package_scripts(&mut analysis, cwd);
    read_scripts(&mut analysis, cwd);
    steered::check(&mut analysis, cwd);
    Ok(analysis)
}

/// Reads the shell scripts the line runs (`bash FILE`, `source FILE`, `./script.sh`) and
/// checks their commands as part of the line. A script written by the line itself, one that
/// cannot be read whole, or one reached through a `cd` cannot be known before the line
/// runs.
fn read_scripts(a: &mut Analysis, cwd: &Path) {
    // Everything the line may write.
    let mut written: Vec<PathBuf> = Vec::new();
    for c in a.candidates() {
        let cmd = c.command();
        let mut words: Vec<Word> = cmd
            .redirects
            .iter()
            .filter(|r| r.writes_file())
            .filter_map(|r| r.target.clone())
            .collect();
        // The operands of a command that is neither read-only nor a shell running a script
        // (whose operand is the script it reads).
        let runs_script = cmd.name().is_some_and(|n| {
            matches!(
                base_name(n),
                "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "source" | "."
            )
        });
        if read_operands(cmd).is_none() && !runs_script {
            words.extend(path_words(cmd));
        }
        for w in words {
            if w.known {
                written.push(path::canonicalize_lenient(&path::resolve(cwd, &w.text)));
            }
        }
    }
    let mut read = 0;
    let after_cd = !a.cd_targets().is_empty();
    loop {
        let files = a.take_script_files();
        if files.is_empty() {
            return;
        }
        for sf in files {
            read += 1;
            let via = sf.via.clone();
            let name = sf.file.text.clone();
            let unresolved = |why: String| Unresolved::new(why, &name);
            if read > MAX_SCRIPT_FILES {
                a.add_unresolved(unresolved(
                    "more shell scripts than the check reads".to_owned(),
                ));
                return;
            }
            if after_cd && !name.starts_with('/') {
                a.add_unresolved(unresolved(format!(
                    "{via} runs a script after a `cd`, which the check cannot locate"
                )));
                continue;
            }
            let target = path::canonicalize_lenient(&path::resolve(cwd, &name));
            if written.contains(&target) {
                a.add_unresolved(unresolved(format!(
                    "{via} runs `{name}`, which this command writes first"
                )));
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
                a.add_unresolved(unresolved(format!(
                    "{via} runs `{name}`, too large a script to check"
                )));
                continue;
            }
            let Ok(bytes) = std::fs::read(&target) else {
                a.add_unresolved(unresolved(format!(
                    "{via} runs `{name}`, which the check cannot read"
                )));
                continue;
            };
            if sf.direct && !is_shell_script(&bytes) {
                // A program of another kind (a binary, a Python script): its own program.
                continue;
            }
            let text = String::from_utf8_lossy(&bytes).into_owned();
            a.include_script(&sf, &text);
        }
    }
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
    for c in analysis.candidates() {
        let Some(first) = c.command().words.first().filter(|w| w.known) else {
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
                    c.command().words.iter().map(|w| w.text.as_str()).collect();
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
    if !rule_matches(rule, tools, c.text()) {
        return false;
    }
    let exact =
        rule.rule.content.as_deref().is_some_and(|content| {
            matches!(CommandPattern::parse(content), CommandPattern::Exact(_))
        });
    exact || escape_option(c.command()).is_none()
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
    let mut check = PathCheck {
        ctx,
        bases: Bases::new(&ctx.cwd(), analysis.cd_targets()),
        v: PathVerdict::default(),
    };
    let read_rules = ctx.permissions().has_rules("Read", RuleBehavior::Deny);
    for c in analysis.candidates() {
        let reading = read_operands(c.command());
        if read_rules {
            check.reads(c, reading.as_deref());
            if let Some(ops) = &reading {
                check.repository_reads(c, ops);
                check.recursive_reads(c, ops);
            }
        }
        check.writes(c, reading.is_none());
        if let Some(s) = c.safety().first() {
            check.v.safety.get_or_insert(s.clone());
        }
    }
    check.v
}

/// [`check_paths`] under way: the session, where relative operands start, and the verdict
/// so far (the first denial and the first safety check found win).
struct PathCheck<'a> {
    ctx: &'a ToolContext,
    bases: Bases,
    v: PathVerdict,
}

impl PathCheck<'_> {
    /// The paths `w` names, noting a word only known at run time.
    fn resolve(&mut self, w: &Word) -> Vec<PathBuf> {
        match operands::resolve(w, &self.bases) {
            Resolved::Paths(p) => p,
            Resolved::Unknown => {
                self.v.unknown = true;
                Vec::new()
            }
        }
    }

    fn deny(&mut self, reason: impl FnOnce() -> String) {
        if self.v.deny.is_none() {
            self.v.deny = Some(reason());
        }
    }

    /// Reads against the Read deny rules: the operands of a read-only command, every
    /// path-like word of another one, and input redirections.
    fn reads(&mut self, c: &Candidate, reading: Option<&[ReadOperand]>) {
        let cmd = c.command();
        let mut reads: Vec<Word> = match reading {
            Some(ops) => ops
                .iter()
                .filter(|o| o.access != Access::Repository)
                .map(|o| o.word.clone())
                .collect(),
            None if cmd.form == Form::Test => Vec::new(),
            None => path_words(cmd),
        };
        reads.extend(
            cmd.redirects
                .iter()
                .filter(|r| r.reads_file())
                .filter_map(|r| r.target.clone()),
        );
        for w in &reads {
            for p in self.resolve(w) {
                if let PermissionDecision::Deny { reason } =
                    self.ctx.permissions().check_read_path(&p, self.ctx)
                {
                    self.deny(|| format!("`{}` reads {}: {reason}", c.text(), p.display()));
                }
            }
        }
    }

    /// A git command that prints file contents can print any file the repository ever
    /// held: refused when a Read deny rule may match anything in it.
    fn repository_reads(&mut self, c: &Candidate, ops: &[ReadOperand]) {
        for op in ops.iter().filter(|o| o.access == Access::Repository) {
            for p in self.resolve(&op.word) {
                let root = repository_root(&p);
                if let Some(rule) = self.ctx.permissions().read_deny_beneath(&root, self.ctx) {
                    self.deny(|| format!(
                        "`{}` prints file contents from the git repository at {}, its history included, where the Read deny rule {rule} may match; name paths with the Read tool instead, or narrow the deny rule",
                        c.text(),
                        root.display()
                    ));
                }
            }
        }
    }

    /// A recursive read reaches what lies beneath.
    fn recursive_reads(&mut self, c: &Candidate, ops: &[ReadOperand]) {
        for op in ops
            .iter()
            .filter(|o| o.recursive && o.access == Access::Content)
        {
            for p in self.resolve(&op.word) {
                if !p.is_dir() {
                    continue;
                }
                match self.ctx.permissions().read_denied_beneath(&p, self.ctx, MAX_WALK) {
                    Beneath::Clear => {}
                    Beneath::Denied(file, rule) => self.deny(|| format!(
                        "`{}` reads {} recursively, which includes {}, denied by {rule}; use the Grep tool, which skips denied files, or name the files to read",
                        c.text(),
                        p.display(),
                        file.display()
                    )),
                    Beneath::TooMany => self.deny(|| format!(
                        "`{}` reads {} recursively, too large a tree to check against the Read deny rules; use the Grep tool, which skips denied files, or narrow the path",
                        c.text(),
                        p.display()
                    )),
                }
            }
        }
    }

    /// Writes against the Edit rules and the protected paths: output redirections of every
    /// command, and the path-like words of a simple command that is not read-only.
    fn writes(&mut self, c: &Candidate, not_read_only: bool) {
        let cmd = c.command();
        let mut writes: Vec<Word> = cmd
            .redirects
            .iter()
            .filter(|r| r.writes_file())
            .filter_map(|r| r.target.clone())
            .collect();
        if not_read_only && cmd.form == Form::Simple {
            writes.extend(path_words(cmd));
        }
        for w in &writes {
            for p in self.resolve(w) {
                match self.ctx.permissions().check_write_path(&p, self.ctx) {
                    PermissionDecision::Deny { reason } => {
                        self.deny(|| format!("`{}` writes {}: {reason}", c.text(), p.display()));
                    }
                    PermissionDecision::Ask {
                        kind: AskKind::SafetyCheck,
                        reason,
                        ..
                    } => {
                        self.v
                            .safety
                            .get_or_insert(format!("`{}` may write {reason}", c.text()));
                    }
                    _ => {}
                }
            }
        }
    }
}

/// The top of the git work tree (or the git directory) holding `dir`: the nearest ancestor
/// with a `.git` entry, or a bare repository's directory; `dir` itself when there is none.
fn repository_root(dir: &Path) -> PathBuf {
    let dir = path::canonicalize_lenient(dir);
    dir.ancestors()
        .find(|d| {
            d.join(".git").exists() || (d.join("HEAD").is_file() && d.join("objects").is_dir())
        })
        .map_or(dir.clone(), Path::to_path_buf)
}

/// Whether the read-only command's operands all pass the Read check (inside the working
/// directories, or allowed by a Read rule), as the Read tool's would.
fn reads_allowed(c: &Candidate, bases: &Bases, ctx: &ToolContext) -> bool {
    let Some(ops) = read_operands(c.command()) else {
        return false;
    };
    let inputs = c
        .command()
        .redirects
        .iter()
        .filter(|r| r.reads_file())
        .filter_map(|r| r.target.clone());
    let repositories = ops
        .iter()
        .filter(|o| o.access == Access::Repository)
        .all(|o| match operands::resolve(&o.word, bases) {
            Resolved::Paths(ps) => ps.iter().all(|p| {
                matches!(
                    ctx.permissions().check_read_path(&repository_root(p), ctx),
                    PermissionDecision::Allow
                )
            }),
            Resolved::Unknown => false,
        });
    repositories
        && ops
            .into_iter()
            .filter(|o| o.access != Access::Repository)
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

/// The permission check of Bash (and Monitor, whose rules are Bash's): `tool` names the
/// tool asking, `Monitor` or else Bash (see [`ShellTool::from_name`]).
pub fn check(command: &str, ctx: &ToolContext, tool: &str) -> PermissionDecision {
    check_with(command, ctx, tool, false)
}

/// The shell tool a command is checked for: Bash's rules apply to both, Monitor's own too,
/// and the messages name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShellTool {
    /// Bash (and the profiles' shell tools, which stand for it)
    Bash,
    /// Monitor
    Monitor,
}

impl ShellTool {
    /// The tool `name` names: Monitor for `Monitor`, Bash for anything else.
    pub(crate) fn from_name(name: &str) -> Self {
        if name == "Monitor" {
            ShellTool::Monitor
        } else {
            ShellTool::Bash
        }
    }

    fn name(self) -> &'static str {
        match self {
            ShellTool::Bash => "Bash",
            ShellTool::Monitor => "Monitor",
        }
    }

    /// The tool names whose rules apply.
    fn rule_tools(self) -> &'static [&'static str] {
        match self {
            ShellTool::Bash => &["Bash"],
            ShellTool::Monitor => &["Bash", "Monitor"],
        }
    }
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
        ShellTool::from_name(tool),
        Running {
            disable_sandbox,
            sandbox_enabled: settings.enabled,
            unsandboxed_allowed: settings.allow_unsandboxed_commands,
        },
    )
}

/// The permission check, with how the command will run: deny rules, then the paths, then
/// what asks whatever the rules allow, then the allow rules, the read-only list and the
/// mode for every subcommand.
pub(crate) fn check_running(
    command: &str,
    ctx: &ToolContext,
    tool: ShellTool,
    running: Running,
) -> PermissionDecision {
    let analysis = match analyse_in(command, &ctx.cwd()) {
        Ok(a) => a,
        Err(e) => return PermissionDecision::deny(e),
    };
    let check = CommandCheck {
        ctx,
        analysis: &analysis,
        name: tool.name(),
        tools: tool.rule_tools(),
        rules: ctx.permissions().rules(),
        whole: command.trim(),
        running,
    };
    if let Some(denied) = check.denied() {
        return denied;
    }
    let paths = check_paths(&analysis, ctx);
    check
        .path_denial(&paths)
        .or_else(|| check.content_ask())
        // Protected paths: a safety check that no rule or mode skips.
        .or_else(|| {
            paths.safety.map(|reason| PermissionDecision::Ask {
                reason: format!("{reason}; protected paths always need explicit approval"),
                suggestions: Vec::new(),
                kind: AskKind::SafetyCheck,
            })
        })
        .or_else(|| check.always_asks())
        .unwrap_or_else(|| check.by_rules())
}

/// One command line under [`check_running`].
struct CommandCheck<'a> {
    ctx: &'a ToolContext,
    analysis: &'a Analysis,
    /// The tool, as messages name it
    name: &'static str,
    /// The tools whose rules apply
    tools: &'static [&'static str],
    rules: Vec<SourcedRule>,
    /// The whole command line, trimmed
    whole: &'a str,
    running: Running,
}

impl CommandCheck<'_> {
    /// The session's rules of behaviour `b`.
    fn of(&self, b: RuleBehavior) -> impl Iterator<Item = &SourcedRule> {
        self.rules.iter().filter(move |r| r.behavior == b)
    }

    /// Steps 1 and 2. Deny rules: the whole line, then every program in every spelling,
    /// then programs that are the same file as a denied one under another name; programs
    /// that cannot be known: denied while a deny rule names Bash.
    fn denied(&self) -> Option<PermissionDecision> {
        let (tool, tools, whole) = (self.name, self.tools, self.whole);
        let aliases = same_program_texts(self.analysis, &self.rules, tools, &self.ctx.cwd());
        for rule in self.of(RuleBehavior::Deny) {
            let hit = rule_matches(rule, tools, whole)
                .then(|| whole.to_owned())
                .or_else(|| {
                    self.analysis.candidates().iter().find_map(|c| {
                        c.deny_texts()
                            .iter()
                            .find(|t| rule_matches(rule, tools, t))
                            .cloned()
                    })
                })
                .or_else(|| {
                    aliases
                        .iter()
                        .find(|t| rule_matches(rule, tools, t))
                        .cloned()
                });
            if let Some(text) = hit {
                return Some(PermissionDecision::deny(format!(
                    "Permission to use {tool} with command {text} has been denied."
                )));
            }
        }
        let u = self.analysis.unresolved().first()?;
        let rule = self
            .of(RuleBehavior::Deny)
            .find(|r| tools.contains(&r.rule.tool.as_str()))?;
        Some(PermissionDecision::deny(unresolved_denial(
            tool, u, rule, whole,
        )))
    }

    /// Step 3. Paths against the Read and Edit rules (the protected paths ask later).
    fn path_denial(&self, paths: &PathVerdict) -> Option<PermissionDecision> {
        let tool = self.name;
        if let Some(reason) = &paths.deny {
            return Some(PermissionDecision::deny(format!(
                "Permission to use {tool} has been denied: {reason}"
            )));
        }
        let unsandboxed = !self.running.sandbox_enabled || self.running.disable_sandbox;
        (paths.unknown && unsandboxed && self.ctx.permissions().has_rules("Read", RuleBehavior::Deny))
            .then(|| PermissionDecision::deny(format!(
                "Permission to use {tool} has been denied: Read deny rules are in force and this command names a path only known when it runs, while it would run outside the sandbox (which otherwise keeps denied files unreadable). Name its paths literally."
            )))
    }

    /// Step 4. Content ask rules hold even in bypass.
    fn content_ask(&self) -> Option<PermissionDecision> {
        let (tool, tools, whole) = (self.name, self.tools, self.whole);
        let rule = self.of(RuleBehavior::Ask).find(|rule| {
            rule_matches(rule, tools, whole)
                || self
                    .analysis
                    .candidates()
                    .iter()
                    .any(|c| c.deny_texts().iter().any(|t| rule_matches(rule, tools, t)))
        })?;
        Some(PermissionDecision::Ask {
            reason: format!("Permission rule {rule} requires approval for this {tool} command"),
            suggestions: Vec::new(),
            kind: AskKind::Rule(Box::new(rule.clone())),
        })
    }

    /// Critical rm targets and leaving the sandbox: asks (or refusals) that no rule or mode
    /// skips; then an allow rule that is exactly this whole command line (no wildcard: a
    /// whole-string glob is the over-granting bug class) allows it as written.
    fn always_asks(&self) -> Option<PermissionDecision> {
        let cwd = self.ctx.cwd();
        if let Some(reason) = self
            .analysis
            .candidates()
            .iter()
            .find_map(|c| dangerous_rm(c.command(), &cwd))
        {
            return Some(PermissionDecision::Ask {
                reason,
                suggestions: Vec::new(),
                kind: AskKind::SafetyCheck,
            });
        }
        let running = self.running;
        if running.disable_sandbox && running.sandbox_enabled {
            if !running.unsandboxed_allowed {
                return Some(PermissionDecision::deny(
                    "dangerouslyDisableSandbox is not allowed: the settings set sandbox.allowUnsandboxedCommands to false. Run the command inside the sandbox.",
                ));
            }
            return Some(PermissionDecision::Ask {
                reason: format!(
                    "Run outside of the sandbox (dangerouslyDisableSandbox): `{}`",
                    self.whole.chars().take(200).collect::<String>()
                ),
                suggestions: Vec::new(),
                kind: AskKind::Unsandboxed,
            });
        }
        let whole = self.whole;
        self.of(RuleBehavior::Allow)
            .any(|r| {
                self.tools.contains(&r.rule.tool.as_str())
                    && r.rule.content.as_deref().is_some_and(|c| {
                        matches!(CommandPattern::parse(c), CommandPattern::Exact(ref e) if e == whole)
                    })
            })
            .then_some(PermissionDecision::Allow)
    }

    /// Step 5. Constructs that cannot be judged from their words ask whatever the rules
    /// say; otherwise every subcommand must be allowed by a rule, the read-only list or
    /// acceptEdits.
    fn by_rules(&self) -> PermissionDecision {
        let (ctx, analysis, tool, tools) = (self.ctx, self.analysis, self.name, self.tools);
        let suggestions = suggestions(analysis, &self.rules, tools);
        if analysis.candidates().len() > MAX_SUBCOMMANDS {
            return PermissionDecision::Ask {
                reason: format!(
                    "This {tool} command has more than {MAX_SUBCOMMANDS} subcommands; each one cannot be checked"
                ),
                suggestions: Vec::new(),
                kind: AskKind::Default,
            };
        }
        let mut issues: Vec<String> = Vec::new();
        for i in analysis
            .issues()
            .iter()
            .cloned()
            .chain(
                analysis
                    .unresolved()
                    .iter()
                    .filter(|u| !u.project_code)
                    .map(|u| u.why.clone()),
            )
            .chain(
                analysis
                    .candidates()
                    .iter()
                    .filter_map(|c| c.issue().map(str::to_owned)),
            )
        {
            push_unique(&mut issues, i);
        }
        let mode = ctx.permission_mode();
        let bases = Bases::new(&ctx.cwd(), analysis.cd_targets());
        let pending: Vec<&Candidate> = analysis
            .candidates()
            .iter()
            .filter(|c| {
                let by_rule = self
                    .of(RuleBehavior::Allow)
                    .any(|r| allowed_by(r, tools, c));
                let read_only = !c.command().nested && reads_allowed(c, &bases, ctx);
                let edits =
                    mode == PermissionMode::AcceptEdits && accept_edits_allows(c.command(), ctx);
                !(by_rule || read_only || edits || c.deny_only()) || c.issue().is_some()
            })
            .collect();
        if issues.is_empty() && pending.is_empty() && !analysis.candidates().is_empty() {
            return PermissionDecision::Allow;
        }
        let mut parts: Vec<String> = Vec::new();
        for c in &pending {
            push_unique(&mut parts, c.text().to_owned());
        }
        let mut reason = if analysis.candidates().len() > 1 && !parts.is_empty() {
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
}

/// Whether a person's choice allows some part of an allowed `command` — an allow rule (the
/// whole line's, or a subcommand's) or acceptEdits for what it lets edit — rather than only
/// its read-only classification (which runs the command in the read-only jail).
pub fn allowed_by_person(command: &str, ctx: &ToolContext, tool: &str) -> bool {
    let Ok(analysis) = analyse_in(command, &ctx.cwd()) else {
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
        || analysis.candidates().iter().any(|c| {
            rules
                .iter()
                .filter(allows)
                .any(|r| allowed_by(r, &tools, c))
                || (edits && accept_edits_allows(c.command(), ctx))
        })
}

/// The allow rule for exactly `command` (its whole line).
pub fn exact_rule(command: &str) -> PermissionRule {
    PermissionRule::with_content("Bash", exact_content(command.trim()))
}

/// Why a line with something unresolved is refused under a deny rule, naming the word and
/// what would let it run.
fn unresolved_denial(tool: &str, u: &Unresolved, rule: &SourcedRule, whole: &str) -> String {
    let line: String = whole.chars().take(200).collect();
    format!(
        "Permission to use {tool} has been denied: `{word}` cannot be resolved before the command runs ({why}), so the programs it runs cannot all be checked against the deny rule {rule}, which is in force; such a command is refused in every mode, and no allow rule overrides a deny rule. Name every program the command runs on the line itself (no variables, substitutions, aliases, options the check does not know, or runners of the project's own scripts). Without Bash deny rules it would ask, and the exact rule Bash({exact}) would allow it.",
        word = u.word,
        why = u.why,
        exact = exact_content(&line),
    )
}

/// Exact rules, one per subcommand no rule allows yet; never widened into a prefix.
fn suggestions(analysis: &Analysis, rules: &[SourcedRule], tools: &[&str]) -> Vec<PermissionRule> {
    let mut out: Vec<PermissionRule> = Vec::new();
    for c in analysis.candidates() {
        if c.text().is_empty()
            || rules
                .iter()
                .any(|r| r.behavior == RuleBehavior::Allow && allowed_by(r, tools, c))
        {
            continue;
        }
        let rule = PermissionRule::with_content("Bash", exact_content(c.text()));
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
    let programs = shell_analysis::programs(command).map_err(|u| u.why)?;
    let mut out: Vec<String> = Vec::new();
    for p in programs {
        push_unique(&mut out, p.name);
    }
    Ok(out)
}

/// Whether the whole command line only reads: it parses, nothing in it is unclassifiable,
/// and every simple command is on the read-only list.
pub fn is_read_only(command: &str) -> bool {
    shell_analysis::classify(command) == shell_analysis::Verdict::ReadOnly
}

fn push_unique(list: &mut Vec<String>, item: impl Into<String>) {
    let item = item.into();
    if !list.contains(&item) {
        list.push(item);
    }
}
