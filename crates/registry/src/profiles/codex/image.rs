//! codex's `view_image` over Read: image files only, checked as Read on the path, the image
//! block reaches the model.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{ContentBlock, Tool, ToolContext, ToolError, ToolResult, ValidationResult};

use crate::profiles::Mapping;

/// The image types Read turns into an image block.
const IMAGE_EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "gif", "webp"];

/// codex's `view_image`.
pub(super) struct ViewImage;

/// Input of `view_image`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ViewImageInput {
    /// Local filesystem path to an image file
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    path: String,
}

fn is_image(path: &str) -> bool {
    std::path::Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

#[async_trait]
impl Mapping for ViewImage {
    type Input = ViewImageInput;

    fn name(&self) -> &'static str {
        "view_image"
    }

    fn description(&self) -> String {
        "View a local image from the filesystem (only use if given a full filepath by the user, and the image isn't already attached to the thread context within <image ...> tags).".to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["Read"]
    }

    fn inner_input(&self, input: &ViewImageInput, _inner: &dyn Tool) -> Result<Value, ToolError> {
        let path = input.path.trim();
        if path.is_empty() {
            return Err(ToolError::respond(
                "`path` is empty: give the path of a PNG, JPEG, GIF or WebP image",
            ));
        }
        if !is_image(path) {
            return Err(ToolError::respond(format!(
                "unable to process image at `{path}`: not a PNG, JPEG, GIF or WebP image (`path` must name an image file; read other files with the shell)"
            )));
        }
        Ok(json!({ "file_path": path }))
    }

    async fn check(&self, input: &ViewImageInput, ctx: &ToolContext) -> ValidationResult {
        let path = ctx.resolve_path(input.path.trim());
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => ValidationResult::Valid,
            Ok(_) => ValidationResult::invalid(format!(
                "image path `{}` is not a file: `path` must name an image file",
                path.display()
            )),
            Err(e) => ValidationResult::invalid(format!(
                "unable to locate image at `{}`: {e}",
                path.display()
            )),
        }
    }

    fn render(&self, input: &ViewImageInput, result: ToolResult<Value>) -> ToolResult<Value> {
        if result.is_error {
            return result;
        }
        let images: Vec<ContentBlock> = result
            .content
            .iter()
            .filter(|b| matches!(b, ContentBlock::Image { .. }))
            .cloned()
            .collect();
        if images.is_empty() {
            let message = format!(
                "unable to process image at `{}`: the file is not an image",
                input.path.trim()
            );
            return ToolResult::error(result.data, message);
        }
        ToolResult {
            content: images,
            ..result
        }
    }
}
