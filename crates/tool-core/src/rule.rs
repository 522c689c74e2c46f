//! Permission rules: the `Tool` / `Tool(content)` grammar, legacy names, and where a rule
//! came from.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A rule as written in settings or on the command line: a tool name and optional content.
///
/// `Tool()` and `Tool(*)` mean the whole tool, like a bare `Tool`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PermissionRule {
    /// The tool the rule is about (legacy names already normalised)
    pub tool: String,
    /// What the rule restricts within the tool; `None` for the whole tool
    pub content: Option<String>,
}

/// Old tool names that rules may still use, and the current name each maps to.
pub const LEGACY_TOOL_NAMES: &[(&str, &str)] = &[
    ("Task", "Agent"),
    ("KillShell", "TaskStop"),
    ("AgentOutputTool", "TaskOutput"),
    ("BashOutputTool", "TaskOutput"),
    ("Brief", "SendUserMessage"),
];

/// The current name for a tool name that may be a legacy one.
pub fn normalize_tool_name(name: &str) -> &str {
    LEGACY_TOOL_NAMES
        .iter()
        .find(|(old, _)| *old == name)
        .map_or(name, |(_, new)| new)
}

fn is_escaped(bytes: &[u8], index: usize) -> bool {
    let mut n = 0;
    let mut i = index;
    while i > 0 && bytes[i - 1] == b'\\' {
        n += 1;
        i -= 1;
    }
    n % 2 == 1
}

fn unescape(content: &str) -> String {
    let mut out = String::with_capacity(content.len());
    let mut chars = content.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && matches!(next, '(' | ')' | '\\')
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

fn escape(content: &str) -> String {
    let mut out = String::with_capacity(content.len());
    for c in content.chars() {
        if matches!(c, '(' | ')' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl PermissionRule {
    /// A rule for the whole tool.
    pub fn tool(name: impl Into<String>) -> Self {
        let name = name.into();
        PermissionRule {
            tool: normalize_tool_name(&name).to_owned(),
            content: None,
        }
    }

    /// A rule for part of a tool.
    pub fn with_content(name: impl Into<String>, content: impl Into<String>) -> Self {
        let name = name.into();
        PermissionRule {
            tool: normalize_tool_name(&name).to_owned(),
            content: Some(content.into()),
        }
    }

    /// Parses `Tool` or `Tool(content)`.
    ///
    /// The first unescaped `(` and the last unescaped `)` delimit the content, and that `)`
    /// must end the string; otherwise the whole string is the tool name. Content may escape
    /// `\(`, `\)` and `\\`. Returns `None` for an empty or blank rule.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let bytes = text.as_bytes();
        let open = (0..bytes.len()).find(|&i| bytes[i] == b'(' && !is_escaped(bytes, i));
        let close = (0..bytes.len())
            .rev()
            .find(|&i| bytes[i] == b')' && !is_escaped(bytes, i));
        if let (Some(open), Some(close)) = (open, close)
            && open > 0
            && open < close
            && close == bytes.len() - 1
        {
            let name = &text[..open];
            let content = unescape(&text[open + 1..close]);
            let content = match content.as_str() {
                "" | "*" => None,
                _ => Some(content),
            };
            return Some(PermissionRule {
                tool: normalize_tool_name(name).to_owned(),
                content,
            });
        }
        Some(PermissionRule {
            tool: normalize_tool_name(text).to_owned(),
            content: None,
        })
    }

    /// Whether the rule covers the whole tool.
    pub fn is_blanket(&self) -> bool {
        self.content.is_none()
    }

    /// Whether the rule's tool part names `tool` (or one of its `aliases`).
    ///
    /// MCP rules also match by server: `mcp__server` and `mcp__server__*` match every tool
    /// of that server.
    pub fn names_tool(&self, tool: &str, aliases: &[&str]) -> bool {
        if self.tool == tool || aliases.iter().any(|a| normalize_tool_name(a) == self.tool) {
            return true;
        }
        if let Some(rest) = self.tool.strip_prefix("mcp__") {
            let server = rest.strip_suffix("__*").unwrap_or(rest);
            if !server.is_empty() && !server.contains("__") {
                return tool
                    .strip_prefix("mcp__")
                    .and_then(|t| t.strip_prefix(server))
                    .is_some_and(|t| t.starts_with("__"));
            }
        }
        false
    }
}

impl PermissionRule {
    /// Whether this rule, without content, names `tool`: as [`PermissionRule::names_tool`],
    /// except that for a tool of an MCP server ([`Tool::mcp_server`](crate::Tool::mcp_server))
    /// `mcp__server` and `mcp__server__*` match by the server itself, so `mcp__a` never
    /// covers the tools of a server named `a__b`.
    pub fn names(&self, tool: &dyn crate::Tool) -> bool {
        let Some(server) = tool.mcp_server() else {
            return self.names_tool(tool.name(), tool.aliases());
        };
        if self.tool == tool.name() {
            return true;
        }
        self.tool
            .strip_prefix("mcp__")
            .map(|rest| rest.strip_suffix("__*").unwrap_or(rest))
            .is_some_and(|named| named == server)
    }
}

impl fmt::Display for PermissionRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.content {
            None => f.write_str(&self.tool),
            Some(c) => write!(f, "{}({})", self.tool, escape(c)),
        }
    }
}

/// Which list a rule is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleBehavior {
    /// `permissions.allow`
    Allow,
    /// `permissions.deny`
    Deny,
    /// `permissions.ask`
    Ask,
}

