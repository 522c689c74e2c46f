//! Custom tools beside the built-in ones, each defined in a few lines with `ToolMeta` and
//! tool-core's re-exports (no direct dependency on serde or schemars), put in one pool with
//! tools-fs's tools and called through it like any built-in:
//! - `Greet` takes a name and touches nothing;
//! - `WordCount` takes a path and declares it (`PathField::read`), so the pool checks it as
//!   Read's: the session's deny rule on `/etc` refuses it there, a file outside the working
//!   directory needs a person (refused here, with nobody to ask), and the tool gets the path
//!   absolute.
//!
//! Run: `cargo run -p examples --bin custom-tool -- NAME [FILE...]`
#![allow(clippy::print_stdout)] // Printing what the model reads is the point.

use std::error::Error;
use std::sync::Arc;

use tool_core::schemars::JsonSchema;
use tool_core::serde::Deserialize;
use tool_core::serde_json::json;
use tool_core::{
    PathField, ToolContext, ToolError, ToolMeta, ToolPool, ToolResult, Typed, TypedTool,
};

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

struct WordCount;
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "tool_core::serde")]
#[schemars(crate = "tool_core::schemars")]
struct WordCountInput {
    /// The file to count the words of
    path: String,
}
#[tool_core::async_trait]
impl TypedTool for WordCount {
    type Input = WordCountInput;
    type Output = usize;
    const META: ToolMeta = ToolMeta::new("WordCount")
        .describe("Counts the words of a text file.")
        .read_only()
        .path_fields(&[PathField::read("path")]);
    async fn call(
        &self,
        i: WordCountInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<usize>, ToolError> {
        // `i.path` is absolute: the path the permission engine checked.
        let text = std::fs::read_to_string(&i.path)
            .map_err(|e| ToolError::from_io(std::path::Path::new(&i.path), &ctx.cwd(), e))?;
        let words = text.split_whitespace().count();
        Ok(ToolResult::ok(words).with_text(format!("{words} words in {}", i.path)))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "Ada".to_owned());
    let ctx = ToolContext::builder(std::env::current_dir()?)
        .deny("Read(//etc/**)")
        .build();
    let mut tools = tools_fs::tools();
    tools.push(Arc::new(Typed::new(Greet)));
    tools.push(Arc::new(Typed::new(WordCount)));
    let pool = ToolPool::new(tools);
    let names: Vec<&str> = pool.tools().iter().map(|t| t.name()).collect();
    println!("tools: {}", names.join(", "));

    let result = pool.call("Greet", json!({"name": name}), &ctx).await;
    println!("{}", result.text());
    if result.is_error {
        return Err("Greet failed".into());
    }
    for path in args {
        let result = pool.call("WordCount", json!({"path": path}), &ctx).await;
        let verdict = if result.is_error { "refused" } else { "ok" };
        println!("WordCount {path}: {verdict}: {}", result.text());
    }
    Ok(())
}
