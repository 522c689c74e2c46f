//! Integration tests of tools-web through tool-core's execution path (`ToolPool`), against
//! in-process HTTP servers on 127.0.0.1: the SSRF guard (safety catalogue rows 38–46, both
//! refusing and, with the host allowed in settings, passing), redirects, caps, conversion,
//! the cache, permissions, the summariser hook, and WebSearch against servers that answer in
//! SearXNG's and Brave's formats.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fetch;
mod search;
mod server;
mod snapshots;

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use tempfile::TempDir;
use tool_core::{
    CallResult, PermissionEngine, PermissionMode, PermissionRule, RuleBehavior, RuleSource,
    RuleSourceKind, SettingsLayer, SourcedRule, ToolContext, ToolPool,
};
use tools_web::HostLookup;

/// A session for the tests: its own working and state directories, settings given as JSON
/// text, a permission mode and command-line rules.
pub struct Session {
    dir: TempDir,
    /// The session's context
    pub ctx: ToolContext,
}

impl Session {
    /// A session in bypassPermissions mode (the guard is under test, not the rules) with
    /// these settings.
    pub fn new(settings: Value) -> Session {
        Session::with(settings, PermissionMode::BypassPermissions, &[])
    }

    /// The settings that let the tests reach the local server: plain http and the guard's
    /// exemption for 127.0.0.1.
    pub fn local() -> Session {
        Session::new(local_settings())
    }

    /// A session with `mode` and command-line `rules`.
    pub fn with(settings: Value, mode: PermissionMode, rules: &[(RuleBehavior, &str)]) -> Session {
        Session::build(settings, mode, rules, |b| b)
    }

    /// A session with `mode`, `rules`, and whatever `extra` adds to the context.
    pub fn build(
        settings: Value,
        mode: PermissionMode,
        rules: &[(RuleBehavior, &str)],
        extra: impl FnOnce(tool_core::ToolContextBuilder) -> tool_core::ToolContextBuilder,
    ) -> Session {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        let layer =
            SettingsLayer::parse(RuleSourceKind::FlagSettings, &file, &settings.to_string())
                .unwrap();
        let source = RuleSource {
            kind: RuleSourceKind::CliArg,
            file: None,
            root: dir.path().to_path_buf(),
        };
        let rules = rules
            .iter()
            .map(|(behavior, text)| SourcedRule {
                rule: PermissionRule::parse(text).unwrap(),
                behavior: *behavior,
                source: source.clone(),
            })
            .collect();
        let builder = ToolContext::builder(dir.path())
            .state_dir(dir.path().join("state"))
            .mode(mode)
            .permissions(PermissionEngine::new(rules))
            .service(Arc::new(vec![layer]));
        let ctx = extra(builder).build();
        Session { dir, ctx }
    }

    /// The session's state directory.
    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// Calls `tool` through a pool of this crate's tools.
    pub async fn call(&self, tool: &str, input: Value) -> CallResult {
        ToolPool::new(tools_web::tools())
            .call(tool, input, &self.ctx)
            .await
    }

    /// Calls WebFetch on `url` with a fixed prompt.
    pub async fn fetch(&self, url: &str) -> CallResult {
        self.call(
            "WebFetch",
            json!({"url": url, "prompt": "What does the page say?"}),
        )
        .await
    }
}

/// Plain http and the guard's exemption for 127.0.0.1.
pub fn local_settings() -> Value {
    json!({"webFetch": {"allowHttpHosts": ["127.0.0.1"], "allowPrivateHosts": ["127.0.0.1"]}})
}

/// A resolver for made-up names: a fixed table, and optionally different answers on later
/// lookups (to play a rebinding DNS server). Counts lookups.
#[derive(Default)]
pub struct FakeDns {
    first: HashMap<String, Vec<IpAddr>>,
    later: HashMap<String, Vec<IpAddr>>,
    seen: Mutex<HashMap<String, usize>>,
    /// How many lookups were made
    pub lookups: AtomicUsize,
}

impl FakeDns {
    /// Answers from `table` (name, addresses).
    pub fn new(table: &[(&str, &[&str])]) -> FakeDns {
        let mut dns = FakeDns::default();
        for (name, addrs) in table {
            dns.first.insert(
                (*name).to_owned(),
                addrs.iter().map(|a| a.parse().unwrap()).collect(),
            );
        }
        dns
    }

    /// Answers `addrs` for `name` from the second lookup on.
    pub fn then(mut self, name: &str, addrs: &[&str]) -> FakeDns {
        self.later.insert(
            name.to_owned(),
            addrs.iter().map(|a| a.parse().unwrap()).collect(),
        );
        self
    }
}

#[async_trait]
impl HostLookup for FakeDns {
    async fn lookup(&self, host: &str) -> std::io::Result<Vec<IpAddr>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        let n = {
            let mut seen = self.seen.lock().unwrap();
            let n = seen.entry(host.to_owned()).or_default();
            *n += 1;
            *n
        };
        let table = if n > 1 && self.later.contains_key(host) {
            &self.later
        } else {
            &self.first
        };
        table
            .get(host)
            .cloned()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such host"))
    }
}

/// A session whose names resolve through `dns`.
pub fn session_with_dns(settings: Value, dns: Arc<FakeDns>) -> Session {
    let lookup: Arc<dyn HostLookup> = dns;
    Session::build(settings, PermissionMode::BypassPermissions, &[], |b| {
        b.service(lookup)
    })
}

/// Whether `path` is inside `dir`.
pub fn is_under(path: &Path, dir: &Path) -> bool {
    path.starts_with(dir)
}
