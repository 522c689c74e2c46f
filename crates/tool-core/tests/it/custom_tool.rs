//! A host's own tool in a few lines: an input, a `ToolMeta` and a call, written with
//! tool-core's re-exports only, then run through the pool like any built-in.

use std::sync::Arc;

use tool_core::schemars::JsonSchema;
use tool_core::serde::Deserialize;
use tool_core::serde_json::json;
use tool_core::{
    ToolCategory, ToolContext, ToolError, ToolMeta, ToolPool, ToolResult, Typed, TypedTool,
};

/// The tool of the test.
struct Greet;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "tool_core::serde")]
#[schemars(crate = "tool_core::schemars")]
struct GreetInput {
    name: String,
}

#[tool_core::async_trait]
impl TypedTool for Greet {
    type Input = GreetInput;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Greet").describe("Says hello.").read_only();
    async fn call(&self, i: GreetInput, _: &ToolContext) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::ok(format!("Hello, {}!", i.name)))
    }
}

#[tokio::test]
async fn a_custom_tool_of_fifteen_lines_runs_through_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::builder(dir.path()).build();
    let pool = ToolPool::new(vec![Arc::new(Typed::new(Greet))]);

    let result = pool.call("Greet", json!({"name": "Ada"}), &ctx).await;
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(result.text(), "Hello, Ada!");
    let bad = pool.call("Greet", json!({}), &ctx).await;
    assert!(bad.is_error);
    assert!(bad.text().contains("`name`"), "{}", bad.text());

    // What the META declared, and the defaults it left alone.
    let tool = pool.get("Greet").unwrap();
    assert_eq!(tool.description(None).await, "Says hello.");
    assert_eq!(tool.category(), ToolCategory::Custom);
    assert!(!tool.is_deferred() && tool.aliases().is_empty() && tool.search_hint().is_none());
    assert_eq!(tool.max_result_size_chars(), 100_000);
    let input = tool.parse_input(&json!({"name": "Ada"})).unwrap();
    assert!(tool.is_read_only(&input) && tool.is_concurrency_safe(&input));
}
