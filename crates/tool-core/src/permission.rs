//! The permission engine: modes, rules from every source, the evaluation order (see
//! [`PermissionEngine::decide`]), and the file-system checks that path-taking tools share.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

use crate::pattern::PathPattern;
use crate::rule::{PermissionRule, RuleBehavior, SourcedRule};
use crate::tool::{ParsedInput, Tool};
use crate::{ToolContext, path};

/// How much the session may do without asking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    /// Ask on first use of anything not allowed by a rule
    #[default]
    Default,
    /// File writes inside the working directories are allowed
    AcceptEdits,
    /// Read-only exploration; nothing extra is allowed
    Plan,
    /// Everything is allowed except deny rules, ask rules with content, protected paths and
    /// tools that need a person
    BypassPermissions,
    /// Anything that would ask is denied
    DontAsk,
}

impl PermissionMode {
    /// Every mode.
    pub const ALL: [PermissionMode; 5] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::BypassPermissions,
        PermissionMode::DontAsk,
    ];

    /// The name in settings and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::DontAsk => "dontAsk",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PermissionMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PermissionMode::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!(
                    "unknown permission mode `{s}`: expected one of default, acceptEdits, plan, bypassPermissions, dontAsk"
                )
            })
    }
}

/// Why a decision is "ask", which decides whether bypassPermissions can skip it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskKind {
    /// Nothing allowed the call (the reference's "passthrough"); bypass allows it
    Default,
    /// Like `Default`, and the named mode would allow it (acceptEdits for writes inside the
    /// working directories)
    Mode(PermissionMode),
    /// An ask rule with content matched; holds even in bypass
    Rule(Box<SourcedRule>),
    /// A protected path; holds even in bypass
    SafetyCheck,
    /// The tool always needs a person (AskUserQuestion, ExitPlanMode); holds even in bypass
    Interaction,
    /// A command asked to run outside the sandbox; holds even in bypass (the sandbox is what
    /// a bypass session relies on)
    Unsandboxed,
}

impl AskKind {
    /// Whether bypassPermissions mode may turn this ask into allow.
    pub fn is_bypassable(&self) -> bool {
        matches!(self, AskKind::Default | AskKind::Mode(_))
    }
}

/// A permission decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionDecision {
    /// Go ahead
    Allow,
    /// A person must approve
    Ask {
        /// Why approval is needed
        reason: String,
        /// Rules that would allow calls like this one
        suggestions: Vec<PermissionRule>,
        /// What kind of ask, for the bypass and headless logic
        kind: AskKind,
    },
    /// Refused
    Deny {
        /// Why
        reason: String,
    },
}

impl PermissionDecision {
    /// An ask that bypass may skip, with one suggested rule.
    pub fn ask(reason: impl Into<String>, suggestion: Option<PermissionRule>) -> Self {
        PermissionDecision::Ask {
            reason: reason.into(),
            suggestions: suggestion.into_iter().collect(),
            kind: AskKind::Default,
        }
    }

    /// A denial.
    pub fn deny(reason: impl Into<String>) -> Self {
        PermissionDecision::Deny {
            reason: reason.into(),
        }
    }
}

/// Rules from every source plus the session's mode-independent switches.
#[derive(Debug, Default)]
pub struct PermissionEngine {
    rules: RwLock<Vec<SourcedRule>>,
    bypass_available: bool,
}

impl PermissionEngine {
    /// An engine with these rules.
    pub fn new(rules: Vec<SourcedRule>) -> Self {
        PermissionEngine {
            rules: RwLock::new(rules),
            bypass_available: false,
        }
    }

    /// Records whether the session started with bypassPermissions available. Unlike the
    /// reference, this never makes plan mode behave like bypass: plan mode is read-only in
    /// every session.
    pub fn with_bypass_available(mut self, available: bool) -> Self {
        self.bypass_available = available;
        self
    }

    /// Whether the session started with bypassPermissions available.
    pub fn bypass_available(&self) -> bool {
        self.bypass_available
    }

