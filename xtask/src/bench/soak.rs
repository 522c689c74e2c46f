//! The `soak` benchmark: `agent-tools serve --http` under a fleet's load for minutes, on
//! loopback, and whether what the load used comes back.
//!
//! [`Soak::sessions`] clients at once (100 by default) for [`Soak::seconds`] (300 by
//! default; `--soak-seconds` and `--soak-sessions` shorten it). Three clients in four are
//! legacy clients: `initialize`, twenty mixed calls, `DELETE` of the session, again; the
//! fourth is a protocol 2026-07-28 client that asks for a new context each round (every
//! eighth client uses its principal's default context instead). The calls mix Read, Glob,
//! Grep, Write, Edit, Bash in the foreground, Bash output large enough to be kept on disk,
//! and background commands read back with TaskOutput. The server runs with
//! `--session-idle 10`, so the contexts the stateless clients leave end ten seconds after
//! their last request.
//!
//! Every ten seconds (before, during and for 40 seconds after the load) it samples the
//! server's resident memory, open descriptors, threads, descendant processes and the size
//! of its state directory, and prints baseline (idle, before the load), peak and after-load
//! (30 seconds after the load ended) for each, against the targets: descriptors and state
//! directory back within 10 % of the baseline, resident memory within twice the baseline,
//! no descendant left.
//!
//! The `churn` benchmark ([`churn`]) is the memory half of the same question, without the
//! tools' own work: ten rounds of 2,000 legacy sessions (`initialize`, one Read, `DELETE`,
//! twenty clients at once) and a round of 2,000 2026-07-28 contexts left to expire, with
//! resident memory, descriptors and threads after each round against the idle baseline, and
//! again 30 and 60 seconds after the contexts round, once the blocking threads its ending
//! contexts started have ended.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::http::{Conn, Server, free_port, wait_listening};
use super::{Comparison, Ctx};
use crate::cmd::Cmd;

/// How long and how wide the soak is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Soak {
    /// Seconds of load
    pub seconds: u64,
    /// Clients at once
    pub sessions: usize,
}

impl Default for Soak {
    fn default() -> Self {
        Soak {
            seconds: 300,
            sessions: 100,
        }
    }
}

/// Seconds between samples.
const PERIOD: Duration = Duration::from_secs(10);
/// When after the load the "after" figures are taken.
const AFTER: Duration = Duration::from_secs(30);
/// Calls per legacy session before it is deleted.
const CALLS_PER_SESSION: usize = 20;

/// One sample of the server.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    rss_kib: u64,
    fds: u64,
    threads: u64,
    descendants: u64,
    state_bytes: u64,
}

fn status_field(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Processes below `pid` (children, their children, ...).
fn descendants(pid: u32) -> u64 {
    let mut parent: HashMap<u32, u32> = HashMap::new();
    if let Ok(entries) = fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let stat = fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u32>().ok());
            if let Some(ppid) = ppid {
                parent.insert(p, ppid);
            }
        }
    }
    parent
        .keys()
        .filter(|&&p| {
            let mut at = p;
            for _ in 0..64 {
                match parent.get(&at) {
                    Some(&pp) if pp == pid => return true,
                    Some(&pp) if pp > 1 => at = pp,
                    _ => return false,
                }
            }
            false
        })
        .count() as u64
}

/// Bytes of the regular files under `dir` (links not followed).
fn tree_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(meta) = e.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(e.path());
            } else if meta.is_file() {
                total += meta.len();
            }
        }
    }
    total
}

fn sample(pid: u32, state: &Path) -> Sample {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    Sample {
        rss_kib: status_field(&status, "VmRSS:"),
        fds: fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64),
        threads: status_field(&status, "Threads:"),
        descendants: descendants(pid),
        state_bytes: tree_bytes(state),
    }
}

/// What the clients did.
#[derive(Default)]
struct Tally {
    calls: AtomicU64,
    errors: AtomicU64,
    sessions: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl Tally {
    fn note(&self, outcome: Result<()>) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = outcome {
            self.errors.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut first) = self.first_error.lock() {
                first.get_or_insert_with(|| format!("{e:#}"));
            }
        }
    }
}

