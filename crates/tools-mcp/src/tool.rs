//! One pool tool per MCP server tool: the server's schema passed through, its hints mapped
//! to read-only and concurrency-safe, its results mapped to content blocks, every call asked
//! about unless a rule (`mcp__server`, `mcp__server__*`, `mcp__server__tool`) allows it.
//!
//! A tool that declares an `outputSchema` keeps it ([`Tool::output_schema`]); its successful
//! results must carry `structuredContent` that conforms to it (checked, bounded, by
//! [`crate::structured`]), which becomes the result's data.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use base64::Engine;
use rmcp::model::{
    CallToolResult, ContentBlock as McpBlock, ResourceContents, Tool as McpToolDecl,
};
use serde_json::{Value, json};
use tool_core::{
    ContentBlock, ParsedInput, PermissionDecision, PermissionRule, Tool, ToolAnnotations,
    ToolCategory, ToolContext, ToolError, ToolResult, ValidationResult,
};

use crate::server_conn::ServerConn;

/// Results above this many characters are spilled to a file by the execution path
/// (about 25,000 tokens, the reference's `MAX_MCP_OUTPUT_TOKENS`).
pub const MAX_RESULT_CHARS: usize = 100_000;

/// A name cut for messages.
pub(crate) fn preview(text: &str) -> String {
    if text.chars().count() <= 80 {
        text.to_owned()
    } else {
        text.chars().take(80).collect::<String>() + "…"
    }
}

/// An MCP server's tool in the pool.
pub(crate) struct McpTool {
    server: Arc<ServerConn>,
    /// The server's part of the pool name (sanitised), which `mcp__<server>` rules match
    server_part: String,
    remote: String,
    name: String,
    description: String,
    schema: Value,
    /// The declared `outputSchema`
    output_schema: Option<Value>,
    hints: ToolAnnotations,
    deferred: bool,
    /// The definition offered when the tool joined the pool (description, schema, hints)
    offered: McpToolDecl,
}

