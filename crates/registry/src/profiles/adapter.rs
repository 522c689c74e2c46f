//! A tool of a model family's vocabulary over one of the built-ins: its own name, schema and
//! result text; the built-in's validation, permission check, sandbox and call.

use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tool_core::{
    ParsedInput, PermissionDecision, Tool, ToolAnnotations, ToolCategory, ToolContext, ToolError,
    ToolResult, ValidationResult, schema_for,
};

/// How one family tool maps onto a built-in.
#[async_trait]
pub(crate) trait Mapping: Send + Sync + 'static {
    /// The family's input; its JSON schema is the tool's schema.
    type Input: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    /// The wire name.
    fn name(&self) -> &'static str;
    /// What the model reads about the tool.
    fn description(&self) -> String;
    /// The built-ins whose rules govern the tool (see [`Tool::checked_as`]).
    fn checked_as(&self) -> &'static [&'static str];
    /// The built-in's input for this call. An error here is the model's to fix.
    fn inner_input(&self, input: &Self::Input, inner: &dyn Tool) -> Result<Value, ToolError>;
    /// The built-in's result in the family's words; the default keeps it.
    fn render(&self, _input: &Self::Input, result: ToolResult<Value>) -> ToolResult<Value> {
        result
    }
    /// Checks the family's own rules that need the file system, after the permission check
    /// and before the built-in runs (so a refused call writes nothing); the default has none.
    fn precheck(&self, _input: &Self::Input, _ctx: &ToolContext) -> Result<(), ToolError> {
        Ok(())
    }
    /// [`Mapping::render`] with the session at hand (to show paths as the family shows
    /// them); the default is `render`.
    fn render_in(
        &self,
        input: &Self::Input,
        result: ToolResult<Value>,
        _ctx: &ToolContext,
    ) -> ToolResult<Value> {
        self.render(input, result)
    }
    /// A failed call, or the built-in's refusal of the input, in the family's words; the
    /// default keeps the error.
    fn render_error(&self, _input: &Self::Input, error: ToolError) -> ToolError {
        error
    }
    /// Whether the tool is loaded on demand; the default follows the built-in.
    fn deferred(&self, inner: bool) -> bool {
        inner
    }
    /// Checks of the family's input that need the context (a directory that must exist),
    /// run before the built-in's validation; the default accepts.
    async fn check(&self, _input: &Self::Input, _ctx: &ToolContext) -> ValidationResult {
        ValidationResult::Valid
    }
    /// What the person is asked when the built-in's check asks; the default keeps it.
    fn ask_reason(&self, _input: &Self::Input, reason: String) -> String {
        reason
    }
    /// The result after the built-in's call returned, which took `elapsed`: the default
    /// renders it with [`Mapping::render_in`]; a mapping that waits for more (a command that
    /// went on running) does it here.
    async fn finish(
        &self,
        input: &Self::Input,
        result: ToolResult<Value>,
        _elapsed: Duration,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Value>, ToolError> {
        Ok(self.render_in(input, result, ctx))
    }
}

/// The input an adapter passes along: the family's, and the built-in's parsed from it.
struct Both<I> {
    outer: I,
    inner: ParsedInput,
}

/// A [`Mapping`] made a [`Tool`] over the built-in `inner`.
pub(crate) struct Adapter<M: Mapping> {
    mapping: M,
    inner: Arc<dyn Tool>,
    schema: OnceLock<Value>,
    _input: PhantomData<fn() -> M::Input>,
}

impl<M: Mapping> Adapter<M> {
    /// `mapping` over `inner`.
    pub(crate) fn new(mapping: M, inner: Arc<dyn Tool>) -> Self {
        Adapter {
            mapping,
            inner,
            schema: OnceLock::new(),
            _input: PhantomData,
        }
    }

    fn both<'a>(&self, input: &'a ParsedInput) -> Option<&'a Both<M::Input>> {
        input.downcast_ref::<Both<M::Input>>()
    }
}

