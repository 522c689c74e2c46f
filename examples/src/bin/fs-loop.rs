//! tools-fs in a minimal agent loop: one session (`ToolContext::builder`, acceptEdits) in a
//! project directory, a pool of `tools_fs::tools()`, and the calls a model would make one
//! after the other — Glob, Read, Edit, Read — each run with `pool.call`, printing what the
//! model would read. The Edit replaces `TODO` with `DONE` in the first `.txt` file found.
//!
//! Run: `cargo run -p examples --bin fs-loop -- DIR`
#![allow(clippy::print_stdout)] // Printing what the model reads is the point.

use std::error::Error;

use serde_json::{Value, json};
use tool_core::{PermissionMode, ToolContext, ToolPool};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: fs-loop DIR")?;
    // One session: its working directory, its mode (edits inside the project need no
    // person) and its read ledger (Edit refuses a file the session has not read).
    let ctx = ToolContext::builder(&dir)
        .mode(PermissionMode::AcceptEdits)
        .build();
    let pool = ToolPool::new(tools_fs::tools());

    // The model looks for files, reads the first, edits it and reads it again.
    let found = step(&pool, &ctx, "Glob", json!({"pattern": "**/*.txt"})).await?;
    let file = found
        .lines()
        .next()
        .filter(|line| line.ends_with(".txt"))
        .ok_or("no .txt file in the directory")?
        .to_owned();
    step(&pool, &ctx, "Read", json!({"file_path": file})).await?;
    let edit = json!({"file_path": file, "old_string": "TODO", "new_string": "DONE"});
    step(&pool, &ctx, "Edit", edit).await?;
    step(&pool, &ctx, "Read", json!({"file_path": file})).await?;
    Ok(())
}

/// Runs one call as a model's tool call would be run, prints what the model reads and
/// returns it. A refused or failed call is an error here; an agent would send its text back
/// to the model instead, which can fix its input and try again.
async fn step(
    pool: &ToolPool,
    ctx: &ToolContext,
    name: &str,
    input: Value,
) -> Result<String, Box<dyn Error>> {
    println!("> {name} {input}");
    let result = pool.call(name, input, ctx).await;
    let text = result.text();
    println!("{text}\n");
    if result.is_error {
        return Err(format!("{name} failed: {text}").into());
    }
    Ok(text)
}
