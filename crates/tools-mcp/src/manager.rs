//! The MCP client manager: connects the servers of `.mcp.json` (each a [`ServerConn`]) in
//! the background, concurrently and each under its start-up timeout, so no server holds up
//! the host ([`McpManager::wait_started`] waits for them when a host wants to); offers one
//! pool tool per server tool, and announces a change of the servers' tools to whoever follows
//! the manager ([`McpManager::subscribe`], used by [`crate::LivePool`]). A server that fails,
//! or whose `.mcp.json` entry has a problem, stays listed with its error and never blocks the
//! others.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::Tool as McpToolDecl;
use tokio::sync::watch;
use tool_core::{Tool, ToolContext, ToolError};

use crate::config::{McpConfig, SkippedServer};
use crate::naming::{clean_description, invalid_tool_name, qualified_name, sanitize};
use crate::server_conn::{ManagerState, ServerConn, ServerStatus, StderrTail};
use crate::tool::McpTool;

/// The MCP servers of a session.
#[derive(Debug)]
pub struct McpManager {
    servers: Vec<Arc<ServerConn>>,
    /// Servers of the configuration that were not started, with why
    skipped: Vec<SkippedServer>,
    shared: Arc<ManagerState>,
    /// Every pool tool handed out, by name: a tool keeps the definition it was first offered
    /// with, so a definition that changes later is refused rather than silently accepted.
    offered: Mutex<HashMap<String, Arc<McpTool>>>,
}
impl tool_core::ServiceType for McpManager {}

/// Whether the pool names of the tools of servers named `a` and `b`
/// (`mcp__<server>__<tool>`, each part sanitised) can be the same name: when the two
/// servers' parts are equal, or one is the other followed by `_` or by `__` and more (then
/// `mcp__a__b__x` is both tool `b__x` of `a` and tool `x` of `a__b`).
pub(crate) fn ambiguous(a: &str, b: &str) -> bool {
    let (x, y) = (sanitize(a), sanitize(b));
    let (short, long) = if x.len() <= y.len() { (x, y) } else { (y, x) };
    long == short || long == format!("{short}_") || long.starts_with(&format!("{short}__"))
}

/// Leaves out (as skipped, naming both) every server whose tools' names would be ambiguous
/// with those of a server before it in name order: a rule or a person reading
/// `mcp__a__b__x` could not tell which server it means.
fn refuse_ambiguous(config: &mut McpConfig) {
    let mut kept: Vec<crate::config::ServerConfig> = Vec::new();
    for server in std::mem::take(&mut config.servers) {
        match kept.iter().find(|k| ambiguous(&k.name, &server.name)) {
            Some(other) => config.skipped.push(SkippedServer {
                reason: format!(
                    "mcpServers.{}: not started: its tools' names (mcp__{}__…) could be read as tools of the server \"{}\" (mcp__{}__…), so a rule or a reader could not tell the two apart; rename one of \"{}\" and \"{}\"",
                    server.name,
                    sanitize(&server.name),
                    other.name,
                    sanitize(&other.name),
                    other.name,
                    server.name
                ),
                name: server.name,
            }),
            None => kept.push(server),
        }
    }
    config.servers = kept;
}

