//! A custom tool beside the built-in ones: `Greet`, defined in a few lines with `ToolMeta`
//! and tool-core's re-exports (no direct dependency on serde or schemars), put in one pool
//! with tools-fs's tools and called through it like any built-in.
//!
//! Run: `cargo run -p examples --bin custom-tool -- NAME`
#![allow(clippy::print_stdout)] // Printing what the model reads is the point.

use std::error::Error;
use std::sync::Arc;

use tool_core::schemars::JsonSchema;
use tool_core::serde::Deserialize;
use tool_core::serde_json::json;
use tool_core::{ToolContext, ToolError, ToolMeta, ToolPool, ToolResult, Typed, TypedTool};

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

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let name = std::env::args().nth(1).unwrap_or_else(|| "Ada".to_owned());
    let ctx = ToolContext::builder(std::env::current_dir()?).build();
    let mut tools = tools_fs::tools();
    tools.push(Arc::new(Typed::new(Greet)));
    let pool = ToolPool::new(tools);
    let names: Vec<&str> = pool.tools().iter().map(|t| t.name()).collect();
    println!("tools: {}", names.join(", "));

    let result = pool.call("Greet", json!({"name": name}), &ctx).await;
    println!("{}", result.text());
    if result.is_error {
        return Err("Greet failed".into());
    }
    Ok(())
}
