//! Building a session context from the settings files and command-line options, with the
//! project's own files applied only as far as a person approved them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::Profile;
use tool_core::{
    Approval, NamedByConfig, PermissionEngine, PermissionMode, PermissionRule, RuleBehavior,
    RuleSource, RuleSourceKind, SettingsLayer, SourcedRule, ToolContext, ToolError, TrustReport,
    TrustStore, check_state_dir, default_state_dir, is_project_source, layer_named_files,
    review_settings,
};

/// What a host knows before a session starts.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// The working directory
    pub cwd: PathBuf,
    /// `--mode`; overrides `permissions.defaultMode`
    pub mode: Option<PermissionMode>,
    /// `--allow` rules
    pub allow: Vec<String>,
    /// `--deny` rules
    pub deny: Vec<String>,
    /// `--ask` rules
    pub ask: Vec<String>,
    /// `--settings FILE`
    pub settings_file: Option<PathBuf>,
    /// The state directory (default: `AGENT_TOOLS_HOME`, else `~/.agent-tools`)
    pub state_dir: Option<PathBuf>,
    /// `--profile`; overrides the `toolProfile` setting
    pub profile: Option<Profile>,
    /// The session answers many calls (`batch`, `serve`, a library host): its search index
    /// is built in the background and kept fresh; a one-shot session only uses a valid
    /// saved index
    pub long_lived: bool,
    /// The session has its runtime to itself (`batch`: one agent per process), so each
    /// call's permission check runs on the worker that took the call (see
    /// `ToolContextBuilder::alone_on_runtime`); `serve` and library hosts whose sessions
    /// share a runtime leave it false
    pub alone_on_runtime: bool,
    /// Where the session keeps what is its own (default: the state directory); `serve`
    /// gives each bearer token its own (see `ToolContextBuilder::private_state_dir`)
    pub private_state_dir: Option<PathBuf>,
}

/// The settings files a session reads, lowest precedence first: user, project, local, and
/// the `--settings` file.
pub fn settings_paths(
    options: &SessionOptions,
    state_dir: &Path,
) -> Vec<(RuleSourceKind, PathBuf)> {
    let mut paths = vec![
        (
            RuleSourceKind::UserSettings,
            state_dir.join("settings.json"),
        ),
        (
            RuleSourceKind::ProjectSettings,
            options.cwd.join(".agent-tools").join("settings.json"),
        ),
        (
            RuleSourceKind::LocalSettings,
            options.cwd.join(".agent-tools").join("settings.local.json"),
        ),
    ];
    if let Some(file) = &options.settings_file {
        paths.push((RuleSourceKind::FlagSettings, file.clone()));
    }
    paths
}

/// The state directory of `options`: the one it names, else [`default_state_dir`]; an error
/// when there is none, or when it, the user settings or the approvals in it could have been
/// planted by another account ([`check_state_dir`]: owned by another account, or writable by
/// group or others).
pub fn session_state_dir(options: &SessionOptions) -> Result<PathBuf, ToolError> {
    let dir = match &options.state_dir {
        Some(dir) => dir.clone(),
        None => default_state_dir()?,
    };
    check_state_dir(&dir)?;
    Ok(dir)
}

/// The canonical working directory of `options`; an error when it is missing or not a
/// directory.
fn session_dir(options: &SessionOptions) -> Result<PathBuf, ToolError> {
    let cwd_meta = std::fs::metadata(&options.cwd).map_err(|e| ToolError::io(&options.cwd, e))?;
    if !cwd_meta.is_dir() {
        return Err(ToolError::respond(format!(
            "working directory {} is not a directory",
            options.cwd.display()
        )));
    }
    options
        .cwd
        .canonicalize()
        .map_err(|e| ToolError::io(&options.cwd, e))
}

