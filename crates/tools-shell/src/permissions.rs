//! Shell-aware permissions: `Bash(...)` rules matched against each simple command of a
//! parsed command line (never against the raw string), with wrappers and safe environment
//! assignments stripped, inner commands of `sh -c`, `eval`, `xargs` and `find -exec`
//! re-parsed, unclassifiable constructs asking, and read-only commands allowed.

use std::path::{Path, PathBuf};

use tool_core::{
    AskKind, CommandPattern, PermissionDecision, PermissionMode, PermissionRule, RuleBehavior,
    SourcedRule, ToolContext, path,
};

use crate::parse::{Script, SimpleCommand, Word, parse};
use crate::readonly::is_read_only_command;

/// At most this many simple commands are examined; more asks.
pub const MAX_SUBCOMMANDS: usize = 50;

/// How deep `sh -c` and `eval` are re-parsed.
const MAX_REPARSE: usize = 4;

/// Environment variables whose assignment in front of a command is harmless, so it is
/// stripped before matching (reference §3.5).
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
];

/// Shells whose `-c` argument is re-parsed.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "fish"];

/// Commands that run their arguments as a command: unwrapped for deny rules (the stricter
/// verdict), but not for allow rules unless they are safe wrappers.
const RUNNERS: &[&str] = &[
    "env", "sudo", "doas", "command", "builtin", "exec", "xargs", "nohup", "nice", "time",
    "timeout", "stdbuf", "setsid", "chrt", "ionice", "watch", "strace", "unbuffer",
];

/// One command to judge: the normalised text rules match, and what else to match for denies.
#[derive(Debug, Clone)]
struct Candidate {
    /// The command after stripping safe wrappers and safe assignments
    text: String,
    /// More texts a deny rule is checked against (every runner-stripped suffix)
    deny_texts: Vec<String>,
    /// The command (with safe wrappers stripped) for classification
    command: SimpleCommand,
    /// Why it cannot be allowed by its words (an unsafe assignment)
    issue: Option<String>,
}

/// The verdict on a command line.
#[derive(Debug, Clone)]
pub struct Analysis {
    candidates: Vec<Candidate>,
    issues: Vec<String>,
}

/// Analyses a command line. Parse errors are reported by the tool's validation; here they
/// deny, so nothing unparsable can run.
pub fn analyse(command: &str) -> Result<Analysis, String> {
    let script = parse(command).map_err(|e| e.0)?;
    let mut analysis = Analysis {
        candidates: Vec::new(),
        issues: script.issues.clone(),
    };
    collect(&script, &mut analysis, 0);
    // cd combined with git can make git read a planted repository's config (the bare-repo
    // `core.fsmonitor` escape); more than one cd makes paths hard to follow.
    let names: Vec<&str> = analysis
        .candidates
        .iter()
        .filter_map(|c| c.command.name())
        .collect();
    let cds = names.iter().filter(|n| **n == "cd").count();
    if cds > 1 {
        analysis.issues.push("more than one `cd`".to_owned());
    }
    if cds > 0 && names.contains(&"git") {
        analysis.issues.push("`cd` combined with `git`".to_owned());
    }
    Ok(analysis)
}

fn collect(script: &Script, out: &mut Analysis, depth: usize) {
    for cmd in &script.commands {
        let mut cand = normalise(cmd);
        // Inner commands of shells, eval, xargs and find -exec.
        for inner in inner_commands(&cand.command, depth, out) {
            collect(&inner, out, depth + 1);
        }
        cand.deny_texts.push(cand.text.clone());
        out.candidates.push(cand);
    }
}

