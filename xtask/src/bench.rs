//! `cargo xtask bench`: wall-time comparisons of our binary against a baseline tool.
//!
//! Every benchmark is a function that receives a [`Ctx`] (the release `agent-tools` binary, a
//! scratch directory in the temporary directory, the number of runs) and returns one or more
//! [`Comparison`]s, usually from [`Ctx::compare`]. To add a benchmark, write such a function
//! and add one line to [`BENCHES`].
//!
//! Each comparison spawns both commands as processes (stdout discarded, exit status checked),
//! runs each once to warm up, then `--runs` times alternately, and reports the medians and the
//! ratio baseline/ours ("×faster": above 1 means we are faster).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::cmd::{Cmd, target_dir};

mod files;
mod http;
mod index;
mod lsp;
mod mcp;
mod shell;
mod soak;
mod web;

pub use soak::Soak;

/// Options of `cargo xtask bench`.
#[derive(Debug, PartialEq, Eq)]
pub struct Options {
    /// Timed runs per command, after one warm-up.
    pub runs: usize,
    /// Benchmarks to run; empty means all.
    pub names: Vec<String>,
    /// Only list the benchmarks.
    pub list: bool,
    /// The length and width of the `soak` benchmark.
    pub soak: Soak,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            runs: 10,
            names: Vec::new(),
            list: false,
            soak: Soak::default(),
        }
    }
}

/// What a benchmark function receives.
pub struct Ctx {
    /// The release build of the `agent-tools` binary.
    pub bin: PathBuf,
    /// `agent-tools-bench` in the temporary directory, for generated inputs; it survives
    /// between runs.
    pub scratch: PathBuf,
    /// Timed runs per command.
    pub runs: usize,
    /// The length and width of the `soak` benchmark.
    pub soak: Soak,
}

/// One measured case: our command against the baseline command.
#[derive(Debug)]
pub struct Comparison {
    /// What was measured, e.g. `**/*.rs over 30k files`.
    pub case: String,
    /// Median wall time of our command.
    pub ours: Duration,
    /// Median wall time of the baseline command.
    pub baseline: Duration,
    /// The baseline's name, e.g. `find`.
    pub baseline_label: String,
    /// Exactly what the baseline ran (printed under the table, so every figure states its
    /// baseline).
    pub baseline_command: String,
}

impl Comparison {
    /// baseline / ours: above 1 means ours is faster.
    pub fn speedup(&self) -> f64 {
        let ours = self.ours.as_secs_f64();
        if ours > 0.0 {
            self.baseline.as_secs_f64() / ours
        } else {
            f64::INFINITY
        }
    }
}

/// A benchmark: a name, one line saying what it compares, and the function that measures it.
struct Bench {
    name: &'static str,
    about: &'static str,
    run: fn(&Ctx) -> Result<Vec<Comparison>>,
}

