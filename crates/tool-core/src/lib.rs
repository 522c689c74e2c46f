//! Contracts and shared mechanisms of the agent-tools tool layer.
//!
//! Every tool of every category crate is built on this crate: the contracts a tool
//! implements (a tool, its result, the context a call runs in) plus the mechanisms all
//! categories share.
//!
//! # Overview
//!
//! - [`Tool`] is the object-safe contract pools hold (`Arc<dyn Tool>`); [`TypedTool`] is the
//!   typed one tools implement, with defaults for everything but the call, and [`Typed`] adapts the second
//!   to the first (schema generated once, input parsed with readable errors). A typed tool
//!   says what it is (name, description, category, the input-independent answers) in one
//!   constant [`ToolMeta`].
//! - [`ToolContext`] carries the session: working directory, [`PermissionMode`], additional
//!   directories, the [`PermissionEngine`], the [`LspManager`] and [`TaskManager`], host
//!   [`Services`], the [`ReadLedger`], plus per-call cancellation and a [`ProgressSink`].
//! - [`ToolPool`] is the one execution path (lookup, parse, validate, permission, call,
//!   render, output budget) and the batch runner.
//! - [`ToolResult`] and [`CallResult`] are what tools return and what callers receive.
//! - [`PermissionRule`], [`PathPattern`], [`CommandPattern`] and [`DomainPattern`] are the
//!   rule grammar and its matchers; [`Settings`] reads settings files.
//! - [`schema_for`] and [`tool_declaration`] produce schemas for every [`Dialect`].
//! - [`QuestionPrompter`] asks the person behind a session [`Question`]s (AskUserQuestion's);
//!   [`LinePrompter`] is the terminal's, as [`PermissionPrompter`] is for permission asks.
//! - [`write_atomic`] replaces a file atomically; [`temp_file_name`] is the one naming
//!   scheme of the temporary files of every atomic write.
//! - [`ProcessGroup`] starts an external program as the leader of a process group of its own
//!   and kills the whole group (on request, after a grace period, or when dropped).
//!
//! Category crates (`tools-fs`, `tools-shell`, ...) depend on this crate and never on each
//! other; what one needs from another goes through a trait here, carried by the context.
//!
//! # Example
//!
//! A tool of a host crate: the input, the tool's [`ToolMeta`] and its call. Everything a
//! tool definition needs is re-exported here ([`async_trait`](macro@async_trait),
//! [`serde`], [`schemars`], [`serde_json`]), so a host needs no dependency of its own on
//! them. The derives work through the re-exports when told where they are: `#[serde(crate
//! = "tool_core::serde")]` (serde's derive otherwise names its own crate, which only a
//! direct dependency provides) and `#[schemars(crate = "tool_core::schemars")]` (or `use
//! tool_core::schemars;` in scope, which schemars' derive also finds).
//!
//! ```
//! use tool_core::schemars::JsonSchema;
//! use tool_core::serde::Deserialize;
//! use tool_core::serde_json::json;
//! use tool_core::{ToolContext, ToolError, ToolMeta, ToolPool, ToolResult, Typed, TypedTool};
//!
//! /// Input of the echo tool
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(crate = "tool_core::serde", deny_unknown_fields)]
//! #[schemars(crate = "tool_core::schemars")]
//! struct EchoInput {
//!     /// What to say
//!     text: String,
//!     /// How many times
//!     times: Option<u32>,
//! }
//!
//! struct Echo;
//!
//! #[tool_core::async_trait]
//! impl TypedTool for Echo {
//!     type Input = EchoInput;
//!     type Output = String;
//!     const META: ToolMeta = ToolMeta::new("Echo").describe("Says the text again.").read_only();
//!     async fn call(&self, input: EchoInput, _ctx: &ToolContext) -> Result<ToolResult<String>, ToolError> {
//!         Ok(ToolResult::ok(input.text.repeat(input.times.unwrap_or(1) as usize)))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let pool = ToolPool::new(vec![std::sync::Arc::new(Typed::new(Echo))]);
//! let ctx = ToolContext::builder(std::env::temp_dir()).build();
//! // Numbers sent as strings are accepted, as the reference does.
//! let result = pool.call("Echo", json!({"text": "hi", "times": "2"}), &ctx).await;
//! assert_eq!(result.text(), "hihi");
//! let bad = pool.call("Echo", json!({"txt": "hi"}), &ctx).await;
//! assert!(bad.is_error);
//! assert!(bad.text().contains("The required parameter `text` is missing"));
//! # }
//! ```

