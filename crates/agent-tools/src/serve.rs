//! `agent-tools serve`: the pool as an MCP server over stdio or streamable HTTP. The server
//! itself lives in tools-mcp; this module only turns the command line into its options.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Result, anyhow};
use async_trait::async_trait;
use registry::{SessionOptions, build_context};
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::Peer;
use tool_core::{CancellationToken, ToolContext, ToolError};
use tools_agent::{Question, QuestionAnswers, QuestionPrompter};
use tools_mcp::{
    ClientHook, HttpOptions, LivePool, McpManager, SessionFactory, parse_listen_addr, serve_http,
    serve_stdio,
};

/// Serves `pool`: over stdio with `ctx` as the one session, or over HTTP at `http` with a
/// fresh context per MCP session built from `options` (sharing the `.mcp.json` servers of
/// `mcp`). When an MCP server's tool list changes, the pool is assembled again and every
/// client is told (`notifications/tools/list_changed`).
pub async fn serve(
    pool: LivePool,
    ctx: ToolContext,
    options: SessionOptions,
    mcp: Option<Arc<McpManager>>,
    http: Option<String>,
    allowed_hosts: Vec<String>,
) -> Result<ExitCode> {
    let Some(addr) = http else {
        ctx.services().insert(question_hook());
        serve_stdio(pool, ctx).await?;
        return Ok(ExitCode::SUCCESS);
    };
    let addr = parse_listen_addr(&addr).map_err(|e| crate::usage(e.to_string()))?;
    // Every HTTP session gets its own context; the MCP servers of `.mcp.json` are shared,
    // and ToolSearch sees the whole pool as it is now, as on stdio.
    let catalog_pool = pool.clone();
    let factory: SessionFactory = Arc::new(move || {
        let ctx = build_context(&options)?;
        ctx.services().insert(question_hook());
        ctx.services().insert(crate::catalog(&catalog_pool));
        if let Some(manager) = &mcp {
            ctx.services().insert(Arc::clone(manager));
        }
        Ok(ctx)
    });
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            stop.cancel();
        }
    });
    serve_http(
        pool,
        factory,
        HttpOptions {
            addr,
            allowed_hosts,
        },
        shutdown,
        |bound| eprintln!("agent-tools: serving MCP at http://{bound}/mcp"),
    )
    .await
    .map_err(|e| anyhow!(e))?;
    Ok(ExitCode::SUCCESS)
}

/// Installs an AskUserQuestion prompter for clients that offer elicitation.
fn question_hook() -> ClientHook {
    ClientHook(Arc::new(|ctx, peer, capabilities| {
        if capabilities.elicitation.is_some() {
            let prompter: Arc<dyn QuestionPrompter> = Arc::new(ElicitQuestions(peer.clone()));
            ctx.services().insert(prompter);
        }
    }))
}

/// Asks AskUserQuestion's questions through MCP elicitation: one text field per question,
/// its options listed in the field's description.
struct ElicitQuestions(Peer<RoleServer>);

#[async_trait]
impl QuestionPrompter for ElicitQuestions {
    async fn ask(&self, questions: &[Question]) -> Result<QuestionAnswers, ToolError> {
        let mut builder = ElicitationSchema::builder();
        for (i, q) in questions.iter().enumerate() {
            let options: Vec<String> = q
                .options
                .iter()
                .map(|o| format!("- {}: {}", o.label, o.description))
                .collect();
            let how = if q.multi_select {
                "Answer with one or more option labels, comma-separated, or your own text."
            } else {
                "Answer with one option label, or your own text."
            };
            let description = format!("{}\n{}\n{how}", q.question, options.join("\n"));
            builder = builder.required_string_property(format!("q{}", i + 1), |s| {
                s.title(q.header.clone()).description(description)
            });
        }
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: "The agent has questions for you.".to_owned(),
            requested_schema: builder.build_unchecked(),
        };
        let result = self
            .0
            .create_elicitation(params)
            .await
            .map_err(|e| ToolError::fatal(format!("the MCP client did not answer: {e}")))?;
        if result.action != ElicitationAction::Accept {
            return Ok(QuestionAnswers::Declined);
        }
        let content = result.content.unwrap_or_default();
        let mut answers = std::collections::BTreeMap::new();
        for (i, q) in questions.iter().enumerate() {
            if let Some(answer) = content.get(format!("q{}", i + 1)).and_then(|v| v.as_str()) {
                answers.insert(q.question.clone(), answer.to_owned());
            }
        }
        Ok(QuestionAnswers::Answered(answers))
    }
}