fn misrouted() -> String {
    "internal error: a tool received another tool's input".to_owned()
}

#[async_trait]
impl<M: Mapping> Tool for Adapter<M> {
    fn name(&self) -> &str {
        self.mapping.name()
    }
    fn search_hint(&self) -> Option<&str> {
        self.inner.search_hint()
    }
    fn checked_as(&self) -> &[&str] {
        self.mapping.checked_as()
    }
    fn category(&self) -> ToolCategory {
        self.inner.category()
    }
    fn is_enabled(&self) -> bool {
        self.inner.is_enabled()
    }
    fn is_deferred(&self) -> bool {
        self.mapping.deferred(self.inner.is_deferred())
    }
    fn annotations(&self) -> ToolAnnotations {
        self.inner.annotations()
    }
    fn requires_user_interaction(&self) -> bool {
        self.inner.requires_user_interaction()
    }
    fn max_result_size_chars(&self) -> usize {
        self.inner.max_result_size_chars()
    }
    fn cancels_siblings_on_error(&self) -> bool {
        self.inner.cancels_siblings_on_error()
    }
    fn input_schema(&self) -> &Value {
        self.schema.get_or_init(schema_for::<M::Input>)
    }
    async fn description(&self, _input: Option<&ParsedInput>) -> String {
        self.mapping.description()
    }
    fn parse_input(&self, raw: &Value) -> Result<ParsedInput, ToolError> {
        let (outer, json) =
            tool_core::parse_input::<M::Input>(self.mapping.name(), self.input_schema(), raw)?;
        let inner_json = self.mapping.inner_input(&outer, self.inner.as_ref())?;
        let inner = self.inner.parse_input(&inner_json)?;
        Ok(ParsedInput::new(json, Both { outer, inner }))
    }
    fn is_concurrency_safe(&self, input: &ParsedInput) -> bool {
        self.both(input)
            .is_some_and(|b| self.inner.is_concurrency_safe(&b.inner))
    }
    fn is_read_only(&self, input: &ParsedInput) -> bool {
        self.both(input)
            .is_some_and(|b| self.inner.is_read_only(&b.inner))
    }
    async fn validate(&self, input: &ParsedInput, ctx: &ToolContext) -> ValidationResult {
        let Some(b) = self.both(input) else {
            return ValidationResult::invalid(misrouted());
        };
        match self.mapping.check(&b.outer, ctx).await {
            ValidationResult::Valid => match self.inner.validate(&b.inner, ctx).await {
                // The built-in's refusal, in the family's words.
                ValidationResult::Invalid {
                    message,
                    error_code,
                } => ValidationResult::Invalid {
                    message: self
                        .mapping
                        .render_error(&b.outer, ToolError::respond(message))
                        .to_string(),
                    error_code,
                },
                valid => valid,
            },
            invalid => invalid,
        }
    }
    async fn check_permission(&self, input: &ParsedInput, ctx: &ToolContext) -> PermissionDecision {
        let Some(b) = self.both(input) else {
            return PermissionDecision::deny(misrouted());
        };
        match self.inner.check_permission(&b.inner, ctx).await {
            PermissionDecision::Ask {
                reason,
                suggestions,
                kind,
            } => PermissionDecision::Ask {
                reason: self.mapping.ask_reason(&b.outer, reason),
                suggestions,
                kind,
            },
            other => other,
        }
    }
    async fn call(
        &self,
        input: ParsedInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Value>, ToolError> {
        let Both { outer, inner } = input.into_typed::<Both<M::Input>>()?;
        if let Err(error) = self.mapping.precheck(&outer, ctx) {
            return Err(self.mapping.render_error(&outer, error));
        }
        let started = Instant::now();
        match self.inner.call(inner, ctx).await {
            Ok(result) => {
                self.mapping
                    .finish(&outer, result, started.elapsed(), ctx)
                    .await
            }
            Err(error) => Err(self.mapping.render_error(&outer, error)),
        }
    }
}
