//! ToolSearch: finds deferred tools (MCP tools and tools marked deferred) by exact name,
//! keywords or server prefix, and returns their definitions.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tool_core::{Tool, ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult, TypedTool};

use crate::stores::catalog::ToolCatalog;

/// What ToolSearch says when nothing matches.
pub const NO_MATCH: &str = "No matching deferred tools found";

/// Input of ToolSearch.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSearchInput {
    /// Keywords ("slack message"), "select:Name1,Name2" for exact names, "+word" for a word
    /// that must match, or an "mcp__server" prefix for one server's tools
    #[schemars(length(min = 1, max = tool_core::MAX_PATTERN_CHARS))]
    pub query: String,
    /// The most tools to return (default 5)
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_results: Option<u32>,
}

/// Output of ToolSearch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSearchOutput {
    /// The tools found, best first
    pub matches: Vec<String>,
    /// The query
    pub query: String,
    /// How many deferred tools there are
    pub total_deferred_tools: usize,
}

/// The ToolSearch tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolSearch;

fn is_mcp(tool: &dyn Tool) -> bool {
    tool.category() == ToolCategory::Mcp || tool.name().starts_with("mcp__")
}

/// Whether a tool is loaded on demand: MCP tools and tools marked deferred are; their
/// definitions reach the model only through ToolSearch.
pub(crate) fn is_deferred_tool(tool: &dyn Tool) -> bool {
    tool.name() != "ToolSearch" && (tool.is_deferred() || is_mcp(tool))
}