/// Reads the settings files of a session in `cwd` (canonical), lowest precedence first.
/// Files inside the project are reviewed against the approvals of `state_dir`: an approved
/// file applies whole, any other only in the parts that restrict the session. Returns the
/// layers in effect and the review of every project file present, `.mcp.json` included.
fn load_layers(
    options: &SessionOptions,
    cwd: &Path,
    state_dir: &Path,
) -> Result<(Vec<SettingsLayer>, TrustReport), ToolError> {
    let store = TrustStore::in_state_dir(state_dir);
    let mut report = TrustReport {
        project: cwd.to_path_buf(),
        files: Vec::new(),
    };
    let options = SessionOptions {
        cwd: cwd.to_path_buf(),
        ..options.clone()
    };
    let mut layers: Vec<SettingsLayer> = Vec::new();
    for (kind, path) in settings_paths(&options, state_dir) {
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if kind == RuleSourceKind::FlagSettings {
                    return Err(ToolError::Settings {
                        path,
                        message: "the file does not exist".to_owned(),
                    });
                }
                continue;
            }
            Err(e) => {
                return Err(ToolError::Settings {
                    path,
                    message: e.to_string(),
                });
            }
        };
        let text = std::str::from_utf8(&bytes).map_err(|e| ToolError::Settings {
            path: path.clone(),
            message: format!("not UTF-8 text: {e}"),
        })?;
        let layer = SettingsLayer::parse(kind, &path, text)?;
        if is_project_source(kind) {
            let (effective, review) = review_settings(cwd, layer, &bytes, &layers, &store)?;
            report.files.push(review);
            layers.push(effective);
        } else {
            layers.push(layer);
        }
    }
    #[cfg(feature = "mcp")]
    {
        let path = cwd.join(tool_core::MCP_JSON);
        match std::fs::read(&path) {
            Ok(bytes) => report
                .files
                .push(tool_core::review_mcp_json(cwd, &bytes, &store, &layers)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ToolError::io(&path, e)),
        }
    }
    // Skills, agent definitions and durable cron jobs the project ships: each file's keys
    // that widen a session wait for a person's approval like the settings' do.
    #[cfg(feature = "agent")]
    report
        .files
        .extend(tools_agent::review_project_definitions(cwd, state_dir));
    Ok((layers, report))
}

/// Reviews the project files of a session in `options.cwd` without starting one: for each
/// file present, whether a person approved its content and what it adds beyond what
/// always applies. This is what `agent-tools trust` shows.
pub fn review_project(options: &SessionOptions) -> Result<TrustReport, ToolError> {
    let cwd = session_dir(options)?;
    let state_dir = session_state_dir(options)?;
    load_layers(options, &cwd, &state_dir).map(|(_, report)| report)
}

/// Records a person's approval of every file of `report` not approved yet, with the content
/// that was reviewed (a file changed since the review stays unapproved). Returns the files
/// approved now.
pub fn approve_project(report: &TrustReport, state_dir: &Path) -> Result<Vec<PathBuf>, ToolError> {
    check_state_dir(state_dir)?;
    let store = TrustStore::in_state_dir(state_dir);
    let mut approved = Vec::new();
    for file in report
        .files
        .iter()
        .filter(|f| f.status != Approval::Approved)
    {
        store.approve_with_files(&report.project, &file.name, &file.sha256, &file.named)?;
        approved.push(file.path.clone());
    }
    Ok(approved)
}

/// Forgets every approval of the project in `options.cwd`; returns the file names that had
/// one.
pub fn revoke_project(options: &SessionOptions) -> Result<Vec<String>, ToolError> {
    let cwd = session_dir(options)?;
    let state_dir = session_state_dir(options)?;
    TrustStore::in_state_dir(&state_dir).revoke(&cwd)
}

/// The files inside the project `cwd` that the session's configuration names as programs
/// or scripts: those of the settings layers in effect (an unapproved project file's
/// programs are withheld already) and of the `.mcp.json` servers that may start.
fn named_by_config(
    cwd: &Path,
    state_dir: &Path,
    layers: &[SettingsLayer],
) -> Result<NamedByConfig, ToolError> {
    let mut files: Vec<(PathBuf, PathBuf)> = Vec::new();
    for layer in layers {
        for file in layer_named_files(layer, cwd) {
            files.push((file, layer.path.clone()));
        }
    }
    #[cfg(feature = "mcp")]
    {
        let path = cwd.join(tool_core::MCP_JSON);
        if let Ok(bytes) = std::fs::read(&path)
            && let Ok(mut config) = serde_json::from_slice::<serde_json::Value>(&bytes)
        {
            let store = TrustStore::in_state_dir(state_dir);
            let approval = tool_core::McpApproval::new(cwd, &bytes, &store, layers)?;
            if let Some(serde_json::Value::Object(servers)) = config.get_mut("mcpServers") {
                servers.retain(|name, _| approval.allows(name));
            }
            for file in tool_core::named_files(&config, cwd) {
                files.push((file, path.clone()));
            }
        }
    }
    #[cfg(not(feature = "mcp"))]
    let _ = state_dir;
    files.sort();
    files.dedup_by(|a, b| a.0 == b.0);
    Ok(NamedByConfig { files })
}