/// Strips safe assignments and safe wrappers; records the runner-stripped suffixes for deny
/// matching.
fn normalise(cmd: &SimpleCommand) -> Candidate {
    let mut command = cmd.clone();
    let mut issue = None;
    let unsafe_assignment = command.assignments.iter().find(|(name, value)| {
        !(value.literal && (SAFE_ENV.contains(&name.as_str()) || name.starts_with("LC_")))
    });
    if let Some((name, _)) = unsafe_assignment {
        issue = Some(format!(
            "the environment assignment `{name}=...` in front of the command"
        ));
    } else {
        command.assignments.clear();
    }
    if let Some(r) = cmd.redirects.iter().find(|r| r.writes_file()) {
        let target = r.target.as_ref().map(|t| t.text.as_str()).unwrap_or("?");
        issue = Some(format!(
            "a redirection that writes a file (`{} {target}`)",
            r.op
        ));
    }
    let mut deny_texts = Vec::new();
    // Safe wrappers first (they are stripped for allow rules too).
    while let Some(stripped) = strip_safe_wrapper(&command.words) {
        deny_texts.push(join(&command.words));
        command.words = stripped;
    }
    // Then any runner, for deny rules only: every suffix after a runner word.
    let words = &command.words;
    if let Some(first) = words.first().map(|w| w.text.as_str())
        && RUNNERS.contains(&first)
    {
        for i in 1..words.len() {
            deny_texts.push(join(&words[i..]));
        }
    }
    // A path-qualified command name also matches its base name (`/bin/rm` is `rm`).
    if let Some(first) = words.first()
        && first.literal
        && first.text.contains('/')
        && let Some(base) = Path::new(&first.text).file_name().and_then(|b| b.to_str())
    {
        let mut w = words.clone();
        w[0].text = base.to_owned();
        deny_texts.push(join(&w));
    }
    Candidate {
        text: join(&command.words),
        deny_texts,
        command,
        issue,
    }
}

fn join(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `timeout`, `time`, `nice`, `nohup`, `stdbuf` with strictly parsed options: the words of
/// the wrapped command, or `None`.
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
        "nohup" => {}
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
    (!inner.is_empty()).then(|| inner.to_vec())
}

