//! The file-tool benchmarks of issue 3, against the baselines it names:
//! - `grep-linux`: Grep over the Linux 6.1 source tree (Debian's `linux-source-6.1`,
//!   ripgrep's own benchmark corpus) in five modes against `rg` with the same flags;
//! - `glob-linux`: Glob `**/*.c` over that tree against `rg --files -g '*.c'`;
//! - `read-1g`: Read 2000 lines at line 5,000,000 of a generated 1 GB file against
//!   `sed -n 'A,Bp;Bq'`;
//! - `edit-100m`: Read then Edit one line of a 100 MB file against a `cp` of the file;
//! - `apply-patch-100m`: the same one-line change as a codex `apply_patch` (`agent-tools
//!   --profile codex call apply_patch`) against Read + Edit (`agent-tools batch`); the
//!   target is at most 1.2× the Edit.
//!
//! `rg` is the one `cargo xtask peers` installs (`<peers>/cargo/bin/rg`), else the one on
//! `PATH`; the Linux tree is the one it unpacks (`<peers>/linux/linux-source-6.1`). Grep
//! searches hidden files and never version-control folders, as the reference runs rg: the
//! baselines run `rg --hidden --glob '!.git'`.

use std::fs;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{Comparison, Ctx, median, time_once};
use crate::cmd::Cmd;

/// The ripgrep binary to compare with.
pub(super) fn rg() -> Result<PathBuf> {
    let peers = crate::peers::peers_dir()?.join("cargo/bin/rg");
    if peers.is_file() {
        return Ok(peers);
    }
    crate::peers::which("rg").context("ripgrep is needed as the baseline: run `cargo xtask peers`")
}

/// The Linux tree `cargo xtask peers` unpacks (Debian's `linux-source-6.1`).
pub(super) fn linux_tree() -> Result<PathBuf> {
    let tree = crate::peers::peers_dir()?.join(crate::peers::LINUX_TREE);
    if !tree.join("Makefile").is_file() {
        bail!(
            "the Linux source tree is not at {}: run `cargo xtask peers` (it installs Debian's \
             linux-source-6.1 with apt-get, as root, and unpacks it there)",
            tree.display()
        );
    }
    Ok(tree)
}

/// `agent-tools call TOOL INPUT` in `cwd`, with its state under the scratch dir and the
/// search index off (these benchmarks measure the scan; `index-linux` measures the index).
fn call(ctx: &Ctx, tool: &str, input: &str, cwd: &Path) -> Result<Cmd> {
    Ok(Cmd::new(&ctx.bin)
        .args(["call", tool, input, "--cwd"])
        .arg(cwd)
        .arg("--settings")
        .arg(scan_settings(ctx)?)
        .env("AGENT_TOOLS_HOME", ctx.scratch.join("agent-tools-home")))
}

