//! Test tools and a context builder shared by the integration tests.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tool_core::{
    AskKind, CommandPattern, DomainPattern, PermissionDecision, PermissionEngine, PermissionMode,
    PermissionRule, RuleBehavior, RuleSource, RuleSourceKind, SourcedRule, Tool, ToolCategory,
    ToolContext, ToolError, ToolMeta, ToolResult, Typed, TypedTool,
};

/// Builds a context in `dir` with rules written as `("deny", "Bash(rm *)")`.
pub fn context(dir: &Path, mode: PermissionMode, rules: &[(&str, &str)]) -> ToolContext {
    let source = RuleSource {
        kind: RuleSourceKind::CliArg,
        file: None,
        root: dir.to_path_buf(),
    };
    let rules = rules
        .iter()
        .map(|(behavior, text)| SourcedRule {
            rule: PermissionRule::parse(text).expect("rule"),
            behavior: match *behavior {
                "allow" => RuleBehavior::Allow,
                "deny" => RuleBehavior::Deny,
                "ask" => RuleBehavior::Ask,
                other => panic!("bad behavior {other}"),
            },
            source: source.clone(),
        })
        .collect();
    ToolContext::builder(dir)
        .mode(mode)
        .permissions(
            PermissionEngine::new(rules)
                .with_bypass_available(mode == PermissionMode::BypassPermissions),
        )
        .state_dir(dir.join(".state"))
        .session_id("test")
        .build()
}

pub fn arc<T: TypedTool>(tool: T) -> Arc<dyn Tool> {
    Arc::new(Typed::new(tool))
}

/// A shell-like tool whose permission check matches `Shell(...)` command rules.
pub struct Shell;

/// Input of [`Shell`]
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellInput {
    /// The command
    pub command: String,
}

#[async_trait]
impl TypedTool for Shell {
    type Input = ShellInput;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Shell")
        .aliases(&["OldShell"])
        .category(ToolCategory::Shell);
    fn is_concurrency_safe(&self, input: &ShellInput) -> bool {
        input.command.starts_with("ls")
    }
    fn is_read_only(&self, input: &ShellInput) -> bool {
        input.command.starts_with("ls")
    }
    async fn check_permission(&self, input: &ShellInput, ctx: &ToolContext) -> PermissionDecision {
        let matched = ctx.permissions().match_content("Shell", |content, _| {
            CommandPattern::parse(content).matches(&input.command)
        });
        match matched {
            Some(rule) if rule.behavior == RuleBehavior::Deny => PermissionDecision::deny(format!(
                "Permission to use Shell with command {} has been denied.",
                input.command
            )),
            Some(rule) if rule.behavior == RuleBehavior::Ask => PermissionDecision::Ask {
                reason: format!("Permission rule {rule} requires approval for this command"),
                suggestions: Vec::new(),
                kind: AskKind::Rule(Box::new(rule)),
            },
            Some(_) => PermissionDecision::Allow,
            None => PermissionDecision::ask(
                format!("Shell command needs approval: {}", input.command),
                Some(PermissionRule::with_content("Shell", input.command.clone())),
            ),
        }
    }
    async fn call(
        &self,
        input: ShellInput,
        _ctx: &ToolContext,
    ) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::ok(format!("ran {}", input.command)))
    }
}

/// A file tool that reads or writes (nothing real) and uses the engine's path checks.
pub struct Files;

/// Input of [`Files`]
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilesInput {
    /// The path
    pub path: String,
    /// Whether this is a write
    #[serde(default)]
    pub write: bool,
}

#[async_trait]
impl TypedTool for Files {
    type Input = FilesInput;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Files").category(ToolCategory::FileSystem);
    fn is_concurrency_safe(&self, input: &FilesInput) -> bool {
        !input.write
    }
    fn is_read_only(&self, input: &FilesInput) -> bool {
        !input.write
    }
    async fn check_permission(&self, input: &FilesInput, ctx: &ToolContext) -> PermissionDecision {
        let path = ctx.resolve_path(&input.path);
        if input.write {
            ctx.permissions().check_write_path(&path, ctx)
        } else {
            ctx.permissions().check_read_path(&path, ctx)
        }
    }
    async fn call(
        &self,
        input: FilesInput,
        _ctx: &ToolContext,
    ) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::ok(format!("ok {}", input.path)))
    }
}

/// A fetch-like tool matching `Fetch(domain:host)` rules.
pub struct Fetch;

