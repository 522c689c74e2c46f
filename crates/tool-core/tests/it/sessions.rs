//! What a session may do with respect to another: a sub-agent's context never allows more
//! than its caller's (one total order of modes, followed as the caller changes mode), the
//! state directory's parts of other clients are off limits, a session writes only its own
//! plan file, and a rule for one MCP server never covers another's tools.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{
    ParsedInput, PermissionDecision, PermissionMode, PermissionRule, Tool, ToolCategory,
    ToolContext, ToolError, ToolPool, ToolResult, ValidationResult,
};

use crate::fixtures::{Files, arc, context, tmp};

#[test]
fn modes_are_one_total_order_with_plan_strictest() {
    use PermissionMode::*;
    let order = [Plan, DontAsk, Default, AcceptEdits, BypassPermissions];
    for (i, a) in order.iter().enumerate() {
        for (j, b) in order.iter().enumerate() {
            assert_eq!(a.allows_more_than(*b), i > j, "{a} {b}");
            assert_eq!(a.capped_at(*b), order[i.min(j)], "{a} {b}");
        }
    }
}

#[test]
fn a_sub_context_follows_its_caller_down_and_never_up() {
    let (_guard, dir) = tmp();
    for caller_mode in PermissionMode::ALL {
        for own in PermissionMode::ALL {
            let caller = context(&dir, caller_mode, &[]);
            let sub = ToolContext::builder(&dir)
                .mode(own)
                .mode_ceiling(&caller)
                .build();
            assert_eq!(
                sub.permission_mode(),
                own.capped_at(caller_mode),
                "{caller_mode} {own}"
            );
            // The caller enters plan mode: so does the sub-context, at once.
            caller.set_permission_mode(PermissionMode::Plan);
            assert_eq!(sub.permission_mode(), PermissionMode::Plan);
            assert_eq!(sub.own_permission_mode(), own);
            // A sub-context of a dontAsk caller asks nobody, even in plan mode.
            caller.set_permission_mode(PermissionMode::DontAsk);
            assert!(sub.refuses_asks(), "{caller_mode} {own}");
            // Once the caller's session is gone, its own mode stands.
            drop(caller);
            assert_eq!(sub.permission_mode(), own);
        }
    }
}

/// What a Files call of `path` (`{state}` is the state directory) comes to in a session
/// whose private state directory is `<state>/principals/mine`.
async fn files(write: bool, path: &str, mode: PermissionMode) -> Result<(), String> {
    let (_guard, dir) = tmp();
    let (_state_guard, state) = tmp();
    let ctx = ToolContext::builder(&dir)
        .mode(mode)
        .state_dir(&state)
        .private_state_dir(state.join("principals/mine"))
        .session_id("s1")
        .build();
    let path = path.replace("{state}", &state.display().to_string());
    let result = ToolPool::new(vec![arc(Files)])
        .call("Files", json!({"path": path, "write": write}), &ctx)
        .await;
    if result.is_error {
        Err(result.text())
    } else {
        Ok(())
    }
}

#[tokio::test]
async fn the_state_of_other_clients_is_off_limits_and_plans_are_per_session() {
    use PermissionMode::*;
    let foreign = "belongs to another client";
    let not_own = "is not this session's plan file";
    // (write, path, mode, expected: "allow" or a part of the error)
    let cases: &[(bool, &str, PermissionMode, &str)] = &[
        (
            false,
            "{state}/principals/mine/todos/s1.json",
            Default,
            "allow",
        ),
        (
            false,
            "{state}/principals/mine/plans/other.md",
            Default,
            "allow",
        ),
        (
            false,
            "{state}/principals/theirs/plans/s2.md",
            BypassPermissions,
            foreign,
        ),
        (
            true,
            "{state}/principals/theirs/plans/s2.md",
            BypassPermissions,
            foreign,
        ),
        (false, "{state}/principals/theirs", Default, foreign),
        (
            false,
            "{state}/web-fetch/x",
            Default,
            "outside allowed working directories",
        ),
        (true, "{state}/principals/mine/plans/s1.md", Plan, "allow"),
        (
            true,
            "{state}/principals/mine/plans/s1-agent-a1.md",
            Plan,
            "allow",
        ),
        (true, "{state}/principals/mine/plans/s2.md", Plan, not_own),
        (
            true,
            "{state}/principals/mine/plans/s2.md",
            BypassPermissions,
            not_own,
        ),
        (
            true,
            "{state}/principals/mine/plans/s1x.md",
            AcceptEdits,
            not_own,
        ),
        (true, "{state}/plans/s1.md", BypassPermissions, not_own),
        (
            true,
            "{state}/principals/mine/plans/sub/s1.md",
            BypassPermissions,
            not_own,
        ),
    ];
    for (write, path, mode, expected) in cases {
        let got = files(*write, path, *mode).await;
        match (&got, *expected) {
            (Ok(()), "allow") => {}
            (Err(text), e) if e != "allow" && text.contains(e) => {}
            _ => panic!("write={write} {path} in {mode}: got {got:?}, expected {expected:?}"),
        }
    }
}