    /// Adds a rule (an "always allow" answer, say).
    pub fn add_rule(&self, rule: SourcedRule) {
        if let Ok(mut rules) = self.rules.write()
            && !rules.contains(&rule)
        {
            rules.push(rule);
        }
    }

    /// A copy of every rule.
    pub fn rules(&self) -> Vec<SourcedRule> {
        self.rules.read().map(|r| r.clone()).unwrap_or_default()
    }

    /// The first blanket (content-less) rule of `behavior` naming `tool`, or the built-ins
    /// it is checked as ([`Tool::checked_as`]).
    pub fn blanket_rule(&self, tool: &dyn Tool, behavior: RuleBehavior) -> Option<SourcedRule> {
        let rules = self.rules.read().ok()?;
        let blanket = |name: &str, aliases: &[&str]| {
            rules.iter().find(|r| {
                r.behavior == behavior && r.rule.is_blanket() && r.rule.names_tool(name, aliases)
            })
        };
        if let Some(rule) = blanket(tool.name(), tool.aliases()) {
            return Some(rule.clone());
        }
        let governing = tool.checked_as();
        if governing.is_empty() {
            return None;
        }
        if behavior == RuleBehavior::Allow {
            // Allowing one of the tools it stands for does not allow the rest of what it does.
            let all: Option<Vec<&SourcedRule>> =
                governing.iter().map(|name| blanket(name, &[])).collect();
            return all.and_then(|rules| rules.first().map(|r| (*r).clone()));
        }
        governing
            .iter()
            .find_map(|name| blanket(name, &[]))
            .cloned()
    }

    /// Whether any content rule of `behavior` names `tool_name` (a cheap pre-check before
    /// matching many paths).
    pub fn has_content_rules(&self, tool_name: &str, behavior: RuleBehavior) -> bool {
        self.rules.read().is_ok_and(|rules| {
            rules.iter().any(|r| {
                r.behavior == behavior && r.rule.tool == tool_name && r.rule.content.is_some()
            })
        })
    }

    /// Whether a blanket deny rule hides `tool` from the pool.
    pub fn is_hidden(&self, tool: &dyn Tool) -> bool {
        self.blanket_rule(tool, RuleBehavior::Deny).is_some()
    }

    /// The first content rule naming `tool_name` whose content satisfies `matches`, looked up
    /// in the order deny, ask, allow: a deny wins over a more specific allow.
    pub fn match_content(
        &self,
        tool_name: &str,
        mut matches: impl FnMut(&str, &SourcedRule) -> bool,
    ) -> Option<SourcedRule> {
        let rules = self.rules.read().ok()?;
        for behavior in [RuleBehavior::Deny, RuleBehavior::Ask, RuleBehavior::Allow] {
            for rule in rules
                .iter()
                .filter(|r| r.behavior == behavior && r.rule.tool == tool_name)
            {
                if let Some(content) = &rule.rule.content
                    && matches(content, rule)
                {
                    return Some(rule.clone());
                }
            }
        }
        None
    }

    fn path_rule(
        &self,
        rule_tool: &str,
        behavior: RuleBehavior,
        variants: &[PathBuf],
        is_dir: bool,
        ctx: &ToolContext,
    ) -> Option<SourcedRule> {
        let rules = self.rules.read().ok()?;
        let cwd = ctx.cwd();
        let home = path::home_dir().unwrap_or_else(|| PathBuf::from("/"));
        rules
            .iter()
            .filter(|r| r.behavior == behavior && r.rule.tool == rule_tool)
            .find(|r| {
                let Some(content) = &r.rule.content else {
                    return false;
                };
                let Ok(pattern) = PathPattern::parse(content, &r.source.root) else {
                    return false;
                };
                variants.iter().any(|p| {
                    pattern.matches(p, is_dir, &cwd, &home, behavior != RuleBehavior::Allow)
                })
            })
            .cloned()
    }

