//! The search index on the Linux tree, side by side with `rg` in one run (issue 27):
//!
//! - `index-linux`: building the index (`agent-tools index --rebuild`) and validating a
//!   saved one (`agent-tools index --status`) against one rg pass over the tree; then, in one
//!   `agent-tools batch` session whose index is ready, 30 selective queries (median per
//!   query), the unselective `static` and `if` (default page), Glob `**/*.c` from the kept
//!   list, freshness (an outside write, then a Grep that must see it), each against rg with
//!   the equivalent flags; the index's size on disk and the session's resident memory
//!   against the bytes searched.
//! - `index-diff-linux`: the differential test on the real tree — the same generated
//!   queries (literals, alternations, classes, anchors, case-insensitive, multiline, glob
//!   and type filters, every output mode, head limits and offsets, subdirectories) sent to a
//!   session answering from the index and to one scanning (`search.index: "off"`), whose
//!   answers must be byte for byte the same. `AGENT_TOOLS_INDEX_DIFF_QUERIES` sets how many
//!   (default 300, what CI runs; the full run is 2,000).

use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::files::{linux_tree, rg, rg_like_grep, scan_settings};
use super::mcp::serde_quote;
use super::{Comparison, Ctx, median, time_once};
use crate::cmd::Cmd;

/// A live `agent-tools batch` session: one call line in, one result line out.
struct Batch {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Batch {
    fn start(ctx: &Ctx, tree: &Path, home: &Path, settings: Option<&Path>) -> Result<Batch> {
        let mut cmd = Cmd::new(&ctx.bin)
            .args(["batch", "--cwd"])
            .arg(tree)
            .env("AGENT_TOOLS_HOME", home);
        if let Some(s) = settings {
            cmd = cmd.arg("--settings").arg(s);
        }
        let mut command = cmd.to_command()?;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot start agent-tools batch")?;
        let stdin = child.stdin.take().context("batch stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("batch stdout")?);
        Ok(Batch {
            child,
            stdin,
            stdout,
        })
    }

    /// Sends one call and returns its result line and how long it took.
    fn call(&mut self, tool: &str, input: &str) -> Result<(String, Duration)> {
        let started = Instant::now();
        writeln!(self.stdin, r#"{{"tool":"{tool}","input":{input}}}"#)?;
        self.stdin.flush()?;
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            bail!("agent-tools batch ended before answering {tool} {input}");
        }
        Ok((line, started.elapsed()))
    }

    /// `VmRSS` and `VmHWM` of the session, in KiB.
    fn memory_kb(&self) -> Result<(u64, u64)> {
        let status = fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let field = |name: &str| -> u64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        Ok((field("VmRSS:"), field("VmHWM:")))
    }

    fn finish(mut self) -> Result<()> {
        drop(self.stdin);
        self.child.wait()?;
        Ok(())
    }
}

/// One rg pass over the whole tree: a pattern found nowhere, so every file is read (rg
/// exits 1 when nothing matched, which the shell turns into success).
fn rg_pass(rg: &Path, tree: &Path) -> Cmd {
    Cmd::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' --hidden -g '!.git' -l 'zq9_never_present_9qz'; test $? -eq 1",
            rg.display()
        ))
        .cwd(tree)
}

/// The selective queries: identifiers and short regular expressions.
const SELECTIVE: [&str; 30] = [
    "rcu_read_lock_bh",
    r"EXPORT_SYMBOL_GPL\(kmalloc",
    r"struct\s+page_pool\b",
    "PM_RESUME",
    "spin_lock_irqsave",
    "copy_from_user",
    r"mutex_lock\(&dev->",
    "CONFIG_DEBUG_LOCK_ALLOC",
    "platform_driver_register",
    r"of_match_ptr\(",
    "kmem_cache_alloc",
    "list_for_each_entry_safe",
    "dma_map_single",
    r"skb_put\(skb",
    "get_user_pages",
    "wait_event_interruptible",
    r"module_param\(debug",
    "sysfs_create_group",
    "ERR_PTR",
    "devm_kzalloc",
    r"atomic_inc\(&",
    "pci_enable_device",
    "request_threaded_irq",
    r"init_waitqueue_head\(",
    "__GFP_NOWARN",
    "schedule_timeout",
    "cpu_to_le32",
    r"netif_(start|stop)_queue",
    r"ext4_[a-z_]+_inode",
    "sched_clock",
];