impl McpManager {
    /// Starts connecting every server of `config` in the background, concurrently, each
    /// under its start-up timeout, and returns at once: a server's tools join
    /// [`Self::tools`] (announced through [`Self::subscribe`]) when it is ready, and
    /// [`Self::wait_started`] waits for them. Failures are kept as the server's status and
    /// never stop the others; servers the configuration skipped are listed with their
    /// problem.
    ///
    /// The session `ctx` gives the project root (a stdio server's default directory) and the
    /// working directories, which servers get as MCP roots (saved blobs go to the private
    /// state directory of the session that fetched them). Needs a tokio runtime.
    pub fn start(config: impl Into<McpConfig>, ctx: &ToolContext) -> Result<Arc<Self>, ToolError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            ToolError::fatal("MCP servers can only be started inside a tokio runtime")
        })?;
        let mut config = config.into();
        refuse_ambiguous(&mut config);
        let shared = Arc::new(ManagerState::of_session(ctx));
        let servers: Vec<Arc<ServerConn>> = config
            .servers
            .into_iter()
            .map(|c| ServerConn::new(c, Arc::clone(&shared)))
            .collect();
        for server in &servers {
            let server = Arc::clone(server);
            runtime.spawn(async move {
                let _ = server.peer().await;
                server.first_attempt_done();
            });
        }
        Ok(Arc::new(McpManager {
            servers,
            skipped: config.skipped,
            shared,
            offered: Mutex::new(HashMap::new()),
        }))
    }

    /// Waits until every server's first connection attempt has ended (connected or
    /// failed), for at most `limit` (`None`: each server's own start-up timeout bounds it).
    /// Returns the names of the servers still starting, sorted.
    pub async fn wait_started(&self, limit: Option<Duration>) -> Vec<String> {
        let mut started = self.shared.signals.started.subscribe();
        let deadline = limit.map(|l| tokio::time::Instant::now() + l);
        loop {
            let starting = self.starting();
            if starting.is_empty() {
                return starting;
            }
            let changed = started.changed();
            let ended = match deadline {
                Some(deadline) => match tokio::time::timeout_at(deadline, changed).await {
                    Ok(result) => result.is_err(),
                    Err(_) => true,
                },
                None => changed.await.is_err(),
            };
            if ended {
                return self.starting();
            }
        }
    }

    /// Waits until the first connection attempt of the server named `name` has ended (its
    /// start-up timeout bounds it); returns at once for a server not starting. A host calls
    /// this before a call of one of that server's tools, which cannot run sooner.
    pub async fn wait_for_server(&self, name: &str) {
        let Some(server) = self.server(name) else {
            return;
        };
        let mut started = self.shared.signals.started.subscribe();
        while server.is_starting() {
            if started.changed().await.is_err() {
                return;
            }
        }
    }

    /// The names of the servers whose first connection attempt is still under way.
    pub fn starting(&self) -> Vec<String> {
        self.servers
            .iter()
            .filter(|s| s.is_starting())
            .map(|s| s.name().to_owned())
            .collect()
    }

    /// A receiver that wakes whenever a server's first connection attempt ends; the value
    /// counts those that have. Hosts use it to report failures as they happen.
    pub fn subscribe_started(&self) -> watch::Receiver<usize> {
        self.shared.signals.started.subscribe()
    }

    /// A receiver that wakes whenever a server's listed tools change (after it started,
    /// after a `tools/list_changed` refresh or a reconnect); the value is
    /// [`Self::generation`].
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.signals.generation.subscribe()
    }

    /// Counts the changes of the servers' tool lists so far.
    pub fn generation(&self) -> u64 {
        *self.shared.signals.generation.borrow()
    }

    /// Waits until every `tools/list_changed` received so far has been followed by a fresh
    /// `tools/list` (or has failed), each server for at most its start-up timeout. A batch
    /// host calls this between calls, so a call that changed the tool list is followed by a
    /// call that sees the new list.
    pub async fn settle(&self) {
        let signals = &self.shared.signals;
        for server in &self.servers {
            let deadline = tokio::time::Instant::now() + server.config.startup_timeout;
            loop {
                let woken = signals.settled.notified();
                if server.refreshing.load(Ordering::SeqCst) == 0 {
                    break;
                }
                if tokio::time::timeout_at(deadline, woken).await.is_err() {
                    break;
                }
            }
        }
    }

    /// The configured server names (those skipped included), sorted.
    pub fn server_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .servers
            .iter()
            .map(|s| s.name().to_owned())
            .chain(self.skipped.iter().map(|s| s.name.clone()))
            .collect();
        names.sort();
        names
    }

    pub(crate) fn server(&self, name: &str) -> Option<&Arc<ServerConn>> {
        self.servers.iter().find(|s| s.name() == name)
    }

    pub(crate) fn servers(&self) -> &[Arc<ServerConn>] {
        &self.servers
    }

    /// The servers of the configuration that were not started, with why.
    pub fn skipped(&self) -> &[SkippedServer] {
        &self.skipped
    }

    /// Each server's state, sorted by name (skipped servers included, with their problem
    /// as the error).
    pub fn statuses(&self) -> Vec<ServerStatus> {
        let mut statuses: Vec<ServerStatus> = self
            .servers
            .iter()
            .map(|s| s.status())
            .chain(self.skipped.iter().map(|s| ServerStatus {
                name: s.name.clone(),
                starting: false,
                connected: false,
                protocol_version: None,
                error: Some(skipped_message(s)),
                tools: 0,
                warnings: Vec::new(),
            }))
            .collect();
        statuses.sort_by(|a, b| a.name.cmp(&b.name));
        statuses
    }

    /// The status of the server whose tools are named like `tool` (`mcp__<server>__…`), if
    /// one is configured.
    pub fn status_of_tool(&self, tool: &str) -> Option<ServerStatus> {
        self.statuses()
            .into_iter()
            .filter(|s| tool.starts_with(&format!("mcp__{}__", sanitize(&s.name))))
            .max_by_key(|s| s.name.len())
    }

    /// How many `tools/list_changed` refreshes `server` has had.
    pub fn list_changes(&self, server: &str) -> u64 {
        self.server(server)
            .map(|s| s.list_changes.load(Ordering::Relaxed))
            .unwrap_or(0)
    }

    /// The stderr tail kept for `server`.
    pub fn stderr(&self, server: &str) -> Option<Arc<StderrTail>> {
        self.server(server).map(|s| Arc::clone(&s.stderr))
    }

    /// One pool tool per server tool, named `mcp__<server>__<tool>`. Tools with invalid
    /// names are left out; names that collide after sanitising are all left out (fail
    /// closed) with a warning naming both; descriptions are capped and cleaned.
    ///
    /// A tool this manager handed out before comes back as the same tool, with the
    /// definition it was first offered with: when the server changed that definition
    /// since, the tool refuses its calls (a "rug pull"); only tools new to the session
    /// join with their current definition.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut by_name: BTreeMap<String, Vec<(Arc<ServerConn>, McpToolDecl)>> = BTreeMap::new();
        for server in &self.servers {
            for decl in server.listed_tools() {
                if let Some(why) = invalid_tool_name(&decl.name) {
                    server.warn(format!(
                        "tool {:?} of server \"{}\" was rejected: {why}",
                        crate::tool::preview(&decl.name),
                        server.name()
                    ));
                    continue;
                }
                let name = qualified_name(server.name(), &decl.name);
                by_name
                    .entry(name)
                    .or_default()
                    .push((Arc::clone(server), decl));
            }
        }
        let mut offered = self
            .offered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for (name, entries) in by_name {
            if entries.len() > 1 {
                let who: Vec<String> = entries
                    .iter()
                    .map(|(s, d)| format!("\"{}\" of server \"{}\"", d.name, s.name()))
                    .collect();
                for (server, _) in &entries {
                    server.warn(format!(
                        "{} all map to {name} after sanitising; none of them is offered",
                        who.join(" and ")
                    ));
                }
                continue;
            }
            for (server, decl) in entries {
                if let Some(known) = offered.get(&name)
                    && known.is_of(&server, &decl.name)
                {
                    tools.push(Arc::clone(known) as Arc<dyn Tool>);
                    continue;
                }
                let (description, warnings) =
                    clean_description(decl.description.as_deref().unwrap_or(""));
                for w in warnings {
                    server.warn(format!("{name}: {w}"));
                }
                let tool = Arc::new(McpTool::new(server, decl, name.clone(), description));
                offered.insert(name.clone(), Arc::clone(&tool));
                tools.push(tool);
            }
        }
        tools
    }

    /// Disconnects every server, killing stdio servers' process groups; servers still
    /// starting are stopped too, and none starts again.
    pub async fn shutdown(&self) {
        self.shared.closing.cancel();
        for server in &self.servers {
            server.disconnect().await;
        }
    }
}

