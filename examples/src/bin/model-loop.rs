//! A whole agent loop against a Messages-API-compatible endpoint: the pool's declarations
//! (`ToolPool::declarations`, Anthropic dialect) go with the conversation as JSON over
//! HTTP, each `tool_use` block of the reply runs with `pool.call`, the `tool_result`s go
//! back, and the loop stops when a reply asks for no tool.
//!
//! Run: `MODEL_API_URL=https://api.anthropic.com/v1/messages MODEL_API_KEY=... cargo run -p
//! examples --bin model-loop -- DIR "PROMPT"` (`MODEL_NAME` picks the model; the tools are
//! tools-fs's, working in DIR, read-only unless the host allows more).
#![allow(clippy::print_stdout)] // Printing the conversation is the point.

use std::error::Error;
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{Dialect, ToolContext, ToolPool};

/// A bound on the rounds of one prompt, so a model that keeps calling tools ends.
const MAX_ROUNDS: usize = 20;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(prompt)) = (args.next(), args.next()) else {
        return Err("usage: model-loop DIR PROMPT".into());
    };
    let url = std::env::var("MODEL_API_URL").map_err(|_| "set MODEL_API_URL")?;
    let key = std::env::var("MODEL_API_KEY").unwrap_or_default();
    let model = std::env::var("MODEL_NAME").unwrap_or_else(|_| "claude-sonnet-4-5".to_owned());

    let ctx = ToolContext::builder(&dir).build();
    let pool = ToolPool::new(tools_fs::tools());
    let tools = pool.declarations(Dialect::Anthropic).await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()?;

    let mut messages = vec![json!({"role": "user", "content": prompt})];
    for _ in 0..MAX_ROUNDS {
        let request = json!({
            "model": model,
            "max_tokens": 4096,
            "tools": tools,
            "messages": messages,
        });
        let reply: Value = client
            .post(&url)
            .header("x-api-key", &key)
            .header("anthropic-version", "2023-06-01")
            .json(&request)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let content = reply["content"]
            .as_array()
            .ok_or("the reply has no content")?
            .clone();

        // Run every tool the model asked for, in order, and answer each by its id.
        let mut results = Vec::new();
        for block in &content {
            match block["type"].as_str() {
                Some("text") => println!("assistant: {}", block["text"].as_str().unwrap_or("")),
                Some("tool_use") => {
                    let name = block["name"].as_str().unwrap_or_default();
                    println!("tool call: {name} {}", block["input"]);
                    let result = pool.call(name, block["input"].clone(), &ctx).await;
                    println!("tool result: {}", result.text());
                    results.push(json!({
                        "type": "tool_result",
                        "tool_use_id": block["id"],
                        "content": result.text(),
                        "is_error": result.is_error,
                    }));
                }
                _ => {}
            }
        }
        if results.is_empty() {
            return Ok(());
        }
        messages.push(json!({"role": "assistant", "content": content}));
        messages.push(json!({"role": "user", "content": results}));
    }
    Err(format!("the model still calls tools after {MAX_ROUNDS} rounds").into())
}