impl McpTool {
    pub(crate) fn new(
        server: Arc<ServerConn>,
        decl: McpToolDecl,
        name: String,
        description: String,
    ) -> Self {
        let mut schema = Value::Object(decl.input_schema.as_ref().clone());
        if schema.get("type").is_none()
            && let Some(obj) = schema.as_object_mut()
        {
            obj.insert("type".into(), json!("object"));
        }
        let a = decl.annotations.clone().unwrap_or_default();
        let read_only = a.read_only_hint == Some(true);
        let hints = ToolAnnotations {
            read_only,
            // The MCP default for destructiveHint is true when the tool is not read-only.
            destructive: !read_only && a.destructive_hint != Some(false),
            idempotent: a.idempotent_hint == Some(true),
            open_world: a.open_world_hint != Some(false),
        };
        let always_load = decl
            .meta
            .as_ref()
            .and_then(|m| m.get("anthropic/alwaysLoad"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        McpTool {
            offered: decl.clone(),
            server_part: crate::naming::sanitize(server.name()),
            server,
            remote: decl.name.to_string(),
            name,
            description,
            schema,
            output_schema: decl
                .output_schema
                .as_ref()
                .map(|s| Value::Object(s.as_ref().clone())),
            hints,
            deferred: !always_load,
        }
    }
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    /// A successful result of a tool with an output schema must carry structured content
    /// that conforms to it (the MCP SDKs' clients refuse it otherwise, too).
    fn check_structured(
        &self,
        schema: &Value,
        structured: Option<&Value>,
    ) -> Result<(), ToolError> {
        let Some(structured) = structured else {
            return Err(ToolError::fatal(format!(
                "{} declares an output schema, but the MCP server \"{}\" returned no structuredContent",
                self.name,
                self.server.name()
            )));
        };
        let problems = crate::structured::problems(schema, structured);
        if problems.is_empty() {
            return Ok(());
        }
        Err(ToolError::fatal(format!(
            "{} returned structuredContent that does not match its output schema (a fault of the MCP server \"{}\"):\n{}",
            self.name,
            self.server.name(),
            problems.join("\n")
        )))
    }

    /// Whether this is `remote` of `server` (the same connection, the same server tool).
    pub(crate) fn is_of(&self, server: &Arc<ServerConn>, remote: &str) -> bool {
        Arc::ptr_eq(&self.server, server) && self.remote == remote
    }
}

static BLOBS: AtomicU64 = AtomicU64::new(0);

/// Saves a base64 blob under `<dir>/mcp-resources/<server>/` and returns its path; `dir`
/// is the calling session's private state directory (the blob is what that session fetched,
/// and the file tools let only it read there).
pub(crate) fn save_blob(
    dir: &std::path::Path,
    server: &ServerConn,
    uri: &str,
    mime: Option<&str>,
    data: &str,
) -> Result<PathBuf, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("the blob of {uri} is not valid base64: {e}"))?;
    let dir = dir
        .join("mcp-resources")
        .join(crate::naming::sanitize(server.name()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let stem: String = crate::naming::sanitize(uri.rsplit('/').next().unwrap_or("blob"))
        .chars()
        .take(60)
        .collect();
    let ext = match mime.unwrap_or("") {
        "image/png" => ".png",
        "image/jpeg" => ".jpg",
        "image/gif" => ".gif",
        "image/webp" => ".webp",
        "application/pdf" => ".pdf",
        "application/json" => ".json",
        m if m.starts_with("text/") => ".txt",
        _ => ".bin",
    };
    let n = BLOBS.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("{stem}-{}-{n}{ext}", std::process::id()));
    std::fs::write(&path, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// Maps an MCP result to what the model reads: text and images as they are, embedded text
/// resources inline, binary resources saved to a file, structured content as data (and as
/// JSON text when there is no other content).
pub(crate) fn map_result(
    server: &ServerConn,
    result: CallToolResult,
    blob_dir: &std::path::Path,
) -> ToolResult<Value> {
    let mut blocks = Vec::new();
    for block in result.content {
        match block {
            McpBlock::Text(t) => blocks.push(ContentBlock::text(t.text)),
            McpBlock::Image(i) => blocks.push(ContentBlock::Image {
                media_type: i.mime_type,
                data: i.data,
            }),
            McpBlock::Audio(a) => blocks.push(ContentBlock::text(format!(
                "[audio content ({}) of {} base64 characters omitted]",
                a.mime_type,
                a.data.len()
            ))),
            McpBlock::Resource(r) => match r.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    blocks.push(ContentBlock::text(format!("[Resource {uri}]\n{text}")));
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => {
                    let line = match save_blob(blob_dir, server, &uri, mime_type.as_deref(), &blob)
                    {
                        Ok(path) => format!(
                            "[Binary resource {uri} ({}) saved to {}]",
                            mime_type.as_deref().unwrap_or("unknown type"),
                            path.display()
                        ),
                        Err(e) => format!("[Binary resource {uri} could not be saved: {e}]"),
                    };
                    blocks.push(ContentBlock::text(line));
                }
                _ => blocks.push(ContentBlock::text(
                    "[a resource of an unknown kind omitted]",
                )),
            },
            McpBlock::ResourceLink(link) => blocks.push(ContentBlock::text(format!(
                "[Resource link: {} {}]",
                link.name, link.uri
            ))),
            _ => blocks.push(ContentBlock::text("[content of an unknown type omitted]")),
        }
    }
    let data = result.structured_content.unwrap_or(Value::Null);
    if blocks.is_empty() && !data.is_null() {
        blocks.push(ContentBlock::text(
            serde_json::to_string_pretty(&data).unwrap_or_default(),
        ));
    }
    let is_error = result.is_error == Some(true);
    let message = if is_error {
        let text: Vec<&str> = blocks.iter().filter_map(ContentBlock::as_text).collect();
        Some(text.join("\n"))
    } else {
        None
    };
    ToolResult {
        data,
        is_error,
        error_message: message,
        side_messages: Vec::new(),
        content: blocks,
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn category(&self) -> ToolCategory {
        ToolCategory::Mcp
    }
    fn mcp_server(&self) -> Option<&str> {
        Some(&self.server_part)
    }
    fn is_deferred(&self) -> bool {
        self.deferred
    }
    fn annotations(&self) -> ToolAnnotations {
        self.hints
    }
    fn max_result_size_chars(&self) -> usize {
        MAX_RESULT_CHARS
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }
    async fn description(&self, _input: Option<&ParsedInput>) -> String {
        self.description.clone()
    }
    fn parse_input(&self, raw: &Value) -> Result<ParsedInput, ToolError> {
        match raw {
            Value::Null => Ok(ParsedInput::from_json(json!({}))),
            Value::Object(_) => Ok(ParsedInput::from_json(raw.clone())),
            other => Err(ToolError::respond(format!(
                "InputValidationError: {} expects a JSON object as input, not {}",
                self.name,
                match other {
                    Value::Array(_) => "an array",
                    Value::String(_) => "a string",
                    Value::Number(_) => "a number",
                    _ => "a boolean",
                }
            ))),
        }
    }
    fn is_concurrency_safe(&self, _input: &ParsedInput) -> bool {
        self.hints.read_only
    }
    fn is_read_only(&self, _input: &ParsedInput) -> bool {
        self.hints.read_only
    }
    async fn validate(&self, _input: &ParsedInput, _ctx: &ToolContext) -> ValidationResult {
        ValidationResult::Valid
    }
    async fn check_permission(
        &self,
        _input: &ParsedInput,
        _ctx: &ToolContext,
    ) -> PermissionDecision {
        PermissionDecision::ask(
            format!(
                "{} is a tool of the MCP server \"{}\"; MCP tools need approval",
                self.name,
                self.server.name()
            ),
            Some(PermissionRule::tool(self.name.clone())),
        )
    }
    async fn call(
        &self,
        input: ParsedInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Value>, ToolError> {
        let arguments = match input.json() {
            Value::Object(map) => map.clone(),
            _ => serde_json::Map::new(),
        };
        let listed = self.server.listed_tools();
        let Some(current) = listed.iter().find(|t| t.name == self.remote) else {
            return Err(ToolError::respond(format!(
                "{} is no longer offered by the MCP server \"{}\" (its tool list changed)",
                self.name,
                self.server.name()
            )));
        };
        // A tool whose definition changed after it was offered (a "rug pull") is not called
        // until a new session shows the new definition.
        if current.description != self.offered.description
            || current.input_schema != self.offered.input_schema
            || current.output_schema != self.offered.output_schema
            || current.annotations != self.offered.annotations
        {
            return Err(ToolError::respond(format!(
                "{} changed its definition after it was offered to this session (the MCP server \"{}\" sent a new description, schema or hints); it is not called until a new session (agent-tools started again) shows the change for review",
                self.name,
                self.server.name()
            )));
        }
        let (result, note) = self
            .server
            .call_tool(&self.remote, arguments, ctx, &self.name)
            .await?;
        if let Some(schema) = &self.output_schema
            && result.is_error != Some(true)
        {
            self.check_structured(schema, result.structured_content.as_ref())?;
        }
        let mapped = map_result(&self.server, result, ctx.private_state_dir());
        Ok(match note {
            Some(note) => mapped.with_side_message(note),
            None => mapped,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use rmcp::model::{Resource, ResourceContents};

    use super::*;
    use crate::config::{ServerConfig, Transport};
    use crate::server_conn::ManagerState;

    fn server(state: &std::path::Path) -> Arc<ServerConn> {
        let config = ServerConfig {
            name: "demo".into(),
            transport: Transport::Stdio {
                command: "true".into(),
                args: Vec::new(),
                env: Default::default(),
                cwd: None,
            },
            startup_timeout: Duration::from_secs(1),
            call_timeout: Duration::from_secs(1),
            max_message_bytes: crate::config::DEFAULT_MAX_MESSAGE_BYTES,
        };
        ServerConn::new(config, Arc::new(ManagerState::new(state, state, &[])))
    }

    #[test]
    fn every_kind_of_content_is_mapped_for_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let server = server(dir.path());
        let mut result = CallToolResult::success(vec![
            McpBlock::text("plain text"),
            McpBlock::image("iVBORw0KGgo=", "image/png"),
            McpBlock::audio("AAAA", "audio/wav"),
            McpBlock::resource(ResourceContents::text("inline body", "demo://doc")),
            McpBlock::resource(
                ResourceContents::blob("AAECAw==", "demo://bin/data")
                    .with_mime_type("application/pdf"),
            ),
            McpBlock::resource_link(Resource::new("demo://linked", "linked")),
        ]);
        result.structured_content = Some(json!({"temperature": 21}));
        let mapped = map_result(&server, result, dir.path());
        assert!(!mapped.is_error);
        assert_eq!(mapped.data, json!({"temperature": 21}));
        let saved = dir.path().join("mcp-resources/demo");
        let blob = std::fs::read_dir(&saved)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        assert_eq!(std::fs::read(&blob).unwrap(), [0, 1, 2, 3]);
        let shown = serde_json::to_string_pretty(&mapped.content)
            .unwrap()
            .replace(&blob.display().to_string(), "[BLOB]");
        insta::assert_snapshot!(shown);

        let only_structured = map_result(
            &server,
            CallToolResult::structured(json!({"a": 1})),
            dir.path(),
        );
        // rmcp adds the JSON as text for older clients; the data is the structured value.
        assert_eq!(
            only_structured.content,
            vec![ContentBlock::text("{\"a\":1}")]
        );
        assert_eq!(only_structured.data, json!({"a": 1}));
        let error = map_result(
            &server,
            CallToolResult::error(vec![McpBlock::text("bad input")]),
            dir.path(),
        );
        assert!(error.is_error);
        assert_eq!(error.error_message.as_deref(), Some("bad input"));
    }
}