/// Input of [`Fetch`]
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchInput {
    /// The host
    pub host: String,
}

#[async_trait]
impl TypedTool for Fetch {
    type Input = FetchInput;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Fetch")
        .category(ToolCategory::Web)
        .read_only();
    async fn check_permission(&self, input: &FetchInput, ctx: &ToolContext) -> PermissionDecision {
        let matched = ctx.permissions().match_content("Fetch", |content, _| {
            DomainPattern::parse(content).is_some_and(|d| d.matches(&input.host))
        });
        match matched {
            Some(r) if r.behavior == RuleBehavior::Deny => {
                PermissionDecision::deny(format!("Fetch denied access to domain:{}.", input.host))
            }
            Some(r) if r.behavior == RuleBehavior::Allow => PermissionDecision::Allow,
            _ => PermissionDecision::ask(
                "fetch needs approval",
                Some(PermissionRule::with_content(
                    "Fetch",
                    format!("domain:{}", input.host),
                )),
            ),
        }
    }
    async fn call(
        &self,
        input: FetchInput,
        _ctx: &ToolContext,
    ) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::ok(format!("fetched {}", input.host)))
    }
}

/// A tool that always needs a person.
pub struct Question;

/// Input of [`Question`]
#[derive(Deserialize, JsonSchema)]
pub struct Empty {}

#[async_trait]
impl TypedTool for Question {
    type Input = Empty;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Question")
        .category(ToolCategory::UserInteraction)
        .requires_user_interaction()
        .read_only();
    async fn check_permission(&self, _: &Empty, _ctx: &ToolContext) -> PermissionDecision {
        PermissionDecision::ask("Answer questions?", None)
    }
    async fn call(&self, _: Empty, _ctx: &ToolContext) -> Result<ToolResult<String>, ToolError> {
        Ok(ToolResult::ok("answered".to_owned()))
    }
}

/// What [`Probe`] should do.
#[derive(Deserialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct ProbeInput {
    /// Label recorded in the log
    pub label: String,
    /// Milliseconds to sleep (cancellable)
    #[serde(default)]
    pub sleep_ms: u64,
    /// Whether the call may run with others
    #[serde(default)]
    pub safe: bool,
    /// Fail with this message
    #[serde(default)]
    pub fail: Option<String>,
    /// Panic
    #[serde(default)]
    pub panic: bool,
    /// Characters of output
    #[serde(default)]
    pub output_chars: usize,
    /// Ignore cancellation while sleeping
    #[serde(default)]
    pub stubborn: bool,
}

/// Records concurrency and follows instructions.
#[derive(Default)]
pub struct Probe {
    pub in_flight: Arc<AtomicUsize>,
    pub max_in_flight: Arc<AtomicUsize>,
    pub log: Arc<std::sync::Mutex<Vec<String>>>,
    pub cancels_siblings: bool,
    pub unlimited_output: bool,
}

#[async_trait]
impl TypedTool for Probe {
    type Input = ProbeInput;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Probe").category(ToolCategory::Shell);
    fn cancels_siblings_on_error(&self) -> bool {
        self.cancels_siblings
    }
    fn max_result_size_chars(&self) -> usize {
        if self.unlimited_output {
            usize::MAX
        } else {
            30_000
        }
    }
    fn is_concurrency_safe(&self, input: &ProbeInput) -> bool {
        input.safe
    }
    fn is_read_only(&self, input: &ProbeInput) -> bool {
        input.safe
    }
    async fn call(
        &self,
        input: ProbeInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<String>, ToolError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        self.log
            .lock()
            .unwrap()
            .push(format!("start {}", input.label));
        let sleep = tokio::time::sleep(Duration::from_millis(input.sleep_ms));
        let outcome = if input.stubborn {
            sleep.await;
            Ok(())
        } else {
            tokio::select! {
                () = sleep => Ok(()),
                () = ctx.cancel_token().cancelled() => Err(ToolError::Cancelled { tool: "Probe".into() }),
            }
        };
        self.log
            .lock()
            .unwrap()
            .push(format!("end {}", input.label));
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        outcome?;
        assert!(!input.panic, "probe asked to panic");
        if let Some(message) = input.fail {
            return Err(ToolError::respond(message));
        }
        Ok(ToolResult::ok(if input.output_chars > 0 {
            "x".repeat(input.output_chars)
        } else {
            input.label
        }))
    }
}

pub fn tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}
