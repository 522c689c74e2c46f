//! The [`CronScheduler`] behind CronCreate, CronDelete and CronList (feature `cron`): the
//! session's jobs, the durable ones in the project's file, and the loop that hands due
//! prompts to a callback of the host.
//!
//! Expressions are 5-field local-time cron ("M H DoM Mon DoW"), parsed and evaluated by the
//! `croner` crate. One-shot jobs fire once and are deleted; recurring jobs expire after 7
//! days, firing one last time. Durable jobs are kept in `.agent-tools/scheduled_tasks.json`
//! of the project; the others live as long as the session's scheduler.
//!
//! Firing times are jittered, so the many sessions that schedule
//! "0 9 * * *" do not all start at the same second: a recurring job fires up to 10% of its
//! period late (at most 15 minutes), a one-shot job scheduled on the hour or half hour up to
//! 90 seconds early (never before it was created). The offset is a hash of the job's id —
//! the same for every firing of a job, different across jobs — see [`jitter`].

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Local, TimeZone};
use croner::Cron;
use serde::{Deserialize, Serialize};
use tool_core::{ToolContext, ToolError, TrustStore, sha256_hex};

use crate::stores::state::{read_json, write_atomic};

/// At most this many jobs per scheduler.
pub const MAX_CRON_JOBS: usize = 50;
/// Recurring jobs expire this long after they were created.
pub const RECURRING_EXPIRY: Duration = Duration::from_secs(7 * 24 * 3600);
/// The message for too many jobs (validation error code 3).
pub const TOO_MANY_JOBS: &str = "Too many scheduled jobs (max 50). Cancel one first.";

/// The largest delay of a recurring job, as a fraction of its period.
pub const RECURRING_JITTER_FRACTION: f64 = 0.1;
/// The largest delay of a recurring job.
pub const MAX_RECURRING_JITTER: Duration = Duration::from_secs(15 * 60);
/// How early at most a one-shot job on :00 or :30 fires.
pub const ONE_SHOT_EARLY: Duration = Duration::from_secs(90);

/// A number in [0, 1) fixed by the job id (FNV-1a, then mixed).
fn id_fraction(id: &str) -> f64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // FNV mixes short inputs poorly into the high bits: finish with splitmix64's mixer.
    hash ^= hash >> 30;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^= hash >> 27;
    hash = hash.wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^= hash >> 31;
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

/// The offset of a job's firing from its scheduled time `scheduled`: positive (late) for a
/// recurring job, up to [`RECURRING_JITTER_FRACTION`] of the time to its following
/// occurrence and at most [`MAX_RECURRING_JITTER`]; negative (early) for a one-shot job on
/// minute 0 or 30, at most [`ONE_SHOT_EARLY`]; zero otherwise. Deterministic per job id.
pub fn jitter(
    id: &str,
    cron: &Cron,
    recurring: bool,
    scheduled: &DateTime<Local>,
) -> chrono::Duration {
    use chrono::Timelike;
    let f = id_fraction(id);
    if recurring {
        let Some(following) = next_fire(cron, scheduled) else {
            return chrono::Duration::zero();
        };
        let period = (following - *scheduled).num_milliseconds().max(0) as f64;
        let max = (period * RECURRING_JITTER_FRACTION).min(MAX_RECURRING_JITTER.as_millis() as f64);
        chrono::Duration::milliseconds((max * f) as i64)
    } else if scheduled.minute().is_multiple_of(30) {
        -chrono::Duration::milliseconds((ONE_SHOT_EARLY.as_millis() as f64 * f) as i64)
    } else {
        chrono::Duration::zero()
    }
}

/// When a job next fires after `after`, jitter included (never before `after`).
pub fn fire_time(job: &CronJob, after: &DateTime<Local>) -> Option<DateTime<Local>> {
    let cron = parse_cron(&job.cron).ok()?;
    let scheduled = next_fire(&cron, after)?;
    Some((scheduled + jitter(&job.id, &cron, job.recurring, &scheduled)).max(*after))
}

/// One scheduled job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronJob {
    /// Identifier for CronDelete
    pub id: String,
    /// The 5-field expression
    pub cron: String,
    /// The prompt to enqueue when it fires
    pub prompt: String,
    /// Fires repeatedly (until it expires) rather than once
    pub recurring: bool,
    /// Kept in the project's scheduled_tasks.json
    pub durable: bool,
    /// Creation time, Unix milliseconds
    pub created_at: i64,
    /// The last time it fired, Unix milliseconds
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_fired_at: Option<i64>,
}

impl CronJob {
    /// A readable form of the schedule.
    pub fn human_schedule(&self) -> String {
        parse_cron(&self.cron)
            .map(|c| c.describe())
            .unwrap_or_else(|_| self.cron.clone())
    }
}

