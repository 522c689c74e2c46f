//! `ToolPool::declarations`: every tool of a pool declared for each provider, in pool order,
//! as the registry declared them before the logic moved here — one `tool_declaration` per
//! tool, plus a custom tool with its Lark grammar for a free-form tool under the OpenAI
//! Responses API.

use std::sync::Arc;

use tool_core::schemars::JsonSchema;
use tool_core::serde::Deserialize;
use tool_core::serde_json::{Value, json};
use tool_core::{
    Dialect, Tool, ToolContext, ToolError, ToolMeta, ToolPool, ToolResult, Typed, TypedTool,
    tool_declaration,
};

struct Greet;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "tool_core::serde")]
#[schemars(crate = "tool_core::schemars")]
struct GreetInput {
    /// Who to greet
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

/// A tool that also takes free-form text.
struct Patch;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "tool_core::serde")]
#[schemars(crate = "tool_core::schemars")]
struct PatchInput {
    /// The patch
    input: String,
}

#[tool_core::async_trait]
impl TypedTool for Patch {
    type Input = PatchInput;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Patch")
        .describe("Applies a patch.")
        .freeform_grammar("start: /.+/")
        .freeform_description("Applies a patch, sent as text.");
    async fn call(&self, i: PatchInput, _: &ToolContext) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::ok(i.input))
    }
}

/// What the registry's `declarations` produced for `tools` before it moved to tool-core.
async fn expected(tools: &[Arc<dyn Tool>], dialect: Dialect) -> Vec<Value> {
    let mut out = Vec::new();
    for tool in tools {
        let description = tool.description(None).await;
        out.push(tool_declaration(
            tool.name(),
            &description,
            tool.input_schema(),
            tool.annotations(),
            dialect,
        ));
        if dialect == Dialect::OpenAiResponses
            && let Some(grammar) = tool.freeform_grammar()
        {
            out.push(json!({
                "type": "custom",
                "name": tool.name(),
                "description": tool.freeform_description().unwrap_or(&description),
                "format": {"type": "grammar", "syntax": "lark", "definition": grammar},
            }));
        }
    }
    out
}

#[tokio::test]
async fn a_pool_declares_its_tools_for_every_dialect() {
    let pool = ToolPool::new(vec![
        Arc::new(Typed::new(Patch)) as Arc<dyn Tool>,
        Arc::new(Typed::new(Greet)),
    ]);
    for dialect in Dialect::ALL {
        let decls = pool.declarations(dialect).await;
        assert_eq!(decls, expected(pool.tools(), dialect).await, "{dialect:?}");
        assert_eq!(
            decls,
            tool_core::declarations(pool.tools(), dialect).await,
            "{dialect:?}"
        );
        let names: Vec<&str> = decls.iter().filter_map(|d| name(d)).collect();
        if dialect == Dialect::OpenAiResponses {
            assert_eq!(names, ["Patch", "Patch", "Greet"]);
            assert_eq!(decls[1]["type"], "custom");
            assert_eq!(decls[1]["description"], "Applies a patch, sent as text.");
            assert_eq!(decls[1]["format"]["definition"], "start: /.+/");
        } else {
            assert_eq!(names, ["Patch", "Greet"], "{dialect:?}");
        }
    }
    assert!(
        ToolPool::default()
            .declarations(Dialect::Mcp)
            .await
            .is_empty()
    );
}

/// A declaration's tool name, wherever the dialect puts it.
fn name(decl: &Value) -> Option<&str> {
    decl.get("name")
        .or_else(|| decl.get("function").and_then(|f| f.get("name")))
        .and_then(Value::as_str)
}
