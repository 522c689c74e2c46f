//! Config: read and set this project's settings in `.agent-tools/settings.json`, with this
//! project's keys. The sandbox and the permission mode can be read but never written: only
//! a person changes them (in a settings file or on the command line), so a model cannot
//! widen its own session or the next one, in any mode.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tool_core::{
    AskKind, PermissionDecision, SettingsLayer, ToolCategory, ToolContext, ToolError, ToolMeta,
    ToolResult, TrustReport, TypedTool, ValidationResult, is_person_only_setting,
};

use crate::stores::state::write_atomic;

/// What kind of value a setting takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingKind {
    /// true or false
    Bool,
    /// One of a fixed list
    Options(&'static [&'static str]),
    /// A non-empty word (no whitespace)
    Word,
}

/// One setting the Config tool knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingSpec {
    /// Dotted key in settings.json
    pub key: &'static str,
    /// Its values
    pub kind: SettingKind,
    /// What it does
    pub about: &'static str,
}

const MODES: &[&str] = &[
    "default",
    "acceptEdits",
    "plan",
    "bypassPermissions",
    "dontAsk",
];

/// The settings of this project that Config reads and writes.
pub const SETTINGS: &[SettingSpec] = &[
    SettingSpec {
        key: "permissions.defaultMode",
        kind: SettingKind::Options(MODES),
        about: "the permission mode new sessions start in",
    },
    SettingSpec {
        key: "permissions.disableBypassPermissionsMode",
        kind: SettingKind::Options(&["disable"]),
        about: "\"disable\" forbids bypassPermissions mode",
    },
    SettingSpec {
        key: "sandbox.enabled",
        kind: SettingKind::Bool,
        about: "whether Bash commands run in the sandbox",
    },
    SettingSpec {
        key: "model",
        kind: SettingKind::Word,
        about: "the model sub-agents use: sonnet, opus, haiku or a full model id",
    },
];

/// A value for a setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ConfigValue {
    /// A boolean
    Bool(bool),
    /// A number
    Number(f64),
    /// A string
    String(String),
}

/// Input of Config.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigInput {
    /// The setting key, such as "permissions.defaultMode"
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub setting: String,
    /// The new value; omit it to read the current value
    #[serde(default)]
    pub value: Option<ConfigValue>,
}

/// Output of Config.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigOutput {
    /// Always true (failures are errors)
    pub success: bool,
    /// Whether the call read or wrote the setting
    pub operation: ConfigOperation,
    /// The key
    pub setting: String,
    /// The value read, or the value before a set
    pub value: Option<Value>,
    /// The value written
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_value: Option<Value>,
    /// The file written, or the file the value came from
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
}

/// What a Config call did (`operation` of [`ConfigOutput`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigOperation {
    /// Read the setting
    Get,
    /// Wrote the setting
    Set,
}

/// The Config tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Config;

fn spec(key: &str) -> Option<&'static SettingSpec> {
    SETTINGS.iter().find(|s| s.key == key)
}

/// The project settings file Config writes.
pub(crate) fn project_settings_file(ctx: &ToolContext) -> PathBuf {
    ctx.original_cwd()
        .join(".agent-tools")
        .join("settings.json")
}

/// Checks and normalises a value for a setting; errors say what the setting accepts.
pub(crate) fn normalise(spec: &SettingSpec, value: &ConfigValue) -> Result<Value, String> {
    match spec.kind {
        SettingKind::Bool => match value {
            ConfigValue::Bool(b) => Ok(Value::Bool(*b)),
            ConfigValue::String(s) if s.trim().eq_ignore_ascii_case("true") => {
                Ok(Value::Bool(true))
            }
            ConfigValue::String(s) if s.trim().eq_ignore_ascii_case("false") => {
                Ok(Value::Bool(false))
            }
            _ => Err(format!("{} requires true or false.", spec.key)),
        },
        SettingKind::Options(options) => {
            let text = match value {
                ConfigValue::String(s) => s.trim().to_owned(),
                ConfigValue::Bool(b) => b.to_string(),
                ConfigValue::Number(n) => n.to_string(),
            };
            match options.iter().find(|o| o.eq_ignore_ascii_case(&text)) {
                Some(o) => Ok(Value::String((*o).to_owned())),
                None => Err(format!(
                    "Invalid value \"{text}\". Options: {}",
                    options.join(", ")
                )),
            }
        }
        SettingKind::Word => match value {
            ConfigValue::String(s)
                if !s.trim().is_empty() && !s.trim().contains(char::is_whitespace) =>
            {
                Ok(Value::String(s.trim().to_owned()))
            }
            _ => Err(format!(
                "{} requires a non-empty name without spaces ({}).",
                spec.key, spec.about
            )),
        },
    }
}

