//! CronCreate, CronDelete and CronList (feature `cron`): the tools over the session's
//! [`CronScheduler`](crate::stores::cron_jobs::CronScheduler), which keeps the jobs and
//! fires them.

use async_trait::async_trait;
use chrono::Local;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult, TypedTool, ValidationResult,
};

use crate::stores::cron_jobs::{CronJob, cron_scheduler, next_fire, parse_cron};

/// Input of CronCreate.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CronCreateInput {
    /// Standard 5-field cron expression in local time: "M H DoM Mon DoW" (e.g. "*/5 * * * *" = every 5 minutes, "30 14 * * *" = every day at 14:30)
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub cron: String,
    /// The prompt to enqueue at each fire time
    #[schemars(length(min = 1))]
    pub prompt: String,
    /// true (default) = fire on every match until deleted or expired after 7 days; false = fire once at the next match, then delete
    #[serde(default)]
    pub recurring: Option<bool>,
    /// true = persist to .agent-tools/scheduled_tasks.json and survive restarts; false (default) = this session only
    #[serde(default)]
    pub durable: Option<bool>,
}

/// Input of CronDelete.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CronDeleteInput {
    /// Job id returned by CronCreate
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub id: String,
}

/// Input of CronList (none).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CronListInput {}

/// A job as CronList shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CronListEntry {
    /// Id
    pub id: String,
    /// Expression
    pub cron: String,
    /// Readable schedule
    pub human_schedule: String,
    /// Prompt
    pub prompt: String,
    /// Recurring
    pub recurring: bool,
    /// Durable
    pub durable: bool,
}

/// The CronCreate tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct CronCreate;
/// The CronDelete tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct CronDelete;
/// The CronList tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct CronList;

#[async_trait]
impl TypedTool for CronCreate {
    type Input = CronCreateInput;
    type Output = CronJob;
    const META: ToolMeta = ToolMeta::new("CronCreate")
        .describe("Schedule a prompt to be enqueued later, on a 5-field cron schedule in local time. Recurring jobs (the default) fire on every match and expire after 7 days; one-shot jobs (recurring: false) fire once at the next match and are deleted. durable: true keeps the job in the project's .agent-tools/scheduled_tasks.json across restarts. At most 50 jobs. Returns a job id for CronDelete.")
        .hint("schedule a recurring or one-shot prompt")
        .category(ToolCategory::Agent)
        .deferred();

    async fn validate(&self, input: &CronCreateInput, _ctx: &ToolContext) -> ValidationResult {
        let parsed = match parse_cron(&input.cron) {
            Ok(p) => p,
            Err(message) => return ValidationResult::invalid_code(message, 1),
        };
        if next_fire(&parsed, &Local::now()).is_none() {
            return ValidationResult::invalid_code(
                format!(
                    "Cron expression '{}' does not match any date in the next year.",
                    input.cron
                ),
                2,
            );
        }
        ValidationResult::Valid
    }
    async fn call(
        &self,
        input: CronCreateInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<CronJob>, ToolError> {
        let scheduler = cron_scheduler(ctx)?;
        let recurring = input.recurring.unwrap_or(true);
        let durable = input.durable.unwrap_or(false);
        let job = scheduler.add(&input.cron, &input.prompt, recurring, durable, Local::now())?;
        let persisted = if durable {
            format!("Persisted to {}", scheduler.durable_file().display())
        } else {
            "Session-only (not written to disk, ends with this session)".to_owned()
        };
        let text = if recurring {
            format!(
                "Scheduled recurring job {} ({}). {persisted}. Auto-expires after 7 days. Use CronDelete to cancel sooner.",
                job.id,
                job.human_schedule()
            )
        } else {
            format!(
                "Scheduled one-shot task {} ({}). {persisted}. It will fire once then auto-delete.",
                job.id,
                job.human_schedule()
            )
        };
        Ok(ToolResult::ok(job).with_text(text))
    }
}

#[async_trait]
impl TypedTool for CronDelete {
    type Input = CronDeleteInput;
    type Output = CronJob;
    const META: ToolMeta = ToolMeta::new("CronDelete")
        .describe(
            "Cancel a job scheduled with CronCreate, by the id CronCreate returned (see CronList).",
        )
        .hint("cancel a scheduled cron job")
        .category(ToolCategory::Agent)
        .deferred();

    async fn call(
        &self,
        input: CronDeleteInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<CronJob>, ToolError> {
        let scheduler = cron_scheduler(ctx)?;
        let job = scheduler.remove(&input.id)?.ok_or_else(|| {
            ToolError::respond(format!("No scheduled job with id '{}'", input.id.trim()))
        })?;
        let text = format!("Cancelled job {}.", job.id);
        Ok(ToolResult::ok(job).with_text(text))
    }
}

#[async_trait]
impl TypedTool for CronList {
    type Input = CronListInput;
    type Output = Vec<CronListEntry>;
    const META: ToolMeta = ToolMeta::new("CronList")
        .describe("List the jobs scheduled with CronCreate: id, schedule, prompt, whether recurring and durable.")
        .hint("list scheduled cron jobs")
        .category(ToolCategory::Agent)
        .deferred()
        .read_only();

    async fn call(
        &self,
        _input: CronListInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Vec<CronListEntry>>, ToolError> {
        let jobs = cron_scheduler(ctx)?.list()?;
        let entries: Vec<CronListEntry> = jobs
            .iter()
            .map(|j| CronListEntry {
                id: j.id.clone(),
                cron: j.cron.clone(),
                human_schedule: j.human_schedule(),
                prompt: j.prompt.clone(),
                recurring: j.recurring,
                durable: j.durable,
            })
            .collect();
        if entries.is_empty() {
            return Ok(ToolResult::ok(entries).with_text("No scheduled jobs."));
        }
        let lines: Vec<String> = entries
            .iter()
            .map(|e| {
                format!(
                    "{} — {} ({}) {}{}: {}",
                    e.id,
                    e.human_schedule,
                    e.cron,
                    if e.recurring { "recurring" } else { "one-shot" },
                    if e.durable { ", durable" } else { "" },
                    e.prompt
                )
            })
            .collect();
        Ok(ToolResult::ok(entries).with_text(lines.join("\n")))
    }
}
