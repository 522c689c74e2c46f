//! SendUserMessage (alias Brief): a message to the user, with optional file attachments,
//! delivered to a sink the host provides.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    PermissionDecision, ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult, TypedTool,
    ValidationResult,
};

/// What the model reads after delivery.
pub const DELIVERED: &str = "Message delivered to user.";

const DESCRIPTION: &str = "Send a message to the user. This is how the user sees what you have to say while you work: status updates, results, questions that do not block you. Write it in markdown. Attach files (by path) when the user should see them, such as a generated report or a screenshot.

Set `status` to \"normal\" when you are replying to what the user asked, and to \"proactive\" when you are telling them something on your own initiative (a finished background task, a problem you noticed).";

/// Why a message is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    /// A reply to the user
    Normal,
    /// Unprompted news
    Proactive,
}

/// Input of SendUserMessage.
///
/// # JSON names
///
/// Every field's JSON name is its Rust name.
///
/// `status` takes the [`MessageStatus`] variants in snake case.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendUserMessageInput {
    /// The message, in markdown
    #[schemars(length(min = 1))]
    pub message: String,
    /// Files to attach (absolute or relative to the working directory)
    #[serde(default)]
    #[schemars(inner(length(max = tool_core::MAX_PATH_CHARS)))]
    pub attachments: Option<Vec<String>>,
    /// "normal" for a reply, "proactive" for news the user did not ask for
    pub status: MessageStatus,
}

/// One attached file, as delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attachment {
    /// Absolute path
    pub path: PathBuf,
    /// Size in bytes
    pub size: u64,
}

/// A message for the user, as the sink receives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// The markdown text
    pub message: String,
    /// Attached files
    pub attachments: Vec<Attachment>,
    /// Reply or proactive
    pub status: MessageStatus,
    /// The session that sent it
    pub session_id: String,
}

/// Where user messages go. Hosts put an `Arc<dyn UserMessageSink>` in the context's services.
#[async_trait]
pub trait UserMessageSink: Send + Sync {
    /// Delivers one message; an error is reported to the model.
    async fn deliver(&self, message: &UserMessage) -> Result<(), ToolError>;
}
impl tool_core::ServiceType for dyn UserMessageSink {}

/// The SendUserMessage tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct SendUserMessage;

fn resolve_attachments(
    input: &SendUserMessageInput,
    ctx: &ToolContext,
) -> Result<Vec<Attachment>, String> {
    let mut out = Vec::new();
    for (i, raw) in input.attachments.iter().flatten().enumerate() {
        if raw.trim().is_empty() {
            return Err(format!("attachments[{i}] is empty: give a file path"));
        }
        let path = ctx.resolve_path(raw);
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => out.push(Attachment {
                path,
                size: meta.len(),
            }),
            Ok(_) => {
                return Err(format!(
                    "Attachment {} is not a regular file: attach files, not directories or devices",
                    path.display()
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!(
                    "Attachment {} does not exist. Check the path (relative paths are resolved against {}).",
                    path.display(),
                    ctx.cwd().display()
                ));
            }
            Err(e) => return Err(format!("Attachment {} cannot be read: {e}", path.display())),
        }
    }
    Ok(out)
}

#[async_trait]
impl TypedTool for SendUserMessage {
    type Input = SendUserMessageInput;
    type Output = UserMessage;
    const META: ToolMeta = ToolMeta::new("SendUserMessage")
        .aliases(&["Brief"])
        .describe(DESCRIPTION)
        .hint("send a message or file to the user")
        .category(ToolCategory::UserInteraction)
        .read_only();

    async fn validate(&self, input: &SendUserMessageInput, ctx: &ToolContext) -> ValidationResult {
        match resolve_attachments(input, ctx) {
            Ok(_) => ValidationResult::Valid,
            Err(message) => ValidationResult::invalid(message),
        }
    }
    async fn check_permission(
        &self,
        input: &SendUserMessageInput,
        ctx: &ToolContext,
    ) -> PermissionDecision {
        // Attaching a file shows its content to the user: the read rules apply.
        let Ok(attachments) = resolve_attachments(input, ctx) else {
            return PermissionDecision::Allow;
        };
        for a in attachments {
            let decision = ctx.permissions().check_read_path(&a.path, ctx);
            if decision != PermissionDecision::Allow {
                return decision;
            }
        }
        PermissionDecision::Allow
    }
    async fn call(
        &self,
        input: SendUserMessageInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<UserMessage>, ToolError> {
        let attachments = resolve_attachments(&input, ctx).map_err(ToolError::respond)?;
        let Some(sink) = ctx.services().get::<Arc<dyn UserMessageSink>>() else {
            return Err(ToolError::respond(
                "No user message channel is configured in this session, so the message was not delivered. Put what you want the user to read in your reply instead.",
            ));
        };
        let message = UserMessage {
            message: input.message,
            attachments,
            status: input.status,
            session_id: ctx.session_id().to_owned(),
        };
        sink.deliver(&message).await?;
        let mut text = DELIVERED.to_owned();
        match message.attachments.len() {
            0 => {}
            1 => text.push_str(" 1 attachment included."),
            n => text.push_str(&format!(" {n} attachments included.")),
        }
        Ok(ToolResult::ok(message).with_text(text))
    }
}
