//! Which server handles which file: the settings' `lsp` section and the default servers
//! (rust-analyzer, pyright, typescript-language-server, gopls, clangd), each used only when
//! its command is on `PATH`.
//!
//! The `lsp` section maps extensions (one, or several separated by commas; the dot is
//! optional) to a server:
//!
//! ```json
//! "lsp": {
//!   "py,pyi": { "command": "pyright-langserver", "args": ["--stdio"] },
//!   "ts": "typescript-language-server --stdio",
//!   "go": null
//! }
//! ```
//!
//! A value is a command line (split at spaces), an array `[command, args...]`, an object
//! (`command`, `args`, `env`, `languageId`, `initializationOptions`, `settings` — what the
//! server gets for `workspace/configuration` —, `rootMarkers`, `requestTimeoutMs` and
//! `startupTimeoutMs`), or `null`/`false` to turn a default off. Later settings files override earlier ones, extension by extension.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tool_core::{SettingsLayer, ToolError};

/// How long a request may take unless the settings say otherwise.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long, from a server's start, calls wait for it to show it has loaded the project,
/// unless the settings say otherwise.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(15);

/// How to run one language server.
#[derive(Debug, Clone, PartialEq)]
pub struct LanguageServerConfig {
    /// The program (a name looked up on `PATH`, or a path)
    pub command: String,
    /// Its arguments
    pub args: Vec<String>,
    /// Extra environment variables
    pub env: Vec<(String, String)>,
    /// The `languageId` sent with `didOpen`; by default derived from the extension
    pub language_id: Option<String>,
    /// `initializationOptions` of the `initialize` request
    pub initialization_options: Option<Value>,
    /// The answer to `workspace/configuration`: looked up by section (`python.analysis`)
    pub settings: Option<Value>,
    /// Files or folders that mark a workspace root, nearest first wins
    pub root_markers: Vec<String>,
    /// How long a request may take before it is cancelled (default 30 s)
    pub request_timeout: Duration,
    /// How long, from the server's start, calls wait for it to show it has loaded the
    /// project — its first diagnostics — before they take its answers as they are (default
    /// 15 s; a large workspace may need more)
    pub startup_timeout: Duration,
}

impl LanguageServerConfig {
    /// A server run as `command args...`, with generic root markers.
    pub fn new(command: impl Into<String>, args: &[&str]) -> Self {
        LanguageServerConfig {
            command: command.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: Vec::new(),
            language_id: None,
            initialization_options: None,
            settings: None,
            root_markers: default_markers(&[]),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
        }
    }

    /// The same, with these root markers before the generic ones.
    pub fn with_markers(mut self, markers: &[&str]) -> Self {
        self.root_markers = default_markers(markers);
        self
    }

