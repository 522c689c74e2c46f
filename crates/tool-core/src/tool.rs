//! The tool contracts: the object-safe [`Tool`], the typed [`TypedTool`] with defaults for
//! everything but the call, [`ToolMeta`], the constant a typed tool declares what it is
//! with, and [`Typed`], the one adapter between them.

use std::any::Any;
use std::fmt;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::schema::{ToolAnnotations, schema_for};
use crate::{PermissionDecision, ToolContext, ToolError, ToolResult, input};

/// The 14 categories a tool belongs to (by kind of work, not by crate).
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
    /// A tool a host defines for itself (the default of [`ToolMeta::new`]); plan mode
    /// refuses its calls unless they are read-only
    Custom,
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

/// What a [`TypedTool`] is, apart from its input, output and behaviour: its name and
/// description, how ToolSearch and the pool treat it, and the answers that do not depend on
/// the input. Declared once as the tool's [`TypedTool::META`]; every [`TypedTool`] method it
/// answers reads it by default, and a tool whose answer depends on the input or on settings
/// keeps that one method.
///
/// [`ToolMeta::new`] gives the defaults: the description "Execute {name}", no aliases or
/// search hint, [`ToolCategory::Custom`], loaded up front, neither read-only nor
/// concurrency-safe, governed by no other tool's rules, spilled above 100,000 characters,
/// no person needed, no effect on siblings, no annotations, no free-form form.
///
/// ```
/// use tool_core::{ToolCategory, ToolMeta};
///
/// const META: ToolMeta = ToolMeta::new("Glob")
///     .describe("Finds files by name pattern.")
///     .hint("find files by name pattern or wildcard")
///     .category(ToolCategory::FileSystem)
///     .read_only()
///     .read_only_hint()
///     .idempotent_hint();
/// # let _ = META;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolMeta {
    name: &'static str,
    aliases: &'static [&'static str],
    /// Empty: "Execute {name}"
    description: &'static str,
    search_hint: Option<&'static str>,
    category: ToolCategory,
    deferred: bool,
    read_only: bool,
    concurrency_safe: bool,
    checked_as: &'static [&'static str],
    max_result_size_chars: usize,
    requires_user_interaction: bool,
    cancels_siblings_on_error: bool,
    annotations: ToolAnnotations,
    freeform_grammar: Option<&'static str>,
    freeform_description: Option<&'static str>,
}

impl ToolMeta {
    /// The tool called `name` (its wire name), with every default (see [`ToolMeta`]).
    pub const fn new(name: &'static str) -> Self {
        ToolMeta {
            name,
            aliases: &[],
            description: "",
            search_hint: None,
            category: ToolCategory::Custom,
            deferred: false,
            read_only: false,
            concurrency_safe: false,
            checked_as: &[],
            max_result_size_chars: 100_000,
            requires_user_interaction: false,
            cancels_siblings_on_error: false,
            annotations: ToolAnnotations {
                read_only: false,
                destructive: false,
                idempotent: false,
                open_world: false,
            },
            freeform_grammar: None,
            freeform_description: None,
        }
    }

    /// The description the model reads (a tool whose description is built at run time
    /// keeps [`TypedTool::description`] instead).
    #[must_use]
    pub const fn describe(mut self, description: &'static str) -> Self {
        self.description = description;
        self
    }

    /// A short capability phrase for ToolSearch.
    #[must_use]
    pub const fn hint(mut self, search_hint: &'static str) -> Self {
        self.search_hint = Some(search_hint);
        self
    }

    /// The category (the default is [`ToolCategory::Custom`]).
    #[must_use]
    pub const fn category(mut self, category: ToolCategory) -> Self {
        self.category = category;
        self
    }