impl RuleBehavior {
    /// The settings key of the list.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleBehavior::Allow => "allow",
            RuleBehavior::Deny => "deny",
            RuleBehavior::Ask => "ask",
        }
    }
}

/// Where a rule was defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RuleSourceKind {
    /// `~/.agent-tools/settings.json`
    UserSettings,
    /// `.agent-tools/settings.json` in the project
    ProjectSettings,
    /// `.agent-tools/settings.local.json` in the project
    LocalSettings,
    /// A file given with `--settings`
    FlagSettings,
    /// `--allow`, `--deny`, `--ask` on the command line
    CliArg,
    /// Approved during this session ("always allow")
    Session,
    /// Added in code by the program that hosts the tools (`ToolContextBuilder::allow` and
    /// its siblings)
    Host,
}

impl RuleSourceKind {
    /// How messages name the source.
    pub fn describe(self) -> &'static str {
        match self {
            RuleSourceKind::UserSettings => "user settings",
            RuleSourceKind::ProjectSettings => "project settings",
            RuleSourceKind::LocalSettings => "local project settings",
            RuleSourceKind::FlagSettings => "--settings file",
            RuleSourceKind::CliArg => "command line",
            RuleSourceKind::Session => "this session",
            RuleSourceKind::Host => "the host program",
        }
    }
}

/// A rule's origin: the kind of source, the file if any, and the directory that `/x` path
/// patterns of its rules are relative to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RuleSource {
    /// What kind of source
    pub kind: RuleSourceKind,
    /// The settings file, for file sources
    pub file: Option<PathBuf>,
    /// The root of `/x` path patterns: the project (or home) directory for settings files,
    /// the original working directory for command-line and session rules
    pub root: PathBuf,
}

impl fmt::Display for RuleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{} ({})", self.kind.describe(), file.display()),
            None => f.write_str(self.kind.describe()),
        }
    }
}

/// A rule together with its list and its source.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SourcedRule {
    /// The rule
    pub rule: PermissionRule,
    /// Which list it is in
    pub behavior: RuleBehavior,
    /// Where it came from
    pub source: RuleSource,
}

impl fmt::Display for SourcedRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}' from {}", self.rule, self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str, tool: &str, content: Option<&str>) {
        let rule = PermissionRule::parse(text).unwrap_or_else(|| panic!("{text} did not parse"));
        assert_eq!(rule.tool, tool, "{text}");
        assert_eq!(rule.content.as_deref(), content, "{text}");
    }

    #[test]
    fn grammar() {
        check("Bash", "Bash", None);
        check("Bash()", "Bash", None);
        check("Bash(*)", "Bash", None);
        check("Bash(npm test)", "Bash", Some("npm test"));
        check("Bash(npm run test:*)", "Bash", Some("npm run test:*"));
        check("Read(//etc/**)", "Read", Some("//etc/**"));
        check(
            "WebFetch(domain:docs.rs)",
            "WebFetch",
            Some("domain:docs.rs"),
        );
        check("Bash(echo \\(hi\\))", "Bash", Some("echo (hi)"));
        check("Bash(a \\\\ b)", "Bash", Some("a \\ b"));
        check("Bash(echo (nested))", "Bash", Some("echo (nested)"));
        check("  Glob  ", "Glob", None);
        check(
            "mcp__github__create_issue",
            "mcp__github__create_issue",
            None,
        );
    }

    #[test]
    fn malformed_rules_are_tool_names() {
        check("Bash(unclosed", "Bash(unclosed", None);
        check("Bash(x) trailing", "Bash(x) trailing", None);
        check("(x)", "(x)", None);
        check("Bash\\(x\\)", "Bash\\(x\\)", None);
        assert!(PermissionRule::parse("").is_none());
        assert!(PermissionRule::parse("   ").is_none());
    }

    #[test]
    fn legacy_names() {
        check("Task", "Agent", None);
        check("Task(Explore)", "Agent", Some("Explore"));
        check("KillShell", "TaskStop", None);
        check("AgentOutputTool", "TaskOutput", None);
        check("BashOutputTool", "TaskOutput", None);
        check("Brief", "SendUserMessage", None);
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "Bash",
            "Bash(npm test)",
            "Bash(echo \\(hi\\))",
            "Read(//a/b/**)",
        ] {
            let rule = PermissionRule::parse(text).unwrap_or_else(|| PermissionRule::tool("x"));
            assert_eq!(rule.to_string(), text);
            assert_eq!(PermissionRule::parse(&rule.to_string()), Some(rule));
        }
    }

    #[test]
    fn mcp_server_rules() {
        let server = PermissionRule::tool("mcp__github");
        let star = PermissionRule::tool("mcp__github__*");
        let one = PermissionRule::tool("mcp__github__create_issue");
        assert!(server.names_tool("mcp__github__create_issue", &[]));
        assert!(star.names_tool("mcp__github__list", &[]));
        assert!(one.names_tool("mcp__github__create_issue", &[]));
        assert!(!one.names_tool("mcp__github__list", &[]));
        assert!(!server.names_tool("mcp__githubx__list", &[]));
        assert!(!server.names_tool("Bash", &[]));
        assert!(PermissionRule::tool("Task").names_tool("Agent", &[]));
        assert!(PermissionRule::tool("Old").names_tool("New", &["Old"]));
    }
}