mod atomic;
mod budget;
mod context;
mod error;
mod exec;
#[cfg(unix)]
mod git;
mod input;
mod ledger;
mod live;
mod managers;
pub mod path;
mod path_fields;
mod pattern;
mod permission;
#[cfg(unix)]
mod private;
#[cfg(unix)]
mod process_group;
mod question;
mod random;
mod result;
mod retention;
mod rule;
mod schema;
mod settings;
mod summariser;
mod time;
mod tool;
mod trust;

pub use atomic::{temp_file_name, temp_file_owner, temp_file_prefix, write_atomic};
pub use budget::{
    ERROR_TEXT_CAP, PERSIST_THRESHOLD_CAP, PREVIEW_BYTES, cut_middle, format_size, plural,
};
pub use context::{
    EventSink, PENDING_EVENTS, Progress, ProgressSink, Service, ServiceType, Services,
    SessionEvent, ToolContext, ToolContextBuilder, WriteObserver, default_state_dir,
};
pub use error::ToolError;
pub use exec::{
    MAX_CONCURRENCY, PermissionAnswer, PermissionPrompter, PermissionRequest, ToolCall, ToolPool,
    declarations, error_result,
};
#[cfg(unix)]
pub use git::{HardenedGit, linked_worktree, nested_repository};
pub use input::{
    DUPLICATE_KEY_MARKER, MAX_COMMAND_CHARS, MAX_NAME_CHARS, MAX_PATTERN_CHARS, MAX_URL_CHARS,
    duplicate_key, duplicate_keys, mark_duplicate_key, marked_duplicate_key, parse_input,
    parse_input_text,
};
pub use ledger::{Freshness, ReadLedger, ReadRecord, ReadSource, content_hash};
pub use live::{LiveBatch, PoolFuture, PoolSource};
pub use managers::{
    FileDiagnostic, LspManager, TaskFinish, TaskFuture, TaskInfo, TaskKind, TaskManager, TaskRun,
    TaskSpec, TaskStatus, Unconfigured,
};
pub use path::MAX_PATH_CHARS;
pub use pattern::{CommandPattern, DomainPattern, PathPattern, PathRoot, WildcardPart};
pub use permission::{
    AllowHint, ApprovedBy, AskKind, Beneath, NeutralHint, PRINCIPALS_DIR, PermissionDecision,
    PermissionEngine, PermissionMode, allow_hint, headless_denial, is_own_plan_file, own_plan_file,
};
#[cfg(unix)]
pub use private::{check_private, check_state_dir};
#[cfg(unix)]
pub use process_group::ProcessGroup;
pub use question::{LinePrompter, Question, QuestionAnswers, QuestionOption, QuestionPrompter};
pub use random::unguessable_id;
pub use result::{CallResult, ContentBlock, ToolResult};
pub use retention::{
    DEFAULT_OUTPUT_BUDGET, DEFAULT_RETENTION, OUTPUT_DIRS, Pruned, Retention, prune_outputs,
};
pub use rule::{
    LEGACY_TOOL_NAMES, PermissionRule, RuleBehavior, RuleSource, RuleSourceKind, SourcedRule,
    normalize_tool_name,
};
pub use schema::{
    Dialect, GEMINI_KEYWORDS, OPENAI_FORMATS, OPENAI_STRICT_KEYWORDS, ToolAnnotations, has_refs,
    schema_for, tool_declaration,
};
pub use settings::{DisableBypass, PermissionSettings, Settings, SettingsLayer};
pub use summariser::Summariser;
pub use time::sleep_or_never;
pub use tool::{
    ParsedInput, PathAccess, PathField, Tool, ToolCategory, ToolMeta, Typed, TypedTool,
    ValidationResult,
};
pub use trust::{
    Approval, FileReview, MCP_JSON, McpApproval, NamedByConfig, SCRIPT_EXTENSIONS, TRUST_FILE,
    TrustReport, TrustStore, Withheld, is_person_only_setting, is_project_source, is_state_config,
    layer_named_files, named_by_config, named_files, named_state, narrow, review_mcp_json,
    review_settings, sha256_hex, shell_quote,
};

/// Re-exported so tools and hosts name the same token type.
pub use tokio_util::sync::CancellationToken;

/// Re-exported for tool definitions: `#[tool_core::async_trait]` on a [`TypedTool`] impl.
pub use async_trait::async_trait;
/// Re-exported for tool definitions: derive `JsonSchema` with
/// `#[schemars(crate = "tool_core::schemars")]`.
pub use schemars;
/// Re-exported for tool definitions: derive `Deserialize` and `Serialize` with
/// `#[serde(crate = "tool_core::serde")]`.
pub use serde;
/// Re-exported for tool definitions: the JSON values tools take and give.
pub use serde_json;
