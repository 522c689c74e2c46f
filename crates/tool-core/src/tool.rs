//! The tool contracts: the object-safe [`Tool`], the typed [`TypedTool`] with defaults for
//! everything but the call, and [`Typed`], the one adapter between them.

use std::any::Any;
use std::fmt;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::schema::{ToolAnnotations, schema_for};
use crate::{PermissionDecision, ToolContext, ToolError, ToolResult, input};

/// The 13 categories a tool belongs to (by kind of work, not by crate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ToolCategory {
    /// Read, Edit, Write, Glob, Grep, NotebookEdit
    FileSystem,
    /// Bash and its task tools
    Shell,
    /// Sub-agents and skills
    Agent,
    /// WebFetch, WebSearch
    Web,
    /// Language servers
    Lsp,
    /// Tools of MCP servers and the MCP resource tools
    Mcp,
    /// Questions and messages to the user
    UserInteraction,
    /// TodoWrite
    Todo,
    /// Task lists
    Task,
    /// EnterPlanMode, ExitPlanMode
    PlanMode,
    /// Teams and messages between agents
    AgentSwarm,
    /// Git worktrees
    Worktree,
    /// Settings
    Config,
}

/// The outcome of a tool's own validation (after the schema check).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValidationResult {
    /// The input is acceptable
    Valid,
    /// The input is not acceptable; the message tells the model what to change
    Invalid {
        /// What is wrong and what to do
        message: String,
        /// The reference's error code, when it has one
        error_code: Option<u32>,
    },
}

impl ValidationResult {
    /// A failure with a message and no code.
    pub fn invalid(message: impl Into<String>) -> Self {
        ValidationResult::Invalid {
            message: message.into(),
            error_code: None,
        }
    }

    /// A failure with a message and the reference's code.
    pub fn invalid_code(message: impl Into<String>, code: u32) -> Self {
        ValidationResult::Invalid {
            message: message.into(),
            error_code: Some(code),
        }
    }
}

/// An input that passed the schema: the coerced JSON and the tool's typed value.
pub struct ParsedInput {
    json: Value,
    typed: Box<dyn Any + Send + Sync>,
}

impl fmt::Debug for ParsedInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParsedInput")
            .field("json", &self.json)
            .finish_non_exhaustive()
    }
}

impl ParsedInput {
    /// Wraps a typed input and its JSON form.
    pub fn new<T: Send + Sync + 'static>(json: Value, typed: T) -> Self {
        ParsedInput {
            json,
            typed: Box::new(typed),
        }
    }

    /// An input that is only JSON (tools without a Rust input type, such as MCP tools).
    pub fn from_json(json: Value) -> Self {
        ParsedInput {
            typed: Box::new(json.clone()),
            json,
        }
    }

    /// The coerced JSON input.
    pub fn json(&self) -> &Value {
        &self.json
    }

    /// The typed input, when it is a `T`.
    pub fn downcast_ref<T: 'static>(&self) -> Option<&T> {
        self.typed.downcast_ref::<T>()
    }

    /// The typed input by value, when it is a `T`.
    pub fn into_typed<T: 'static>(self) -> Result<T, ToolError> {
        self.typed
            .downcast::<T>()
            .map(|b| *b)
            .map_err(|_| ToolError::fatal("internal error: a tool received another tool's input"))
    }
}