    /// The first Read deny rule that may match a path beneath the directory `dir`, so that a
    /// command reading `dir` recursively could read a denied file (see
    /// [`PathPattern::may_match_beneath`]).
    pub fn read_deny_beneath(&self, dir: &Path, ctx: &ToolContext) -> Option<SourcedRule> {
        let rules = self.rules.read().ok()?;
        let cwd = ctx.cwd();
        let home = path::home_dir().unwrap_or_else(|| PathBuf::from("/"));
        let dir = path::canonicalize_lenient(dir);
        rules
            .iter()
            .filter(|r| r.behavior == RuleBehavior::Deny && r.rule.tool == "Read")
            .find(|r| {
                let Some(content) = &r.rule.content else {
                    return false;
                };
                PathPattern::parse(content, &r.source.root)
                    .is_ok_and(|p| p.may_match_beneath(&dir, &cwd, &home))
            })
            .cloned()
    }

    /// Walks `dir` (at most `max_entries` entries, symbolic links not followed but their
    /// targets checked) for a path a Read deny rule covers: what a command reading `dir`
    /// recursively would read.
    pub fn read_denied_beneath(
        &self,
        dir: &Path,
        ctx: &ToolContext,
        max_entries: usize,
    ) -> Beneath {
        if self.read_deny_beneath(dir, ctx).is_none() {
            return Beneath::Clear;
        }
        let Ok(rules) = self.rules.read() else {
            return Beneath::TooMany;
        };
        let cwd = ctx.cwd();
        let home = path::home_dir().unwrap_or_else(|| PathBuf::from("/"));
        let patterns: Vec<(PathPattern, SourcedRule)> = rules
            .iter()
            .filter(|r| r.behavior == RuleBehavior::Deny && r.rule.tool == "Read")
            .filter_map(|r| {
                let content = r.rule.content.as_ref()?;
                PathPattern::parse(content, &r.source.root)
                    .ok()
                    .map(|p| (p, r.clone()))
            })
            .collect();
        drop(rules);
        let denied = |p: &Path, is_dir: bool| {
            patterns
                .iter()
                .find(|(pat, _)| pat.matches(p, is_dir, &cwd, &home, true))
                .map(|(_, r)| r.clone())
        };
        let root = path::canonicalize_lenient(dir);
        let mut stack = vec![root];
        let mut seen = 0usize;
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                if seen > max_entries {
                    return Beneath::TooMany;
                }
                let p = entry.path();
                let Ok(ft) = entry.file_type() else {
                    continue;
                };
                if ft.is_symlink() {
                    if let Ok(target) = p.canonicalize()
                        && let Some(r) = denied(&target, target.is_dir())
                    {
                        return Beneath::Denied(p, Box::new(r));
                    }
                    if let Some(r) = denied(&p, false) {
                        return Beneath::Denied(p, Box::new(r));
                    }
                    continue;
                }
                if let Some(r) = denied(&p, ft.is_dir()) {
                    return Beneath::Denied(p, Box::new(r));
                }
                if ft.is_dir() {
                    stack.push(p);
                }
            }
        }
        Beneath::Clear
    }

    /// Whether any rule with this behaviour names `tool`.
    pub fn has_rules(&self, tool: &str, behavior: RuleBehavior) -> bool {
        self.rules.read().is_ok_and(|rules| {
            rules
                .iter()
                .any(|r| r.behavior == behavior && r.rule.tool == tool)
        })
    }

    /// The read check, on the given path and its symlink-resolved form:
    /// Read deny, Read ask, Edit allow (which implies read), inside the working directories,
    /// the session's own state files, Read allow; otherwise ask.
    pub fn check_read_path(&self, target: &Path, ctx: &ToolContext) -> PermissionDecision {
        let (variants, canonical, is_dir) = path_variants(target);
        let shown = target.display();
        if self
            .path_rule("Read", RuleBehavior::Deny, &variants, is_dir, ctx)
            .is_some()
        {
            return PermissionDecision::deny(format!(
                "Permission to read {shown} has been denied."
            ));
        }
        if let Some(rule) = self.path_rule("Read", RuleBehavior::Ask, &variants, is_dir, ctx) {
            return PermissionDecision::Ask {
                reason: format!("Permission rule {rule} requires approval to read {shown}"),
                suggestions: Vec::new(),
                kind: AskKind::Rule(Box::new(rule)),
            };
        }
        if self
            .path_rule("Edit", RuleBehavior::Allow, &variants, is_dir, ctx)
            .is_some()
            || ctx.is_in_working_dirs(&canonical)
            || path::is_within(&canonical, &path::canonicalize_lenient(ctx.state_dir()))
            || self
                .path_rule("Read", RuleBehavior::Allow, &variants, is_dir, ctx)
                .is_some()
        {
            return PermissionDecision::Allow;
        }
        PermissionDecision::Ask {
            reason: format!("Path is outside allowed working directories: {shown}"),
            suggestions: vec![dir_rule("Read", &canonical, is_dir)],
            kind: AskKind::Default,
        }
    }

    /// The write check: Edit deny, the session's plan files, protected
    /// paths (an ask that bypass cannot skip), Edit ask, acceptEdits inside the working
    /// directories, Edit allow; otherwise ask.
    pub fn check_write_path(&self, target: &Path, ctx: &ToolContext) -> PermissionDecision {
        let (variants, canonical, is_dir) = path_variants(target);
        let shown = target.display();
        if self
            .path_rule("Edit", RuleBehavior::Deny, &variants, is_dir, ctx)
            .is_some()
        {
            return PermissionDecision::deny(format!(
                "Permission to edit {shown} has been denied."
            ));
        }
        let plans = path::canonicalize_lenient(&ctx.state_dir().join("plans"));
        if path::is_within(&canonical, &plans) {
            return PermissionDecision::Allow;
        }
        if ctx.permission_mode() == PermissionMode::Plan {
            return PermissionDecision::deny(format!(
                "Plan mode is read-only: {shown} may not be written until the plan is approved. Write the plan to the plan file and call ExitPlanMode."
            ));
        }
        if variants.iter().any(|v| path::is_protected(v))
            || crate::is_state_config(&canonical, ctx.state_dir())
        {
            return PermissionDecision::Ask {
                reason: format!(
                    "{shown} is a protected path (version control internals, agent or editor settings, shell start-up files): writing it always needs explicit approval, even in bypassPermissions mode"
                ),
                suggestions: Vec::new(),
                kind: AskKind::SafetyCheck,
            };
        }
        if let Some(rule) = self.path_rule("Edit", RuleBehavior::Ask, &variants, is_dir, ctx) {
            return PermissionDecision::Ask {
                reason: format!("Permission rule {rule} requires approval to edit {shown}"),
                suggestions: Vec::new(),
                kind: AskKind::Rule(Box::new(rule)),
            };
        }
        let inside = ctx.is_in_working_dirs(&canonical);
        if (inside && ctx.permission_mode() == PermissionMode::AcceptEdits)
            || self
                .path_rule("Edit", RuleBehavior::Allow, &variants, is_dir, ctx)
                .is_some()
        {
            return PermissionDecision::Allow;
        }
        if inside {
            PermissionDecision::Ask {
                reason: format!(
                    "Writing {shown} needs approval in {} mode",
                    ctx.permission_mode()
                ),
                suggestions: vec![dir_rule("Edit", &canonical, is_dir)],
                kind: AskKind::Mode(PermissionMode::AcceptEdits),
            }
        } else {
            PermissionDecision::Ask {
                reason: format!("Path is outside allowed working directories: {shown}"),
                suggestions: vec![dir_rule("Edit", &canonical, is_dir)],
                kind: AskKind::Default,
            }
        }
    }

    /// The whole evaluation order for one call.
    ///
    /// 1a blanket deny → deny; 1b blanket ask → ask; 1c the tool's own check, with the
    /// Read or Edit check of each path the tool declares ([`Tool::path_fields`]); 1d its deny →
    /// deny; 1e–1g asks that bypass cannot skip (interaction, content ask rules, protected
    /// paths); 2a bypassPermissions (or plan with bypass available) → allow; 2b blanket allow
    /// → allow; 3 what remains asks; 4 dontAsk turns ask into deny. Without a person to ask,
    /// the executor turns a remaining ask into a denial.
    pub async fn decide(
        &self,
        tool: &dyn Tool,
        input: &ParsedInput,
        ctx: &ToolContext,
    ) -> PermissionDecision {
        let name = tool.name();
        let decision = self.decide_inner(tool, input, ctx).await;
        match decision {
            PermissionDecision::Ask { reason, .. }
                if ctx.permission_mode() == PermissionMode::DontAsk =>
            {
                PermissionDecision::deny(format!(
                    "Permission to use {name} was denied because the permission mode is dontAsk, which refuses anything no rule allows ({reason})"
                ))
            }
            other => other,
        }
    }

    async fn decide_inner(
        &self,
        tool: &dyn Tool,
        input: &ParsedInput,
        ctx: &ToolContext,
    ) -> PermissionDecision {
        let name = tool.name();
        if self.blanket_rule(tool, RuleBehavior::Deny).is_some() {
            return PermissionDecision::deny(format!("Permission to use {name} has been denied."));
        }
        if let Some(rule) = self.blanket_rule(tool, RuleBehavior::Ask) {
            return PermissionDecision::Ask {
                reason: format!("Permission rule {rule} requires approval to use {name}"),
                suggestions: Vec::new(),
                kind: AskKind::Rule(Box::new(rule)),
            };
        }
        if ctx.permission_mode() == PermissionMode::Plan
            && let Some(reason) = plan_mode_refusal(tool, input)
        {
            return PermissionDecision::deny(reason);
        }
        let from_tool = tool.check_permission(input, ctx).await;
        // The paths the tool declares are checked as the file tools check theirs.
        let from_tool = match crate::path_fields::decide(tool, input, ctx) {
            Some(paths) => crate::path_fields::stricter(paths, from_tool),
            None => from_tool,
        };
        let from_tool = match from_tool {
            PermissionDecision::Ask {
                reason,
                suggestions,
                kind,
            } => {
                let kind = if tool.requires_user_interaction() {
                    AskKind::Interaction
                } else {
                    kind
                };
                let ask = PermissionDecision::Ask {
                    reason,
                    suggestions,
                    kind: kind.clone(),
                };
                if !kind.is_bypassable() {
                    return ask;
                }
                ask
            }
            other => return other,
        };
        let mode = ctx.permission_mode();
        // Plan mode never behaves like bypass, even in a session that started in
        // bypassPermissions (the reference lets it; its users report it as a bug).
        if mode == PermissionMode::BypassPermissions {
            return PermissionDecision::Allow;
        }
        if self.blanket_rule(tool, RuleBehavior::Allow).is_some() {
            return PermissionDecision::Allow;
        }
        from_tool
    }
}

