//! The registry behind your own MCP server over stdio: a session from the settings files
//! (`registry::build_context`), the registry's pool of the default profile, served with
//! `tools_mcp::serve_stdio` until the client closes its end. Point an MCP client at it
//! (`"command": "path/to/mcp-server", "args": ["DIR"]`).
//!
//! Run: `cargo run -p examples --bin mcp-server -- DIR` (DIR defaults to the current
//! directory; the state directory is `$AGENT_TOOLS_HOME`, else `~/.agent-tools`).

use std::error::Error;
use std::process::ExitCode;

use registry::{SessionOptions, ToolRegistry, build_context};

fn main() -> ExitCode {
    // First thing in main: Bash's sandbox supervisor is this program started again.
    if let Some(code) = registry::sandbox_supervisor_entry() {
        return code;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcp-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-server: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn Error>> {
    let cwd = match std::env::args().nth(1) {
        Some(dir) => dir.into(),
        None => std::env::current_dir()?,
    };
    let options = SessionOptions {
        cwd,
        ..SessionOptions::default()
    };
    // The settings files, the sandbox, background tasks. Stdout carries the protocol:
    // print nothing there.
    let ctx = build_context(&options)?;
    let pool = ToolRegistry::new().pool(ctx.permissions(), Vec::new());
    tools_mcp::serve_stdio(pool, ctx).await?;
    Ok(())
}
