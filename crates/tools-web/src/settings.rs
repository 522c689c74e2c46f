//! The `webFetch` and `webSearch` sections of the settings files, merged over the layers the
//! registry puts in the context (later layers override earlier ones, key by key).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tool_core::{SettingsLayer, ToolContext, ToolError};

/// The default total time limit of one fetch.
pub const TOTAL_TIMEOUT: Duration = Duration::from_secs(60);
/// The default time limit to open a connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default longest silence while reading a response.
pub const READ_TIMEOUT: Duration = Duration::from_secs(20);

/// One key's value and the file it came from (for error messages).
#[derive(Debug, Clone)]
struct Sourced {
    value: Value,
    file: PathBuf,
}

/// The merged section `name` of every layer.
#[derive(Debug, Default)]
struct Section {
    name: &'static str,
    keys: Map<String, Value>,
    files: std::collections::HashMap<String, PathBuf>,
}

impl Section {
    fn load(ctx: &ToolContext, name: &'static str) -> Result<Self, ToolError> {
        let mut section = Section {
            name,
            ..Section::default()
        };
        let Some(layers) = ctx.services().get::<Arc<Vec<SettingsLayer>>>() else {
            return Ok(section);
        };
        for layer in layers.iter() {
            match layer.settings.other.get(name) {
                None | Some(Value::Null) => {}
                Some(Value::Object(map)) => {
                    for (k, v) in map {
                        section.keys.insert(k.clone(), v.clone());
                        section.files.insert(k.clone(), layer.path.clone());
                    }
                }
                Some(_) => {
                    return Err(ToolError::Settings {
                        path: layer.path.clone(),
                        message: format!("`{name}` must be an object"),
                    });
                }
            }
        }
        Ok(section)
    }

    fn get(&self, key: &str) -> Option<Sourced> {
        let value = self.keys.get(key)?.clone();
        let file = self.files.get(key).cloned().unwrap_or_default();
        (!value.is_null()).then_some(Sourced { value, file })
    }

    fn bad(&self, key: &str, file: PathBuf, expected: &str) -> ToolError {
        ToolError::Settings {
            path: file,
            message: format!("`{}.{key}` must be {expected}", self.name),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, ToolError> {
        let Some(s) = self.get(key) else {
            return Ok(Vec::new());
        };
        let list = s.value.as_array().and_then(|items| {
            items
                .iter()
                .map(|i| i.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        });
        list.ok_or_else(|| self.bad(key, s.file, "a list of strings"))
    }

    fn string(&self, key: &str) -> Result<Option<String>, ToolError> {
        let Some(s) = self.get(key) else {
            return Ok(None);
        };
        match s.value.as_str() {
            Some(v) => Ok(Some(v.trim().to_owned()).filter(|v| !v.is_empty())),
            None => Err(self.bad(key, s.file, "a string")),
        }
    }

    fn seconds(&self, key: &str, default: Duration) -> Result<Duration, ToolError> {
        let Some(s) = self.get(key) else {
            return Ok(default);
        };
        match s.value.as_f64() {
            Some(v) if v > 0.0 && v <= 3600.0 => Ok(Duration::from_secs_f64(v)),
            _ => Err(self.bad(key, s.file, "a number of seconds between 0 and 3600")),
        }
    }

    fn count(&self, key: &str, default: usize, max: usize) -> Result<usize, ToolError> {
        let Some(s) = self.get(key) else {
            return Ok(default);
        };
        match s.value.as_u64() {
            Some(v) if v >= 1 && v as usize <= max => Ok(v as usize),
            _ => Err(self.bad(key, s.file, &format!("a whole number from 1 to {max}"))),
        }
    }
}

/// The `webFetch` section.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchSettings {
    /// `allowHttpHosts`: hosts fetched over plain http instead of being upgraded to https
    pub allow_http_hosts: Vec<String>,
    /// `allowPrivateHosts`: hosts the SSRF guard lets through even though they are (or
    /// resolve to) loopback, private or link-local addresses
    pub allow_private_hosts: Vec<String>,
    /// `timeoutSeconds`: the total limit of one fetch, redirects included (default 60)
    pub timeout: Duration,
    /// `connectTimeoutSeconds`: the limit to open a connection (default 10)
    pub connect_timeout: Duration,
    /// `readTimeoutSeconds`: the longest silence while waiting for data (default 20)
    pub read_timeout: Duration,
}

impl Default for FetchSettings {
    fn default() -> Self {
        FetchSettings {
            allow_http_hosts: Vec::new(),
            allow_private_hosts: Vec::new(),
            timeout: TOTAL_TIMEOUT,
            connect_timeout: CONNECT_TIMEOUT,
            read_timeout: READ_TIMEOUT,
        }
    }
}

impl FetchSettings {
    /// The merged `webFetch` section of the context's settings layers.
    pub fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        let s = Section::load(ctx, "webFetch")?;
        Ok(FetchSettings {
            allow_http_hosts: s.strings("allowHttpHosts")?,
            allow_private_hosts: s.strings("allowPrivateHosts")?,
            timeout: s.seconds("timeoutSeconds", TOTAL_TIMEOUT)?,
            connect_timeout: s.seconds("connectTimeoutSeconds", CONNECT_TIMEOUT)?,
            read_timeout: s.seconds("readTimeoutSeconds", READ_TIMEOUT)?,
        })
    }
}

/// The `webSearch` section.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchSettings {
    /// `provider`: `searxng` or `brave`; when absent, the one whose settings are present
    pub provider: Option<String>,
    /// `searxngUrl`: the SearXNG instance (its JSON format must be enabled)
    pub searxng_url: Option<String>,
    /// `braveApiKeyEnv`: the environment variable holding the Brave Search API key
    /// (default `BRAVE_API_KEY`)
    pub brave_api_key_env: Option<String>,
    /// `braveUrl`: the Brave web-search endpoint (default the public API)
    pub brave_url: Option<String>,
    /// `maxResults`: how many results to list (default 10, at most 20)
    pub max_results: usize,
    /// `timeoutSeconds`: the limit of one search request (default 30)
    pub timeout: Duration,
}