#[tokio::test]
async fn without_a_private_directory_the_whole_state_directory_is_the_sessions() {
    let (_guard, dir) = tmp();
    let ctx = context(&dir, PermissionMode::Default, &[]);
    let pool = ToolPool::new(vec![arc(Files)]);
    let state = dir.join(".state");
    for path in ["tool-results/x.txt", "plans/test.md", "todos/other.json"] {
        let result = pool
            .call("Files", json!({"path": state.join(path)}), &ctx)
            .await;
        assert!(!result.is_error, "{path}: {}", result.text());
    }
    assert_eq!(ctx.private_state_dir(), state);
    // Session ids nobody can guess.
    let a = ToolContext::builder(&dir).build();
    let b = ToolContext::builder(&dir).build();
    assert_ne!(a.session_id(), b.session_id());
    assert!(a.session_id().len() >= 32, "{}", a.session_id());
}

/// A tool of MCP server `server` named `name` (as the pool names it).
struct Remote {
    server: &'static str,
    name: &'static str,
    schema: Value,
}

#[async_trait]
impl Tool for Remote {
    fn name(&self) -> &str {
        self.name
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Mcp
    }
    fn mcp_server(&self) -> Option<&str> {
        Some(self.server)
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    async fn description(&self, _input: Option<&ParsedInput>) -> String {
        String::new()
    }
    fn parse_input(&self, raw: &Value) -> Result<ParsedInput, ToolError> {
        Ok(ParsedInput::from_json(raw.clone()))
    }
    fn is_concurrency_safe(&self, _input: &ParsedInput) -> bool {
        false
    }
    fn is_read_only(&self, _input: &ParsedInput) -> bool {
        false
    }
    async fn validate(&self, _input: &ParsedInput, _ctx: &ToolContext) -> ValidationResult {
        ValidationResult::Valid
    }
    async fn check_permission(&self, _: &ParsedInput, _: &ToolContext) -> PermissionDecision {
        PermissionDecision::ask("MCP tools ask", None)
    }
    async fn call(&self, _: ParsedInput, _: &ToolContext) -> Result<ToolResult<Value>, ToolError> {
        Ok(ToolResult::ok(Value::Null))
    }
}

#[tokio::test]
async fn mcp_rules_match_by_server_boundary() {
    let (_guard, dir) = tmp();
    // (server, pool name, rule, whether it applies)
    let cases = [
        ("a__b", "mcp__a__b__ro", "mcp__a", false),
        ("a__b", "mcp__a__b__ro", "mcp__a__*", false),
        ("a__b", "mcp__a__b__ro", "mcp__a__b", true),
        ("a__b", "mcp__a__b__ro", "mcp__a__b__*", true),
        ("a__b", "mcp__a__b__ro", "mcp__a__b__ro", true),
        ("a", "mcp__a__b__ro", "mcp__a", true),
        ("a", "mcp__a__b__ro", "mcp__a__*", true),
        ("a", "mcp__a__x", "mcp__a__y", false),
        ("a_", "mcp__a___x", "mcp__a", false),
        ("a", "mcp__a___x", "mcp__a_", false),
        ("my_server", "mcp__my_server__x", "mcp__my", false),
    ];
    for (server, name, rule, applies) in cases {
        let tool: Arc<dyn Tool> = Arc::new(Remote {
            server,
            name,
            schema: json!({"type": "object"}),
        });
        assert_eq!(
            PermissionRule::parse(rule).unwrap().names(tool.as_ref()),
            applies,
            "{rule} on {name} of {server}"
        );
        let ctx = context(&dir, PermissionMode::Default, &[("allow", rule)]);
        let result = ToolPool::new(vec![tool]).call(name, json!({}), &ctx).await;
        assert_eq!(
            !result.is_error,
            applies,
            "{rule} on {name}: {}",
            result.text()
        );
    }
}