/// The lower-case words of a tool name: `mcp__slack__send_message` → slack, send, message;
/// `NotebookEdit` → notebook, edit.
pub fn name_parts(name: &str) -> Vec<String> {
    if let Some(rest) = name.strip_prefix("mcp__") {
        return rest
            .split(['_', '-'])
            .filter(|p| !p.is_empty())
            .map(str::to_lowercase)
            .collect();
    }
    let mut parts = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let boundary = c.is_uppercase()
            && i > 0
            && (chars[i - 1].is_lowercase()
                || chars.get(i + 1).is_some_and(|n| n.is_lowercase())
                    && chars[i - 1].is_uppercase());
        if !c.is_alphanumeric() || boundary {
            if !cur.is_empty() {
                parts.push(std::mem::take(&mut cur).to_lowercase());
            }
            if !c.is_alphanumeric() {
                continue;
            }
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        parts.push(cur.to_lowercase());
    }
    parts
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The score of one term against one tool: exact name part 10 (12 for MCP),
/// partial name part 5 (6), substring of the whole name 3 (only when no part matched),
/// search-hint word 4, description word 2.
pub(crate) fn score_term(
    name: &str,
    mcp: bool,
    hint: &[String],
    description: &[String],
    term: &str,
) -> u32 {
    let parts = name_parts(name);
    let mut score = 0;
    if parts.iter().any(|p| p == term) {
        score += if mcp { 12 } else { 10 };
    } else if parts.iter().any(|p| p.contains(term)) {
        score += if mcp { 6 } else { 5 };
    } else if name.to_lowercase().contains(term) {
        score += 3;
    }
    if hint.iter().any(|w| w == term) {
        score += 4;
    }
    if description.iter().any(|w| w == term) {
        score += 2;
    }
    score
}

async fn render(tools: &[Arc<dyn Tool>]) -> String {
    let mut out = String::new();
    for tool in tools {
        let decl = json!({
            "name": tool.name(),
            "description": tool.description(None).await,
            "input_schema": tool.input_schema(),
        });
        out.push_str(&format!("<function>{decl}</function>\n"));
    }
    out
}

#[async_trait]
impl TypedTool for ToolSearch {
    type Input = ToolSearchInput;
    type Output = ToolSearchOutput;
    const META: ToolMeta = ToolMeta::new("ToolSearch")
        .describe("Fetches the full definitions of deferred tools so you can call them. Deferred tools (MCP tools and some built-ins) are known to you by name only until you load them with this tool.\n\nQuery forms:\n- \"select:Read,Edit\": load these tools by exact name\n- \"notebook jupyter\": keyword search, best matches first\n- \"+slack send\": \"+word\" must match, the other words rank the results\n- \"mcp__github\": every tool of one MCP server\n\nThe result holds each matching tool's name, description and input schema.")
        .hint("find and load deferred tools")
        .category(ToolCategory::Agent)
        .read_only();

    async fn call(
        &self,
        input: ToolSearchInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<ToolSearchOutput>, ToolError> {
        let Some(catalog) = ctx.services().get::<ToolCatalog>() else {
            return Err(ToolError::respond(
                "ToolSearch has no tool catalog in this session (the host did not provide one); every tool available is already listed to you.",
            ));
        };
        let visible: Vec<Arc<dyn Tool>> = catalog
            .tools()
            .into_iter()
            .filter(|t| t.is_enabled() && !ctx.permissions().is_hidden(t.as_ref()))
            .collect();
        let deferred: Vec<Arc<dyn Tool>> = visible
            .iter()
            .filter(|t| is_deferred_tool(t.as_ref()))
            .cloned()
            .collect();
        let max = input.max_results.unwrap_or(5).max(1) as usize;
        let query = input.query.trim().to_owned();
        let mut missing: Vec<String> = Vec::new();

        let found: Vec<Arc<dyn Tool>> = if let Some(list) = query.strip_prefix("select:") {
            let mut found: Vec<Arc<dyn Tool>> = Vec::new();
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                // Deferred tools first; an already-loaded tool selected by name is returned too.
                let hit = deferred
                    .iter()
                    .chain(visible.iter())
                    .find(|t| t.name() == name || t.aliases().contains(&name))
                    .or_else(|| {
                        deferred
                            .iter()
                            .chain(visible.iter())
                            .find(|t| t.name().eq_ignore_ascii_case(name))
                    });
                match hit {
                    Some(t) if !found.iter().any(|f| f.name() == t.name()) => {
                        found.push(Arc::clone(t))
                    }
                    Some(_) => {}
                    None => missing.push(name.to_owned()),
                }
            }
            found
        } else if query.starts_with("mcp__") && !query.contains(char::is_whitespace) {
            let prefix = query.to_lowercase();
            let mut hits: Vec<Arc<dyn Tool>> = deferred
                .iter()
                .filter(|t| t.name().to_lowercase().starts_with(&prefix))
                .cloned()
                .collect();
            hits.sort_by(|a, b| a.name().cmp(b.name()));
            hits.truncate(max);
            hits
        } else {
            let mut required = Vec::new();
            let mut optional = Vec::new();
            for term in query.split_whitespace() {
                match term.strip_prefix('+') {
                    Some(t) if !t.is_empty() => required.push(t.to_lowercase()),
                    Some(_) => {}
                    None => optional.push(term.to_lowercase()),
                }
            }
            let mut scored: Vec<(u32, Arc<dyn Tool>)> = Vec::new();
            for tool in &deferred {
                let hint = words(tool.search_hint().unwrap_or(""));
                let description = words(&tool.description(None).await);
                let mcp = is_mcp(tool.as_ref());
                let score_of = |t: &str| score_term(tool.name(), mcp, &hint, &description, t);
                if required.iter().any(|t| score_of(t) == 0) {
                    continue;
                }
                let score: u32 = required
                    .iter()
                    .chain(optional.iter())
                    .map(|t| score_of(t))
                    .sum();
                if score > 0 {
                    scored.push((score, Arc::clone(tool)));
                }
            }
            scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name().cmp(b.1.name())));
            scored.into_iter().take(max).map(|(_, t)| t).collect()
        };

        let output = ToolSearchOutput {
            matches: found.iter().map(|t| t.name().to_owned()).collect(),
            query: query.clone(),
            total_deferred_tools: deferred.len(),
        };
        let mut text = if found.is_empty() {
            NO_MATCH.to_owned()
        } else {
            format!(
                "Found {} tool(s); their definitions follow and you can call them now.\n{}",
                found.len(),
                render(&found).await
            )
        };
        if !missing.is_empty() {
            text.push_str(&format!("\nNot found: {}", missing.join(", ")));
        }
        Ok(ToolResult::ok(output).with_text(text.trim_end().to_owned()))
    }
}