/// A tool as pools hold it: object-safe, JSON in, result out.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The wire name.
    fn name(&self) -> &str;
    /// Legacy names that also resolve this tool.
    fn aliases(&self) -> &[&str] {
        &[]
    }
    /// A short capability phrase for ToolSearch.
    fn search_hint(&self) -> Option<&str> {
        None
    }
    /// The built-in tools whose permission rules also govern this one: a tool of another
    /// vocabulary (a model family's profile) that does what `Bash` or `Edit` does answers to
    /// their rules. A blanket deny or ask rule on any of them applies to this tool; a blanket
    /// allow rule applies only when it names every one of them.
    fn checked_as(&self) -> &[&str] {
        &[]
    }
    /// The category.
    fn category(&self) -> ToolCategory;
    /// A runtime switch; disabled tools are left out of the pool.
    fn is_enabled(&self) -> bool {
        true
    }
    /// Whether the tool is loaded on demand through ToolSearch.
    fn is_deferred(&self) -> bool {
        false
    }
    /// Input-independent hints (MCP annotations).
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }
    /// Whether a call always needs a person, even in bypassPermissions mode.
    fn requires_user_interaction(&self) -> bool {
        false
    }
    /// Above this many characters the result is spilled to a file.
    fn max_result_size_chars(&self) -> usize {
        100_000
    }
    /// Whether an error of this tool cancels its concurrent siblings in a batch (Bash).
    fn cancels_siblings_on_error(&self) -> bool {
        false
    }
    /// The input schema, generated once: an object root, no `$ref`.
    fn input_schema(&self) -> &Value;
    /// The Lark grammar of a tool that also takes its input as free-form text (the OpenAI
    /// Responses API's custom tools): the text is the value of the input's one string field.
    fn freeform_grammar(&self) -> Option<&str> {
        None
    }
    /// What the model reads about the free-form form, when it differs from the description.
    fn freeform_description(&self) -> Option<&str> {
        None
    }
    /// The JSON schema of the structured output (`data`), when the tool declares one (an
    /// MCP server's tool passes its `outputSchema` on; `agent-tools serve` offers it).
    fn output_schema(&self) -> Option<&Value> {
        None
    }
    /// The description the model reads; may depend on the input.
    async fn description(&self, input: Option<&ParsedInput>) -> String;
    /// Checks raw JSON against the schema and reads it.
    fn parse_input(&self, raw: &Value) -> Result<ParsedInput, ToolError>;
    /// Whether this call may run alongside other concurrency-safe calls.
    fn is_concurrency_safe(&self, input: &ParsedInput) -> bool;
    /// Whether this call changes nothing.
    fn is_read_only(&self, input: &ParsedInput) -> bool;
    /// Rules that need the file system or the context.
    async fn validate(&self, input: &ParsedInput, ctx: &ToolContext) -> ValidationResult;
    /// The tool's own permission check (the engine applies rules and modes around it).
    async fn check_permission(&self, input: &ParsedInput, ctx: &ToolContext) -> PermissionDecision;
    /// Runs the call.
    async fn call(
        &self,
        input: ParsedInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Value>, ToolError>;
}

/// A tool with typed input and output, with defaults for everything but the call. Wrap it
/// in [`Typed`] to put it in a pool.
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// The input; its JSON schema is the tool's schema.
    type Input: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    /// The structured output.
    type Output: Serialize + Send + Sync + 'static;

    /// The wire name.
    fn name(&self) -> &'static str;
    /// Legacy names that also resolve this tool.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// A short capability phrase for ToolSearch.
    fn search_hint(&self) -> Option<&'static str> {
        None
    }
    /// The built-in tools whose permission rules also govern this one (see
    /// [`Tool::checked_as`]).
    fn checked_as(&self) -> &'static [&'static str] {
        &[]
    }
    /// The category.
    fn category(&self) -> ToolCategory;
    /// A runtime switch.
    fn is_enabled(&self) -> bool {
        true
    }
    /// Whether the tool is loaded on demand through ToolSearch.
    fn is_deferred(&self) -> bool {
        false
    }
    /// Input-independent hints.
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }
    /// Whether a call always needs a person.
    fn requires_user_interaction(&self) -> bool {
        false
    }
    /// Above this many characters the result is spilled to a file.
    fn max_result_size_chars(&self) -> usize {
        100_000
    }
    /// Whether an error cancels concurrent siblings.
    fn cancels_siblings_on_error(&self) -> bool {
        false
    }
    /// The Lark grammar of a free-form input (see [`Tool::freeform_grammar`]).
    fn freeform_grammar(&self) -> Option<&'static str> {
        None
    }
    /// The description of the free-form form (see [`Tool::freeform_description`]).
    fn freeform_description(&self) -> Option<&'static str> {
        None
    }
    /// The description; "Execute {name}" unless the tool says more.
    async fn description(&self, _input: Option<&Self::Input>) -> String {
        format!("Execute {}", self.name())
    }
    /// Whether this call may run alongside other concurrency-safe calls.
    fn is_concurrency_safe(&self, input: &Self::Input) -> bool;
    /// Whether this call changes nothing.
    fn is_read_only(&self, input: &Self::Input) -> bool;
    /// Rules beyond the schema; the default accepts everything.
    async fn validate(&self, _input: &Self::Input, _ctx: &ToolContext) -> ValidationResult {
        ValidationResult::Valid
    }
    /// The tool's own permission check; the default allows.
    async fn check_permission(
        &self,
        _input: &Self::Input,
        _ctx: &ToolContext,
    ) -> PermissionDecision {
        PermissionDecision::Allow
    }
    /// Runs the call.
    async fn call(
        &self,
        input: Self::Input,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Self::Output>, ToolError>;
}