impl SearchSettings {
    /// The merged `webSearch` section of the context's settings layers.
    pub fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        let s = Section::load(ctx, "webSearch")?;
        Ok(SearchSettings {
            provider: s.string("provider")?.map(|p| p.to_ascii_lowercase()),
            searxng_url: s.string("searxngUrl")?,
            brave_api_key_env: s.string("braveApiKeyEnv")?,
            brave_url: s.string("braveUrl")?,
            max_results: s.count("maxResults", 10, 20)?,
            timeout: s.seconds("timeoutSeconds", Duration::from_secs(30))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use tool_core::RuleSourceKind;

    fn ctx(files: &[(&str, &str)]) -> ToolContext {
        let layers: Vec<SettingsLayer> = files
            .iter()
            .map(|(path, text)| {
                SettingsLayer::parse(RuleSourceKind::ProjectSettings, Path::new(path), text)
                    .unwrap()
            })
            .collect();
        ToolContext::builder(std::env::temp_dir())
            .service(Arc::new(layers))
            .build()
    }

    #[test]
    fn later_layers_override_key_by_key() {
        let c = ctx(&[
            (
                "/u.json",
                r#"{"webFetch": {"allowHttpHosts": ["a"], "timeoutSeconds": 5}}"#,
            ),
            (
                "/p.json",
                r#"{"webFetch": {"allowHttpHosts": ["b"], "readTimeoutSeconds": 0.5}}"#,
            ),
        ]);
        let s = FetchSettings::from_context(&c).unwrap();
        assert_eq!(s.allow_http_hosts, ["b"]);
        assert_eq!(s.timeout, Duration::from_secs(5));
        assert_eq!(s.read_timeout, Duration::from_millis(500));
        assert_eq!(s.connect_timeout, CONNECT_TIMEOUT);
        let none = ToolContext::builder(std::env::temp_dir()).build();
        assert_eq!(
            FetchSettings::from_context(&none).unwrap(),
            FetchSettings::default()
        );
    }

    #[test]
    fn wrong_shapes_name_the_file_and_key() {
        let c = ctx(&[("/p.json", r#"{"webFetch": {"allowPrivateHosts": "x"}}"#)]);
        assert_eq!(
            FetchSettings::from_context(&c).unwrap_err().to_string(),
            "invalid settings file /p.json: `webFetch.allowPrivateHosts` must be a list of strings"
        );
        let c = ctx(&[("/p.json", r#"{"webSearch": {"maxResults": 50}}"#)]);
        assert_eq!(
            SearchSettings::from_context(&c).unwrap_err().to_string(),
            "invalid settings file /p.json: `webSearch.maxResults` must be a whole number from 1 to 20"
        );
        let c = ctx(&[("/p.json", r#"{"webSearch": 3}"#)]);
        assert!(SearchSettings::from_context(&c).is_err());
    }
}
