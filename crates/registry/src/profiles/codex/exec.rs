//! What codex's shell tools share: the command line an argv or a script stands for, the
//! approval fields, the checks of `workdir` and `timeout_ms`, and codex's result text of a
//! finished command.

use std::io::{BufRead, BufReader};
use std::time::Duration;

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};
use tool_core::{ContentBlock, ToolContext, ToolError, ToolResult, ValidationResult, shell_quote};

/// Bash's longest time limit; a longer `timeout_ms` is clamped to it.
pub(super) const MAX_TIMEOUT_MS: u64 = 600_000;

/// The command line `argv` stands for: the script of `bash -lc SCRIPT` (and `sh -c`, `zsh
/// -lc`, `dash -c`), else the words quoted for the shell.
pub(super) fn argv_line(argv: &[String]) -> Option<String> {
    match argv {
        [] => None,
        [first, ..] if first.trim().is_empty() => None,
        [shell, flag, script]
            if matches!(
                shell.rsplit('/').next(),
                Some("bash" | "sh" | "zsh" | "dash")
            ) && matches!(flag.as_str(), "-c" | "-lc" | "-cl") =>
        {
            Some(script.clone())
        }
        words => Some(
            words
                .iter()
                .map(|w| shell_quote(w))
                .collect::<Vec<_>>()
                .join(" "),
        ),
    }
}

/// `line` run in a subshell, in `workdir` when given: a `cd` in the command never carries
/// over to the next call (each codex call starts in its workdir, else the session's
/// directory).
pub(super) fn in_subshell(line: &str, workdir: Option<&str>) -> String {
    match workdir {
        Some(dir) if !dir.is_empty() => format!("(cd {} && {line}\n)", shell_quote(dir)),
        _ => format!("({line}\n)"),
    }
}

/// codex's `sandbox_permissions` of shell, shell_command and exec_command: whether the
/// command runs in the sandbox. Declared as a plain string, as codex does; a value outside
/// the set is kept so the call can name it in its refusal.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub(super) enum SandboxPermissions {
    /// `use_default`: in the sandbox
    UseDefault,
    /// `require_escalated`: outside the sandbox, after asking
    RequireEscalated,
    /// `with_additional_permissions`: not supported here
    WithAdditionalPermissions,
    /// Any other value
    Other(String),
}

impl From<String> for SandboxPermissions {
    fn from(value: String) -> Self {
        match value.as_str() {
            "use_default" => Self::UseDefault,
            "require_escalated" => Self::RequireEscalated,
            "with_additional_permissions" => Self::WithAdditionalPermissions,
            _ => Self::Other(value),
        }
    }
}

// Serialized only for the schema's `"default": null` (of `Option<Self>`), as the string it
// was read from.
impl Serialize for SandboxPermissions {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(match self {
            Self::UseDefault => "use_default",
            Self::RequireEscalated => "require_escalated",
            Self::WithAdditionalPermissions => "with_additional_permissions",
            Self::Other(value) => value,
        })
    }
}

impl JsonSchema for SandboxPermissions {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "SandboxPermissions".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "Sandbox permissions for the command. Set to \"require_escalated\" to request running\nwithout sandbox restrictions; defaults to \"use_default\".",
        })
    }
}

/// codex's `justification`: the question the person is asked about running the command
/// outside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub(super) struct Justification(String);

impl Justification {
    /// The text the model gave.
    pub(super) fn as_str(&self) -> &str {
        &self.0
    }
}

impl JsonSchema for Justification {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Justification".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "Only set if sandbox_permissions is \"require_escalated\". Request approval from the\nuser to run this command outside the sandbox. Phrased as a simple question that\nsummarizes the purpose of the command as it relates to the task at hand - e.g. 'Do\nyou want to fetch and pull the latest version of this git branch?'",
        })
    }
}

/// codex's `prefix_rule`: a rule the model proposes for similar commands. Read and left
/// aside: rules come from the settings only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub(super) struct PrefixRule(Vec<String>);

impl JsonSchema for PrefixRule {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "PrefixRule".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "array",
            "items": {
                "type": "string"
            },
            "description": "Only specify when sandbox_permissions is `require_escalated`. Suggest a prefix\ncommand pattern that will allow you to fulfill similar requests from the user in the\nfuture. Should be a short but reasonable prefix, e.g. [\"git\", \"pull\"] or [\"uv\",\n\"run\"] or [\"pytest\"].",
        })
    }
}

/// Whether the call asks to run outside the sandbox: `sandbox_permissions:
/// "require_escalated"` (codex's current field) or `with_escalated_permissions: true` (the
/// older one).
pub(super) fn escalated(
    sandbox_permissions: Option<&SandboxPermissions>,
    with_escalated_permissions: Option<bool>,
) -> Result<bool, ToolError> {
    let by_field = match sandbox_permissions {
        None | Some(SandboxPermissions::UseDefault) => false,
        Some(SandboxPermissions::RequireEscalated) => true,
        Some(SandboxPermissions::WithAdditionalPermissions) => {
            return Err(ToolError::respond(
                "`sandbox_permissions`: \"with_additional_permissions\" is not supported here; use \"require_escalated\" (with a `justification`) to run the command outside the sandbox, or leave it out",
            ));
        }
        Some(SandboxPermissions::Other(other)) => {
            return Err(ToolError::respond(format!(
                "`sandbox_permissions` is {other:?}: use \"use_default\" (the default) or \"require_escalated\" to run the command outside the sandbox"
            )));
        }
    };
    Ok(by_field || with_escalated_permissions == Some(true))
}

