//! `agent-tools serve`: the pool as an MCP server over stdio or streamable HTTP. The server
//! itself lives in tools-mcp; this module turns the command line into its options, loads
//! the bearer tokens, stops the server on SIGTERM or Ctrl-C, and installs the host's way of
//! asking AskUserQuestion's questions (elicitation for legacy sessions, a form asked before
//! the call on protocol 2026-07-28).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use async_trait::async_trait;
use registry::{SessionOptions, build_context};
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::Peer;
use serde_json::Value;
use tool_core::{CallResult, CancellationToken, ToolContext, ToolError, error_result};
use tools_agent::{DECLINED, Question, QuestionAnswers, QuestionPrompter};
use tools_mcp::{
    ClientHook, HttpOptions, LivePool, McpManager, SessionFactory, StdioOptions, Token,
    UpfrontInput, parse_listen_addr, serve_http, serve_stdio_with, tokens_from_text,
};

/// The `serve` options of the command line.
#[derive(Debug, Clone, Default)]
pub struct ServeArgs {
    /// `--http ADDR`
    pub http: Option<String>,
    /// `--allowed-host HOST`
    pub allowed_hosts: Vec<String>,
    /// `--allowed-origin ORIGIN`
    pub allowed_origins: Vec<String>,
    /// `--token-file FILE`
    pub token_files: Vec<PathBuf>,
    /// `--token-env VAR`
    pub token_envs: Vec<String>,
    /// `--max-request-bytes N`
    pub max_request_bytes: Option<usize>,
    /// `--grace SECONDS`
    pub grace: Option<u64>,
}

/// Serves `pool`: over stdio with `ctx` as the connection's context, or over HTTP with a
/// context per legacy session and per principal built from `options` (sharing the
/// `.mcp.json` servers of `mcp`). When an MCP server's tool list changes, the pool is
/// assembled again and every client is told.
pub async fn serve(
    pool: LivePool,
    ctx: ToolContext,
    options: SessionOptions,
    mcp: Option<Arc<McpManager>>,
    args: ServeArgs,
) -> Result<ExitCode> {
    let shutdown = CancellationToken::new();
    stop_on_signals(shutdown.clone())?;
    let grace = args
        .grace
        .map_or(tools_mcp::DEFAULT_GRACE, Duration::from_secs);
    // Every further context (legacy HTTP sessions, principals, minted handles) gets the
    // same services; the `.mcp.json` servers are shared, and ToolSearch sees the whole
    // pool as it is now.
    let catalog_pool = pool.clone();
    let factory: SessionFactory = Arc::new(move || {
        let ctx = build_context(&options)?;
        install_host_services(&ctx);
        ctx.services().insert(crate::catalog(&catalog_pool));
        if let Some(manager) = &mcp {
            ctx.services().insert(Arc::clone(manager));
        }
        Ok(ctx)
    });
    let Some(addr) = args.http else {
        install_host_services(&ctx);
        // The one session of stdio runs the scheduler (agent-triggers): its due prompts
        // reach the client as events (one that fires before the client has initialized
        // waits in the session until it has). Over HTTP, contexts come and go and several would
        // each fire the project's durable jobs, so none runs it.
        let _events = registry::start_session_events(&ctx)
            .map_err(|e| anyhow!(e.to_string()))?
            .drop_guard();
        let stdio = StdioOptions {
            factory: Some(factory),
            shutdown,
            grace,
        };
        serve_stdio_with(pool, ctx, stdio).await?;
        return Ok(ExitCode::SUCCESS);
    };
    let addr = parse_listen_addr(&addr).map_err(|e| crate::usage(e.to_string()))?;
    let tokens = load_tokens(&args.token_files, &args.token_envs)?;
    let mut http = HttpOptions::new(addr);
    http.allowed_hosts = args.allowed_hosts;
    http.allowed_origins = args.allowed_origins;
    http.tokens = tokens;
    http.grace = grace;
    if let Some(max) = args.max_request_bytes {
        http.max_body_bytes = max;
    }
    let authenticated = !http.tokens.is_empty();
    serve_http(pool, factory, http, shutdown, |bound| {
        let auth = if authenticated {
            " (bearer token required)"
        } else {
            ""
        };
        eprintln!("agent-tools: serving MCP at http://{bound}/mcp{auth}");
    })
    .await
    .map_err(|e| {
        if e.is_retryable() {
            crate::usage(e.to_string())
        } else {
            anyhow!(e)
        }
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Cancels `shutdown` on SIGTERM or Ctrl-C.
fn stop_on_signals(shutdown: CancellationToken) -> Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("cannot watch for SIGTERM")?;
        let stop = shutdown.clone();
        tokio::spawn(async move {
            if term.recv().await.is_some() {
                eprintln!("agent-tools: SIGTERM: finishing the calls in flight, then stopping");
                stop.cancel();
            }
        });
    }
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            shutdown.cancel();
        }
    });
    Ok(())
}