/// Every benchmark, in the order they run. Adding one is one function plus one line here.
const BENCHES: &[Bench] = &[
    Bench {
        name: "glob",
        about: "Glob `**/*.rs` over ~30,000 files in ~1,500 dirs vs `find -name '*.rs'`",
        run: glob,
    },
    Bench {
        name: "webfetch",
        about: "WebFetch of a 2 MB HTML page from 127.0.0.1, converted to Markdown, vs curl and python3",
        run: web::webfetch,
    },
    Bench {
        name: "grep-linux",
        about: "Grep over the Linux 6.1 tree (5 modes) vs `rg` with the same flags",
        run: files::grep_linux,
    },
    Bench {
        name: "glob-linux",
        about: "Glob `**/*.c` over the Linux 6.1 tree vs `rg --files -g '*.c'`",
        run: files::glob_linux,
    },
    Bench {
        name: "index-linux",
        about: "The search index on the Linux 6.1 tree: build and validation vs one rg pass; in a session with the index ready, 30 selective queries, `static`/`if`, Glob `**/*.c` and an outside write seen by the next Grep, each vs rg with the same flags; size on disk and resident memory vs the bytes searched",
        run: index::index_linux,
    },
    Bench {
        name: "index-diff-linux",
        about: "Differential test on the Linux 6.1 tree: generated queries answered by the index and by the scan, byte for byte alike (AGENT_TOOLS_INDEX_DIFF_QUERIES, default 300)",
        run: index::index_diff_linux,
    },
    Bench {
        name: "read-1g",
        about: "Read 2000 lines at line 5,000,000 of a 1 GB file vs `sed -n 'A,Bp;Bq'`",
        run: files::read_1g,
    },
    Bench {
        name: "edit-100m",
        about: "Read + Edit one line of a 100 MB file vs `cp` of the file",
        run: files::edit_100m,
    },
    Bench {
        name: "apply-patch-100m",
        about: "apply_patch (`--profile codex`) of one line of a 100 MB file vs Read + Edit of the same line",
        run: files::apply_patch_100m,
    },
    Bench {
        name: "lsp",
        about: "LSP hover, first (server start included) and warm, for pyright and typescript-language-server vs a minimal python3 LSP client",
        run: lsp::lsp,
    },
    Bench {
        name: "mcp-read",
        about: "tools/call round trip of Read via `agent-tools serve` vs server-filesystem's read_text_file, same file, same raw client",
        run: mcp::mcp_read,
    },
    Bench {
        name: "mcp-http",
        about: "tools/call Read over streamable HTTP, 8 keep-alive sessions (2026-07-28 and legacy sessions) vs server-everything's echo, same raw client; calls/s and p50",
        run: http::mcp_http,
    },
    Bench {
        name: "bash-200",
        about: "200 sequential Bash calls of `:` in one `agent-tools batch` (per sandbox) vs 200 `bash -c :` in a shell loop (target ≤ 1.3×)",
        run: shell::bash_200,
    },
    Bench {
        name: "bash-call",
        about: "one `agent-tools call Bash` of `:` (per sandbox) vs one `bash -c :` (target ≤ 10 ms)",
        run: shell::bash_call,
    },
    Bench {
        name: "jail-200",
        about: "200 auto-approved read-only Bash calls in one `agent-tools batch`, run in the read-only jail, vs the same calls allowed by a rule (workspace sandbox); target ≤ 1.5×",
        run: shell::jail_200,
    },
    Bench {
        name: "bash-1g",
        about: "Bash `yes | head -c 1G` (capped inline, 64 MiB of it kept on disk) vs `yes | head -c 1G > /dev/null`; peak memory",
        run: shell::bash_1g,
    },
    Bench {
        name: "soak",
        about: "serve --http under 100 clients × 5 minutes of mixed calls (legacy sessions, 2026-07-28 contexts, background tasks): memory, descriptors, threads, descendants and state directory, baseline / peak / 30 s after, against their targets",
        run: soak::soak,
    },
    Bench {
        name: "churn",
        about: "serve --http after 10 rounds of 2,000 legacy sessions (initialize, Read, DELETE) and 2,000 2026-07-28 contexts left to expire: resident memory, descriptors and threads after each round against the idle baseline",
        run: soak::churn,
    },
];

impl Ctx {
    /// Measures `ours` against `baseline`: one warm-up each, then `runs` alternating timed runs
    /// each; returns the medians.
    pub fn compare(
        &self,
        case: &str,
        ours: &Cmd,
        baseline: &Cmd,
        baseline_label: &str,
    ) -> Result<Comparison> {
        time_once(ours).context("warm-up of our command")?;
        time_once(baseline).context("warm-up of the baseline command")?;
        let mut ours_times = Vec::with_capacity(self.runs);
        let mut baseline_times = Vec::with_capacity(self.runs);
        for _ in 0..self.runs {
            ours_times.push(time_once(ours)?);
            baseline_times.push(time_once(baseline)?);
        }
        Ok(Comparison {
            case: case.to_owned(),
            ours: median(ours_times),
            baseline: median(baseline_times),
            baseline_label: baseline_label.to_owned(),
            baseline_command: format!("`{baseline}`{}", cwd_note(baseline)),
        })
    }
}

/// " in DIR" when the command runs in a directory of its own.
fn cwd_note(cmd: &Cmd) -> String {
    cmd.dir()
        .map(|d| format!(" in {}", d.display()))
        .unwrap_or_default()
}