/// The commands a command runs from its arguments: `sh -c STRING`, `eval ARGS`,
/// `xargs CMD`, `find ... -exec CMD ;`. Each is an issue (it asks) as well.
fn inner_commands(cmd: &SimpleCommand, depth: usize, out: &mut Analysis) -> Vec<Script> {
    let words = &cmd.words;
    let Some(name) = cmd.name() else {
        return Vec::new();
    };
    let name = Path::new(name)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(name);
    let mut found = Vec::new();
    let mut reparse = |text: &str, what: &str, out: &mut Analysis| {
        out.issues.push(what.to_owned());
        if depth >= MAX_REPARSE {
            out.issues.push("commands nested too deeply".to_owned());
            return;
        }
        match parse(text) {
            Ok(s) => {
                out.issues.extend(s.issues.iter().cloned());
                found.push(s);
            }
            Err(e) => out
                .issues
                .push(format!("an inner command that does not parse ({e})")),
        }
    };
    if SHELLS.contains(&name) {
        if let Some(pos) = words.iter().position(|w| {
            w.literal
                && w.text.starts_with('-')
                && w.text.contains('c')
                && !w.text.starts_with("--")
        }) {
            match words.get(pos + 1) {
                Some(w) if w.literal => reparse(&w.text, &format!("`{name} -c`"), out),
                _ => out
                    .issues
                    .push(format!("`{name} -c` with a computed command")),
            }
        } else if words.len() > 1 {
            out.issues.push(format!("`{name}` running a script"));
        } else {
            out.issues.push(format!("an interactive `{name}`"));
        }
    } else if name == "eval" {
        let text = join(&words[1..]);
        reparse(&text, "`eval`", out);
    } else if name == "xargs" {
        // Skip xargs' options (those taking a value included) to its command.
        let mut i = 1;
        while let Some(w) = words.get(i) {
            let t = w.text.as_str();
            if matches!(
                t,
                "-I" | "-L"
                    | "-n"
                    | "-P"
                    | "-s"
                    | "-d"
                    | "-E"
                    | "-a"
                    | "--arg-file"
                    | "--delimiter"
                    | "--max-args"
                    | "--max-procs"
                    | "--replace"
                    | "--max-lines"
            ) {
                i += 2;
            } else if t.starts_with('-') {
                i += 1;
            } else {
                break;
            }
        }
        let text = join(words.get(i..).unwrap_or_default());
        if text.is_empty() {
            out.issues.push("`xargs`".to_owned());
        } else {
            reparse(&text, "`xargs`", out);
        }
    } else if name == "find" || name == "fd" || name == "fdfind" {
        let mut i = 0;
        while i < words.len() {
            let t = words[i].text.as_str();
            if matches!(
                t,
                "-exec" | "-execdir" | "-ok" | "-okdir" | "-x" | "--exec" | "-X" | "--exec-batch"
            ) {
                let start = i + 1;
                let mut end = start;
                while end < words.len() && !matches!(words[end].text.as_str(), ";" | "+" | "\\;") {
                    end += 1;
                }
                let text = join(words.get(start..end).unwrap_or_default());
                reparse(&text, &format!("`{name} {t}`"), out);
                i = end;
            }
            i += 1;
        }
    }
    found
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

/// The `rm`/`rmdir` targets that always ask: the root, top-level system directories, the
/// home directory and its ancestors, the working directory and its ancestors.
fn dangerous_rm(cmd: &SimpleCommand, cwd: &Path) -> Option<String> {
    let name = cmd.name()?;
    if !matches!(name, "rm" | "rmdir" | "/bin/rm" | "/usr/bin/rm") {
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
/// the working directories (reference §3.2).
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

/// The permission check of Bash (and Monitor, whose rules are Bash's).
pub fn check(command: &str, ctx: &ToolContext, tool: &str) -> PermissionDecision {
    check_with(command, ctx, tool, false)
}

/// The permission check; `unsandboxed` (a `dangerouslyDisableSandbox` call) turns off the
/// read-only and acceptEdits auto-approvals, so only rules allow it without asking.
pub fn check_with(
    command: &str,
    ctx: &ToolContext,
    tool: &str,
    unsandboxed: bool,
) -> PermissionDecision {
    let analysis = match analyse(command) {
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

    // 1. Deny: the whole line, then every subcommand in every form.
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
            });
        if let Some(text) = hit {
            return PermissionDecision::deny(format!(
                "Permission to use {tool} with command {text} has been denied."
            ));
        }
    }
    // 2. Content ask rules hold even in bypass.
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
    // 3. Critical rm targets: a safety check that no rule or mode skips.
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
    // An allow rule that is exactly this whole command line (no wildcard: a whole-string
    // glob is the over-granting bug class of safety.md §6) allows it as written.
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
    // 4. Constructs that cannot be judged from their words ask whatever the rules say;
    // 5. otherwise every subcommand must be allowed by a rule, the read-only list or
    // acceptEdits.
    let mut issues: Vec<String> = Vec::new();
    for i in analysis
        .issues
        .iter()
        .cloned()
        .chain(analysis.candidates.iter().filter_map(|c| c.issue.clone()))
    {
        if !issues.contains(&i) {
            issues.push(i);
        }
    }
    let mode = ctx.permission_mode();
    let pending: Vec<&Candidate> = analysis
        .candidates
        .iter()
        .filter(|c| {
            let by_rule = of(RuleBehavior::Allow).any(|r| rule_matches(r, &tools, &c.text));
            let read_only = !unsandboxed && !c.command.nested && is_read_only_command(&c.command);
            let edits = !unsandboxed
                && mode == PermissionMode::AcceptEdits
                && accept_edits_allows(&c.command, ctx);
            !(by_rule || read_only || edits) || c.issue.is_some()
        })
        .collect();
    if issues.is_empty() && pending.is_empty() && !analysis.candidates.is_empty() {
        return PermissionDecision::Allow;
    }
    let mut parts: Vec<String> = Vec::new();
    for c in &pending {
        if !parts.contains(&c.text) {
            parts.push(c.text.clone());
        }
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
    if unsandboxed {
        reason = format!("Run outside of the sandbox (dangerouslyDisableSandbox): {reason}");
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

/// Exact rules, one per subcommand no rule allows yet; never widened into a prefix.
fn suggestions(analysis: &Analysis, rules: &[SourcedRule], tools: &[&str]) -> Vec<PermissionRule> {
    let mut out: Vec<PermissionRule> = Vec::new();
    for c in &analysis.candidates {
        if c.text.is_empty()
            || rules
                .iter()
                .any(|r| r.behavior == RuleBehavior::Allow && rule_matches(r, tools, &c.text))
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

/// Whether the whole command line only reads: it parses, nothing in it is unclassifiable,
/// and every simple command is on the read-only list.
pub fn is_read_only(command: &str) -> bool {
    let Ok(analysis) = analyse(command) else {
        return false;
    };
    analysis.issues.is_empty()
        && !analysis.candidates.is_empty()
        && analysis.candidates.len() <= MAX_SUBCOMMANDS
        && analysis
            .candidates
            .iter()
            .all(|c| c.issue.is_none() && !c.command.nested && is_read_only_command(&c.command))
}
