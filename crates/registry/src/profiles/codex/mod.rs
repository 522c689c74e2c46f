//! The codex profile: codex's tool vocabulary for OpenAI's GPT-5 and codex models (codex CLI
//! 0.171), each tool an adapter over the built-in that does the work.
//!
//! | codex tool      | built-in   | checked as          | declared |
//! |-----------------|------------|---------------------|----------|
//! | `apply_patch`   | (its own, over the file tools' writer) | Edit, Write | yes |
//! | `exec_command`  | Bash       | Bash                | yes      |
//! | `write_stdin`   | TaskOutput | TaskOutput, Bash    | yes      |
//! | `update_plan`   | TodoWrite  | TodoWrite           | yes      |
//! | `view_image`    | Read       | Read                | yes      |
//! | `shell_command` | Bash       | Bash                | deferred |
//! | `shell`         | Bash       | Bash                | deferred |
//!
//! codex 0.171 on Linux and macOS gives every model unified exec (`exec_command` and
//! `write_stdin`: the `unified_exec` feature is stable and on by default outside Windows);
//! `shell_command` is its fallback (Windows, or unified exec turned off) and the shell type
//! the model catalog names for gpt-5.x-codex, and `shell` (an argv array) is the older form
//! it still runs when a model calls it. So `exec_command` and `write_stdin` are declared;
//! `shell_command` and `shell` are deferred (found through ToolSearch, callable by name).
//!
//! `exec_command` runs the command as a Bash background task and waits `yield_time_ms`
//! for it: a command still running is a session whose id is the task's id, polled with
//! `write_stdin` and stopped with TaskStop. Background tasks take no stdin, so
//! `write_stdin` with non-empty `chars` is an error that says so. `shell` and
//! `shell_command` run in the foreground with Bash's time limit (default 120 s, at most
//! 600 s; codex's default is 10 s) and codex's result text (`Exit code`, `Wall time`,
//! `Output`). Every command runs in a subshell: a `cd` never carries over to the next call,
//! as in codex. Asking to leave the sandbox (`sandbox_permissions: "require_escalated"`,
//! or `with_escalated_permissions` of older codex) is Bash's `dangerouslyDisableSandbox`:
//! it always asks a person, shown the model's `justification`, and is refused when the
//! settings set `sandbox.allowUnsandboxedCommands` to false. `prefix_rule` is read and
//! left aside: rules come from the settings only.
//!
//! `apply_patch` is codex's patch tool (its grammar, matching and texts; all files of a
//! patch change or none) implemented in tools-fs over the file tools' writer, checks and
//! ledger; for the Responses API it is also declared as a custom tool with its grammar.
//!
//! Bash, TodoWrite, Edit, MultiEdit and Write are replaced. Read stays (codex models read
//! files with the shell, but Read is what `view_image` runs and other hosts may want it).
//! Tools codex has no
//! counterpart for (Glob, Grep, LSP, WebFetch, WebSearch, Agent, the task tools, MCP
//! resources, ...) keep their own names.

mod exec;
mod image;
mod plan;
mod shell;
mod unified;

use std::sync::Arc;

use tool_core::Tool;

use super::adapt;

/// Built-ins the codex profile replaces.
pub(crate) const REPLACED: &[&str] = &["Bash", "TodoWrite", "Edit", "MultiEdit", "Write"];

/// The codex profile's own tools, over the built-ins of `builtins`.
pub(crate) fn tools(builtins: &[Arc<dyn Tool>]) -> Vec<Arc<dyn Tool>> {
    #[allow(unused_mut)]
    let mut tools: Vec<Arc<dyn Tool>> = [
        adapt(builtins, "Bash", unified::ExecCommand),
        adapt(builtins, "TaskOutput", unified::WriteStdin),
        adapt(builtins, "Bash", shell::ShellCommand),
        adapt(builtins, "Bash", shell::Shell),
        adapt(builtins, "TodoWrite", plan::UpdatePlan),
        adapt(builtins, "Read", image::ViewImage),
    ]
    .into_iter()
    .flatten()
    .collect();
    #[cfg(feature = "fs")]
    tools.push(Arc::new(tool_core::Typed::new(tools_fs::ApplyPatch)));
    tools
}