/// Why plan mode refuses a call: it is not read-only, needs no person, and is not one of
/// the tools that keep the session's own plan (todos, tasks, plan mode, questions, agents,
/// which inherit plan mode). File tools are held by [`PermissionEngine::check_write_path`],
/// which lets them write the plan file only.
///
/// This holds in every session, also one started in bypassPermissions: the reference lets
/// such a session write in plan mode, which its users report as a bug.
fn plan_mode_refusal(tool: &dyn Tool, input: &ParsedInput) -> Option<String> {
    use crate::ToolCategory;
    if tool.is_read_only(input) || tool.requires_user_interaction() {
        return None;
    }
    if matches!(
        tool.category(),
        ToolCategory::FileSystem
            | ToolCategory::Todo
            | ToolCategory::Task
            | ToolCategory::PlanMode
            | ToolCategory::UserInteraction
            | ToolCategory::Agent
    ) {
        return None;
    }
    Some(format!(
        "Plan mode is read-only: {} would change something, so it is refused until the plan is approved. Explore with read-only tools, write the plan to the plan file and call ExitPlanMode.",
        tool.name()
    ))
}

/// What lies beneath a directory, for the Read deny rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Beneath {
    /// Nothing a Read deny rule covers
    Clear,
    /// This path, covered by this rule
    Denied(PathBuf, Box<SourcedRule>),
    /// More entries than the walk may look at
    TooMany,
}

