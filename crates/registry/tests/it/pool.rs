//! Pool assembly: stable ordinal order, built-ins first, MCP duplicates dropped, blanket
//! deny and `is_enabled` respected, and the features that decide which tools exist.

use std::sync::Arc;

use async_trait::async_trait;
use registry::{ToolRegistry, assemble_pool};
use serde_json::{Value, json};
use tool_core::{
    ParsedInput, PermissionDecision, PermissionEngine, PermissionRule, RuleBehavior, RuleSource,
    RuleSourceKind, SourcedRule, Tool, ToolCategory, ToolContext, ToolError, ToolResult,
    ValidationResult,
};

/// A dynamic tool the way MCP tools are: a name and a JSON schema, no Rust input type.
struct Dynamic {
    name: String,
    aliases: Vec<&'static str>,
    enabled: bool,
    category: ToolCategory,
    schema: Value,
}

fn dynamic(name: &str, category: ToolCategory) -> Arc<dyn Tool> {
    Arc::new(Dynamic {
        name: name.to_owned(),
        aliases: Vec::new(),
        enabled: true,
        category,
        schema: json!({"type": "object", "properties": {}}),
    })
}

#[async_trait]
impl Tool for Dynamic {
    fn name(&self) -> &str {
        &self.name
    }
    fn aliases(&self) -> &[&str] {
        &self.aliases
    }
    fn category(&self) -> ToolCategory {
        self.category
    }
    fn is_enabled(&self) -> bool {
        self.enabled
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    async fn description(&self, _input: Option<&ParsedInput>) -> String {
        format!("the {} tool", self.name)
    }
    fn parse_input(&self, raw: &Value) -> Result<ParsedInput, ToolError> {
        Ok(ParsedInput::from_json(raw.clone()))
    }
    fn is_concurrency_safe(&self, _input: &ParsedInput) -> bool {
        true
    }
    fn is_read_only(&self, _input: &ParsedInput) -> bool {
        true
    }
    async fn validate(&self, _input: &ParsedInput, _ctx: &ToolContext) -> ValidationResult {
        ValidationResult::Valid
    }
    async fn check_permission(
        &self,
        _input: &ParsedInput,
        _ctx: &ToolContext,
    ) -> PermissionDecision {
        PermissionDecision::Allow
    }
    async fn call(
        &self,
        _input: ParsedInput,
        _ctx: &ToolContext,
    ) -> Result<ToolResult<Value>, ToolError> {
        Ok(ToolResult::ok(json!(self.name)))
    }
}

fn engine(deny: &[&str]) -> PermissionEngine {
    let source = RuleSource {
        kind: RuleSourceKind::CliArg,
        file: None,
        root: "/".into(),
    };
    PermissionEngine::new(
        deny.iter()
            .map(|r| SourcedRule {
                rule: PermissionRule::parse(r).unwrap(),
                behavior: RuleBehavior::Deny,
                source: source.clone(),
            })
            .collect(),
    )
}

#[track_caller]
fn check(base: &[&str], mcp: &[&str], deny: &[&str], expected: &[&str]) {
    let base: Vec<Arc<dyn Tool>> = base
        .iter()
        .map(|n| dynamic(n, ToolCategory::FileSystem))
        .collect();
    let mcp: Vec<Arc<dyn Tool>> = mcp.iter().map(|n| dynamic(n, ToolCategory::Mcp)).collect();
    let pool = assemble_pool(&base, mcp, &engine(deny));
    assert_eq!(pool.names(), expected);
}

#[test]
fn ordinal_order_built_ins_first() {
    check(
        &["b", "Write", "A", "a", "Read"],
        &[],
        &[],
        &["A", "Read", "Write", "a", "b"],
    );
    check(
        &["Read", "Bash"],
        &["mcp__z__x", "mcp__a__y"],
        &[],
        &["Bash", "Read", "mcp__a__y", "mcp__z__x"],
    );
    // MCP tools never interleave with built-ins, even when their names sort first.
    check(&["Zed"], &["Alpha"], &[], &["Zed", "Alpha"]);
}

#[test]
fn mcp_cannot_take_a_built_in_name() {
    check(
        &["Read", "Bash"],
        &["Bash", "mcp__s__t"],
        &[],
        &["Bash", "Read", "mcp__s__t"],
    );
    // Not even the name of a built-in the rules hide.
    check(&["Read", "Bash"], &["Bash"], &["Bash"], &["Read"]);
    // Duplicates among MCP tools keep one.
    check(&[], &["mcp__s__t", "mcp__s__t"], &[], &["mcp__s__t"]);
}

#[test]
fn mcp_cannot_take_a_built_in_alias() {
    let agent: Arc<dyn Tool> = Arc::new(Dynamic {
        name: "Agent".into(),
        aliases: vec!["Task"],
        enabled: true,
        category: ToolCategory::Agent,
        schema: json!({"type": "object"}),
    });
    let pool = assemble_pool(
        &[agent],
        vec![dynamic("Task", ToolCategory::Mcp)],
        &engine(&[]),
    );
    assert_eq!(pool.names(), ["Agent"]);
    assert_eq!(pool.get("Task").map(|t| t.name()), Some("Agent"));
}

#[test]
fn blanket_deny_hides_tools() {
    check(
        &["Read", "Bash"],
        &["mcp__gh__issue", "mcp__gh__pr", "mcp__fs__read"],
        &["Bash"],
        &["Read", "mcp__fs__read", "mcp__gh__issue", "mcp__gh__pr"],
    );
    check(
        &["Read"],
        &["mcp__gh__issue", "mcp__gh__pr", "mcp__fs__read"],
        &["mcp__gh"],
        &["Read", "mcp__fs__read"],
    );
    check(
        &["Read"],
        &["mcp__gh__issue", "mcp__gh__pr"],
        &["mcp__gh__*"],
        &["Read"],
    );
    check(
        &["Read"],
        &["mcp__gh__issue", "mcp__gh__pr"],
        &["mcp__gh__pr"],
        &["Read", "mcp__gh__issue"],
    );
    // A scoped deny leaves the tool in the pool.
    check(&["Read", "Bash"], &[], &["Bash(rm *)"], &["Bash", "Read"]);
}

#[test]
fn disabled_tools_are_left_out() {
    let off: Arc<dyn Tool> = Arc::new(Dynamic {
        name: "Off".into(),
        aliases: Vec::new(),
        enabled: false,
        category: ToolCategory::Config,
        schema: json!({"type": "object"}),
    });
    let pool = assemble_pool(
        &[off, dynamic("On", ToolCategory::Config)],
        Vec::new(),
        &engine(&[]),
    );
    assert_eq!(pool.names(), ["On"]);
}

#[test]
fn base_tools_are_built_once_and_sorted() {
    let registry = ToolRegistry::new();
    let first = registry.base_tools().as_ptr();
    assert_eq!(registry.base_tools().as_ptr(), first);
    let names: Vec<&str> = registry.base_tools().iter().map(|t| t.name()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
}

#[test]
fn features_decide_which_tools_exist() {
    let names: Vec<String> = ToolRegistry::new()
        .base_tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    for fs in [
        "Edit",
        "Glob",
        "Grep",
        "MultiEdit",
        "NotebookEdit",
        "Read",
        "Write",
    ] {
        assert_eq!(
            names.iter().any(|n| n == fs),
            cfg!(feature = "fs"),
            "{fs}: {names:?}"
        );
    }
    for web in ["WebFetch", "WebSearch"] {
        assert_eq!(
            names.iter().any(|n| n == web),
            cfg!(feature = "web"),
            "{names:?}"
        );
    }
    for (shell, present) in [
        ("Bash", cfg!(feature = "shell")),
        ("TaskOutput", cfg!(feature = "shell")),
        (
            "TaskStop",
            cfg!(all(feature = "shell", feature = "v2-todo")),
        ),
        ("Monitor", cfg!(feature = "agent-triggers")),
    ] {
        assert_eq!(
            names.iter().any(|n| n == shell),
            present,
            "{shell}: {names:?}"
        );
    }
    assert_eq!(
        names.iter().any(|n| n == "LSP"),
        cfg!(feature = "lsp"),
        "LSP: {names:?}"
    );
    for agent in [
        "Agent",
        "AskUserQuestion",
        "Config",
        "EnterPlanMode",
        "EnterWorktree",
        "ExitPlanMode",
        "ExitWorktree",
        "SendUserMessage",
        "Skill",
        "TodoWrite",
        "ToolSearch",
    ] {
        assert_eq!(
            names.iter().any(|n| n == agent),
            cfg!(feature = "agent"),
            "{agent}: {names:?}"
        );
    }
    for task in ["TaskCreate", "TaskGet", "TaskList", "TaskUpdate"] {
        assert_eq!(
            names.iter().any(|n| n == task),
            cfg!(all(feature = "agent", feature = "v2-todo")),
            "{task}: {names:?}"
        );
    }
    for mcp in ["ListMcpResourcesTool", "ReadMcpResourceTool"] {
        assert_eq!(
            names.iter().any(|n| n == mcp),
            cfg!(feature = "mcp"),
            "{mcp}: {names:?}"
        );
    }
    for cron in ["CronCreate", "CronDelete", "CronList"] {
        assert_eq!(
            names.iter().any(|n| n == cron),
            cfg!(feature = "agent-triggers"),
            "{cron}: {names:?}"
        );
    }
    for team in ["SendMessage", "TeamCreate", "TeamDelete"] {
        assert_eq!(
            names.iter().any(|n| n == team),
            cfg!(feature = "agent"),
            "{team}: {names:?}"
        );
    }
}

/// An MCP server that offers tools named `Read` and `Glob` does not shadow the built-ins:
/// its tools are reachable only as `mcp__fake__Read` and `mcp__fake__Glob`, after every
/// built-in, and `Read` stays the file tool.
#[cfg(all(feature = "mcp", feature = "fs"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_offering_read_does_not_shadow_the_built_in() {
    let (_dir, root) = test_support::tempdir();
    let log = root.join("log");
    std::fs::create_dir(&log).unwrap();
    let script = test_support::mcp::fake_server();
    let config = json!({"mcpServers": {"fake": {"command": "python3", "args": [script, log],
        "env": {"FAKE_TOOLS": r#"[{"name": "Read"}, {"name": "Glob"}]"#}}}});
    std::fs::write(root.join(".mcp.json"), config.to_string()).unwrap();
    // A person approved this `.mcp.json` (as `agent-tools trust` records it).
    tool_core::TrustStore::in_state_dir(&root.join("state"))
        .approve(
            &root,
            tool_core::MCP_JSON,
            &tool_core::sha256_hex(config.to_string().as_bytes()),
        )
        .unwrap();
    std::fs::write(root.join("a.txt"), "from the built-in\n").unwrap();
    let ctx = ToolContext::builder(&root)
        .state_dir(root.join("state"))
        .build();
    let manager = registry::start_mcp_servers(&ctx).unwrap().unwrap();
    // Servers start in the background; this test wants the pool once they are up.
    assert!(manager.wait_started(None).await.is_empty());
    let pool = ToolRegistry::new().pool(ctx.permissions(), manager.tools());
    let read = pool.get("Read").unwrap();
    assert_eq!(read.category(), ToolCategory::FileSystem);
    assert!(pool.get("mcp__fake__Read").is_some(), "{:?}", pool.names());
    assert!(pool.get("mcp__fake__Glob").is_some(), "{:?}", pool.names());
    let names = pool.names();
    let first_mcp = names.iter().position(|n| n.starts_with("mcp__")).unwrap();
    assert!(
        names[first_mcp..].iter().all(|n| n.starts_with("mcp__")),
        "{names:?}"
    );
    let r = pool
        .call("Read", json!({"file_path": root.join("a.txt")}), &ctx)
        .await;
    assert!(
        !r.is_error && r.text().contains("from the built-in"),
        "{r:?}"
    );
    manager.shutdown().await;
}