/// The tokens of `--token-file` and `--token-env`, in that order.
fn load_tokens(files: &[PathBuf], envs: &[String]) -> Result<Vec<Token>> {
    let mut tokens = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| crate::usage(format!("--token-file {}: {e}", file.display())))?;
        let source = format!("--token-file {}", file.display());
        tokens.extend(
            tokens_from_text(&text, &source, tokens.len() + 1)
                .map_err(|e| crate::usage(e.to_string()))?,
        );
    }
    for var in envs {
        let text = std::env::var(var).map_err(|_| {
            crate::usage(format!(
                "--token-env {var}: the variable is not set (or not UTF-8)"
            ))
        })?;
        let source = format!("--token-env {var}");
        tokens.extend(
            tokens_from_text(&text, &source, tokens.len() + 1)
                .map_err(|e| crate::usage(e.to_string()))?,
        );
    }
    Ok(tokens)
}

/// What every context of the server gets from the host: AskUserQuestion's questions asked
/// through elicitation (legacy sessions, whose client may be asked during a call) or as a
/// form before the call (protocol 2026-07-28).
fn install_host_services(ctx: &ToolContext) {
    ctx.services().insert(question_hook());
    let upfront: Arc<dyn UpfrontInput> = Arc::new(QuestionForm);
    ctx.services().insert(upfront);
}

/// Installs an AskUserQuestion prompter for legacy clients that offer elicitation.
fn question_hook() -> ClientHook {
    ClientHook(Arc::new(|ctx, peer, capabilities| {
        if capabilities.elicitation.is_some() {
            let prompter: Arc<dyn QuestionPrompter> = Arc::new(ElicitQuestions(peer.clone()));
            ctx.services().insert(prompter);
        }
    }))
}

/// The elicitation form for AskUserQuestion's questions: one text field per question
/// (`q1`, `q2`, ...), its options listed in the field's description.
fn question_form(questions: &[Question]) -> ElicitRequestParams {
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
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: "The agent has questions for you.".to_owned(),
        requested_schema: builder.build_unchecked(),
    }
}

/// The answers in an accepted [`question_form`], by question text.
fn form_answers(
    questions: &[Question],
    result: &ElicitResult,
) -> std::collections::BTreeMap<String, String> {
    let mut answers = std::collections::BTreeMap::new();
    let content = result.content.clone().unwrap_or_default();
    for (i, q) in questions.iter().enumerate() {
        if let Some(answer) = content.get(format!("q{}", i + 1)).and_then(|v| v.as_str()) {
            answers.insert(q.question.clone(), answer.to_owned());
        }
    }
    answers
}

/// Asks AskUserQuestion's questions through MCP elicitation during the call (legacy
/// sessions).
struct ElicitQuestions(Peer<RoleServer>);

#[async_trait]
impl QuestionPrompter for ElicitQuestions {
    async fn ask(&self, questions: &[Question]) -> Result<QuestionAnswers, ToolError> {
        let result = self
            .0
            .create_elicitation(question_form(questions))
            .await
            .map_err(|e| ToolError::fatal(format!("the MCP client did not answer: {e}")))?;
        if result.action != ElicitationAction::Accept {
            return Ok(QuestionAnswers::Declined);
        }
        Ok(QuestionAnswers::Answered(form_answers(questions, &result)))
    }
}

/// Asks AskUserQuestion's questions before the call (protocol 2026-07-28) and runs the
/// call with the answers in its `answers` field.
struct QuestionForm;

/// The questions of an AskUserQuestion input that still needs its answers.
fn unanswered(tool: &str, input: &Value) -> Option<Vec<Question>> {
    if tool != "AskUserQuestion" || input.get("answers").is_some_and(|a| !a.is_null()) {
        return None;
    }
    serde_json::from_value(input.get("questions")?.clone()).ok()
}

impl UpfrontInput for QuestionForm {
    fn form(&self, tool: &str, input: &Value) -> Option<ElicitRequestParams> {
        unanswered(tool, input).map(|questions| question_form(&questions))
    }

    fn complete(
        &self,
        tool: &str,
        mut input: Value,
        answer: &ElicitResult,
    ) -> Result<Value, Box<CallResult>> {
        let Some(questions) = unanswered(tool, &input) else {
            return Ok(input);
        };
        if answer.action != ElicitationAction::Accept {
            return Err(Box::new(error_result(tool, &ToolError::respond(DECLINED))));
        }
        let answers = form_answers(&questions, answer);
        if let Some(object) = input.as_object_mut() {
            object.insert(
                "answers".to_owned(),
                serde_json::to_value(answers).unwrap_or_default(),
            );
        }
        Ok(input)
    }
}