/// The given path (normalised) and its canonical form, deduplicated, plus whether it is a
/// directory.
fn path_variants(target: &Path) -> (Vec<PathBuf>, PathBuf, bool) {
    let given = path::normalize(target);
    let canonical = path::canonicalize_lenient(&given);
    let is_dir = canonical.is_dir();
    let mut variants = vec![given];
    if !variants.contains(&canonical) {
        variants.push(canonical.clone());
    }
    (variants, canonical, is_dir)
}

/// `Tool(//dir/**)` for the directory of `path` (or `path` itself when it is a directory).
fn dir_rule(tool: &str, path: &Path, is_dir: bool) -> PermissionRule {
    let dir = if is_dir {
        path
    } else {
        path.parent().unwrap_or(path)
    };
    let text = dir.to_string_lossy();
    let trimmed = text.trim_start_matches('/');
    let content = if trimmed.is_empty() {
        "//**".to_owned()
    } else {
        format!("//{trimmed}/**")
    };
    PermissionRule::with_content(tool, content)
}

/// How a refusal tells the model what would allow a call that needed a person and had
/// none: the host's own words for its switches and settings. Put an
/// `Arc<dyn AllowHint>` in the session's services (`ToolContextBuilder::allow_hint`); without
/// one, [`NeutralHint`] speaks of allow rules and modes without naming a flag or file.
pub trait AllowHint: Send + Sync {
    /// The sentence that follows the denial's reason, for a call that `rule` would allow and
    /// that was asked as `kind` (only [`AskKind::Default`] and [`AskKind::Mode`] reach it: the
    /// other kinds need a person whatever the host's settings).
    fn how_to_allow(&self, rule: &PermissionRule, kind: &AskKind) -> String;
}