/// A settings file that turns the search index off.
pub(super) fn scan_settings(ctx: &Ctx) -> Result<PathBuf> {
    let path = ctx.scratch.join("scan-settings.json");
    fs::create_dir_all(&ctx.scratch)?;
    fs::write(&path, "{\"search\": {\"index\": \"off\"}}\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// rg as the reference runs it: hidden files searched, version-control folders left out.
pub(super) fn rg_like_grep(rg: &Path) -> Cmd {
    Cmd::new(rg).args(["--hidden", "-g", "!.git"])
}

/// Grep over the Linux tree against rg with the equivalent flags: five modes, two
/// line-anchored patterns (the matcher is built in multi-line mode, as ripgrep builds it),
/// and the default page (250 results) against rg cut by `head -n 250`.
pub fn grep_linux(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let tree = linux_tree()?;
    let rg = rg()?;
    let cases: [(&str, &str, &[&str]); 7] = [
        (
            "files_with_matches PM_RESUME",
            r#"{"pattern":"PM_RESUME","head_limit":0}"#,
            &["-l", "PM_RESUME"],
        ),
        (
            "content -n PM_RESUME",
            r#"{"pattern":"PM_RESUME","output_mode":"content","head_limit":0}"#,
            &["-n", "PM_RESUME"],
        ),
        (
            "count PM_RESUME",
            r#"{"pattern":"PM_RESUME","output_mode":"count","head_limit":0}"#,
            &["-c", "PM_RESUME"],
        ),
        (
            "-i content pm_resume",
            r#"{"pattern":"pm_resume","-i":true,"output_mode":"content","head_limit":0}"#,
            &["-n", "-i", "pm_resume"],
        ),
        (
            "alternation content",
            r#"{"pattern":"ERR_SYS|PME_TURN_OFF|LINK_REQ_RST|CFG_BME_EVT","output_mode":"content","head_limit":0}"#,
            &["-n", "ERR_SYS|PME_TURN_OFF|LINK_REQ_RST|CFG_BME_EVT"],
        ),
        (
            "anchored content ^static int …_probe\\(",
            r#"{"pattern":"^static int [a-z0-9_]+_probe\\(","output_mode":"content","head_limit":0}"#,
            &["-n", "^static int [a-z0-9_]+_probe\\("],
        ),
        (
            "anchored files ^#include <linux/(slab|gfp)\\.h>$",
            r#"{"pattern":"^#include <linux/(slab|gfp)\\.h>$","head_limit":0}"#,
            &["-l", "^#include <linux/(slab|gfp)\\.h>$"],
        ),
    ];
    let mut out = Vec::new();
    for (case, input, args) in cases {
        let ours = call(ctx, "Grep", input, &tree)?;
        let baseline = rg_like_grep(&rg).args(args).cwd(&tree);
        out.push(ctx.compare(&format!("linux: {case}"), &ours, &baseline, "rg")?);
    }
    // The default page: Grep stops once 250 results (plus one) are found, newest first.
    for (case, input, flag) in [
        (
            "content static, default page (250 lines)",
            r#"{"pattern":"static","output_mode":"content"}"#,
            "-n",
        ),
        (
            "files static, default page (250 files)",
            r#"{"pattern":"static"}"#,
            "-l",
        ),
    ] {
        let ours = call(ctx, "Grep", input, &tree)?;
        let baseline = Cmd::new("sh")
            .arg("-c")
            .arg(format!(
                "'{}' --hidden -g '!.git' {flag} static | head -n 250",
                rg.display()
            ))
            .cwd(&tree);
        out.push(ctx.compare(
            &format!("linux: {case}"),
            &ours,
            &baseline,
            "rg | head -n 250",
        )?);
        let (ours_kb, rg_kb) = (max_rss_kb(&ours)?, max_rss_kb(&baseline)?);
        println!(
            "bench: linux: {case}: peak resident memory {} MB (rg | head: {} MB)",
            ours_kb / 1024,
            rg_kb / 1024
        );
    }
    Ok(out)
}

/// The peak resident memory of a command and its children, in KiB (`getrusage` through
/// python3, which the MCP benchmarks need anyway).
pub(super) fn max_rss_kb(cmd: &Cmd) -> Result<u64> {
    let command = cmd.to_command()?;
    let program = command.get_program().to_os_string();
    let args: Vec<std::ffi::OsString> = command.get_args().map(|a| a.to_os_string()).collect();
    let mut wrapper = std::process::Command::new("python3");
    wrapper
        .arg("-c")
        .arg("import resource,subprocess,sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        .arg(program)
        .args(args);
    if let Some(dir) = command.get_current_dir() {
        wrapper.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(v) => wrapper.env(key, v),
            None => wrapper.env_remove(key),
        };
    }
    let out = wrapper.output().context("python3 measures peak memory")?;
    if !out.status.success() {
        bail!(
            "measuring memory failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .context("python3 printed no number")
}

/// Glob `**/*.c` over the Linux tree against `rg --files -g '*.c'`.
pub fn glob_linux(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let tree = linux_tree()?;
    let ours = call(ctx, "Glob", r#"{"pattern":"**/*.c"}"#, &tree)?;
    let rg = rg()?;
    let baseline = rg_like_grep(&rg).args(["--files", "-g", "*.c"]).cwd(&tree);
    // Glob lists newest first, which needs every match's mtime: rg sorting by modification
    // time does the same work.
    let sorted = rg_like_grep(&rg)
        .args(["--files", "-g", "*.c", "--sort", "modified"])
        .cwd(&tree);
    Ok(vec![
        ctx.compare("linux: **/*.c", &ours, &baseline, "rg --files")?,
        ctx.compare(
            "linux: **/*.c, newest first",
            &ours,
            &sorted,
            "rg --files --sort modified",
        )?,
    ])
}

/// Lines of the generated 1 GB file.
const BIG_LINES: u64 = 5_300_000;
/// Where Read starts in it.
const READ_AT: u64 = 5_000_000;

/// A generated text file of about 1 GB (lines of 150 to 250 bytes), cached.
fn big_file(scratch: &Path) -> Result<PathBuf> {
    let path = scratch.join("read-1g.txt");
    let done = scratch.join("read-1g.done");
    if done.is_file() && path.is_file() {
        return Ok(path);
    }
    println!("bench: generating {} (once)", path.display());
    fs::create_dir_all(scratch)?;
    let file =
        fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let filler =
        "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor ".repeat(4);
    for n in 1..=BIG_LINES {
        let extra = usize::try_from(n % 100).unwrap_or(0);
        writeln!(w, "{n:08} {}", &filler[..140 + extra])?;
    }
    w.flush()?;
    fs::write(&done, "generated\n")?;
    Ok(path)
}

/// Read 2000 lines at line 5,000,000 of a 1 GB file against sed.
pub fn read_1g(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let path = big_file(&ctx.scratch)?;
    let dir = path.parent().context("the file has a directory")?;
    let input = format!(
        r#"{{"file_path":"{}","offset":{READ_AT},"limit":2000}}"#,
        path.display()
    );
    let ours = call(ctx, "Read", &input, dir)?;
    let last = READ_AT + 1999;
    let baseline = Cmd::new("sed")
        .arg("-n")
        .arg(format!("{READ_AT},{last}p;{last}q"))
        .arg(&path);
    Ok(vec![ctx.compare(
        "2000 lines at line 5,000,000 of 1 GB",
        &ours,
        &baseline,
        "sed -n",
    )?])
}

/// The 100 MB file of `edit-100m` and `apply-patch-100m` (made once under `dir`): one line
/// `    let marker = "EDIT ME";` at line 250,000.
fn pristine_100m(dir: &Path) -> Result<PathBuf> {
    fs::create_dir_all(dir)?;
    let pristine = dir.join("pristine.txt");
    if !pristine.is_file() {
        let file = fs::File::create(&pristine)?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let mut n = 0_u64;
        let mut written = 0_usize;
        while written < 100 * 1024 * 1024 {
            n += 1;
            let line = if n == 250_000 {
                "    let marker = \"EDIT ME\";\n".to_owned()
            } else {
                format!("    let value_{n} = compute({n}, \"some text to make it longer\");\n")
            };
            written += line.len();
            w.write_all(line.as_bytes())?;
        }
        w.flush()?;
    }
    Ok(pristine)
}

/// Read then Edit one line of a 100 MB file against `cp` of it; the file is restored before
/// every run (untimed).
pub fn edit_100m(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let dir = ctx.scratch.join("edit-100m");
    let pristine = pristine_100m(&dir)?;
    let work = dir.join("work.txt");
    let read_line = serde_line(
        "Read",
        &format!(r#"{{"file_path":"{}","limit":1}}"#, work.display()),
    );
    // `agent-tools batch` in the edit's directory, fed the calls in `calls`.
    let batch = |calls: &Path| {
        Cmd::new("sh")
            .arg("-c")
            .arg(format!(
                "exec '{}' batch --mode acceptEdits --cwd '{}' < '{}'",
                ctx.bin.display(),
                dir.display(),
                calls.display()
            ))
            .env("AGENT_TOOLS_HOME", ctx.scratch.join("agent-tools-home"))
    };
    let calls = dir.join("calls.jsonl");
    fs::write(
        &calls,
        format!(
            "{read_line}\n{}\n",
            serde_line(
                "Edit",
                &format!(
                    r#"{{"file_path":"{}","old_string":"let marker = \"EDIT ME\";","new_string":"let marker = \"EDITED\";"}}"#,
                    work.display()
                )
            )
        ),
    )?;
    let ours = batch(&calls);
    let copy = dir.join("copy.txt");
    let baseline = Cmd::new("cp").arg(&pristine).arg(&copy);
    // The floor of any atomic replacement, with the standard tools: copy to a temporary file,
    // fsync it (`sync FILE`), rename it over the target. Atomic writes need all three.
    let staged = dir.join(".copy.txt.tmp");
    let atomic = Cmd::new("sh").arg("-c").arg(format!(
        "cp '{p}' '{t}' && sync '{t}' && mv '{t}' '{c}'",
        p = pristine.display(),
        t = staged.display(),
        c = copy.display()
    ));
    // The Read alone, to show what the Edit itself costs.
    let read_calls = dir.join("read.jsonl");
    fs::write(&read_calls, format!("{read_line}\n"))?;
    let read_only = batch(&read_calls);
    let restore = || -> Result<()> {
        fs::copy(&pristine, &work).context("restoring the file to edit")?;
        Ok(())
    };
    let check = || -> Result<()> {
        let text = fs::read_to_string(&work)?;
        if !text.contains("let marker = \"EDITED\";") {
            bail!("the Edit did not change {}", work.display());
        }
        Ok(())
    };
    restore()?;
    time_once(&ours)?;
    check()?;
    time_once(&baseline)?;
    let mut ours_times = Vec::new();
    let mut base_times = Vec::new();
    let mut atomic_times = Vec::new();
    let mut read_times = Vec::new();
    for _ in 0..ctx.runs {
        restore()?;
        ours_times.push(time_once(&ours)?);
        check()?;
        base_times.push(time_once(&baseline)?);
        atomic_times.push(time_once(&atomic)?);
        read_times.push(time_once(&read_only)?);
    }
    let ours = median(ours_times);
    let read = median(read_times);
    let atomic = median(atomic_times);
    let cp = median(base_times);
    Ok(vec![
        Comparison {
            case: "Read + Edit one line of 100 MB (atomic, fsync)".to_owned(),
            ours,
            baseline: cp,
            baseline_label: "cp".to_owned(),
            baseline_command: "`cp` of the 100 MB file (no fsync)".to_owned(),
        },
        Comparison {
            case: "Read + Edit one line of 100 MB (atomic, fsync)".to_owned(),
            ours,
            baseline: atomic,
            baseline_label: "cp + sync FILE + mv".to_owned(),
            baseline_command: "`cp` to a temporary file, `sync FILE`, `mv` over the target"
                .to_owned(),
        },
        Comparison {
            case: "Edit alone (Read + Edit − Read)".to_owned(),
            ours: ours.saturating_sub(read),
            baseline: cp,
            baseline_label: "cp".to_owned(),
            baseline_command: "`cp` of the 100 MB file (no fsync)".to_owned(),
        },
    ])
}

/// One line of a 100 MB file changed by codex's `apply_patch` (the binary's codex profile,
/// one `call`: apply_patch needs no Read) against Read + Edit of the same line in one
/// `batch`; the file is restored before every run (untimed).
pub fn apply_patch_100m(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let dir = ctx.scratch.join("apply-patch-100m");
    let pristine = pristine_100m(&ctx.scratch.join("edit-100m"))?;
    fs::create_dir_all(&dir)?;
    let work = dir.join("work.txt");
    let home = ctx.scratch.join("agent-tools-home");
    // The JSON input, its patch's line breaks and quotes escaped.
    let patch = r#"{"input":"*** Begin Patch\n*** Update File: work.txt\n@@\n-    let marker = \"EDIT ME\";\n+    let marker = \"EDITED\";\n*** End Patch\n"}"#;
    let ours = Cmd::new(&ctx.bin)
        .args(["--profile", "codex", "call", "apply_patch", patch])
        .args(["--mode", "acceptEdits", "--cwd"])
        .arg(&dir)
        .env("AGENT_TOOLS_HOME", &home);
    let calls = dir.join("calls.jsonl");
    fs::write(
        &calls,
        format!(
            "{}\n{}\n",
            serde_line(
                "Read",
                &format!(r#"{{"file_path":"{}","limit":1}}"#, work.display())
            ),
            serde_line(
                "Edit",
                &format!(
                    r#"{{"file_path":"{}","old_string":"let marker = \"EDIT ME\";","new_string":"let marker = \"EDITED\";"}}"#,
                    work.display()
                )
            )
        ),
    )?;
    let edit = Cmd::new("sh")
        .arg("-c")
        .arg(format!(
            "exec '{}' batch --mode acceptEdits --cwd '{}' < '{}'",
            ctx.bin.display(),
            dir.display(),
            calls.display()
        ))
        .env("AGENT_TOOLS_HOME", &home);
    let restore = || -> Result<()> {
        fs::copy(&pristine, &work).context("restoring the file to patch")?;
        Ok(())
    };
    let check = |what: &str| -> Result<()> {
        let text = fs::read_to_string(&work)?;
        if !text.contains("let marker = \"EDITED\";") {
            bail!("{what} did not change {}", work.display());
        }
        Ok(())
    };
    restore()?;
    time_once(&ours)?;
    check("apply_patch (does the binary have `--profile codex`?)")?;
    let mut ours_times = Vec::new();
    let mut edit_times = Vec::new();
    for _ in 0..ctx.runs {
        restore()?;
        ours_times.push(time_once(&ours)?);
        check("apply_patch")?;
        restore()?;
        edit_times.push(time_once(&edit)?);
        check("Edit")?;
    }
    Ok(vec![Comparison {
        case: "one line of 100 MB: apply_patch vs Read + Edit (target ≤ 1.2×)".to_owned(),
        ours: median(ours_times),
        baseline: median(edit_times),
        baseline_label: "Read + Edit".to_owned(),
        baseline_command: "`agent-tools batch` of Read then Edit of the same line".to_owned(),
    }])
}

/// One line of `agent-tools batch` input.
fn serde_line(tool: &str, input: &str) -> String {
    format!(r#"{{"tool":"{tool}","input":{input}}}"#)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_lines_are_json() {
        let line = serde_line("Read", r#"{"file_path":"/x"}"#);
        assert_eq!(line, r#"{"tool":"Read","input":{"file_path":"/x"}}"#);
    }
}
