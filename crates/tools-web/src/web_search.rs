//! WebSearch: ask the configured search provider, filter the results by domain, list titles
//! and URLs, and remind the model to cite them.

use std::time::Instant;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    PermissionDecision, PermissionRule, ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult,
    TypedTool, ValidationResult,
};
use url::Url;

use crate::guard::normalize_host;
use crate::providers::{SearchHit, provider_for};
use crate::settings::SearchSettings;

const DESCRIPTION: &str = "Searches the web and returns result titles, URLs and short extracts.
- Use it for information beyond your training data: current events, recent releases, documentation of new versions
- Results are listed as markdown links; read a result in full with WebFetch
- Domain filtering: allowed_domains keeps only results from those sites, blocked_domains drops results from them (not both in one call)

CRITICAL REQUIREMENT - you MUST follow this:
  - After answering the user's question, include a \"Sources:\" section at the end of your response
  - In it, list the relevant URLs from the search results as markdown links: [Title](URL)
  - Never skip the sources

Usage notes:
  - Use the current year in queries about recent events and documentation, not the year of your training data
  - The search engine is the one the user configured (SearXNG or the Brave Search API)";

const REMINDER: &str = "REMINDER: You MUST include the sources above in your response to the user using markdown hyperlinks.";

/// Input of WebSearch.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSearchInput {
    /// The search query to use
    #[schemars(length(min = 2, max = tool_core::MAX_PATTERN_CHARS))]
    pub query: String,
    /// Only include search results from these domains
    #[serde(default)]
    #[schemars(inner(length(max = tool_core::MAX_NAME_CHARS)))]
    pub allowed_domains: Option<Vec<String>>,
    /// Never include search results from these domains
    #[serde(default)]
    #[schemars(inner(length(max = tool_core::MAX_NAME_CHARS)))]
    pub blocked_domains: Option<Vec<String>>,
}

/// Output of WebSearch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebSearchOutput {
    /// The query as searched
    pub query: String,
    /// The results after domain filtering
    pub results: Vec<SearchHit>,
    /// Which provider answered
    pub provider: String,
    /// How long the call took
    pub duration_ms: u64,
}

/// The WebSearch tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct WebSearch;

/// A domain filter entry as the model may write it (`example.com`, `https://www.example.com/x`,
/// `*.example.com`), reduced to a host name.
fn domain_of(entry: &str) -> String {
    let entry = entry.trim();
    let host = Url::parse(entry)
        .ok()
        .filter(|u| u.has_host())
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_else(|| entry.split('/').next().unwrap_or_default().to_owned());
    normalize_host(host.trim_start_matches("*."))
}

/// Whether the host of `url` is `domain` or one of its subdomains.
fn in_domain(url: &str, domain: &str) -> bool {
    let Some(host) = Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(normalize_host))
    else {
        return false;
    };
    let domain = domain.trim_start_matches("www.");
    let host = host.as_str();
    host == domain
        || host
            .strip_suffix(domain)
            .is_some_and(|prefix| prefix.ends_with('.'))
}

fn non_empty(list: &Option<Vec<String>>) -> Vec<String> {
    list.iter()
        .flatten()
        .map(|d| domain_of(d))
        .filter(|d| !d.is_empty())
        .collect()
}

/// Applies the domain filters.
pub fn filter_hits(hits: Vec<SearchHit>, allowed: &[String], blocked: &[String]) -> Vec<SearchHit> {
    hits.into_iter()
        .filter(|h| allowed.is_empty() || allowed.iter().any(|d| in_domain(&h.url, d)))
        .filter(|h| !blocked.iter().any(|d| in_domain(&h.url, d)))
        .collect()
}

fn render(query: &str, hits: &[SearchHit], filtered: bool) -> String {
    let mut out = format!("Web search results for query: \"{query}\"\n\n");
    if hits.is_empty() {
        out.push_str(if filtered {
            "No results found after applying the domain filters. Try other domains or a broader query.\n"
        } else {
            "No results found. Try a different or broader query.\n"
        });
        return out;
    }
    for (i, hit) in hits.iter().enumerate() {
        let title = hit.title.replace(['[', ']'], "");
        out.push_str(&format!("{}. [{title}]({})\n", i + 1, hit.url));
        if let Some(snippet) = &hit.snippet {
            let snippet: String = snippet.split_whitespace().collect::<Vec<_>>().join(" ");
            out.push_str(&format!("   {snippet}\n"));
        }
    }
    out.push('\n');
    out.push_str(REMINDER);
    out
}

