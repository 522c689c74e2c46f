//! tools-shell with background tasks and the sandbox: the supervisor entry first in `main`,
//! `tools_shell::install` on the session, a foreground Bash call, a `run_in_background`
//! Bash call, and TaskOutput waiting for the background command's result. Every command
//! runs under the default sandbox (bubblewrap where it works, Landlock otherwise).
//!
//! Run: `cargo run -p examples --bin shell-tasks -- DIR` (the commands run in DIR; the
//! session's state, background output included, goes to `$AGENT_TOOLS_HOME`, else
//! `~/.agent-tools`).
#![allow(clippy::print_stdout)] // Printing what the model reads is the point.

use std::error::Error;
use std::process::ExitCode;

use serde_json::{Value, json};
use tool_core::{ToolContext, ToolPool};
use tools_shell::SandboxSettings;

fn main() -> ExitCode {
    // First thing in main: the sandbox runs commands under a supervisor, which is this very
    // program started again with a special argument.
    if let Some(code) = tools_shell::sandbox_supervisor_entry() {
        return code;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("shell-tasks: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shell-tasks: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: shell-tasks DIR")?;
    // The host allows Bash outright: every command still runs in the sandbox, which keeps
    // writes inside DIR and the network off.
    let builder = ToolContext::builder(&dir).allow("Bash");
    let ctx = tools_shell::install(builder, SandboxSettings::default()).build();
    let pool = ToolPool::new(tools_shell::tools());

    let command = "echo hello from the sandbox | tee hello.txt";
    let ran = step(&pool, &ctx, "Bash", json!({"command": command})).await?;
    println!("(sandbox: {})\n", ran["sandbox"].as_str().unwrap_or("?"));
    let started = step(
        &pool,
        &ctx,
        "Bash",
        json!({
            "command": "sleep 1; echo background work done",
            "run_in_background": true,
        }),
    )
    .await?;
    // The structured result carries the task's id; the model finds it in the text.
    let task_id = started["backgroundTaskId"]
        .as_str()
        .ok_or("the background call returned no task id")?
        .to_owned();
    let input = json!({"task_id": task_id, "block": true, "timeout": 30_000});
    step(&pool, &ctx, "TaskOutput", input).await?;
    Ok(())
}

/// Runs one call, prints what the model reads and returns the result's structured data.
async fn step(
    pool: &ToolPool,
    ctx: &ToolContext,
    name: &str,
    input: Value,
) -> Result<Value, Box<dyn Error>> {
    println!("> {name} {input}");
    let result = pool.call(name, input, ctx).await;
    println!("{}\n", result.text());
    if result.is_error {
        return Err(format!("{name} failed").into());
    }
    Ok(result.data)
}
