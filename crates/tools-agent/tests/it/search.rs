//! ToolSearch over a catalog of deferred tools: select, keyword scores, required words,
//! server prefixes, deny rules.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{
    ParsedInput, PermissionDecision, PermissionEngine, PermissionRule, RuleBehavior, RuleSource,
    RuleSourceKind, SourcedRule, Tool, ToolCategory, ToolContext, ToolError, ToolResult,
    ValidationResult,
};
use tools_agent::ToolCatalog;
use tools_agent::testing::{NO_MATCH, name_parts};

use crate::{Fixture, assert_error, call};

struct Fake {
    name: &'static str,
    hint: Option<&'static str>,
    description: &'static str,
    deferred: bool,
    schema: Value,
}

#[async_trait]
impl Tool for Fake {
    fn name(&self) -> &str {
        self.name
    }
    fn search_hint(&self) -> Option<&str> {
        self.hint
    }
    fn category(&self) -> ToolCategory {
        if self.name.starts_with("mcp__") {
            ToolCategory::Mcp
        } else {
            ToolCategory::FileSystem
        }
    }
    fn is_deferred(&self) -> bool {
        self.deferred
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    async fn description(&self, _input: Option<&ParsedInput>) -> String {
        self.description.to_owned()
    }
    fn parse_input(&self, raw: &Value) -> Result<ParsedInput, ToolError> {
        Ok(ParsedInput::from_json(raw.clone()))
    }
    fn is_concurrency_safe(&self, _input: &ParsedInput) -> bool {
        true
    }
    fn is_read_only(&self, _input: &ParsedInput) -> bool {
        true
    }
    async fn validate(&self, _input: &ParsedInput, _ctx: &ToolContext) -> ValidationResult {
        ValidationResult::Valid
    }
    async fn check_permission(
        &self,
        _input: &ParsedInput,
        _ctx: &ToolContext,
    ) -> PermissionDecision {
        PermissionDecision::Allow
    }
    async fn call(
        &self,
        _input: ParsedInput,
        _ctx: &ToolContext,
    ) -> Result<ToolResult<Value>, ToolError> {
        Ok(ToolResult::ok(Value::Null))
    }
}

fn fake(
    name: &'static str,
    hint: Option<&'static str>,
    description: &'static str,
    deferred: bool,
) -> Arc<dyn Tool> {
    Arc::new(Fake {
        name,
        hint,
        description,
        deferred,
        schema: json!({"type": "object", "properties": {"x": {"type": "string"}}}),
    })
}

fn catalog() -> ToolCatalog {
    let tools = vec![
        fake("Read", Some("read files"), "Reads a file", false),
        fake(
            "NotebookEdit",
            Some("edit jupyter notebooks"),
            "Edits a notebook cell",
            true,
        ),
        fake(
            "WebFetch",
            Some("fetch a web page"),
            "Fetches a URL and converts it",
            true,
        ),
        fake(
            "mcp__slack__send_message",
            None,
            "Send a message to a slack channel",
            false,
        ),
        fake(
            "mcp__slack__list_channels",
            None,
            "List the channels",
            false,
        ),
        fake(
            "mcp__github__create_issue",
            None,
            "Create an issue; can message the team",
            false,
        ),
    ];
    ToolCatalog::new(move || tools.clone())
}

fn ctx_with(f: &Fixture, deny: &[&str]) -> ToolContext {
    let source = RuleSource {
        kind: RuleSourceKind::CliArg,
        file: None,
        root: f.root.clone(),
    };
    let rules = deny
        .iter()
        .map(|r| SourcedRule {
            rule: PermissionRule::parse(r).unwrap(),
            behavior: RuleBehavior::Deny,
            source: source.clone(),
        })
        .collect();
    f.builder()
        .permissions(PermissionEngine::new(rules))
        .service(catalog())
        .build()
}

async fn names(ctx: &ToolContext, query: &str) -> Vec<String> {
    let r = call(ctx, "ToolSearch", json!({"query": query})).await;
    assert!(!r.is_error, "{}", r.text());
    r.data["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn name_parts_split_camel_case_and_mcp_names() {
    assert_eq!(name_parts("NotebookEdit"), ["notebook", "edit"]);
    assert_eq!(name_parts("LSP"), ["lsp"]);
    assert_eq!(
        name_parts("mcp__slack__send_message"),
        ["slack", "send", "message"]
    );
    assert_eq!(name_parts("HTTPServer"), ["http", "server"]);
}

#[tokio::test]
async fn query_forms() {
    let f = Fixture::new();
    let ctx = ctx_with(&f, &[]);
    // Exact names, deferred or not; unknown ones reported.
    let r = call(
        &ctx,
        "ToolSearch",
        json!({"query": "select:NotebookEdit, Read,Nope"}),
    )
    .await;
    assert_eq!(r.data["matches"], json!(["NotebookEdit", "Read"]));
    assert!(
        r.text().contains("<function>{\"name\":\"NotebookEdit\""),
        "{}",
        r.text()
    );
    assert!(
        r.text().contains("\"input_schema\":{\"type\":\"object\""),
        "{}",
        r.text()
    );
    assert!(r.text().ends_with("Not found: Nope"));
    // Keywords: an exact MCP name part (12) beats a description word (2).
    assert_eq!(
        names(&ctx, "message").await,
        ["mcp__slack__send_message", "mcp__github__create_issue"]
    );
    // Only deferred tools are searched: Read is loaded already.
    assert_eq!(names(&ctx, "read").await, Vec::<String>::new());
    assert_eq!(names(&ctx, "jupyter").await, ["NotebookEdit"]);
    // A required word filters, the others rank.
    assert_eq!(
        names(&ctx, "+slack channel").await,
        ["mcp__slack__list_channels", "mcp__slack__send_message"]
    );
    // A server prefix lists its tools.
    assert_eq!(
        names(&ctx, "mcp__slack").await,
        ["mcp__slack__list_channels", "mcp__slack__send_message"]
    );
    let r = call(&ctx, "ToolSearch", json!({"query": "zebra"})).await;
    assert_eq!(r.text(), NO_MATCH);
    let r = call(
        &ctx,
        "ToolSearch",
        json!({"query": "message", "max_results": 1}),
    )
    .await;
    assert_eq!(r.data["matches"], json!(["mcp__slack__send_message"]));
    assert_eq!(r.data["totalDeferredTools"], 5);
}

#[tokio::test]
async fn denied_tools_are_not_found_and_bad_input_is_named() {
    let f = Fixture::new();
    let ctx = ctx_with(&f, &["mcp__slack"]);
    assert_eq!(names(&ctx, "message").await, ["mcp__github__create_issue"]);
    assert_error(
        &call(&ctx, "ToolSearch", json!({"query": ""})).await,
        "The parameter `query` must be at least 1 character(s) long",
    );
    assert_error(
        &call(&ctx, "ToolSearch", json!({"query": "x", "max_results": 0})).await,
        "The parameter `max_results` must be at least 1",
    );
    let bare = f.ctx();
    assert_error(
        &call(&bare, "ToolSearch", json!({"query": "x"})).await,
        "ToolSearch has no tool catalog",
    );
}
