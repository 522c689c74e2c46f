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

    /// The mode's place in the one total order of what a mode allows without a person,
    /// strictest first: plan (0), dontAsk, default, acceptEdits, bypassPermissions (4).
    /// Plan is the strictest: it refuses changes that an allow rule would let dontAsk make.
    pub fn rank(self) -> u8 {
        match self {
            PermissionMode::Plan => 0,
            PermissionMode::DontAsk => 1,
            PermissionMode::Default => 2,
            PermissionMode::AcceptEdits => 3,
            PermissionMode::BypassPermissions => 4,
        }
    }

    /// Whether this mode allows more than `other` in [`PermissionMode::rank`]'s order.
    pub fn allows_more_than(self, other: PermissionMode) -> bool {
        self.rank() > other.rank()
    }

    /// The stricter of this mode and `ceiling`: what a sub-agent asked to run in this mode
    /// gets under a caller in `ceiling`.
    pub fn capped_at(self, ceiling: PermissionMode) -> PermissionMode {
        if self.allows_more_than(ceiling) {
            ceiling
        } else {
            self
        }
    }

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

/// What allowed a call to run, as the execution path saw it: the call's context carries it
/// ([`ToolContext::approved_by`](crate::ToolContext::approval)) for tools whose call depends on
/// it (Bash runs what only its read-only classification allowed in a jail).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ApprovedBy {
    /// Unknown: the call did not pass the execution path's permission step (a library
    /// calling a tool directly). Whoever depends on it takes the narrowest reading.
    #[default]
    Unchecked,
    /// The tool's own permission check allowed it (the tool knows on what grounds)
    Tool,
    /// An allow rule for the whole tool
    Rule,
    /// The permission mode (bypassPermissions)
    Mode,
    /// A person's answer to the question
    Person,
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
        if let Some(rule) = rules
            .iter()
            .find(|r| r.behavior == behavior && r.rule.is_blanket() && r.rule.names(tool))
        {
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

    /// Whether an Edit allow rule of a person (not a project file: user settings, a
    /// `--settings` file, the command line, this session's answers, the host) names a path
    /// in the protected home category `category`: its literal leading part lies within the
    /// category, and it matches one of `variants`. A broad rule such as `Edit(~/**)` or
    /// `Edit(//**)` does not name the category, so it does not count.
    fn person_allows_in(
        &self,
        category: &Path,
        variants: &[PathBuf],
        is_dir: bool,
        ctx: &ToolContext,
    ) -> bool {
        let Ok(rules) = self.rules.read() else {
            return false;
        };
        let cwd = ctx.cwd();
        let home = path::home_dir().unwrap_or_else(|| PathBuf::from("/"));
        let category = path::canonicalize_lenient(category);
        rules
            .iter()
            .filter(|r| {
                r.behavior == RuleBehavior::Allow
                    && r.rule.tool == "Edit"
                    && !crate::is_project_source(r.source.kind)
            })
            .any(|r| {
                let Some(content) = &r.rule.content else {
                    return false;
                };
                let Ok(pattern) = PathPattern::parse(content, &r.source.root) else {
                    return false;
                };
                pattern
                    .literal_prefix(&cwd, &home)
                    .is_some_and(|p| path::canonicalize_lenient(&p).starts_with(&category))
                    && variants
                        .iter()
                        .any(|v| pattern.matches(v, is_dir, &cwd, &home, false))
            })
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
        let state = state_access(&canonical, ctx);
        if state == StateAccess::Foreign {
            return PermissionDecision::deny(foreign_state(&shown));
        }
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
            || state == StateAccess::Own
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
        if state_access(&canonical, ctx) == StateAccess::Foreign {
            return PermissionDecision::deny(foreign_state(&shown));
        }
        if is_own_plan_file(&canonical, ctx) {
            return PermissionDecision::Allow;
        }
        if let Some(plans) = plan_dirs(ctx)
            .into_iter()
            .find(|dir| path::is_within(&canonical, dir))
        {
            return PermissionDecision::deny(format!(
                "{shown} is not this session's plan file: in {} a session writes only its own plan ({})",
                plans.display(),
                own_plan_file(ctx).display()
            ));
        }
        if ctx.permission_mode() == PermissionMode::Plan {
            return PermissionDecision::deny(format!(
                "Plan mode is read-only: {shown} may not be written until the plan is approved. Write the plan to the plan file and call ExitPlanMode."
            ));
        }
        let named = crate::named_by_config(ctx);
        if let Some(config) = variants.iter().find_map(|v| named.named_by(v)) {
            return PermissionDecision::deny(format!(
                "{shown} is run by configuration a person approved ({} names it): no tool writes it, in any mode; a person changes it and approves the configuration again",
                config.display()
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
        if let Some(category) = home_category(&variants)
            && !self.person_allows_in(&category, &variants, is_dir, ctx)
        {
            return PermissionDecision::Ask {
                reason: format!(
                    "{shown} is in {}, part of the home directory's configuration (its dot-files and dot-directories, ~/.config, ~/.local and the XDG base directories): writing there always needs explicit approval, even in bypassPermissions mode; a person's allow rule that names the path, such as Edit({}/**), allows it",
                    category.display(),
                    category.display()
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
    /// 1a blanket deny → deny; 1b blanket ask → ask; 1c the tool's own check; 1d its deny →
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
        self.decide_with_approval(tool, input, ctx).await.0
    }

    /// [`PermissionEngine::decide`], with what allowed the call when the decision is
    /// "allow" ([`ApprovedBy::Unchecked`] otherwise).
    pub async fn decide_with_approval(
        &self,
        tool: &dyn Tool,
        input: &ParsedInput,
        ctx: &ToolContext,
    ) -> (PermissionDecision, ApprovedBy) {
        let name = tool.name();
        let mut approval = ApprovedBy::Unchecked;
        let decision = self.decide_inner(tool, input, ctx, &mut approval).await;
        match decision {
            PermissionDecision::Ask {
                reason,
                suggestions,
                kind,
            } if ctx.refuses_asks() => {
                // Say what would allow it, as a refusal for want of a person does.
                let hint = match (&kind, suggestions.first()) {
                    (AskKind::Default | AskKind::Mode(_), Some(rule)) => {
                        format!(" {}", allow_hint(ctx).how_to_allow(rule, &kind))
                    }
                    _ => String::new(),
                };
                (
                    PermissionDecision::deny(format!(
                        "Permission to use {name} was denied because the permission mode is dontAsk (this session's or its caller's), which refuses anything no rule allows ({reason}).{hint}"
                    )),
                    ApprovedBy::Unchecked,
                )
            }
            PermissionDecision::Allow => (PermissionDecision::Allow, approval),
            other => (other, ApprovedBy::Unchecked),
        }
    }

    async fn decide_inner(
        &self,
        tool: &dyn Tool,
        input: &ParsedInput,
        ctx: &ToolContext,
        approval: &mut ApprovedBy,
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
            other => {
                // In bypassPermissions the person approved every call; the tool's own
                // grounds do not narrow that.
                *approval = if ctx.permission_mode() == PermissionMode::BypassPermissions {
                    ApprovedBy::Mode
                } else {
                    ApprovedBy::Tool
                };
                return other;
            }
        };
        let mode = ctx.permission_mode();
        // Plan mode never behaves like bypass, even in a session that started in
        // bypassPermissions (the reference lets it; its users report it as a bug).
        if mode == PermissionMode::BypassPermissions {
            *approval = ApprovedBy::Mode;
            return PermissionDecision::Allow;
        }
        if self.blanket_rule(tool, RuleBehavior::Allow).is_some() {
            *approval = ApprovedBy::Rule;
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

/// Where the state directory keeps each client's own subtree when a host separates them
/// (`<state>/principals/<key>/`, see [`ToolContext::private_state_dir`]).
pub const PRINCIPALS_DIR: &str = "principals";

/// How a path relates to the state directory of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StateAccess {
    /// The session's own state: its private state directory (the whole state directory
    /// when the host keeps no separate one)
    Own,
    /// Another client's subtree: off limits to the file tools in every mode
    Foreign,
    /// Anything else (left to the rules and the working directories)
    Other,
}

fn state_access(canonical: &Path, ctx: &ToolContext) -> StateAccess {
    let state = path::canonicalize_lenient(ctx.state_dir());
    let private = path::canonicalize_lenient(ctx.private_state_dir());
    if path::is_within(canonical, &private) {
        return StateAccess::Own;
    }
    if path::is_within(canonical, &state.join(PRINCIPALS_DIR)) {
        return StateAccess::Foreign;
    }
    if private == state && path::is_within(canonical, &state) {
        return StateAccess::Own;
    }
    StateAccess::Other
}

fn foreign_state(shown: &dyn fmt::Display) -> String {
    format!(
        "{shown} belongs to another client of this server (its own part of the state directory): no session may read or write it"
    )
}

/// The plan directories of a session: `plans/` of its private state directory and of the
/// state directory.
fn plan_dirs(ctx: &ToolContext) -> Vec<PathBuf> {
    let mut dirs = vec![path::canonicalize_lenient(
        &ctx.private_state_dir().join("plans"),
    )];
    let shared = path::canonicalize_lenient(&ctx.state_dir().join("plans"));
    if !dirs.contains(&shared) {
        dirs.push(shared);
    }
    dirs
}

/// The plan file of the session of `ctx` (a sub-agent's is
/// `plans/<session>-agent-<id>.md` in the same directory; see [`is_own_plan_file`]).
pub fn own_plan_file(ctx: &ToolContext) -> PathBuf {
    ctx.private_state_dir()
        .join("plans")
        .join(format!("{}.md", path::safe_component(ctx.session_id())))
}

/// Whether `canonical` is a plan file of the session of `ctx`: directly in `plans/` of its
/// private state directory, named `<session>.md` or `<session>-agent-<id>.md` (a
/// sub-agent's plan, whose session id starts with its caller's). Session ids are
/// unguessable, so no session owns another's plan.
pub fn is_own_plan_file(canonical: &Path, ctx: &ToolContext) -> bool {
    let dir = path::canonicalize_lenient(&ctx.private_state_dir().join("plans"));
    if canonical.parent() != Some(dir.as_path()) {
        return false;
    }
    let Some(name) = canonical.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let session = path::safe_component(ctx.session_id());
    name == format!("{session}.md")
        || (name.starts_with(&format!("{session}-agent-")) && name.ends_with(".md"))
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
/// The protected category of the home directory (see [`path::protected_home_category`])
/// that one of `variants` lies in, judged against the home directory as named and as
/// resolved.
fn home_category(variants: &[PathBuf]) -> Option<PathBuf> {
    let home = path::home_dir()?;
    let resolved = path::canonicalize_lenient(&home);
    variants.iter().find_map(|v| {
        path::protected_home_category(v, &home)
            .or_else(|| path::protected_home_category(v, &resolved))
    })
}

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