fn unknown(setting: &str) -> String {
    let known: Vec<&str> = SETTINGS.iter().map(|s| s.key).collect();
    format!(
        "Unknown setting: \"{setting}\". Supported settings: {}",
        known.join(", ")
    )
}

/// The refusal of a write to a setting only a person may change.
pub fn person_only(key: &str) -> String {
    let how = if key == "permissions.defaultMode" {
        "in a settings file (~/.agent-tools/settings.json, or a file passed with --settings) or with --mode on the command line"
    } else {
        "in a settings file (~/.agent-tools/settings.json, or a file passed with --settings)"
    };
    format!(
        "{key} can only be changed by a person, not by a tool: it decides what sessions may do without asking. Reading it is allowed; to change it, ask the user to set it {how}."
    )
}

fn get_path<'a>(root: &'a Value, key: &str) -> Option<&'a Value> {
    key.split('.').try_fold(root, |v, part| v.get(part))
}

fn read_object(path: &Path) -> Result<Value, ToolError> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(Value::Object(Map::new())),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(_) => Err(ToolError::respond(format!(
                "{} must hold a JSON object; fix the file before changing settings with Config",
                path.display()
            ))),
            Err(e) => Err(ToolError::respond(format!(
                "{} is not valid JSON ({e}); fix the file before changing settings with Config",
                path.display()
            ))),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Object(Map::new())),
        Err(e) => Err(ToolError::io(path, e)),
    }
}