/// Bash's `timeout` for `timeout_ms`: 0 is refused, longer than Bash's limit is clamped.
pub(super) fn timeout(timeout_ms: Option<u64>) -> Result<Option<u64>, ToolError> {
    match timeout_ms {
        Some(0) => Err(ToolError::respond(format!(
            "`timeout_ms` is 0: give the time limit in milliseconds (at most {MAX_TIMEOUT_MS}), or leave it out for the default of 120000"
        ))),
        Some(ms) => Ok(Some(ms.min(MAX_TIMEOUT_MS))),
        None => Ok(None),
    }
}

/// Bash's input for a command line.
pub(super) fn bash_input(
    line: &str,
    workdir: Option<&str>,
    timeout_ms: Option<u64>,
    escalate: bool,
    justification: Option<&Justification>,
) -> Result<Value, ToolError> {
    let mut bash = json!({ "command": in_subshell(line, workdir) });
    if let Some(ms) = timeout(timeout_ms)? {
        bash["timeout"] = json!(ms);
    }
    if escalate {
        bash["dangerouslyDisableSandbox"] = json!(true);
    }
    if let Some(why) = justification
        .map(Justification::as_str)
        .filter(|j| !j.trim().is_empty())
    {
        bash["description"] = json!(why);
    }
    Ok(bash)
}

/// `workdir` must be an existing directory (relative to the session's directory).
pub(super) fn check_workdir(workdir: Option<&str>, ctx: &ToolContext) -> ValidationResult {
    let Some(dir) = workdir.filter(|d| !d.is_empty()) else {
        return ValidationResult::Valid;
    };
    let path = ctx.resolve_path(dir);
    match std::fs::metadata(&path) {
        Ok(m) if m.is_dir() => ValidationResult::Valid,
        Ok(_) => ValidationResult::invalid(format!(
            "`workdir` {} is not a directory: give the directory to run the command in",
            path.display()
        )),
        Err(_) => ValidationResult::invalid(format!(
            "`workdir` {} does not exist: give an existing directory (absolute, or relative to {})",
            path.display(),
            ctx.cwd().display()
        )),
    }
}

/// What the person is asked, with the model's `justification` when it gave one.
pub(super) fn with_justification(reason: String, justification: Option<&Justification>) -> String {
    match justification
        .map(|j| j.as_str().trim())
        .filter(|j| !j.is_empty())
    {
        Some(why) => format!("{reason}\nJustification: {why}"),
        None => reason,
    }
}

/// The number of lines of the file at `path`, when it can be read.
fn count_lines(path: &str) -> Option<usize> {
    let file = std::fs::File::open(path).ok()?;
    let mut reader = BufReader::new(file);
    let (mut lines, mut last) = (0usize, b'\n');
    loop {
        let buf = reader.fill_buf().ok()?;
        if buf.is_empty() {
            break;
        }
        lines += buf.iter().filter(|b| **b == b'\n').count();
        last = buf[buf.len() - 1];
        let n = buf.len();
        reader.consume(n);
    }
    Some(if last == b'\n' { lines } else { lines + 1 })
}

/// codex's text of a finished command, from Bash's data: `Exit code`, `Wall time`, `Total
/// output lines` when the output was cut, and `Output` (stdout and stderr together, as
/// codex aggregates them), with where the whole output was saved.
pub(super) fn exec_text(data: &Value, elapsed: Duration, timeout_ms: Option<u64>) -> String {
    let code = data["exitCode"].as_i64().unwrap_or(-1);
    let stdout = data["stdout"].as_str().unwrap_or_default();
    let mut sections = vec![
        format!("Exit code: {code}"),
        format!("Wall time: {:.1} seconds", elapsed.as_secs_f64()),
    ];
    let saved = data["persistedOutputPath"].as_str();
    if let Some(lines) = saved.and_then(count_lines) {
        sections.push(format!("Total output lines: {lines}"));
    }
    sections.push("Output:".to_owned());
    let mut body = String::new();
    if data["timedOut"].as_bool() == Some(true) {
        let ms = timeout(timeout_ms)
            .ok()
            .flatten()
            .unwrap_or(tools_default_timeout_ms());
        body.push_str(&format!("command timed out after {ms} milliseconds\n"));
    } else if data["interrupted"].as_bool() == Some(true) {
        body.push_str("command was interrupted\n");
    }
    body.push_str(stdout);
    if let Some(path) = saved {
        body.push_str(&format!(
            "\n[output truncated; the whole output is saved in {path}]"
        ));
    }
    sections.push(body);
    sections.join("\n")
}

/// Bash's default time limit in milliseconds.
fn tools_default_timeout_ms() -> u64 {
    120_000
}

/// Bash's result in codex's words: one text block, the failure kept.
pub(super) fn render_exec(
    result: ToolResult<Value>,
    elapsed: Duration,
    timeout_ms: Option<u64>,
) -> ToolResult<Value> {
    let text = exec_text(&result.data, elapsed, timeout_ms);
    ToolResult {
        error_message: result.is_error.then(|| text.clone()),
        content: vec![ContentBlock::text(text)],
        ..result
    }
}
