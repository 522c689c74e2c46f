//! ListMcpResourcesTool and ReadMcpResourceTool: the resources of the session's MCP servers,
//! found through the [`McpManager`] in the context's services. A server that failed to
//! start, or that `.mcp.json` could not describe, is reported by name with why (the
//! reference answers "No resources found" for it).

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult, TypedTool};

use crate::manager::{McpManager, skipped_message};
use crate::server_conn::ServerConn;
use crate::tool::save_blob;

/// The manager of the session, or the error that says there is none.
fn manager(ctx: &ToolContext) -> Result<Arc<McpManager>, ToolError> {
    ctx.services()
        .get::<Arc<McpManager>>()
        .ok_or_else(|| ToolError::respond("No MCP servers are configured (add them to .mcp.json)."))
}

/// The server named `name`; one the configuration skipped is an error saying why.
fn server<'a>(manager: &'a McpManager, name: &str) -> Result<&'a Arc<ServerConn>, ToolError> {
    if let Some(skipped) = manager.skipped().iter().find(|s| s.name == name) {
        return Err(ToolError::fatal(skipped_message(skipped)));
    }
    manager.server(name).ok_or_else(|| {
        ToolError::respond(format!(
            "Server \"{name}\" not found. Available servers: {}",
            manager.server_names().join(", ")
        ))
    })
}

/// Input of ListMcpResourcesTool
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInput {
    /// Optional server name to filter resources by
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub server: Option<String>,
}

/// One listed resource
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedResource {
    /// The resource's URI
    pub uri: String,
    /// Its name
    pub name: String,
    /// Its MIME type, when known
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its description
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The server offering it
    pub server: String,
}

/// Lists the resources of the configured MCP servers.
#[derive(Debug, Default)]
pub struct ListMcpResourcesTool;

const NO_RESOURCES: &str =
    "No resources found. MCP servers may still provide tools even if they have no resources.";

#[async_trait]
impl TypedTool for ListMcpResourcesTool {
    type Input = ListInput;
    type Output = Vec<ListedResource>;
    const META: ToolMeta = ToolMeta::new("ListMcpResourcesTool")
        .describe(
            "Lists the resources (files, documents, data) that the connected MCP servers offer. \
             Give `server` to list one server's resources. Read one with ReadMcpResourceTool.",
        )
        .hint("list resources offered by MCP servers")
        .category(ToolCategory::Mcp)
        .deferred()
        .read_only()
        .read_only_hint();

    async fn call(
        &self,
        input: ListInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Vec<ListedResource>>, ToolError> {
        let manager = manager(ctx)?;
        let mut notes = Vec::new();
        let servers: Vec<Arc<ServerConn>> = match &input.server {
            Some(name) => vec![Arc::clone(server(&manager, name)?)],
            None => {
                notes.extend(manager.skipped().iter().map(skipped_message));
                manager.servers().to_vec()
            }
        };
        let mut listed = Vec::new();
        for server in servers {
            // Listing every server waits neither for one still starting nor for a new
            // attempt at one that failed; naming it does (up to its start-up timeout).
            if input.server.is_none() {
                if server.is_starting() {
                    notes.push(format!(
                        "MCP server \"{}\" is still starting; its resources are not listed yet.",
                        server.name()
                    ));
                    continue;
                }
                if let Some(error) = server.error() {
                    notes.push(error);
                    continue;
                }
            }
            let resources = match server.list_resources().await {
                Ok(resources) => resources,
                Err(e) => {
                    let why = naming(server.name(), e);
                    if input.server.is_some() {
                        return Err(ToolError::fatal(why));
                    }
                    notes.push(why);
                    continue;
                }
            };
            for r in resources {
                listed.push(ListedResource {
                    uri: r.uri.clone(),
                    name: r.name.clone(),
                    mime_type: r.mime_type.clone(),
                    description: r.description.clone(),
                    server: server.name().to_owned(),
                });
            }
        }
        if listed.is_empty() {
            let mut text = NO_RESOURCES.to_owned();
            for note in &notes {
                text.push('\n');
                text.push_str(note);
            }
            return Ok(ToolResult::ok(listed).with_text(text));
        }
        Ok(notes
            .into_iter()
            .fold(ToolResult::ok(listed), ToolResult::with_side_message))
    }
}

/// `error` as a sentence that names the server (connection errors already do).
fn naming(server: &str, error: String) -> String {
    if error.contains(&format!("\"{server}\"")) {
        error
    } else {
        format!("MCP server \"{server}\": {error}")
    }
}

/// Input of ReadMcpResourceTool
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadMcpResourceInput {
    /// The MCP server name
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub server: String,
    /// The resource URI to read
    #[schemars(length(max = tool_core::MAX_URL_CHARS))]
    pub uri: String,
}

/// One part of a read resource
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadMcpResourceContent {
    /// The URI
    pub uri: String,
    /// The MIME type, when known
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text content, inline
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Where binary content was saved
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob_saved_to: Option<String>,
}

/// What ReadMcpResourceTool returns
#[derive(Debug, Serialize)]
pub struct ReadMcpResourceOutput {
    /// The parts of the resource
    pub contents: Vec<ReadMcpResourceContent>,
}

/// Reads one resource of an MCP server; binary content is saved to a file.
#[derive(Debug, Default)]
pub struct ReadMcpResourceTool;

#[async_trait]
impl TypedTool for ReadMcpResourceTool {
    type Input = ReadMcpResourceInput;
    type Output = ReadMcpResourceOutput;
    const META: ToolMeta = ToolMeta::new("ReadMcpResourceTool")
        .describe(
            "Reads a resource of an MCP server by its URI (see ListMcpResourcesTool). Text is \
             returned inline; binary content is saved to a file whose path is returned.",
        )
        .hint("read a resource of an MCP server by URI")
        .category(ToolCategory::Mcp)
        .deferred()
        .read_only()
        .read_only_hint();

    async fn call(
        &self,
        input: ReadMcpResourceInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<ReadMcpResourceOutput>, ToolError> {
        let manager = manager(ctx)?;
        let server = server(&manager, &input.server)?;
        if let Err(e) = server.peer().await {
            return Err(ToolError::fatal(format!(
                "Server \"{}\" is not connected: {e}",
                input.server
            )));
        }
        if !server.supports_resources() {
            return Err(ToolError::respond(format!(
                "Server \"{}\" does not support resources",
                input.server
            )));
        }
        let result = server.read_resource(&input.uri).await.map_err(|e| {
            ToolError::respond(format!(
                "Reading {} from MCP server \"{}\": {e}",
                input.uri, input.server
            ))
        })?;
        let mut contents = Vec::new();
        for part in result.contents {
            match part {
                rmcp::model::ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => contents.push(ReadMcpResourceContent {
                    uri,
                    mime_type,
                    text: Some(text),
                    blob_saved_to: None,
                }),
                rmcp::model::ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => {
                    let path = save_blob(
                        ctx.private_state_dir(),
                        server,
                        &uri,
                        mime_type.as_deref(),
                        &blob,
                    )
                    .map_err(ToolError::fatal)?;
                    contents.push(ReadMcpResourceContent {
                        uri,
                        mime_type,
                        text: None,
                        blob_saved_to: Some(path.display().to_string()),
                    });
                }
                _ => contents.push(ReadMcpResourceContent {
                    uri: input.uri.clone(),
                    mime_type: None,
                    text: Some("[content of an unknown kind omitted]".to_owned()),
                    blob_saved_to: None,
                }),
            }
        }
        Ok(ToolResult::ok(ReadMcpResourceOutput { contents }))
    }
}