fn set_path(root: &mut Value, key: &str, value: Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    let mut cur = root;
    for (i, part) in parts.iter().enumerate() {
        let Value::Object(map) = cur else {
            return Err(format!(
                "`{}` in the settings file is not an object; fix the file first",
                parts[..i].join(".")
            ));
        };
        if i + 1 == parts.len() {
            map.insert((*part).to_owned(), value);
            return Ok(());
        }
        cur = map
            .entry((*part).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    Ok(())
}

fn show(value: &Value) -> String {
    value.to_string()
}

#[async_trait]
impl TypedTool for Config {
    type Input = ConfigInput;
    type Output = ConfigOutput;
    const META: ToolMeta = ToolMeta::new("Config")
        .hint("read or change project settings such as the permission mode")
        .category(ToolCategory::Config)
        .deferred();

    async fn description(&self, _input: Option<&ConfigInput>) -> String {
        let mut text = String::from(
            "Read or change a setting of this project (.agent-tools/settings.json). Omit `value` to read the current value; give `value` to change it (the user is asked first). The sandbox and permission settings can only be read: only the user can change them.\n\nSupported settings:",
        );
        for s in SETTINGS {
            let values = match s.kind {
                SettingKind::Bool => "true or false".to_owned(),
                SettingKind::Options(o) => o.join(" | "),
                SettingKind::Word => "a name".to_owned(),
            };
            let read_only = if is_person_only_setting(s.key) {
                "; read-only"
            } else {
                ""
            };
            text.push_str(&format!("\n- {}: {} ({values}{read_only})", s.key, s.about));
        }
        text
    }
    fn is_concurrency_safe(&self, input: &ConfigInput) -> bool {
        input.value.is_none()
    }
    fn is_read_only(&self, input: &ConfigInput) -> bool {
        input.value.is_none()
    }
    async fn validate(&self, input: &ConfigInput, _ctx: &ToolContext) -> ValidationResult {
        let Some(spec) = spec(input.setting.trim()) else {
            return ValidationResult::invalid(unknown(&input.setting));
        };
        if input.value.is_some() && is_person_only_setting(spec.key) {
            return ValidationResult::invalid(person_only(spec.key));
        }
        if let Some(value) = &input.value
            && let Err(message) = normalise(spec, value)
        {
            return ValidationResult::invalid(message);
        }
        ValidationResult::Valid
    }
    async fn check_permission(
        &self,
        input: &ConfigInput,
        _ctx: &ToolContext,
    ) -> PermissionDecision {
        let (Some(value), Some(spec)) = (&input.value, spec(input.setting.trim())) else {
            return PermissionDecision::Allow;
        };
        // No mode lets a tool change the sandbox or the permission mode: only a person may
        // (validation refuses first; this holds for callers that skip it).
        if is_person_only_setting(spec.key) {
            return PermissionDecision::deny(person_only(spec.key));
        }
        let shown = normalise(spec, value)
            .map(|v| show(&v))
            .unwrap_or_else(|_| format!("{value:?}"));
        PermissionDecision::Ask {
            reason: format!("Set {} to {shown}", spec.key),
            suggestions: Vec::new(),
            kind: AskKind::Default,
        }
    }
    async fn call(
        &self,
        input: ConfigInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<ConfigOutput>, ToolError> {
        let spec = spec(input.setting.trim())
            .ok_or_else(|| ToolError::respond(unknown(&input.setting)))?;
        let file = project_settings_file(ctx);
        let mut root = read_object(&file)?;
        let previous = get_path(&root, spec.key).cloned();
        let Some(value) = input.value else {
            // Read: the project file first, then the other settings files the session loaded.
            let (value, from) = match previous {
                Some(v) => (Some(v), Some(file)),
                None => effective(ctx, spec.key).map_or((None, None), |(v, p)| (Some(v), Some(p))),
            };
            let mut text = match (&value, &from) {
                (Some(v), Some(p)) => format!("{} = {} (from {})", spec.key, show(v), p.display()),
                _ => format!("{} is not set", spec.key),
            };
            if let (Some(p), Some(report)) = (&from, ctx.services().get::<Arc<TrustReport>>())
                && report.is_ignored(p, spec.key)
            {
                text.push_str(&format!(
                    "; not applied: the file is not approved, and only a person can approve it ({})",
                    report.approve_command()
                ));
            }
            return Ok(ToolResult::ok(ConfigOutput {
                success: true,
                operation: ConfigOperation::Get,
                setting: spec.key.to_owned(),
                value,
                new_value: None,
                file: from,
            })
            .with_text(text));
        };
        if is_person_only_setting(spec.key) {
            return Err(ToolError::respond(person_only(spec.key)));
        }
        let new_value = normalise(spec, &value).map_err(ToolError::respond)?;
        set_path(&mut root, spec.key, new_value.clone()).map_err(ToolError::respond)?;
        let mut text = serde_json::to_string_pretty(&root)
            .map_err(|e| ToolError::fatal(format!("internal error: {e}")))?;
        text.push('\n');
        // Check the result is still a settings file this project can load.
        SettingsLayer::parse(tool_core::RuleSourceKind::ProjectSettings, &file, &text)
            .map_err(|e| ToolError::respond(e.to_string()))?;
        write_atomic(&file, text.as_bytes())?;
        let message = format!("Set {} to {}", spec.key, show(&new_value));
        Ok(ToolResult::ok(ConfigOutput {
            success: true,
            operation: ConfigOperation::Set,
            setting: spec.key.to_owned(),
            value: previous,
            new_value: Some(new_value),
            file: Some(file),
        })
        .with_text(message))
    }
}

/// The value of `key` in the last settings layer the session loaded that sets it.
fn effective(ctx: &ToolContext, key: &str) -> Option<(Value, PathBuf)> {
    let layers = ctx.services().get::<Arc<Vec<SettingsLayer>>>()?;
    layers.iter().rev().find_map(|layer| {
        let value = serde_json::to_value(&layer.settings).ok()?;
        get_path(&value, key)
            .cloned()
            .map(|v| (v, layer.path.clone()))
    })
}