/// The adapter that makes every [`TypedTool`] a [`Tool`]: the schema is generated once, on
/// first use, the input parsed with readable validation errors, the output serialised.
pub struct Typed<T: TypedTool> {
    tool: T,
    /// Generated when first asked for: a one-shot `agent-tools call` builds every tool and
    /// uses one schema, and generating them all was a tenth of its start-up
    schema: std::sync::OnceLock<Value>,
}

impl<T: TypedTool> fmt::Debug for Typed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Typed")
            .field("name", &self.tool.name())
            .finish_non_exhaustive()
    }
}

impl<T: TypedTool> Typed<T> {
    /// Wraps `tool`; its schema is generated on first use.
    pub fn new(tool: T) -> Self {
        Typed {
            schema: std::sync::OnceLock::new(),
            tool,
        }
    }

    fn schema(&self) -> &Value {
        self.schema.get_or_init(schema_for::<T::Input>)
    }

    /// The wrapped tool.
    pub fn inner(&self) -> &T {
        &self.tool
    }

    fn typed<'a>(&self, input: &'a ParsedInput) -> Option<&'a T::Input> {
        input.downcast_ref::<T::Input>()
    }
}

#[async_trait]
impl<T: TypedTool> Tool for Typed<T> {
    fn name(&self) -> &str {
        self.tool.name()
    }
    fn aliases(&self) -> &[&str] {
        self.tool.aliases()
    }
    fn search_hint(&self) -> Option<&str> {
        self.tool.search_hint()
    }
    fn checked_as(&self) -> &[&str] {
        self.tool.checked_as()
    }
    fn category(&self) -> ToolCategory {
        self.tool.category()
    }
    fn is_enabled(&self) -> bool {
        self.tool.is_enabled()
    }
    fn is_deferred(&self) -> bool {
        self.tool.is_deferred()
    }
    fn annotations(&self) -> ToolAnnotations {
        self.tool.annotations()
    }
    fn requires_user_interaction(&self) -> bool {
        self.tool.requires_user_interaction()
    }
    fn max_result_size_chars(&self) -> usize {
        self.tool.max_result_size_chars()
    }
    fn cancels_siblings_on_error(&self) -> bool {
        self.tool.cancels_siblings_on_error()
    }
    fn input_schema(&self) -> &Value {
        self.schema()
    }
    fn freeform_grammar(&self) -> Option<&str> {
        self.tool.freeform_grammar()
    }
    fn freeform_description(&self) -> Option<&str> {
        self.tool.freeform_description()
    }
    async fn description(&self, input: Option<&ParsedInput>) -> String {
        let typed = input.and_then(|i| self.typed(i));
        self.tool.description(typed).await
    }
    fn parse_input(&self, raw: &Value) -> Result<ParsedInput, ToolError> {
        let (typed, json) = input::parse_input::<T::Input>(self.tool.name(), self.schema(), raw)?;
        Ok(ParsedInput::new(json, typed))
    }
    fn is_concurrency_safe(&self, input: &ParsedInput) -> bool {
        self.typed(input)
            .is_some_and(|i| self.tool.is_concurrency_safe(i))
    }
    fn is_read_only(&self, input: &ParsedInput) -> bool {
        self.typed(input).is_some_and(|i| self.tool.is_read_only(i))
    }
    async fn validate(&self, input: &ParsedInput, ctx: &ToolContext) -> ValidationResult {
        match self.typed(input) {
            Some(i) => self.tool.validate(i, ctx).await,
            None => {
                ValidationResult::invalid("internal error: a tool received another tool's input")
            }
        }
    }
    async fn check_permission(&self, input: &ParsedInput, ctx: &ToolContext) -> PermissionDecision {
        match self.typed(input) {
            Some(i) => self.tool.check_permission(i, ctx).await,
            None => {
                PermissionDecision::deny("internal error: a tool received another tool's input")
            }
        }
    }
    async fn call(
        &self,
        input: ParsedInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Value>, ToolError> {
        let typed = input.into_typed::<T::Input>()?;
        let result = self.tool.call(typed, ctx).await?;
        let data = serde_json::to_value(&result.data).map_err(|e| {
            ToolError::fatal(format!(
                "internal error: output of {} is not JSON: {e}",
                self.tool.name()
            ))
        })?;
        Ok(result.map(|_| data))
    }
}
