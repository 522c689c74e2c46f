//! Settings files in Claude Code's `settings.json` shape: permission lists, the default
//! mode, additional directories, and sections other crates read (`lsp`, ...).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::rule::{PermissionRule, RuleBehavior, RuleSource, RuleSourceKind, SourcedRule};
use crate::{PermissionMode, ToolError};

/// The one value of `permissions.disableBypassPermissionsMode`: `"disable"`, which forbids
/// bypassPermissions mode (any other value is an error in the settings file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DisableBypass {
    /// bypassPermissions mode cannot be entered
    Disable,
}

/// The `permissions` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionSettings {
    /// Rules that allow
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules that deny
    #[serde(default)]
    pub deny: Vec<String>,
    /// Rules that ask
    #[serde(default)]
    pub ask: Vec<String>,
    /// The mode a session starts in
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_mode: Option<PermissionMode>,
    /// More directories the session may work in
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_directories: Vec<String>,
    /// `"disable"` forbids bypassPermissions mode
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_bypass_permissions_mode: Option<DisableBypass>,
    /// Keys we do not use, kept so a rewrite loses nothing
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// One settings file's content.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Permission rules and mode
    #[serde(default)]
    pub permissions: PermissionSettings,
    /// Every other section (`lsp`, `webFetch`, `env`, ...), read by the crates that own them
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A settings file, loaded, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsLayer {
    /// Which source
    pub kind: RuleSourceKind,
    /// The file
    pub path: PathBuf,
    /// Its content
    pub settings: Settings,
}

impl SettingsLayer {
    /// Reads `path`; `Ok(None)` when it does not exist. A file that is not valid JSON or
    /// not the right shape is an error naming the file, line and column.
    pub fn load(kind: RuleSourceKind, path: &Path) -> Result<Option<Self>, ToolError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(ToolError::Settings {
                    path: path.to_path_buf(),
                    message: e.to_string(),
                });
            }
        };
        Self::parse(kind, path, &text).map(Some)
    }

    /// Parses settings text as if read from `path`.
    pub fn parse(kind: RuleSourceKind, path: &Path, text: &str) -> Result<Self, ToolError> {
        let settings = if text.trim().is_empty() {
            Settings::default()
        } else {
            serde_json::from_str::<Settings>(text).map_err(|e| ToolError::Settings {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?
        };
        for (list, rules) in [
            ("allow", &settings.permissions.allow),
            ("deny", &settings.permissions.deny),
            ("ask", &settings.permissions.ask),
        ] {
            if let Some(i) = rules.iter().position(|r| r.trim().is_empty()) {
                return Err(ToolError::Settings {
                    path: path.to_path_buf(),
                    message: format!("permissions.{list}[{i}] is an empty rule"),
                });
            }
        }
        Ok(SettingsLayer {
            kind,
            path: path.to_path_buf(),
            settings,
        })
    }

    /// The directory `/x` path patterns of this file are relative to: the project (or home)
    /// directory for a file inside `.agent-tools/` or `.claude/`, otherwise the file's own
    /// directory.
    pub fn root(&self) -> PathBuf {
        let dir = self.path.parent().unwrap_or(Path::new("/"));
        match dir.file_name().and_then(|n| n.to_str()) {
            Some(".agent-tools" | ".claude") => dir.parent().unwrap_or(dir).to_path_buf(),
            _ => dir.to_path_buf(),
        }
    }

    /// The file's rules, with their source.
    pub fn rules(&self) -> Vec<SourcedRule> {
        let source = RuleSource {
            kind: self.kind,
            file: Some(self.path.clone()),
            root: self.root(),
        };
        let p = &self.settings.permissions;
        let mut out = Vec::new();
        for (behavior, list) in [
            (RuleBehavior::Deny, &p.deny),
            (RuleBehavior::Ask, &p.ask),
            (RuleBehavior::Allow, &p.allow),
        ] {
            for text in list {
                if let Some(rule) = PermissionRule::parse(text) {
                    out.push(SourcedRule {
                        rule,
                        behavior,
                        source: source.clone(),
                    });
                }
            }
        }
        out
    }

    /// Additional directories, resolved against the file's root.
    pub fn additional_directories(&self) -> Vec<PathBuf> {
        let root = self.root();
        self.settings
            .permissions
            .additional_directories
            .iter()
            .map(|d| crate::path::resolve(&root, d))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_claude_code_shape() -> Result<(), ToolError> {
        let text = r#"{
            "permissions": {
                "allow": ["Bash(npm test)", "Read(//etc/hosts)"],
                "deny": ["WebFetch"],
                "ask": ["Task(Explore)"],
                "defaultMode": "acceptEdits",
                "additionalDirectories": ["../other"]
            },
            "lsp": {"py": "pyright-langserver --stdio"},
            "model": "opus"
        }"#;
        let layer = SettingsLayer::parse(
            RuleSourceKind::ProjectSettings,
            Path::new("/p/.agent-tools/settings.json"),
            text,
        )?;
        assert_eq!(layer.root(), PathBuf::from("/p"));
        assert_eq!(
            layer.settings.permissions.default_mode,
            Some(PermissionMode::AcceptEdits)
        );
        assert_eq!(
            layer.additional_directories(),
            vec![PathBuf::from("/other")]
        );
        let rules = layer.rules();
        assert_eq!(rules.len(), 4);
        assert_eq!(rules[0].behavior, RuleBehavior::Deny);
        assert_eq!(
            rules[1].rule,
            PermissionRule::with_content("Agent", "Explore")
        );
        assert!(layer.settings.other.contains_key("lsp"));
        Ok(())
    }

    #[test]
    fn bad_files_name_the_problem() {
        let p = Path::new("/p/s.json");
        let err = SettingsLayer::parse(RuleSourceKind::FlagSettings, p, "{ nope")
            .map(|_| ())
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid settings file /p/s.json: key must be a string at line 1"),
            "{err}"
        );
        let err = SettingsLayer::parse(
            RuleSourceKind::FlagSettings,
            p,
            r#"{"permissions":{"defaultMode":"yolo"}}"#,
        )
        .map(|_| ())
        .unwrap_err();
        assert!(err.to_string().contains("unknown variant `yolo`"), "{err}");
        let err = SettingsLayer::parse(
            RuleSourceKind::FlagSettings,
            p,
            r#"{"permissions":{"allow":[" "]}}"#,
        )
        .map(|_| ())
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("permissions.allow[0] is an empty rule"),
            "{err}"
        );
        assert!(SettingsLayer::parse(RuleSourceKind::FlagSettings, p, "").is_ok());
        assert!(matches!(
            SettingsLayer::load(
                RuleSourceKind::FlagSettings,
                Path::new("/nonexistent/x.json")
            ),
            Ok(None)
        ));
    }
}
