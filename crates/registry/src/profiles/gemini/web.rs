//! `web_fetch` and `google_web_search` over WebFetch and WebSearch.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{ContentBlock, Tool, ToolError, ToolResult};

use super::{str_of, with_text};
use crate::profiles::Mapping;

/// Gemini CLI's `web_fetch` over WebFetch: the first URL of the prompt is fetched.
pub(super) struct WebFetch;

/// Input of `web_fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WebFetchInput {
    /// A string containing the URL(s) and your specific analysis instructions. Be clear
    /// about what information you want to find or summarize. Supports up to 20 URLs.
    prompt: String,
}

/// The http(s) URLs in `prompt`, in order, trailing punctuation dropped.
pub(super) fn urls(prompt: &str) -> Vec<String> {
    prompt
        .split(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"' | '\'' | '`'))
        .filter_map(|word| {
            let start = word.find("https://").or_else(|| word.find("http://"))?;
            let url = word[start..].trim_end_matches(['.', ',', ';', ':', ')', ']', '}', '!', '?']);
            (url.len() > "https://".len()).then(|| url.to_owned())
        })
        .collect()
}

impl Mapping for WebFetch {
    type Input = WebFetchInput;

    fn name(&self) -> &'static str {
        "web_fetch"
    }

    fn description(&self) -> String {
        "Fetches a URL given in the prompt and returns its content (HTML converted to markdown), with the prompt's instructions applied where the host can. Ideal for documentation review, technical research, or reading raw code from GitHub. Put the full URL (http:// or https://) in 'prompt'; one URL is fetched per call, so call the tool once per URL. Supports HTTP/HTTPS only.".to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["WebFetch"]
    }

    fn inner_input(&self, input: &WebFetchInput, _inner: &dyn Tool) -> Result<Value, ToolError> {
        let found = urls(&input.prompt);
        let Some(url) = found.first() else {
            return Err(ToolError::respond(
                "`prompt` contains no URL: include the full address of the page, starting with http:// or https://",
            ));
        };
        Ok(json!({ "url": url, "prompt": input.prompt }))
    }

    fn render(&self, input: &WebFetchInput, mut result: ToolResult<Value>) -> ToolResult<Value> {
        let found = urls(&input.prompt);
        if found.len() > 1 && !result.is_error {
            result.content.push(ContentBlock::text(format!(
                "Only {} was fetched; call web_fetch again for: {}",
                found[0],
                found[1..].join(", ")
            )));
        }
        result
    }
}

/// Gemini CLI's `google_web_search` over WebSearch.
pub(super) struct GoogleWebSearch;

/// Input of `google_web_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GoogleWebSearchInput {
    /// The search query. Supports natural language questions (e.g., 'Latest breaking
    /// changes in React 19') or specific technical queries.
    #[schemars(length(max = tool_core::MAX_PATTERN_CHARS))]
    query: String,
}

impl Mapping for GoogleWebSearch {
    type Input = GoogleWebSearchInput;

    fn name(&self) -> &'static str {
        "google_web_search"
    }

    fn description(&self) -> String {
        "Performs a web search to find information across the internet. Returns the results' titles, URIs and extracts, numbered for citation (e.g., [1]). Best for finding up-to-date documentation, troubleshooting obscure errors, or broad research. Use this when you don't have a specific URL. If a search result requires deeper analysis, follow up by using 'web_fetch' on the provided URI.".to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["WebSearch"]
    }

    fn inner_input(
        &self,
        input: &GoogleWebSearchInput,
        _inner: &dyn Tool,
    ) -> Result<Value, ToolError> {
        if input.query.trim().is_empty() {
            return Err(ToolError::respond(
                "`query` is empty: give the words or question to search for",
            ));
        }
        Ok(json!({ "query": input.query }))
    }

    fn render(&self, input: &GoogleWebSearchInput, result: ToolResult<Value>) -> ToolResult<Value> {
        if result.is_error {
            return result;
        }
        let query = &input.query;
        let hits: Vec<String> = result
            .data
            .get("results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, hit)| {
                let title = Some(str_of(hit, "title"))
                    .filter(|t| !t.is_empty())
                    .unwrap_or("Untitled");
                let mut line = format!("[{}] {title} ({})", i + 1, str_of(hit, "url"));
                let snippet = str_of(hit, "snippet");
                if !snippet.is_empty() {
                    line.push_str(&format!("\n{snippet}"));
                }
                line
            })
            .collect();
        let text = if hits.is_empty() {
            format!("No search results or information found for query: \"{query}\"")
        } else {
            format!(
                "Web search results for \"{query}\":\n\n{}",
                hits.join("\n\n")
            )
        };
        with_text(result, text)
    }
}