/// Runs a command once with stdout discarded; fails unless it exits with status 0.
fn time_once(cmd: &Cmd) -> Result<Duration> {
    let mut command = cmd.to_command()?;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let output = command
        .output()
        .with_context(|| format!("could not start `{cmd}`"))?;
    let elapsed = started.elapsed();
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(10).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!("`{cmd}` failed ({}):\n{}", output.status, tail.join("\n"));
    }
    Ok(elapsed)
}

/// The median; the mean of the two middle values for an even count.
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    let n = times.len();
    match n {
        0 => Duration::ZERO,
        _ if n % 2 == 1 => times[n / 2],
        _ => (times[n / 2 - 1] + times[n / 2]) / 2,
    }
}

fn millis(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

/// Renders the results as an aligned table.
fn table(rows: &[(&str, Comparison)]) -> String {
    let header = ["bench", "case", "ours", "baseline", "×faster"];
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|(name, c)| {
            [
                (*name).to_owned(),
                c.case.clone(),
                millis(c.ours),
                format!("{} ({})", millis(c.baseline), c.baseline_label),
                format!("{:.2}×", c.speedup()),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cols: &[String]| {
        let mut text = String::new();
        for (i, (col, width)) in cols.iter().zip(widths).enumerate() {
            let pad = width.saturating_sub(col.chars().count());
            // Text columns align left, numbers right.
            if i < 2 {
                let _ = write!(text, "{col}{}  ", " ".repeat(pad));
            } else {
                let _ = write!(text, "{}{col}  ", " ".repeat(pad));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&header.map(str::to_owned));
    line(&widths.map(|w| "-".repeat(w)));
    for row in &cells {
        line(row);
    }
    out
}

fn select(names: &[String]) -> Result<Vec<&'static Bench>> {
    if names.is_empty() {
        return Ok(BENCHES.iter().collect());
    }
    names
        .iter()
        .map(|name| {
            BENCHES.iter().find(|b| b.name == name).with_context(|| {
                let known: Vec<&str> = BENCHES.iter().map(|b| b.name).collect();
                format!("unknown benchmark `{name}`; known: {}", known.join(", "))
            })
        })
        .collect()
}

fn build_binary(root: &Path) -> Result<PathBuf> {
    let build = Cmd::new("cargo").args(["build", "--release", "-p", "agent-tools"]);
    println!("$ {build}");
    build.cwd(root).run().context(
        "bench needs the release `agent-tools` binary, and building it failed \
         (see the cargo output above)",
    )?;
    let bin = target_dir(root)?.join("release/agent-tools");
    if !bin.is_file() {
        bail!(
            "`cargo build --release -p agent-tools` succeeded but {} does not exist",
            bin.display()
        );
    }
    Ok(bin)
}

/// Runs the selected benchmarks and prints the table.
pub fn run(root: &Path, options: &Options) -> Result<()> {
    if options.list {
        for bench in BENCHES {
            println!("{:<12} {}", bench.name, bench.about);
        }
        return Ok(());
    }
    let selected = select(&options.names)?;
    let bin = build_binary(root)?;
    let ctx = Ctx {
        bin,
        // Outside the home directory: the build directory is usually under ~/.cache, whose
        // entries the tools protect (as a person's would be), so a benchmark's writes and
        // commands there were refused instead of measured.
        scratch: std::env::temp_dir().join("agent-tools-bench"),
        runs: options.runs,
        soak: options.soak,
    };
    let mut rows = Vec::new();
    for bench in selected {
        println!("bench: {} — {}", bench.name, bench.about);
        let started = Instant::now();
        let results = (bench.run)(&ctx).with_context(|| format!("benchmark `{}`", bench.name))?;
        println!(
            "bench: {} done in {:.1} s",
            bench.name,
            started.elapsed().as_secs_f64()
        );
        rows.extend(results.into_iter().map(|c| (bench.name, c)));
    }
    println!(
        "\nmedian wall time of {} runs after 1 warm-up; ×faster = baseline / ours\n",
        ctx.runs
    );
    print!("{}", table(&rows));
    println!("\nbaselines, row by row:");
    for (name, c) in &rows {
        println!("  {name} / {}: {}", c.case, c.baseline_command);
    }
    Ok(())
}

// ---- benchmarks -------------------------------------------------------------------------

/// Shape of a generated tree: nested fan-out and files per directory.
struct Shape {
    /// Dirs per level: top dirs, dirs in each top dir, leaves in each of those.
    fanout: [usize; 3],
    /// Files in the root and in each non-leaf dir.
    inner_files: usize,
    /// Files in each leaf dir.
    leaf_files: usize,
}

impl Shape {
    const fn dirs(&self) -> usize {
        let [a, b, c] = self.fanout;
        a + a * b + a * b * c
    }

    const fn files(&self) -> usize {
        let [a, b, c] = self.fanout;
        (1 + a + a * b) * self.inner_files + a * b * c * self.leaf_files
    }
}

/// The glob tree: 8 × 12 × 15 = 1,544 dirs and 29,850 files.
const GLOB_TREE: Shape = Shape {
    fanout: [8, 12, 15],
    inner_files: 10,
    leaf_files: 20,
};

const EXTENSIONS: [&str; 10] = [
    "rs", "ts", "py", "md", "json", "txt", "toml", "go", "js", "c",
];

/// Counts of a generated tree.
#[derive(Debug, Default, PartialEq, Eq)]
struct TreeStats {
    dirs: usize,
    files: usize,
    rs_files: usize,
}

/// A small deterministic generator (xorshift64*), so every machine gets the same tree.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn write_files(dir: &Path, count: usize, rng: &mut Rng, stats: &mut TreeStats) -> Result<()> {
    for _ in 0..count {
        let n = stats.files;
        let index = usize::try_from(rng.next() % EXTENSIONS.len() as u64).unwrap_or(0);
        let ext = EXTENSIONS[index];
        let content = if ext == "rs" {
            stats.rs_files += 1;
            format!("//! generated file {n}\npub fn f{n}() {{}}\n")
        } else {
            format!("generated file {n}\n")
        };
        let path = dir.join(format!("file{n:05}.{ext}"));
        fs::write(&path, content).with_context(|| format!("cannot write {}", path.display()))?;
        stats.files += 1;
    }
    Ok(())
}

fn generate_tree(root: &Path, shape: &Shape) -> Result<TreeStats> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut stats = TreeStats::default();
    fs::create_dir_all(root).with_context(|| format!("cannot create {}", root.display()))?;
    write_files(root, shape.inner_files, &mut rng, &mut stats)?;
    for a in 0..shape.fanout[0] {
        let top = root.join(format!("pkg{a:02}"));
        fs::create_dir(&top).with_context(|| format!("cannot create {}", top.display()))?;
        stats.dirs += 1;
        write_files(&top, shape.inner_files, &mut rng, &mut stats)?;
        for b in 0..shape.fanout[1] {
            let mid = top.join(format!("mod{b:02}"));
            fs::create_dir(&mid).with_context(|| format!("cannot create {}", mid.display()))?;
            stats.dirs += 1;
            write_files(&mid, shape.inner_files, &mut rng, &mut stats)?;
            for c in 0..shape.fanout[2] {
                let leaf = mid.join(format!("leaf{c:02}"));
                fs::create_dir(&leaf)
                    .with_context(|| format!("cannot create {}", leaf.display()))?;
                stats.dirs += 1;
                write_files(&leaf, shape.leaf_files, &mut rng, &mut stats)?;
            }
        }
    }
    if stats.dirs != shape.dirs() || stats.files != shape.files() {
        bail!(
            "generated {} dirs and {} files, expected {} and {}",
            stats.dirs,
            stats.files,
            shape.dirs(),
            shape.files()
        );
    }
    Ok(stats)
}

/// The tree, generated once and cached under the scratch dir; a marker file written last
/// tells a complete tree from an interrupted one.
fn cached_tree(scratch: &Path) -> Result<PathBuf> {
    let tree = scratch.join("glob-tree-v1");
    let done = scratch.join("glob-tree-v1.done");
    if done.is_file() && tree.is_dir() {
        return Ok(tree);
    }
    if tree.exists() {
        fs::remove_dir_all(&tree).with_context(|| format!("cannot remove {}", tree.display()))?;
    }
    println!("bench: generating {} (once)", tree.display());
    let started = Instant::now();
    let stats = generate_tree(&tree, &GLOB_TREE)?;
    fs::write(
        &done,
        format!(
            "dirs={} files={} rs_files={}\n",
            stats.dirs, stats.files, stats.rs_files
        ),
    )
    .with_context(|| format!("cannot write {}", done.display()))?;
    println!(
        "bench: {} dirs, {} files ({} .rs) in {:.1} s",
        stats.dirs,
        stats.files,
        stats.rs_files,
        started.elapsed().as_secs_f64()
    );
    Ok(tree)
}

/// `agent-tools call Glob` against `find`, both listing every `.rs` file of the tree.
fn glob(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let tree = cached_tree(&ctx.scratch)?;
    let ours = Cmd::new(&ctx.bin)
        .args(["call", "Glob", r#"{"pattern":"**/*.rs"}"#, "--cwd"])
        .arg(&tree);
    let baseline = Cmd::new("find").arg(&tree).args(["-name", "*.rs"]);
    Ok(vec![ctx.compare(
        "**/*.rs, 30k files",
        &ours,
        &baseline,
        "find",
    )?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        let ms = Duration::from_millis;
        assert_eq!(median(vec![ms(3), ms(1), ms(2)]), ms(2));
        assert_eq!(
            median(vec![ms(4), ms(1), ms(3), ms(2)]),
            Duration::from_micros(2500)
        );
        assert_eq!(median(Vec::new()), Duration::ZERO);
    }

    #[test]
    fn compare_runs_both_commands_and_checks_their_status() {
        let ctx = Ctx {
            bin: PathBuf::from("true"),
            scratch: std::env::temp_dir(),
            runs: 3,
            soak: Soak::default(),
        };
        let c = ctx
            .compare("noop", &Cmd::new("true"), &Cmd::new("true"), "true")
            .unwrap();
        assert_eq!(c.case, "noop");
        let err = ctx
            .compare(
                "fails",
                &Cmd::new("sh").args(["-c", "echo boom >&2; exit 3"]),
                &Cmd::new("true"),
                "true",
            )
            .unwrap_err();
        assert!(format!("{err:#}").contains("boom"), "{err:#}");
    }

    #[test]
    fn table_shows_the_ratio() {
        let rows = [(
            "glob",
            Comparison {
                case: "case".to_owned(),
                ours: Duration::from_millis(10),
                baseline: Duration::from_millis(25),
                baseline_label: "find".to_owned(),
                baseline_command: "`find`".to_owned(),
            },
        )];
        let text = table(&rows);
        assert!(text.contains("2.50×"), "{text}");
        assert!(text.contains("25.0 ms (find)"), "{text}");
        assert!(text.lines().next().unwrap().starts_with("bench"), "{text}");
    }

    #[test]
    fn every_benchmark_name_is_unique_and_selectable() {
        let mut names: Vec<&str> = BENCHES.iter().map(|b| b.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), BENCHES.len());
        assert_eq!(select(&[]).unwrap().len(), BENCHES.len());
        assert!(select(&["glob".to_owned()]).is_ok());
        assert!(select(&["nope".to_owned()]).is_err());
    }

    #[test]
    fn glob_tree_is_about_30k_files_in_1500_dirs() {
        assert_eq!(GLOB_TREE.dirs(), 1_544);
        assert_eq!(GLOB_TREE.files(), 29_850);
    }

    #[test]
    fn generated_tree_has_the_promised_shape() {
        let shape = Shape {
            fanout: [2, 3, 4],
            inner_files: 5,
            leaf_files: 40,
        };
        let dir = std::env::temp_dir().join(format!("xtask-bench-tree-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let stats = generate_tree(&dir, &shape).unwrap();
        assert_eq!(stats.dirs, shape.dirs());
        assert_eq!(stats.files, shape.files());
        // Roughly a tenth of the files are .rs.
        assert!((20..200).contains(&stats.rs_files), "{stats:?}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