/// The arguments of call `n` of a client (a mix over the tools), and the tool.
fn mixed_call(client: usize, n: usize, project: &Path) -> (&'static str, String) {
    // Calls 2, 3 and 4 of ten read, write and read again the same file of this client's
    // (made with the project, as a Write needs a Read of the file first in the session).
    let scratch = project.join(format!("scratch/c{client}-{}.txt", (n / 10) % SCRATCH));
    let scratch = scratch.display();
    match n % 10 {
        0 => ("Read", format!(r#"{{"file_path":"src/m{}.rs"}}"#, n % 50)),
        1 => ("Glob", r#"{"pattern":"**/*.rs"}"#.to_owned()),
        2 => ("Read", format!(r#"{{"file_path":"{scratch}"}}"#)),
        3 => (
            "Write",
            format!(r#"{{"file_path":"{scratch}","content":"round {n}\nline\n"}}"#),
        ),
        4 => ("Read", format!(r#"{{"file_path":"{scratch}"}}"#)),
        5 => (
            "Bash",
            r#"{"command":"echo soak && ls src | wc -l"}"#.to_owned(),
        ),
        6 => (
            "Bash",
            r#"{"command":"seq 1 20000","description":"output kept on disk"}"#.to_owned(),
        ),
        7 => (
            "Bash",
            r#"{"command":"sleep 0.2; echo done","run_in_background":true}"#.to_owned(),
        ),
        8 => ("TaskOutput", r#"{"task_id":"b1","block":false}"#.to_owned()),
        _ => (
            "Grep",
            r#"{"pattern":"soak","path":"src","output_mode":"files_with_matches"}"#.to_owned(),
        ),
    }
}

/// A legacy client: sessions of [`CALLS_PER_SESSION`] calls, each deleted at its end.
fn legacy_client(
    authority: &str,
    token: &str,
    client: usize,
    project: &Path,
    stop: &AtomicBool,
    tally: &Tally,
) {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut conn) = Conn::open(authority).map(|c| c.with_token(token)) else {
            tally.note(Err(anyhow::anyhow!("cannot connect")));
            std::thread::sleep(Duration::from_millis(200));
            continue;
        };
        if let Err(e) = conn.initialize() {
            tally.note(Err(e));
            continue;
        }
        tally.sessions.fetch_add(1, Ordering::Relaxed);
        for _ in 0..CALLS_PER_SESSION {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let (tool, args) = mixed_call(client, n, project);
            n += 1;
            tally.note(conn.call_tool("2025-11-25", tool, &args, None).map(|_| ()));
        }
        tally.note(conn.delete());
    }
}

/// A 2026-07-28 client: rounds of calls in a new context (or, for `default`, in the
/// principal's default context); a new connection each round.
fn stateless_client(
    authority: &str,
    token: &str,
    client: usize,
    default: bool,
    project: &Path,
    stop: &AtomicBool,
    tally: &Tally,
) {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut conn) = Conn::open(authority).map(|c| c.with_token(token)) else {
            tally.note(Err(anyhow::anyhow!("cannot connect")));
            std::thread::sleep(Duration::from_millis(200));
            continue;
        };
        let mut handle = (!default).then(|| "new".to_owned());
        tally.sessions.fetch_add(1, Ordering::Relaxed);
        for _ in 0..CALLS_PER_SESSION {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let (tool, args) = mixed_call(client, n, project);
            n += 1;
            match conn.call_tool("2026-07-28", tool, &args, handle.as_deref()) {
                Ok(answer) => {
                    tally.note(Ok(()));
                    if handle.as_deref() == Some("new") {
                        handle = context_handle(&answer);
                    }
                }
                Err(e) => tally.note(Err(e)),
            }
        }
    }
}

/// The context handle a result names (`"agent-tools/context":"HANDLE"`; handles are hex).
fn context_handle(answer: &str) -> Option<String> {
    let key = "\"agent-tools/context\":\"";
    let start = answer.find(key)? + key.len();
    let handle: String = answer[start..]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    (!handle.is_empty()).then_some(handle)
}

/// Scratch files per client.
const SCRATCH: usize = 4;

/// The project the clients work in: 50 source files, and [`SCRATCH`] scratch files for each
/// of `clients`.
fn project(dir: &Path, clients: usize) -> Result<()> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir.join("src"))?;
    fs::create_dir_all(dir.join("scratch"))?;
    for client in 0..clients {
        for k in 0..SCRATCH {
            fs::write(dir.join(format!("scratch/c{client}-{k}.txt")), "new\n")?;
        }
    }
    for i in 0..50 {
        let mut text = String::new();
        for j in 0..40 {
            let _ = writeln!(text, "fn f{j}() -> u32 {{ {i} + {j} }} // soak");
        }
        fs::write(dir.join(format!("src/m{i}.rs")), text)?;
    }
    Ok(())
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn bytes(b: u64) -> String {
    if b < 1 << 20 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
    }
}

/// The table of baseline, peak and after-load figures against the targets.
fn report(base: Sample, peak: Sample, after: Sample) -> String {
    let rows: [(&str, String, String, String, String, bool); 5] = [
        (
            "resident memory",
            mib(base.rss_kib),
            mib(peak.rss_kib),
            mib(after.rss_kib),
            "≤ 2 × baseline".to_owned(),
            after.rss_kib <= 2 * base.rss_kib.max(1),
        ),
        (
            "descriptors",
            base.fds.to_string(),
            peak.fds.to_string(),
            after.fds.to_string(),
            "≤ baseline + 10 %".to_owned(),
            after.fds * 10 <= base.fds * 11,
        ),
        (
            "threads",
            base.threads.to_string(),
            peak.threads.to_string(),
            after.threads.to_string(),
            "(reported)".to_owned(),
            true,
        ),
        (
            "descendants",
            base.descendants.to_string(),
            peak.descendants.to_string(),
            after.descendants.to_string(),
            "= baseline".to_owned(),
            after.descendants <= base.descendants,
        ),
        (
            "state directory",
            bytes(base.state_bytes),
            bytes(peak.state_bytes),
            bytes(after.state_bytes),
            "≤ baseline + 10 % (+4 KiB)".to_owned(),
            after.state_bytes * 10 <= base.state_bytes * 11 + 40 * 1024,
        ),
    ];
    let mut out = format!(
        "  {:<16} {:>12} {:>12} {:>12}  {:<28} {}\n",
        "", "baseline", "peak", "after 30 s", "target", "met"
    );
    for (name, b, p, a, target, met) in rows {
        let _ = writeln!(
            out,
            "  {name:<16} {b:>12} {p:>12} {a:>12}  {target:<28} {}",
            if met { "yes" } else { "NO" }
        );
    }
    out
}

/// Runs the soak and prints its table; it has no baseline program to compare with, so it
/// adds no row to the benchmark table.
pub fn soak(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let Soak { seconds, sessions } = ctx.soak;
    let dir = ctx.scratch.join("soak");
    let project_dir = dir.join("project");
    let tokens = tokens(sessions);
    let (server, pid, authority, state) =
        start_server(ctx, &dir, &["--session-idle", "10"], &tokens)?;
    // The baseline: the idle server once a first call has loaded what every call needs.
    let mut warm = Conn::open(&authority)?.with_token(&tokens[0]);
    warm.call_tool("2026-07-28", "Read", r#"{"file_path":"src/m0.rs"}"#, None)?;
    drop(warm);
    std::thread::sleep(Duration::from_secs(2));
    let base = sample(pid, &state);
    println!(
        "  soak: {sessions} clients for {seconds} s against pid {pid}; sampling every {} s",
        PERIOD.as_secs()
    );
    let stop = AtomicBool::new(false);
    let tally = Tally::default();
    let samples: Arc<Mutex<Vec<(f64, Sample)>>> = Arc::default();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for (client, token) in tokens.iter().enumerate() {
            let (authority, project_dir, stop, tally) = (&authority, &project_dir, &stop, &tally);
            scope.spawn(move || match client % 8 {
                4 => stateless_client(authority, token, client, true, project_dir, stop, tally),
                0 => stateless_client(authority, token, client, false, project_dir, stop, tally),
                _ => legacy_client(authority, token, client, project_dir, stop, tally),
            });
        }
        let deadline = started + Duration::from_secs(seconds);
        while Instant::now() < deadline {
            std::thread::sleep(PERIOD.min(deadline - Instant::now()));
            let s = sample(pid, &state);
            println!(
                "  t={:>4.0} s  rss {}  fds {}  threads {}  descendants {}  state {}  calls {}  errors {}",
                started.elapsed().as_secs_f64(),
                mib(s.rss_kib),
                s.fds,
                s.threads,
                s.descendants,
                bytes(s.state_bytes),
                tally.calls.load(Ordering::Relaxed),
                tally.errors.load(Ordering::Relaxed)
            );
            if let Ok(mut all) = samples.lock() {
                all.push((started.elapsed().as_secs_f64(), s));
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    let ended = Instant::now();
    let mut after = base;
    while ended.elapsed() < AFTER + PERIOD {
        std::thread::sleep(PERIOD);
        let s = sample(pid, &state);
        println!(
            "  after +{:>3.0} s  rss {}  fds {}  threads {}  descendants {}  state {}",
            ended.elapsed().as_secs_f64(),
            mib(s.rss_kib),
            s.fds,
            s.threads,
            s.descendants,
            bytes(s.state_bytes)
        );
        if ended.elapsed() >= AFTER && ended.elapsed() < AFTER + PERIOD {
            after = s;
        }
        if let Ok(mut all) = samples.lock() {
            all.push((started.elapsed().as_secs_f64(), s));
        }
    }
    drop(server);
    let all = samples.lock().map(|s| s.clone()).unwrap_or_default();
    if all.is_empty() {
        bail!("no sample was taken");
    }
    let peak = all.iter().fold(base, |p, (_, s)| Sample {
        rss_kib: p.rss_kib.max(s.rss_kib),
        fds: p.fds.max(s.fds),
        threads: p.threads.max(s.threads),
        descendants: p.descendants.max(s.descendants),
        state_bytes: p.state_bytes.max(s.state_bytes),
    });
    let calls = tally.calls.load(Ordering::Relaxed);
    let errors = tally.errors.load(Ordering::Relaxed);
    println!(
        "  soak: {calls} calls in {} sessions, {errors} errors{}",
        tally.sessions.load(Ordering::Relaxed),
        tally
            .first_error
            .lock()
            .ok()
            .and_then(|e| e.clone())
            .map(|e| format!(" (first: {})", e.chars().take(300).collect::<String>()))
            .unwrap_or_default()
    );
    print!("{}", report(base, peak, after));
    Ok(Vec::new())
}

/// The variable that hands the server the clients' tokens.
const TOKENS_VAR: &str = "AGENT_TOOLS_BENCH_TOKENS";

/// One bearer token per client: each client is a principal of its own, as each agent of a
/// fleet is (docs/deploy.md), so the per-principal cap on minted contexts is one client's.
fn tokens(n: usize) -> Vec<String> {
    (0..n.max(1))
        .map(|i| format!("bench-principal-{i:06}-token"))
        .collect()
}

/// Rounds of [`churn`], and sessions per round.
const CHURN_ROUNDS: usize = 10;
const CHURN_SESSIONS: usize = 2_000;
/// Clients at once in a round of [`churn`].
const CHURN_CLIENTS: usize = 20;

/// Starts `serve --http` for a bench in `dir` (project and state directory made fresh);
/// the server, its pid, its address and the state directory.
fn start_server(
    ctx: &Ctx,
    dir: &Path,
    extra: &[&str],
    tokens: &[String],
) -> Result<(Server, u32, String, std::path::PathBuf)> {
    let project_dir = dir.join("project");
    let state = dir.join("state");
    project(&project_dir, tokens.len())?;
    let _ = fs::remove_dir_all(&state);
    fs::create_dir_all(&state)?;
    let port = free_port()?;
    let authority = format!("127.0.0.1:{port}");
    let mut command = Cmd::new(&ctx.bin)
        .args(["--cwd"])
        .arg(&project_dir)
        .args([
            "--mode",
            "acceptEdits",
            "--allow",
            "Bash",
            "serve",
            "--http",
        ])
        .arg(&authority)
        .args(extra.iter().copied())
        .args(["--token-env", TOKENS_VAR])
        .env(TOKENS_VAR, tokens.join(","))
        .env("AGENT_TOOLS_HOME", &state)
        .to_command()?;
    // The server's log, to look for panics afterwards.
    let log = fs::File::create(dir.join("server.log"))?;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    let mut child = command.spawn().context("starting agent-tools serve")?;
    wait_listening(&authority, &mut child)?;
    let pid = child.id();
    Ok((Server(child), pid, authority, state))
}

/// Ten rounds of 2,000 legacy sessions created, used once and deleted, then 2,000
/// 2026-07-28 contexts minted and left to expire; prints memory, descriptors and threads
/// after each round against the idle baseline (target: memory within twice the baseline).
pub fn churn(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let dir = ctx.scratch.join("churn");
    let tokens = tokens(CHURN_SESSIONS);
    let (server, pid, authority, state) =
        start_server(ctx, &dir, &["--session-idle", "2"], &tokens)?;
    let mut warm = Conn::open(&authority)?.with_token(&tokens[0]);
    warm.initialize()?;
    warm.call_tool("2025-11-25", "Read", r#"{"file_path":"src/m0.rs"}"#, None)?;
    warm.delete()?;
    drop(warm);
    std::thread::sleep(Duration::from_secs(2));
    let base = sample(pid, &state);
    println!(
        "  churn: {CHURN_ROUNDS} rounds of {CHURN_SESSIONS} legacy sessions against pid {pid}; baseline rss {}  fds {}  threads {}",
        mib(base.rss_kib),
        base.fds,
        base.threads
    );
    let tally = Tally::default();
    let mut last = base;
    let mut worst = base.rss_kib;
    let mut finished = Instant::now();
    for round in 1..=CHURN_ROUNDS + 1 {
        let modern = round > CHURN_ROUNDS;
        let started = Instant::now();
        std::thread::scope(|scope| {
            for client in 0..CHURN_CLIENTS {
                let (authority, tally, tokens) = (&authority, &tally, &tokens);
                scope.spawn(move || {
                    for i in 0..CHURN_SESSIONS / CHURN_CLIENTS {
                        let token = &tokens[client * (CHURN_SESSIONS / CHURN_CLIENTS) + i];
                        let outcome = (|| {
                            let mut conn = Conn::open(authority)?.with_token(token);
                            if modern {
                                // A principal's context minted and never used again: it
                                // ends when idle.
                                conn.call_tool(
                                    "2026-07-28",
                                    "Read",
                                    r#"{"file_path":"src/m1.rs"}"#,
                                    Some("new"),
                                )?;
                                return Ok(());
                            }
                            conn.initialize()?;
                            conn.call_tool(
                                "2025-11-25",
                                "Read",
                                r#"{"file_path":"src/m1.rs"}"#,
                                None,
                            )?;
                            conn.delete()
                        })();
                        tally.note(outcome);
                    }
                });
            }
        });
        let took = started.elapsed();
        finished = Instant::now();
        // Minted contexts end after their idle time (2 s) and the reaper's next pass.
        std::thread::sleep(Duration::from_secs(if modern { 8 } else { 2 }));
        last = sample(pid, &state);
        worst = worst.max(last.rss_kib);
        println!(
            "  {} {round:>2}: {:>5.1} s  rss {}  fds {}  threads {}  descendants {}  state {}",
            if modern { "contexts" } else { "round   " },
            took.as_secs_f64(),
            mib(last.rss_kib),
            last.fds,
            last.threads,
            last.descendants,
            bytes(last.state_bytes)
        );
    }
    // The contexts round's blocking threads (the tokio pool keeps an idle one 10 s) and
    // the memory once they ended: sampled again 30 and 60 s after the round.
    for wait in [30, 60] {
        std::thread::sleep(Duration::from_secs(wait).saturating_sub(finished.elapsed()));
        last = sample(pid, &state);
        worst = worst.max(last.rss_kib);
        println!(
            "  contexts +{wait} s:     rss {}  fds {}  threads {}  descendants {}  state {}",
            mib(last.rss_kib),
            last.fds,
            last.threads,
            last.descendants,
            bytes(last.state_bytes)
        );
    }
    drop(server);
    let calls = tally.calls.load(Ordering::Relaxed);
    let errors = tally.errors.load(Ordering::Relaxed);
    println!(
        "  churn: {calls} sessions, {errors} errors{}",
        tally
            .first_error
            .lock()
            .ok()
            .and_then(|e| e.clone())
            .map(|e| format!(" (first: {})", e.chars().take(300).collect::<String>()))
            .unwrap_or_default()
    );
    println!(
        "  churn: resident memory baseline {}, highest after a round {}, after the last {} (target ≤ 2 × baseline: {})",
        mib(base.rss_kib),
        mib(worst),
        mib(last.rss_kib),
        if last.rss_kib <= 2 * base.rss_kib.max(1) {
            "met"
        } else {
            "NOT met"
        }
    );
    Ok(Vec::new())
}