    /// A short name for messages: the program's file name.
    pub fn name(&self) -> String {
        Path::new(&self.command)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.command.clone())
    }

    /// The command line, for messages and as the server's identity.
    pub fn command_line(&self) -> String {
        std::iter::once(self.command.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn default_markers(first: &[&str]) -> Vec<String> {
    first
        .iter()
        .copied()
        .chain([".git", ".hg", ".jj"])
        .map(str::to_owned)
        .collect()
}

/// The servers of a session, by extension (lower case, without the dot).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LspConfig {
    by_extension: BTreeMap<String, LanguageServerConfig>,
}

/// The default servers: (extensions, command, args, root markers).
const DEFAULTS: &[(&str, &str, &[&str], &[&str])] = &[
    ("rs", "rust-analyzer", &[], &["Cargo.toml"]),
    (
        "py,pyi",
        "pyright-langserver",
        &["--stdio"],
        &[
            "pyrightconfig.json",
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
        ],
    ),
    (
        "ts,tsx,js,jsx,mjs,cjs,mts,cts",
        "typescript-language-server",
        &["--stdio"],
        &["tsconfig.json", "jsconfig.json", "package.json"],
    ),
    ("go", "gopls", &[], &["go.mod", "go.work"]),
    (
        "c,h,cc,cpp,cxx,hh,hpp,hxx",
        "clangd",
        &[],
        &["compile_commands.json", "compile_flags.txt", ".clangd"],
    ),
];

impl LspConfig {
    /// No servers at all.
    pub fn empty() -> Self {
        LspConfig::default()
    }

    /// The default servers whose command is on `PATH`.
    pub fn defaults() -> Self {
        let mut config = LspConfig::empty();
        for (exts, command, args, markers) in DEFAULTS {
            if find_on_path(command).is_some() {
                config = config.with_server(
                    exts,
                    LanguageServerConfig::new(*command, args).with_markers(markers),
                );
            }
        }
        config
    }

    /// Adds (or replaces) the server for `extensions` (`"ts,tsx"`, dots optional).
    pub fn with_server(mut self, extensions: &str, server: LanguageServerConfig) -> Self {
        for ext in split_extensions(extensions) {
            self.by_extension.insert(ext, server.clone());
        }
        self
    }

    /// The defaults, then the `lsp` section of each layer in order. A malformed entry is an
    /// error naming the file and the key.
    pub fn from_settings(layers: &[SettingsLayer]) -> Result<Self, ToolError> {
        let mut config = LspConfig::defaults();
        for layer in layers {
            if let Some(section) = layer.settings.other.get("lsp") {
                config
                    .apply_section(section)
                    .map_err(|message| ToolError::Settings {
                        path: layer.path.clone(),
                        message,
                    })?;
            }
        }
        Ok(config)
    }

    /// Applies one `lsp` section; the error says which key is wrong and how.
    pub fn apply_section(&mut self, section: &Value) -> Result<(), String> {
        let Value::Object(map) = section else {
            return Err(
                "`lsp` must be an object mapping extensions to a server, such as {\"py\": \"pyright-langserver --stdio\"}"
                    .to_owned(),
            );
        };
        for (key, value) in map {
            let exts = split_extensions(key);
            if exts.is_empty() {
                return Err(format!("lsp: the key {key:?} names no file extension"));
            }
            match parse_server(value, key)? {
                Some(server) => {
                    for ext in exts {
                        self.by_extension.insert(ext, server.clone());
                    }
                }
                None => {
                    for ext in exts {
                        self.by_extension.remove(&ext);
                    }
                }
            }
        }
        Ok(())
    }

    /// The server for `file`, by its extension.
    pub fn server_for(&self, file: &Path) -> Option<&LanguageServerConfig> {
        self.by_extension.get(&extension_of(file)?)
    }

    /// Every configured extension, sorted.
    pub fn extensions(&self) -> Vec<String> {
        self.by_extension.keys().cloned().collect()
    }

    /// The extensions `server` handles, sorted.
    pub(crate) fn extensions_of(&self, server: &LanguageServerConfig) -> Vec<String> {
        self.by_extension
            .iter()
            .filter(|(_, s)| s.command_line() == server.command_line())
            .map(|(e, _)| e.clone())
            .collect()
    }
}

/// What each default server is for and how to install it: (command, language, install).
const INSTALL: &[(&str, &str, &str)] = &[
    (
        "rust-analyzer",
        "Rust",
        "rustup component add rust-analyzer",
    ),
    ("pyright-langserver", "Python", "npm install -g pyright"),
    (
        "typescript-language-server",
        "TypeScript/JavaScript",
        "npm install -g typescript-language-server typescript",
    ),
    ("gopls", "Go", "go install golang.org/x/tools/gopls@latest"),
    ("clangd", "C/C++", "apt-get install clangd"),
];

/// One language server a session could use: the defaults, found or not, and the settings'
/// `lsp` entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanguageServerCheck {
    /// The language (`Rust`), or the extensions for a server only the settings name
    pub language: String,
    /// The extensions it handles, sorted
    pub extensions: Vec<String>,
    /// Its command line
    pub command: String,
    /// Where its program was found (on `PATH`, or the path given)
    pub found: Option<PathBuf>,
    /// What to do when it is missing
    pub install: String,
}