/// Parses a 5-field expression; the error names the expression and the 5 fields expected.
pub fn parse_cron(expr: &str) -> Result<Cron, String> {
    let invalid =
        || format!("Invalid cron expression '{expr}'. Expected 5 fields: M H DoM Mon DoW.");
    if expr.split_whitespace().count() != 5 {
        return Err(invalid());
    }
    Cron::from_str(expr.trim()).map_err(|_| invalid())
}

/// The next time `expr` fires strictly after `after`, if within a year.
pub(crate) fn next_fire<Tz: TimeZone>(cron: &Cron, after: &DateTime<Tz>) -> Option<DateTime<Tz>> {
    let next = cron.find_next_occurrence(after, false).ok()?;
    let limit = after.clone() + chrono::Duration::days(366);
    (next <= limit).then_some(next)
}

fn millis(t: &DateTime<Local>) -> i64 {
    t.timestamp_millis()
}

fn from_millis(ms: i64) -> DateTime<Local> {
    Local
        .timestamp_millis_opt(ms)
        .single()
        .unwrap_or_else(Local::now)
}

/// A due job handed to the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronFire {
    /// The job (as it was before firing)
    pub job: CronJob,
    /// Whether this was its last firing (one-shot, or an expired recurring job)
    pub last: bool,
}

/// The session's scheduled jobs plus the durable file. Hosts get it with [`cron_scheduler`]
/// and either call [`CronScheduler::take_due`] from their own loop or [`CronScheduler::run`].
#[derive(Debug)]
pub struct CronScheduler {
    jobs: Mutex<Vec<CronJob>>,
    durable_file: PathBuf,
    /// Durable jobs of a file no person approved: never fired or listed, written back
    /// unchanged when the file is saved
    held: Vec<CronJob>,
    /// The approvals store, project and file name under which what this scheduler writes
    /// stays approved (a file that was approved, or absent, when it was loaded)
    keep_approved: Option<(TrustStore, PathBuf, String)>,
}
impl tool_core::ServiceType for CronScheduler {}

impl CronScheduler {
    /// A scheduler whose durable jobs live in `durable_file` (loaded now).
    pub fn new(durable_file: PathBuf) -> Result<Self, ToolError> {
        let jobs: Vec<CronJob> = read_json(&durable_file)?.unwrap_or_default();
        Ok(CronScheduler {
            jobs: Mutex::new(jobs),
            durable_file,
            held: Vec::new(),
            keep_approved: None,
        })
    }

    /// A scheduler whose durable file has jobs a person has not approved: they are kept in
    /// the file but never fire (the project's `scheduled_tasks.json` is repository content;
    /// `agent-tools trust` approves it).
    pub fn holding(durable_file: PathBuf) -> Result<Self, ToolError> {
        let held: Vec<CronJob> = read_json(&durable_file)?.unwrap_or_default();
        Ok(CronScheduler {
            jobs: Mutex::new(Vec::new()),
            durable_file,
            held,
            keep_approved: None,
        })
    }