/// The tool profile of the session of `ctx` ([`build_context`] records it): the
/// `--profile` option, else the last settings file that sets `toolProfile`, else `claude`.
pub fn session_profile(ctx: &ToolContext) -> Profile {
    ctx.services()
        .get::<Arc<Profile>>()
        .map(|p| *p)
        .unwrap_or_default()
}

/// The profile `options` and the settings `layers` choose (see [`session_profile`]).
fn choose_profile(
    options: &SessionOptions,
    layers: &[SettingsLayer],
) -> Result<Profile, ToolError> {
    if let Some(profile) = options.profile {
        return Ok(profile);
    }
    for layer in layers.iter().rev() {
        match layer.settings.other.get("toolProfile") {
            None => {}
            Some(serde_json::Value::String(name)) => {
                return name.parse().map_err(|message| ToolError::Settings {
                    path: layer.path.clone(),
                    message: format!("toolProfile: {message}"),
                });
            }
            Some(other) => {
                return Err(ToolError::Settings {
                    path: layer.path.clone(),
                    message: format!(
                        "toolProfile must be a string (claude, codex or gemini), not {other}"
                    ),
                });
            }
        }
    }
    Ok(Profile::default())
}

/// What the session of `ctx` ignored of the project's files ([`build_context`] records
/// it); hosts show its [`TrustReport::notice`] to the person running them.
pub fn trust_report(ctx: &ToolContext) -> Option<Arc<TrustReport>> {
    ctx.services().get::<Arc<TrustReport>>()
}

/// The permission rules of the settings layers, then the command line's (`--deny`,
/// `--ask`, `--allow`).
fn session_rules(
    layers: &[SettingsLayer],
    options: &SessionOptions,
    cwd: &Path,
) -> Result<Vec<SourcedRule>, ToolError> {
    let mut rules: Vec<SourcedRule> = layers.iter().flat_map(SettingsLayer::rules).collect();
    let cli = RuleSource {
        kind: RuleSourceKind::CliArg,
        file: None,
        root: cwd.to_path_buf(),
    };
    for (behavior, list, flag) in [
        (RuleBehavior::Deny, &options.deny, "--deny"),
        (RuleBehavior::Ask, &options.ask, "--ask"),
        (RuleBehavior::Allow, &options.allow, "--allow"),
    ] {
        for text in list {
            let rule = PermissionRule::parse(text).ok_or_else(|| ToolError::InvalidRule {
                rule: text.clone(),
                message: format!("{flag} needs a rule such as 'Bash(npm test)'"),
            })?;
            rules.push(SourcedRule {
                rule,
                behavior,
                source: cli.clone(),
            });
        }
    }
    Ok(rules)
}

/// The permission mode: the command line's, else the last layer's `defaultMode`; bypass
/// refused when a layer disables it.
fn session_mode(
    layers: &[SettingsLayer],
    options: &SessionOptions,
) -> Result<PermissionMode, ToolError> {
    let mode = options
        .mode
        .or_else(|| {
            layers
                .iter()
                .rev()
                .find_map(|l| l.settings.permissions.default_mode)
        })
        .unwrap_or_default();
    if mode == PermissionMode::BypassPermissions
        && let Some(layer) = layers.iter().find(|l| {
            l.settings.permissions.disable_bypass_permissions_mode
                == Some(tool_core::DisableBypass::Disable)
        })
    {
        return Err(ToolError::Settings {
            path: layer.path.clone(),
            message:
                "bypassPermissions mode is disabled by permissions.disableBypassPermissionsMode"
                    .to_owned(),
        });
    }
    Ok(mode)
}