/// The language servers of a session with these settings layers: every default server
/// (whether its command is on `PATH` or not) and then each layer's `lsp` section, one
/// entry per server command. A malformed `lsp` entry is an error naming the file.
pub fn language_servers(layers: &[SettingsLayer]) -> Result<Vec<LanguageServerCheck>, ToolError> {
    let mut config = LspConfig::empty();
    for (exts, command, args, markers) in DEFAULTS {
        config = config.with_server(
            exts,
            LanguageServerConfig::new(*command, args).with_markers(markers),
        );
    }
    for layer in layers {
        if let Some(section) = layer.settings.other.get("lsp") {
            config
                .apply_section(section)
                .map_err(|message| ToolError::Settings {
                    path: layer.path.clone(),
                    message,
                })?;
        }
    }
    let mut checks: Vec<LanguageServerCheck> = Vec::new();
    for server in config.by_extension.values() {
        let command = server.command_line();
        if checks.iter().any(|c| c.command == command) {
            continue;
        }
        let extensions = config.extensions_of(server);
        let known = INSTALL.iter().find(|(c, _, _)| *c == server.name());
        let language = known.map_or_else(|| extensions.join(","), |(_, l, _)| (*l).to_owned());
        let install = known.map_or_else(
            || {
                format!(
                    "install `{}` or change the `lsp` section of the settings",
                    server.command
                )
            },
            |(_, _, i)| (*i).to_owned(),
        );
        checks.push(LanguageServerCheck {
            language,
            extensions,
            command,
            found: find_on_path(&server.command),
            install,
        });
    }
    Ok(checks)
}

/// The lower-case extension of `file`, without the dot.
pub(crate) fn extension_of(file: &Path) -> Option<String> {
    Some(file.extension()?.to_string_lossy().to_lowercase())
}

fn split_extensions(key: &str) -> Vec<String> {
    key.split(',')
        .map(|e| e.trim().trim_start_matches('.').to_lowercase())
        .filter(|e| !e.is_empty())
        .collect()
}

fn string_list(value: &Value, what: &str) -> Result<Vec<String>, String> {
    match value {
        Value::Array(items) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{what} must hold strings only"))
            })
            .collect(),
        _ => Err(format!("{what} must be an array of strings")),
    }
}

fn parse_server(value: &Value, key: &str) -> Result<Option<LanguageServerConfig>, String> {
    let server = match value {
        Value::Null | Value::Bool(false) => return Ok(None),
        Value::String(line) => {
            let mut words = line.split_whitespace();
            let command = words
                .next()
                .ok_or_else(|| format!("lsp.{key}: the command is empty"))?;
            let mut server = LanguageServerConfig::new(command, &[]);
            server.args = words.map(str::to_owned).collect();
            server
        }
        Value::Array(_) => {
            let words = string_list(value, &format!("lsp.{key}"))?;
            let (command, args) = words
                .split_first()
                .ok_or_else(|| format!("lsp.{key}: the command is empty"))?;
            let mut server = LanguageServerConfig::new(command.clone(), &[]);
            server.args = args.to_vec();
            server
        }
        Value::Object(map) => {
            let command = map
                .get("command")
                .and_then(Value::as_str)
                .filter(|c| !c.trim().is_empty())
                .ok_or_else(|| format!("lsp.{key}.command is required and must be a string"))?;
            let mut server = LanguageServerConfig::new(command, &[]);
            for (field, v) in map {
                match field.as_str() {
                    "command" => {}
                    "args" => server.args = string_list(v, &format!("lsp.{key}.args"))?,
                    "env" => {
                        let Value::Object(env) = v else {
                            return Err(format!("lsp.{key}.env must be an object of strings"));
                        };
                        for (name, val) in env {
                            let val = val
                                .as_str()
                                .ok_or_else(|| format!("lsp.{key}.env.{name} must be a string"))?;
                            server.env.push((name.clone(), val.to_owned()));
                        }
                    }
                    "languageId" => {
                        server.language_id = Some(
                            v.as_str()
                                .ok_or_else(|| format!("lsp.{key}.languageId must be a string"))?
                                .to_owned(),
                        );
                    }
                    "initializationOptions" => server.initialization_options = Some(v.clone()),
                    "settings" => server.settings = Some(v.clone()),
                    "rootMarkers" => {
                        server.root_markers = string_list(v, &format!("lsp.{key}.rootMarkers"))?;
                    }
                    "requestTimeoutMs" => {
                        let ms = v.as_u64().filter(|ms| *ms > 0).ok_or_else(|| {
                            format!("lsp.{key}.requestTimeoutMs must be a positive number of milliseconds")
                        })?;
                        server.request_timeout = Duration::from_millis(ms);
                    }
                    "startupTimeoutMs" => {
                        let ms = v.as_u64().filter(|ms| *ms > 0).ok_or_else(|| {
                            format!("lsp.{key}.startupTimeoutMs must be a positive number of milliseconds")
                        })?;
                        server.startup_timeout = Duration::from_millis(ms);
                    }
                    other => {
                        return Err(format!(
                            "lsp.{key}: unknown field `{other}` (expected command, args, env, languageId, initializationOptions, settings, rootMarkers, requestTimeoutMs, startupTimeoutMs)"
                        ));
                    }
                }
            }
            server
        }
        _ => {
            return Err(format!(
                "lsp.{key} must be a command line, an array, an object with `command`, or null"
            ));
        }
    };
    // Defaults' root markers for a known command, so a settings entry for pyright still
    // finds pyproject.toml.
    let mut server = server;
    if server.root_markers == default_markers(&[])
        && let Some((_, _, _, markers)) = DEFAULTS
            .iter()
            .find(|(_, command, _, _)| server.name() == *command)
    {
        server.root_markers = default_markers(markers);
    }
    Ok(Some(server))
}