    /// How many durable jobs wait for a person's approval of the file.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// The durable file.
    pub fn durable_file(&self) -> &std::path::Path {
        &self.durable_file
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Vec<CronJob>>, ToolError> {
        self.jobs
            .lock()
            .map_err(|_| ToolError::fatal("the cron scheduler is unusable after a panic"))
    }

    fn save(&self, jobs: &[CronJob]) -> Result<(), ToolError> {
        let durable: Vec<&CronJob> = self
            .held
            .iter()
            .chain(jobs.iter().filter(|j| j.durable))
            .collect();
        if durable.is_empty() && !self.durable_file.exists() {
            return Ok(());
        }
        let mut text = serde_json::to_string_pretty(&durable)
            .map_err(|e| ToolError::fatal(format!("cannot encode the cron jobs: {e}")))?;
        text.push('\n');
        write_atomic(&self.durable_file, text.as_bytes())?;
        // The session's own changes to a file it was allowed to run keep it allowed.
        if let Some((store, project, name)) = &self.keep_approved {
            store.approve(project, name, &sha256_hex(text.as_bytes()))?;
        }
        Ok(())
    }

    /// Every job.
    pub fn list(&self) -> Result<Vec<CronJob>, ToolError> {
        Ok(self.lock()?.clone())
    }

    /// Adds a job (checked: valid, fires within a year, at most [`MAX_CRON_JOBS`]).
    pub fn add(
        &self,
        cron: &str,
        prompt: &str,
        recurring: bool,
        durable: bool,
        now: DateTime<Local>,
    ) -> Result<CronJob, ToolError> {
        let parsed = parse_cron(cron).map_err(ToolError::respond)?;
        if next_fire(&parsed, &now).is_none() {
            return Err(ToolError::respond(format!(
                "Cron expression '{cron}' does not match any date in the next year."
            )));
        }
        let mut jobs = self.lock()?;
        if jobs.len() >= MAX_CRON_JOBS {
            return Err(ToolError::respond(TOO_MANY_JOBS));
        }
        let job = CronJob {
            id: new_id(&jobs),
            cron: cron.trim().to_owned(),
            prompt: prompt.to_owned(),
            recurring,
            durable,
            created_at: millis(&now),
            last_fired_at: None,
        };
        jobs.push(job.clone());
        if durable {
            self.save(&jobs)?;
        }
        Ok(job)
    }

    /// Removes a job; `Ok(None)` when there is none with that id.
    pub fn remove(&self, id: &str) -> Result<Option<CronJob>, ToolError> {
        let mut jobs = self.lock()?;
        let Some(i) = jobs.iter().position(|j| j.id == id.trim()) else {
            return Ok(None);
        };
        let job = jobs.remove(i);
        if job.durable {
            self.save(&jobs)?;
        }
        Ok(Some(job))
    }

    /// The jobs due at `now`, updated (fired recurring jobs remember the time; one-shot and
    /// expired jobs are removed).
    pub fn take_due(&self, now: DateTime<Local>) -> Result<Vec<CronFire>, ToolError> {
        let mut jobs = self.lock()?;
        let mut fired = Vec::new();
        let mut keep = Vec::new();
        let mut durable_changed = false;
        for mut job in jobs.drain(..) {
            let after = from_millis(job.last_fired_at.unwrap_or(job.created_at));
            let due = fire_time(&job, &after).is_some_and(|t| t <= now);
            if !due {
                keep.push(job);
                continue;
            }
            let expired = job.recurring
                && now.timestamp_millis() - job.created_at >= RECURRING_EXPIRY.as_millis() as i64;
            let last = !job.recurring || expired;
            durable_changed |= job.durable;
            fired.push(CronFire {
                job: job.clone(),
                last,
            });
            if !last {
                job.last_fired_at = Some(millis(&now));
                keep.push(job);
            }
        }
        *jobs = keep;
        if durable_changed {
            self.save(&jobs)?;
        }
        Ok(fired)
    }

    /// Checks for due jobs every second and hands each to `on_fire` until `cancel` fires.
    pub async fn run(
        self: Arc<Self>,
        cancel: tool_core::CancellationToken,
        on_fire: impl Fn(CronFire) + Send + Sync + 'static,
    ) {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = cancel.cancelled() => return,
            }
            if let Ok(due) = self.take_due(Local::now()) {
                for fire in due {
                    on_fire(fire);
                }
            }
        }
    }
}

fn new_id(jobs: &[CronJob]) -> String {
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        ^ u64::from(std::process::id());
    loop {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let id = format!("{:08x}", (seed >> 32) as u32);
        if !jobs.iter().any(|j| j.id == id) {
            return id;
        }
    }
}

/// The session's scheduler (created on first use; durable jobs from
/// `<project>/.agent-tools/scheduled_tasks.json`). A host may install its own
/// `Arc<CronScheduler>` service first.
///
/// The file is repository content: its jobs fire only when a person approved its exact
/// content (`agent-tools trust`); otherwise they are held (kept in the file, never fired or
/// listed). A file reached through a symbolic link is refused.
pub fn cron_scheduler(ctx: &ToolContext) -> Result<Arc<CronScheduler>, ToolError> {
    let root = crate::stores::project::project_root(ctx);
    let file = crate::stores::project::cron_file(&root);
    ctx.services().get_or_try_insert_with(|| {
        if std::fs::symlink_metadata(&file).is_err() {
            // No file yet: what this session writes there is its own and stays approved.
            let name = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .to_string_lossy()
                .into_owned();
            let mut scheduler = CronScheduler::new(file)?;
            scheduler.keep_approved = Some((
                TrustStore::in_state_dir(ctx.state_dir()),
                root.clone(),
                name,
            ));
            return Ok(Arc::new(scheduler));
        }
        let approvals = crate::stores::project::approvals(&root, ctx.state_dir());
        let read =
            crate::stores::project::read(&root, &file, &approvals).map_err(ToolError::respond)?;
        if read.status == tool_core::Approval::Approved {
            let mut scheduler = CronScheduler::new(file)?;
            scheduler.keep_approved = Some((
                TrustStore::in_state_dir(ctx.state_dir()),
                root.clone(),
                read.name,
            ));
            Ok(Arc::new(scheduler))
        } else {
            CronScheduler::holding(file).map(Arc::new)
        }
    })
}