    /// Legacy names that also resolve the tool.
    #[must_use]
    pub const fn aliases(mut self, aliases: &'static [&'static str]) -> Self {
        self.aliases = aliases;
        self
    }

    /// The built-in tools whose permission rules also govern this one (see
    /// [`Tool::checked_as`]).
    #[must_use]
    pub const fn checked_as(mut self, tools: &'static [&'static str]) -> Self {
        self.checked_as = tools;
        self
    }

    /// Loaded on demand through ToolSearch.
    #[must_use]
    pub const fn deferred(mut self) -> Self {
        self.deferred = true;
        self
    }

    /// Every call changes nothing, and so may also run alongside other concurrency-safe
    /// calls (every read-only built-in is concurrency-safe). A tool that must still run
    /// alone overrides [`TypedTool::is_concurrency_safe`].
    #[must_use]
    pub const fn read_only(mut self) -> Self {
        self.read_only = true;
        self.concurrency_safe = true;
        self
    }

    /// Every call may run alongside other concurrency-safe calls, though it changes
    /// something.
    #[must_use]
    pub const fn concurrency_safe(mut self) -> Self {
        self.concurrency_safe = true;
        self
    }

    /// Above this many characters the result is spilled to a file (the default is 100,000;
    /// `usize::MAX` for a tool that bounds its own output).
    #[must_use]
    pub const fn max_result_chars(mut self, chars: usize) -> Self {
        self.max_result_size_chars = chars;
        self
    }

    /// Every call needs a person, even in bypassPermissions mode.
    #[must_use]
    pub const fn requires_user_interaction(mut self) -> Self {
        self.requires_user_interaction = true;
        self
    }

    /// An error of this tool cancels its concurrent siblings in a batch.
    #[must_use]
    pub const fn cancels_siblings_on_error(mut self) -> Self {
        self.cancels_siblings_on_error = true;
        self
    }

    /// The MCP annotation `readOnlyHint` (apart from [`ToolMeta::read_only`], which the
    /// pool uses).
    #[must_use]
    pub const fn read_only_hint(mut self) -> Self {
        self.annotations.read_only = true;
        self
    }

    /// The MCP annotation `destructiveHint`.
    #[must_use]
    pub const fn destructive_hint(mut self) -> Self {
        self.annotations.destructive = true;
        self
    }

    /// The MCP annotation `idempotentHint`.
    #[must_use]
    pub const fn idempotent_hint(mut self) -> Self {
        self.annotations.idempotent = true;
        self
    }

    /// The MCP annotation `openWorldHint`.
    #[must_use]
    pub const fn open_world_hint(mut self) -> Self {
        self.annotations.open_world = true;
        self
    }

    /// The Lark grammar of the free-form form (see [`Tool::freeform_grammar`]).
    #[must_use]
    pub const fn freeform_grammar(mut self, lark: &'static str) -> Self {
        self.freeform_grammar = Some(lark);
        self
    }

    /// What the model reads about the free-form form (see [`Tool::freeform_description`]).
    #[must_use]
    pub const fn freeform_description(mut self, description: &'static str) -> Self {
        self.freeform_description = Some(description);
        self
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
    /// The MCP server this tool comes from, as its pool name spells it (`server` in
    /// `mcp__server__tool`): rules naming a server (`mcp__server`, `mcp__server__*`) match
    /// exactly the tools whose server this is, wherever `__` falls in the name.
    fn mcp_server(&self) -> Option<&str> {
        None
    }
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

/// A tool with typed input and output, with defaults for everything but the call: what
/// [`TypedTool::META`] declares answers the metadata methods, and each stays overridable for
/// a tool whose answer depends on the input, on settings or on the value. Wrap it in
/// [`Typed`] to put it in a pool.
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// The input; its JSON schema is the tool's schema.
    type Input: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    /// The structured output.
    type Output: Serialize + Send + Sync + 'static;
    /// What the tool is: name, description, category and the input-independent answers.
    const META: ToolMeta;

    /// The wire name.
    fn name(&self) -> &'static str {
        Self::META.name
    }
    /// Legacy names that also resolve this tool.
    fn aliases(&self) -> &'static [&'static str] {
        Self::META.aliases
    }
    /// A short capability phrase for ToolSearch.
    fn search_hint(&self) -> Option<&'static str> {
        Self::META.search_hint
    }
    /// The built-in tools whose permission rules also govern this one (see
    /// [`Tool::checked_as`]).
    fn checked_as(&self) -> &'static [&'static str] {
        Self::META.checked_as
    }
    /// The category.
    fn category(&self) -> ToolCategory {
        Self::META.category
    }
    /// A runtime switch.
    fn is_enabled(&self) -> bool {
        true
    }
    /// Whether the tool is loaded on demand through ToolSearch.
    fn is_deferred(&self) -> bool {
        Self::META.deferred
    }
    /// Input-independent hints.
    fn annotations(&self) -> ToolAnnotations {
        Self::META.annotations
    }
    /// Whether a call always needs a person.
    fn requires_user_interaction(&self) -> bool {
        Self::META.requires_user_interaction
    }
    /// Above this many characters the result is spilled to a file.
    fn max_result_size_chars(&self) -> usize {
        Self::META.max_result_size_chars
    }
    /// Whether an error cancels concurrent siblings.
    fn cancels_siblings_on_error(&self) -> bool {
        Self::META.cancels_siblings_on_error
    }
    /// The Lark grammar of a free-form input (see [`Tool::freeform_grammar`]).
    fn freeform_grammar(&self) -> Option<&'static str> {
        Self::META.freeform_grammar
    }
    /// The description of the free-form form (see [`Tool::freeform_description`]).
    fn freeform_description(&self) -> Option<&'static str> {
        Self::META.freeform_description
    }
    /// The description: [`ToolMeta::describe`]'s text, "Execute {name}" when there is none.
    async fn description(&self, _input: Option<&Self::Input>) -> String {
        match Self::META.description {
            "" => format!("Execute {}", self.name()),
            text => text.to_owned(),
        }
    }
    /// Whether this call may run alongside other concurrency-safe calls; the default is
    /// [`ToolMeta::concurrency_safe`] (or [`ToolMeta::read_only`]).
    fn is_concurrency_safe(&self, _input: &Self::Input) -> bool {
        Self::META.concurrency_safe
    }
    /// Whether this call changes nothing; the default is [`ToolMeta::read_only`].
    fn is_read_only(&self, _input: &Self::Input) -> bool {
        Self::META.read_only
    }
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