/// The `languageId` LSP expects for an extension.
pub(crate) fn language_id(ext: &str) -> &'static str {
    match ext {
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "rs" => "rust",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hh" | "hpp" | "hxx" => "cpp",
        "java" => "java",
        "rb" => "ruby",
        "sh" | "bash" => "shellscript",
        "json" => "json",
        "yaml" | "yml" => "yaml",
        "lua" => "lua",
        "cs" => "csharp",
        "php" => "php",
        "swift" => "swift",
        "kt" | "kts" => "kotlin",
        _ => "plaintext",
    }
}

/// Where `command` is found on `PATH`; a command with a slash is taken as a path.
pub(crate) fn find_on_path(command: &str) -> Option<PathBuf> {
    if command.contains('/') {
        let path = PathBuf::from(command);
        return path.is_file().then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The workspace root for `file`: the nearest folder above it holding one of `markers`,
/// else the working directory when the file is inside it, else the file's folder.
pub(crate) fn find_root(file: &Path, markers: &[String], cwd: &Path) -> PathBuf {
    let parent = file.parent().unwrap_or(Path::new("/"));
    for dir in parent.ancestors() {
        if markers.iter().any(|m| dir.join(m).exists()) {
            return dir.to_path_buf();
        }
    }
    if file.starts_with(cwd) {
        cwd.to_path_buf()
    } else {
        parent.to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn language_servers_lists_defaults_and_settings_entries() {
        let layer = SettingsLayer::parse(
            tool_core::RuleSourceKind::UserSettings,
            Path::new("/home/u/.agent-tools/settings.json"),
            r#"{"lsp": {"go": null, "zig": "/nowhere/zls --stdio"}}"#,
        )
        .unwrap();
        let checks = language_servers(&[layer]).unwrap();
        let names: Vec<&str> = checks.iter().map(|c| c.language.as_str()).collect();
        assert!(names.contains(&"Rust"), "{names:?}");
        assert!(names.contains(&"C/C++"), "{names:?}");
        assert!(!names.contains(&"Go"), "go was turned off: {names:?}");
        let zig = checks.iter().find(|c| c.language == "zig").unwrap();
        assert_eq!(zig.command, "/nowhere/zls --stdio");
        assert_eq!(zig.found, None);
        assert_eq!(
            zig.install,
            "install `/nowhere/zls` or change the `lsp` section of the settings"
        );
        let ts = checks
            .iter()
            .find(|c| c.language == "TypeScript/JavaScript")
            .unwrap();
        assert!(ts.extensions.contains(&"tsx".to_owned()));
        assert_eq!(
            ts.install,
            "npm install -g typescript-language-server typescript"
        );
        let broken = SettingsLayer::parse(
            tool_core::RuleSourceKind::UserSettings,
            Path::new("/s.json"),
            r#"{"lsp": 3}"#,
        )
        .unwrap();
        assert!(
            language_servers(&[broken])
                .unwrap_err()
                .to_string()
                .contains("/s.json")
        );
    }

    fn check(section: Value, file: &str, expected: Option<(&str, &[&str])>) {
        let mut config = LspConfig::empty().with_server(
            "py",
            LanguageServerConfig::new("pyright-langserver", &["--stdio"]),
        );
        if let Err(e) = config.apply_section(&section) {
            panic!("{section}: {e}");
        }
        let got = config.server_for(Path::new(file)).map(|s| {
            (
                s.command.as_str(),
                s.args.iter().map(String::as_str).collect::<Vec<_>>(),
            )
        });
        assert_eq!(
            got,
            expected.map(|(c, a)| (c, a.to_vec())),
            "{section} for {file}"
        );
    }

    #[test]
    fn sections_map_extensions_to_servers() {
        check(
            json!({}),
            "a.py",
            Some(("pyright-langserver", &["--stdio"])),
        );
        check(
            json!({}),
            "a.PY",
            Some(("pyright-langserver", &["--stdio"])),
        );
        check(json!({"py": null}), "a.py", None);
        check(json!({".py": false}), "a.py", None);
        check(
            json!({"ts, .tsx": "tls --stdio"}),
            "a.tsx",
            Some(("tls", &["--stdio"])),
        );
        check(
            json!({"go": ["gopls", "serve"]}),
            "a.go",
            Some(("gopls", &["serve"])),
        );
        check(
            json!({"rs": {"command": "ra", "args": ["-v"], "env": {"A": "1"}}}),
            "x.rs",
            Some(("ra", &["-v"])),
        );
        check(json!({}), "Makefile", None);
    }

    #[test]
    fn timeouts_default_and_are_set_in_milliseconds() {
        let default = LanguageServerConfig::new("x", &[]);
        assert_eq!(default.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        assert_eq!(default.request_timeout, DEFAULT_REQUEST_TIMEOUT);
        let mut config = LspConfig::empty();
        config
            .apply_section(&json!({"py": {"command": "x", "startupTimeoutMs": 90000, "requestTimeoutMs": 500}}))
            .unwrap_or_else(|e| panic!("{e}"));
        let server = config
            .server_for(Path::new("a.py"))
            .unwrap_or_else(|| panic!("a server"));
        assert_eq!(server.startup_timeout, Duration::from_secs(90));
        assert_eq!(server.request_timeout, Duration::from_millis(500));
    }

    #[test]
    fn bad_sections_name_the_key() {
        for (section, needle) in [
            (json!([1]), "`lsp` must be an object"),
            (json!({"": "x"}), "names no file extension"),
            (json!({"py": 3}), "lsp.py must be"),
            (json!({"py": ""}), "lsp.py: the command is empty"),
            (json!({"py": {"args": []}}), "lsp.py.command is required"),
            (
                json!({"py": {"command": "x", "arg": []}}),
                "unknown field `arg`",
            ),
            (
                json!({"py": {"command": "x", "args": [1]}}),
                "lsp.py.args must hold strings",
            ),
            (
                json!({"py": {"command": "x", "env": {"A": 1}}}),
                "lsp.py.env.A must be a string",
            ),
            (
                json!({"py": {"command": "x", "startupTimeoutMs": 0}}),
                "lsp.py.startupTimeoutMs must be a positive number of milliseconds",
            ),
        ] {
            let err = LspConfig::empty()
                .apply_section(&section)
                .err()
                .unwrap_or_default();
            assert!(err.contains(needle), "{section}: {err}");
        }
    }

    #[test]
    fn settings_entries_for_known_servers_keep_their_markers() {
        let mut config = LspConfig::empty();
        assert!(
            config
                .apply_section(&json!({"py": "/opt/bin/pyright-langserver --stdio"}))
                .is_ok()
        );
        let markers = config
            .server_for(Path::new("a.py"))
            .map(|s| s.root_markers.clone())
            .unwrap_or_default();
        assert!(
            markers.contains(&"pyproject.toml".to_owned()),
            "{markers:?}"
        );
    }

    #[test]
    fn roots_are_the_nearest_marked_folder() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b/c")).unwrap_or_default();
        std::fs::write(root.join("a/pyproject.toml"), "").unwrap_or_default();
        let markers = default_markers(&["pyproject.toml"]);
        assert_eq!(
            find_root(&root.join("a/b/c/x.py"), &markers, root),
            root.join("a")
        );
        assert_eq!(
            find_root(&root.join("x.py"), &markers, root),
            root.to_path_buf()
        );
        let elsewhere = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            find_root(&elsewhere.path().join("y.py"), &markers, root),
            elsewhere.path().to_path_buf()
        );
    }
}