/// The hint of a host that said nothing: names the rule and the mode, and leaves where to
/// put them to the host program.
#[derive(Debug, Clone, Copy, Default)]
pub struct NeutralHint;

impl AllowHint for NeutralHint {
    fn how_to_allow(&self, rule: &PermissionRule, kind: &AskKind) -> String {
        match kind {
            AskKind::Mode(mode) => format!(
                "To allow it, the user can switch the session to the {mode} permission mode or add the allow rule \"{rule}\" in the program running these tools."
            ),
            _ => format!(
                "To allow it, the user can add the allow rule \"{rule}\" or switch the session to the bypassPermissions mode in the program running these tools."
            ),
        }
    }
}

/// The session's [`AllowHint`]: the host's, else [`NeutralHint`].
pub fn allow_hint(ctx: &ToolContext) -> Arc<dyn AllowHint> {
    ctx.services()
        .get::<Arc<dyn AllowHint>>()
        .unwrap_or_else(|| Arc::new(NeutralHint))
}

/// The denial a call gets when it needs approval and nobody can give it: it says why and,
/// in `hint`'s words, what would allow the call.
pub fn headless_denial(
    tool: &str,
    reason: &str,
    suggestions: &[PermissionRule],
    kind: &AskKind,
    hint: &dyn AllowHint,
) -> String {
    let rule = suggestions
        .first()
        .cloned()
        .unwrap_or_else(|| PermissionRule::tool(tool));
    let how = match kind {
        AskKind::Default | AskKind::Mode(_) => hint.how_to_allow(&rule, kind),
        AskKind::Rule(r) => format!(
            "The ask rule {r} applies even in bypassPermissions mode; remove it from {} to allow this call without a person.",
            r.source
        ),
        AskKind::SafetyCheck => {
            "Protected paths need a person's approval in every mode; no rule or flag allows this call headless.".to_owned()
        }
        AskKind::Interaction => {
            format!("{tool} needs a person to answer; it cannot run without one.")
        }
        AskKind::Unsandboxed => {
            "Running a command outside the sandbox needs a person's approval in every mode; run it inside the sandbox, or have a person turn the sandbox off in the settings (sandbox.enabled: false).".to_owned()
        }
    };
    format!(
        "Permission to use {tool} was denied because no one is available to approve it: {reason}. {how}"
    )
}
