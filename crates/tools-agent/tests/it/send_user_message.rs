//! SendUserMessage through the pool: messages and their attachments delivered to the sink.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::ToolError;
use tools_agent::{UserMessage, UserMessageSink};

use crate::{Fixture, assert_error, call};

#[derive(Default)]
struct Inbox(Mutex<Vec<UserMessage>>);

#[async_trait]
impl UserMessageSink for Inbox {
    async fn deliver(&self, message: &UserMessage) -> Result<(), ToolError> {
        self.0.lock().unwrap().push(message.clone());
        Ok(())
    }
}

#[tokio::test]
async fn send_user_message_delivers_to_the_sink() {
    let f = Fixture::new();
    std::fs::write(f.path("report.md"), "# hi").unwrap();
    std::fs::create_dir(f.path("dir")).unwrap();
    let headless = f.ctx();
    assert_error(
        &call(
            &headless,
            "SendUserMessage",
            json!({"message": "hi", "status": "normal"}),
        )
        .await,
        "No user message channel is configured",
    );
    let inbox = Arc::new(Inbox::default());
    let ctx = f
        .builder()
        .service(inbox.clone() as Arc<dyn UserMessageSink>)
        .build();
    let r = call(
        &ctx,
        "Brief",
        json!({"message": "done", "status": "proactive", "attachments": ["report.md"]}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.tool, "SendUserMessage");
    assert_eq!(
        r.text(),
        "Message delivered to user. 1 attachment included."
    );
    let got = inbox.0.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].attachments[0].path, f.path("report.md"));
    assert_eq!(got[0].attachments[0].size, 4);
    let check = |input: Value, needle: &'static str| {
        let ctx = ctx.clone();
        async move { assert_error(&call(&ctx, "SendUserMessage", input).await, needle) }
    };
    check(
        json!({"message": "x", "status": "normal", "attachments": ["nope.txt"]}),
        "nope.txt does not exist",
    )
    .await;
    check(
        json!({"message": "x", "status": "normal", "attachments": ["dir"]}),
        "is not a regular file",
    )
    .await;
    check(
        json!({"message": "x", "status": "normal", "attachments": [""]}),
        "attachments[0] is empty",
    )
    .await;
    check(
        json!({"message": "x"}),
        "The required parameter `status` is missing",
    )
    .await;
    check(json!({"message": "x", "status": "loud"}), "status").await;
    // Attachments outside the working directories need read permission.
    let outside = tempfile::NamedTempFile::new().unwrap();
    check(
        json!({"message": "x", "status": "normal", "attachments": [outside.path()]}),
        "Path is outside allowed working directories",
    )
    .await;
    assert_eq!(inbox.0.lock().unwrap().len(), 1);
}