/// How a host reports a server the configuration skipped.
pub(crate) fn skipped_message(skipped: &SkippedServer) -> String {
    format!(
        "MCP server \"{}\" was not started: {}",
        skipped.name, skipped.reason
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_whose_tool_names_could_be_read_as_each_others_are_refused() {
        let check = |a: &str, b: &str, expected: bool| {
            assert_eq!(ambiguous(a, b), expected, "{a} / {b}");
            assert_eq!(ambiguous(b, a), expected, "{b} / {a}");
        };
        check("a", "a__b", true);
        check("a", "a___b", true);
        check("a", "a_", true);
        check("my.server", "my_server", true);
        check("a", "a", true);
        check("a", "a_b", false);
        check("a", "ab", false);
        check("a_", "a__", true);
        check("a_b", "a_c", false);
        check("git", "github", false);
        let server = |name: &str| crate::config::ServerConfig {
            name: name.to_owned(),
            transport: crate::config::Transport::Stdio {
                command: "true".into(),
                args: Vec::new(),
                env: Default::default(),
                cwd: None,
            },
            startup_timeout: Duration::from_secs(1),
            call_timeout: Duration::from_secs(1),
            max_message_bytes: crate::config::DEFAULT_MAX_MESSAGE_BYTES,
        };
        let mut config = McpConfig::from(vec![
            server("a"),
            server("a__b"),
            server("a_b"),
            server("b"),
        ]);
        refuse_ambiguous(&mut config);
        let kept: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(kept, ["a", "a_b", "b"]);
        assert_eq!(config.skipped.len(), 1);
        let reason = &config.skipped[0].reason;
        assert!(
            reason.starts_with("mcpServers.a__b: not started")
                && reason.contains("rename one of \"a\" and \"a__b\""),
            "{reason}"
        );
    }

    #[tokio::test]
    async fn skipped_servers_are_listed_and_tool_names_find_their_server() {
        let dir = std::env::temp_dir();
        let ctx = ToolContext::builder(&dir).state_dir(&dir).build();
        let skipped = ["a", "a_b", "my.server"]
            .map(|name| SkippedServer {
                name: name.to_owned(),
                reason: format!("mcpServers.{name}: broken"),
            })
            .to_vec();
        let manager = McpManager::start(
            McpConfig {
                servers: Vec::new(),
                skipped,
            },
            &ctx,
        )
        .unwrap();
        assert_eq!(manager.server_names(), ["a", "a_b", "my.server"]);
        assert!(manager.wait_started(None).await.is_empty());
        let status = &manager.statuses()[1];
        assert_eq!(
            status.error.as_deref(),
            Some("MCP server \"a_b\" was not started: mcpServers.a_b: broken")
        );
        assert!(!status.starting && !status.connected);
        let check = |tool: &str, expected: Option<&str>| {
            let got = manager.status_of_tool(tool).map(|s| s.name);
            assert_eq!(got.as_deref(), expected, "{tool}");
        };
        check("mcp__a__x", Some("a"));
        check("mcp__a_b__x", Some("a_b"));
        check("mcp__my_server__x", Some("my.server"));
        check("mcp__b__x", None);
        check("Read", None);
    }
}