#[async_trait]
impl TypedTool for WebSearch {
    type Input = WebSearchInput;
    type Output = WebSearchOutput;
    const META: ToolMeta = ToolMeta::new("WebSearch")
        .describe(DESCRIPTION)
        .hint("search the web for current information")
        .category(ToolCategory::Web)
        .deferred()
        .read_only()
        .read_only_hint()
        .open_world_hint();

    async fn validate(&self, input: &WebSearchInput, _ctx: &ToolContext) -> ValidationResult {
        let query = input.query.trim();
        if query.is_empty() {
            return ValidationResult::invalid_code("Error: Missing query", 1);
        }
        if query.chars().count() < 2 {
            return ValidationResult::invalid_code(
                "Error: The query must be at least 2 characters long",
                1,
            );
        }
        if !non_empty(&input.allowed_domains).is_empty()
            && !non_empty(&input.blocked_domains).is_empty()
        {
            return ValidationResult::invalid_code(
                "Error: Cannot specify both allowed_domains and blocked_domains in the same request",
                2,
            );
        }
        ValidationResult::Valid
    }

    async fn check_permission(
        &self,
        input: &WebSearchInput,
        _ctx: &ToolContext,
    ) -> PermissionDecision {
        PermissionDecision::ask(
            format!(
                "WebSearch wants to search the web for \"{}\"",
                input.query.trim()
            ),
            Some(PermissionRule::tool("WebSearch")),
        )
    }

    async fn call(
        &self,
        input: WebSearchInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<WebSearchOutput>, ToolError> {
        let started = Instant::now();
        let settings = SearchSettings::from_context(ctx)?;
        let provider = provider_for(ctx, &settings)?;
        let query = input.query.trim().to_owned();
        let allowed = non_empty(&input.allowed_domains);
        let blocked = non_empty(&input.blocked_domains);
        let filtered = !allowed.is_empty() || !blocked.is_empty();
        // Ask for more than we show when filters will drop some.
        let ask_for = if filtered { 20 } else { settings.max_results };
        ctx.progress()
            .report(format!("Searching {} for \"{query}\"", provider.name()));
        let search = provider.search(&query, ask_for);
        let hits = tokio::select! {
            () = ctx.cancel_token().cancelled() => {
                return Err(ToolError::Cancelled { tool: "WebSearch".to_owned() });
            }
            () = tokio::time::sleep(settings.timeout) => {
                return Err(ToolError::TimedOut { tool: "WebSearch".to_owned(), limit: settings.timeout });
            }
            r = search => r?,
        };
        let mut hits = filter_hits(hits, &allowed, &blocked);
        hits.truncate(settings.max_results);
        let text = render(&query, &hits, filtered);
        let output = WebSearchOutput {
            query,
            results: hits,
            provider: provider.name().to_owned(),
            duration_ms: started.elapsed().as_millis() as u64,
        };
        Ok(ToolResult::ok(output).with_text(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(url: &str) -> SearchHit {
        SearchHit {
            title: url.to_owned(),
            url: url.to_owned(),
            snippet: None,
        }
    }

    #[track_caller]
    fn check(allowed: &[&str], blocked: &[&str], expected: &[&str]) {
        let hits = [
            "https://docs.rs/tokio",
            "https://www.rust-lang.org/learn",
            "https://blog.rust-lang.org/x",
            "https://notrust-lang.org/",
            "https://example.com/",
        ]
        .map(hit)
        .to_vec();
        let allowed: Vec<String> = allowed.iter().map(|d| domain_of(d)).collect();
        let blocked: Vec<String> = blocked.iter().map(|d| domain_of(d)).collect();
        let got: Vec<String> = filter_hits(hits, &allowed, &blocked)
            .into_iter()
            .map(|h| h.url)
            .collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn domain_filters() {
        check(
            &["rust-lang.org"],
            &[],
            &[
                "https://www.rust-lang.org/learn",
                "https://blog.rust-lang.org/x",
            ],
        );
        check(&["https://docs.rs/"], &[], &["https://docs.rs/tokio"]);
        check(
            &["www.rust-lang.org"],
            &[],
            &[
                "https://www.rust-lang.org/learn",
                "https://blog.rust-lang.org/x",
            ],
        );
        check(
            &[],
            &["*.rust-lang.org", "EXAMPLE.com"],
            &["https://docs.rs/tokio", "https://notrust-lang.org/"],
        );
    }
}