/// Loads the settings files and builds the session context: rules from every file and from
/// the command line, the mode (command line, else the last file that sets one, else
/// `default`), additional directories, and the loaded layers as a service
/// (`Arc<Vec<SettingsLayer>>`) for tools that read other sections.
///
/// Files inside the project (`.agent-tools/settings.json`, `.agent-tools/settings.local.json`)
/// may have been written by anyone, so until a person approves their exact content
/// (`agent-tools trust`, see [`approve_project`]) only the parts that restrict the session
/// apply; the rest is recorded in a [`TrustReport`] service ([`trust_report`]). The user
/// settings, the `--settings` file and the command line apply whole.
///
/// Errors name the file or option at fault: a missing `--settings` file, invalid JSON, a
/// bypass mode that settings disable, a missing working directory.
pub fn build_context(options: &SessionOptions) -> Result<ToolContext, ToolError> {
    let cwd = session_dir(options)?;
    let options = SessionOptions {
        cwd: cwd.clone(),
        ..options.clone()
    };
    let state_dir = session_state_dir(&options)?;
    let (layers, report) = load_layers(&options, &cwd, &state_dir)?;
    let profile = choose_profile(&options, &layers)?;

    let rules = session_rules(&layers, &options, &cwd)?;
    let mode = session_mode(&layers, &options)?;
    let additional: Vec<PathBuf> = layers
        .iter()
        .flat_map(SettingsLayer::additional_directories)
        .collect();
    let engine = PermissionEngine::new(rules)
        .with_bypass_available(mode == PermissionMode::BypassPermissions);
    #[allow(unused_mut)]
    let mut builder = ToolContext::builder(cwd.clone())
        .mode(mode)
        .permissions(engine)
        .additional_dirs(additional.clone())
        .state_dir(state_dir.clone())
        .alone_on_runtime(options.alone_on_runtime);
    #[cfg(feature = "fs")]
    {
        // The search index behind Grep and Glob: the `search` section of the settings.
        let settings = tools_fs::IndexSettings::from_layers(&layers)?;
        builder = tools_fs::install_index(builder, &cwd, &state_dir, settings, options.long_lived);
    }
    if let Some(dir) = &options.private_state_dir {
        builder = builder.private_state_dir(dir);
    }
    #[cfg(feature = "lsp")]
    {
        // Language servers: the defaults on PATH, then each settings file's `lsp` section.
        let config = tools_lsp::LspConfig::from_settings(&layers)?;
        // They run project code: in the session's workspace sandbox.
        let sandbox = tools_lsp::SandboxSettings::from_layers(&layers)?;
        builder = tools_lsp::install_sandboxed(builder, config, cwd.clone(), sandbox);
    }
    #[cfg(feature = "shell")]
    {
        // The background task manager, for Bash, Monitor and other crates' tasks; shell
        // tasks started through the generic trait run in the settings' sandbox.
        let sandbox = tools_shell::SandboxSettings::from_layers(&layers)?;
        builder = tools_shell::install(builder, sandbox);
    }
    #[cfg(feature = "agent")]
    {
        // ToolSearch (and sub-agents) find the session's tools here; a host whose pool also
        // holds MCP tools replaces this with `ToolCatalog::from_pool` over its whole pool.
        let registry = Arc::new(crate::ToolRegistry::for_profile(profile));
        let catalog = tools_agent::ToolCatalog::new(move || registry.base_tools().to_vec());
        // The sub-agent runner: `agent.command` in the settings, else ANTHROPIC_API_KEY.
        let runner = tools_agent::runner_from_settings(&layers)?;
        builder = tools_agent::install(
            builder,
            tools_agent::AgentServices {
                catalog: Some(catalog),
                runner,
                user_messages: None,
            },
        );
        // AskUserQuestion asks the person at the terminal when there is one (a host such
        // as the MCP server may replace this with its own prompter).
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            let prompter = tool_core::LinePrompter::new(
                std::io::BufReader::new(std::io::stdin()),
                std::io::stderr(),
            );
            builder = builder.service(Arc::new(prompter) as Arc<dyn tool_core::QuestionPrompter>);
        }
    }
    let named = named_by_config(&cwd, &state_dir, &layers)?;
    Ok(builder
        .service(Arc::new(named))
        .service(Arc::new(profile))
        .service(Arc::new(layers))
        .service(Arc::new(report))
        .build())
}