/// The bytes of every file Grep searches (what rg --hidden lists).
fn searched_bytes(rg: &Path, tree: &Path) -> Result<u64> {
    let out = rg_like_grep(rg)
        .arg("--files")
        .cwd(tree)
        .stdout_string()
        .context("rg --files")?;
    Ok(out
        .lines()
        .filter_map(|l| fs::symlink_metadata(tree.join(l)).ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum())
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// The index's figures on the Linux tree, each against rg.
pub fn index_linux(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let tree = linux_tree()?;
    let rg = rg()?;
    let home = ctx.scratch.join("index-home");
    fs::create_dir_all(&home)?;
    let pass = rg_pass(&rg, &tree);
    let mut out = Vec::new();

    // Building, and validating a saved index in the next session.
    let rebuild = Cmd::new(&ctx.bin)
        .args(["index", "--rebuild", "--cwd"])
        .arg(&tree)
        .env("AGENT_TOOLS_HOME", &home);
    out.push(ctx.compare(
        "linux: build the index (index --rebuild)",
        &rebuild,
        &pass,
        "one rg pass",
    )?);
    let build_kb = super::files::max_rss_kb(&rebuild)?;
    let status = Cmd::new(&ctx.bin)
        .args(["index", "--status", "--json", "--cwd"])
        .arg(&tree)
        .env("AGENT_TOOLS_HOME", &home);
    out.push(ctx.compare(
        "linux: validate the saved index (index --status)",
        &status,
        &pass,
        "one rg pass",
    )?);
    let report = status.stdout_string()?;
    println!("bench: index: {}", report.trim());
    let file = report
        .split("\"file\":")
        .nth(1)
        .and_then(|r| r.split('"').nth(1))
        .map(PathBuf::from)
        .context("index --status names its file")?;
    let disk = fs::metadata(&file)
        .with_context(|| format!("cannot stat {}", file.display()))?
        .len();
    let searched = searched_bytes(&rg, &tree)?;

    // One session whose index is ready: its first query waits for the validation.
    let mut batch = Batch::start(ctx, &tree, &home, None)?;
    let (first, waited) = batch.call("Grep", r#"{"pattern":"zq9_warm_up"}"#)?;
    if !first.contains("No files found") {
        bail!("the warm-up query found something: {first}");
    }
    println!(
        "bench: index: the session's first query (waits for the validation) {}",
        ms(waited)
    );
    let runs = ctx.runs.max(3);
    let mut ours_medians = Vec::new();
    let mut rg_medians = Vec::new();
    let mut lines = String::new();
    for pattern in SELECTIVE {
        // Every matching file on both sides (no page: `rg -l` lists them all).
        let input = format!(r#"{{"pattern":{},"head_limit":0}}"#, serde_quote(pattern));
        let mut times = Vec::new();
        for _ in 0..runs {
            times.push(batch.call("Grep", &input)?.1);
        }
        let baseline = rg_like_grep(&rg).args(["-l", pattern]).cwd(&tree);
        time_once(&baseline).ok();
        let mut base = Vec::new();
        for _ in 0..runs {
            // rg exits 1 for no match: time it through the shell wrapper's rule.
            let started = Instant::now();
            baseline.to_command()?.stdout(Stdio::null()).status()?;
            base.push(started.elapsed());
        }
        let (o, b) = (median(times), median(base));
        let _ = writeln!(
            lines,
            "bench: index: {pattern:<32} {:>9} vs rg {:>9} = {:.3}×",
            ms(o),
            ms(b),
            o.as_secs_f64() / b.as_secs_f64()
        );
        ours_medians.push(o);
        rg_medians.push(b);
    }
    print!("{lines}");
    let ratios: Vec<f64> = ours_medians
        .iter()
        .zip(&rg_medians)
        .map(|(o, b)| o.as_secs_f64() / b.as_secs_f64())
        .collect();
    let mut sorted = ratios.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    println!(
        "bench: index: selective queries: median ratio {:.3}× rg (target ≤ 0.05×), worst {:.3}×",
        sorted[sorted.len() / 2],
        sorted.last().copied().unwrap_or(0.0)
    );
    out.push(Comparison {
        case: "linux, index ready: 30 selective queries (median per query)".to_owned(),
        ours: median(ours_medians),
        baseline: median(rg_medians),
        baseline_label: "rg -l".to_owned(),
        baseline_command: "`rg --hidden -g '!.git' -l PATTERN` per query, in the tree".to_owned(),
    });

    // Unselective queries, the default page: never slower than rg.
    for (case, input, flag) in [
        (
            "static, files (default page)",
            r#"{"pattern":"static"}"#,
            "-l",
        ),
        ("if, files (default page)", r#"{"pattern":"if"}"#, "-l"),
        (
            "static, content (default page)",
            r#"{"pattern":"static","output_mode":"content"}"#,
            "-n",
        ),
        (
            "if, content (default page)",
            r#"{"pattern":"if","output_mode":"content"}"#,
            "-n",
        ),
    ] {
        let word = if case.starts_with("static") {
            "static"
        } else {
            "if"
        };
        let mut times = Vec::new();
        for _ in 0..runs {
            times.push(batch.call("Grep", input)?.1);
        }
        let baseline = Cmd::new("sh")
            .arg("-c")
            .arg(format!(
                "'{}' --hidden -g '!.git' {flag} '{word}' | head -n 250",
                rg.display()
            ))
            .cwd(&tree);
        time_once(&baseline)?;
        let mut base = Vec::new();
        for _ in 0..runs {
            base.push(time_once(&baseline)?);
        }
        out.push(Comparison {
            case: format!("linux, index ready: {case}"),
            ours: median(times),
            baseline: median(base),
            baseline_label: "rg | head -n 250".to_owned(),
            baseline_command: format!("`{baseline}` in {}", tree.display()),
        });
    }

    // Glob from the kept list.
    let mut times = Vec::new();
    for _ in 0..runs {
        times.push(batch.call("Glob", r#"{"pattern":"**/*.c"}"#)?.1);
    }
    // Glob answers the 100 newest: rg sorted newest first, cut to 100.
    let baseline = Cmd::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' --hidden -g '!.git' --files -g '*.c' --sortr modified | head -n 100",
            rg.display()
        ))
        .cwd(&tree);
    time_once(&baseline)?;
    let mut base = Vec::new();
    for _ in 0..runs {
        base.push(time_once(&baseline)?);
    }
    out.push(Comparison {
        case: "linux, index ready: Glob **/*.c".to_owned(),
        ours: median(times),
        baseline: median(base),
        baseline_label: "rg --files -g '*.c' --sortr modified | head -n 100".to_owned(),
        baseline_command: format!("`{baseline}` in {}", tree.display()),
    });

    // Freshness: an outside write, then at once a Grep that must see it.
    let mut fresh = Vec::new();
    let mut rg_fresh = Vec::new();
    for n in 0..runs.max(5) {
        let token = format!("zq9_fresh_token_{n}_{}", std::process::id());
        let path = tree.join(format!("zq9_fresh_{n}.c"));
        let started = Instant::now();
        fs::write(&path, format!("int {token};\n"))?;
        let (line, _) = batch.call("Grep", &format!(r#"{{"pattern":"{token}"}}"#))?;
        let took = started.elapsed();
        let rg_cmd = rg_like_grep(&rg).args(["-l", &token]).cwd(&tree);
        let rg_took = time_once(&rg_cmd)?;
        fs::remove_file(&path)?;
        if !line.contains(&format!("zq9_fresh_{n}.c")) {
            bail!("the Grep right after the write did not see it: {line}");
        }
        fresh.push(took);
        rg_fresh.push(rg_took);
    }
    let worst = fresh.iter().max().copied().unwrap_or_default();
    println!(
        "bench: index: freshness: write → answer median {}, worst {} (target ≤ 100 ms)",
        ms(median(fresh.clone())),
        ms(worst)
    );
    out.push(Comparison {
        case: "linux, index ready: outside write, then a Grep that sees it".to_owned(),
        ours: median(fresh),
        baseline: median(rg_fresh),
        baseline_label: "rg -l TOKEN".to_owned(),
        baseline_command: "`rg --hidden -g '!.git' -l TOKEN` after the same write".to_owned(),
    });

    let (rss, hwm) = batch.memory_kb()?;
    batch.finish()?;
    let mb = |b: u64| b as f64 / 1024.0 / 1024.0;
    println!(
        "bench: index: searched bytes {:.0} MB; index on disk {:.0} MB = {:.3}× (target ≤ 0.3×)",
        mb(searched),
        mb(disk),
        disk as f64 / searched as f64
    );
    println!(
        "bench: index: session resident memory {:.0} MB (peak {:.0} MB) = {:.3}× of the searched bytes (target ≤ 0.15×); building took a peak of {:.0} MB",
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0,
        rss as f64 * 1024.0 / searched as f64,
        build_kb as f64 / 1024.0
    );
    Ok(out)
}

/// A small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(self.0 >> 33).unwrap_or(0) % n.max(1)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next(items.len())]
    }
}

const WORDS: &[&str] = &[
    "kmalloc",
    "kfree",
    "spin_lock",
    "mutex_lock",
    "EXPORT_SYMBOL_GPL",
    "rcu_read_lock",
    "pci_dev",
    "dma_addr_t",
    "irqreturn_t",
    "module_init",
    "printk",
    "dev_err",
    "GFP_KERNEL",
    "list_for_each_entry",
    "u32",
    "static",
    "return",
    "copy_from_user",
    "atomic_t",
    "netdev",
    "skb",
    "inode",
    "file_operations",
    "platform_driver",
    "__init",
    "likely",
    "WARN_ON",
    "Linus",
    "TODO",
    "ext4",
    "struct",
    "probe",
    "MODULE_LICENSE",
    "jiffies",
];

const PATHS: &[&str] = &[
    "fs/ext4",
    "kernel",
    "mm",
    "drivers/net/ethernet/intel",
    "include/linux",
    "Documentation",
    "arch/x86/kernel",
    "net/ipv4",
    "lib",
    "drivers/gpu/drm/i915",
    "tools",
];

/// One generated Grep or Glob call.
fn query(rng: &mut Rng) -> (&'static str, String) {
    if rng.next(10) == 0 {
        let pattern = [
            "**/*.c",
            "*.h",
            "**/Kconfig",
            "fs/**/*.rs",
            ".*",
            "**/*.{S,lds}",
            "Documentation/**/*.rst",
        ][rng.next(7)];
        let mut input = format!(r#"{{"pattern":"{pattern}""#);
        if rng.next(3) == 0 {
            let _ = write!(input, r#","path":"{}""#, rng.pick(PATHS));
        }
        input.push('}');
        return ("Glob", input);
    }
    let word = rng.pick(WORDS);
    let other = rng.pick(WORDS);
    let short = &word[..word.len().min(4)];
    let pattern = match rng.next(12) {
        0 => format!("{word}|{other}"),
        1 => format!(r"^\s*{word}"),
        2 => format!(r"{word}\($"),
        3 => format!(r"[a-z]+_{short}"),
        4 => format!(r"{word}\s+\w+"),
        5 => format!(r"\b{word}\b"),
        6 => format!("{word}.*{other}"),
        7 => format!(r"({word}|{other})_[a-z]+\("),
        8 => format!(r"#include <linux/{short}"),
        9 => format!(r"{word}\n\s*{other}"),
        10 => format!("{word}[0-9]"),
        _ => word.to_owned(),
    };
    let mut input = format!(r#"{{"pattern":{}"#, serde_quote(&pattern));
    if pattern.contains(r"\n") {
        input.push_str(r#","multiline":true"#);
    }
    match rng.next(3) {
        0 => input.push_str(r#","output_mode":"content""#),
        1 => input.push_str(r#","output_mode":"count""#),
        _ => {}
    }
    if rng.next(4) == 0 {
        input.push_str(r#","-i":true"#);
    }
    match rng.next(8) {
        0 => input.push_str(r#","glob":"*.h""#),
        1 => input.push_str(r#","glob":"**/*.{c,h}""#),
        2 => input.push_str(r#","type":"rust""#),
        3 => input.push_str(r#","type":"py""#),
        4 | 5 => {
            let _ = write!(input, r#","path":"{}""#, rng.pick(PATHS));
        }
        _ => {}
    }
    match rng.next(6) {
        0 => input.push_str(r#","head_limit":0"#),
        1 => {
            let _ = write!(input, r#","head_limit":{}"#, 1 + rng.next(20));
        }
        _ => {}
    }
    if rng.next(4) == 0 {
        let _ = write!(input, r#","offset":{}"#, rng.next(30));
    }
    if input.contains("content") {
        match rng.next(5) {
            0 => input.push_str(r#","-C":1"#),
            1 => input.push_str(r#","-B":2"#),
            2 => input.push_str(r#","-n":false"#),
            _ => {}
        }
    }
    input.push('}');
    ("Grep", input)
}

/// A result line without what differs from session to session: Glob's duration, and the
/// session's folder in the path a large answer is saved to (its bytes are in `data`).
fn comparable(line: &str) -> String {
    let mut line = line.to_owned();
    if let Some(at) = line.find("\"durationMs\":") {
        let rest = &line[at + 13..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        line = format!("{}\"durationMs\":0{}", &line[..at], &rest[digits..]);
    }
    let marker = "/tool-results/";
    if let Some(at) = line.find(marker) {
        let from = at + marker.len();
        let session = line[from..].find('/').unwrap_or(0);
        line.replace_range(from..from + session, "SESSION");
    }
    line
}

/// The differential test on the Linux tree: index answers against scan answers.
pub fn index_diff_linux(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let tree = linux_tree()?;
    let queries: usize = std::env::var("AGENT_TOOLS_INDEX_DIFF_QUERIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let home = ctx.scratch.join("index-home");
    fs::create_dir_all(&home)?;
    let rebuild = Cmd::new(&ctx.bin)
        .args(["index", "--rebuild", "--cwd"])
        .arg(&tree)
        .env("AGENT_TOOLS_HOME", &home);
    time_once(&rebuild).context("building the index")?;
    let mut indexed = Batch::start(ctx, &tree, &home, None)?;
    let settings = scan_settings(ctx)?;
    let mut scan = Batch::start(ctx, &tree, &home, Some(&settings))?;
    let started = Instant::now();
    let mut rng = Rng(0x005e_ed27);
    let mut ours_total = Duration::ZERO;
    let mut scan_total = Duration::ZERO;
    let mut kinds = [0usize; 2];
    for n in 0..queries {
        let (tool, input) = query(&mut rng);
        kinds[usize::from(tool == "Glob")] += 1;
        let (a, ta) = indexed.call(tool, &input)?;
        let (b, tb) = scan.call(tool, &input)?;
        ours_total += ta;
        scan_total += tb;
        if comparable(&a) != comparable(&b) {
            bail!("query {n}: {tool} {input}: the index answered\n{a}\nthe scan answered\n{b}");
        }
        if (n + 1) % 100 == 0 {
            println!(
                "bench: index-diff: {} queries identical ({:.0} s)",
                n + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    indexed.finish()?;
    scan.finish()?;
    println!(
        "bench: index-diff: {queries} queries ({} Grep, {} Glob) answered byte for byte alike by the index and the scan in {:.0} s",
        kinds[0],
        kinds[1],
        started.elapsed().as_secs_f64()
    );
    let per = |total: Duration| total / u32::try_from(queries.max(1)).unwrap_or(1);
    Ok(vec![Comparison {
        case: format!("linux: {queries} generated queries, identical answers (mean per query)"),
        ours: per(ours_total),
        baseline: per(scan_total),
        baseline_label: "the scan".to_owned(),
        baseline_command: "`agent-tools batch` with search.index \"off\", the same queries"
            .to_owned(),
    }])
}

#[cfg(test)]
mod tests {
    use super::comparable;

    #[test]
    fn answers_compare_without_what_each_session_differs_in() {
        let a = r#"{"text":"saved to: /h/tool-results/s1-ab/Grep-0.txt","data":{"durationMs":12}}"#;
        let b = r#"{"text":"saved to: /h/tool-results/s22-cd/Grep-0.txt","data":{"durationMs":3}}"#;
        assert_eq!(comparable(a), comparable(b));
        let c = r#"{"text":"saved to: /h/tool-results/s1-ab/Grep-1.txt","data":{"durationMs":3}}"#;
        assert_ne!(comparable(a), comparable(c));
        assert_eq!(comparable("plain"), "plain");
    }
}
