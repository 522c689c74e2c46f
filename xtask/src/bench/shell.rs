//! The shell benchmarks.
//!
//! - `bash-200`: 200 sequential Bash calls of `:` through one `agent-tools batch`, against
//!   200 `bash -c :` from a shell loop; once per sandbox mechanism (bubblewrap, Landlock
//!   with seccomp, none). Target: at most 1.3 times the loop. Under a sandbox, a second
//!   row compares with the same loop run by one `agent-tools call Bash` in that sandbox,
//!   where each bash pays the sandbox's cost too.
//! - `bash-call`: one `agent-tools call Bash` of `:` (a process start, the session, the
//!   sandbox and the call) against one `bash -c :`, per sandbox mechanism, in the workspace
//!   sandbox; then a default-mode call of `true`, which runs in the read-only jail, per
//!   mechanism that makes one. Target: at most 10 ms.
//! - `jail-200`: 200 auto-approved read-only Bash calls (`cat a.txt`, default mode) through
//!   one `agent-tools batch`, which run in the read-only jail, against the same 200 calls
//!   approved by an allow rule, which run in the workspace sandbox; per mechanism. The
//!   target: the jail costs at most 1.5× the workspace sandbox per call.
//! - `bash-1g`: `agent-tools call Bash` of `yes | head -c 1G` (the model reads 30,000
//!   characters, the GiB streams through the output pipe and its first and last 32 MiB stay
//!   in the spill file) against `yes | head -c 1G > /dev/null`; it also checks the spill
//!   file and the dropped count and reports our peak resident memory. A second row compares
//!   with `yes | head -c 1G > file` on the spill file's filesystem (writing the GiB out was
//!   the floor before the cap).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{Comparison, Ctx};
use crate::cmd::{Cmd, shell_quote};

const CALLS: usize = 200;
const GIB: u64 = 1 << 30;

/// Writes a settings file selecting a sandbox, returns its path.
fn settings(ctx: &Ctx, name: &str, sandbox: &str) -> Result<PathBuf> {
    let path = ctx.scratch.join(format!("shell-{name}-settings.json"));
    fs::write(&path, format!(r#"{{"sandbox": {sandbox}}}"#))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

fn workdir(ctx: &Ctx) -> Result<(PathBuf, PathBuf)> {
    let work = ctx.scratch.join("shell-work");
    let home = ctx.scratch.join("shell-home");
    for d in [&work, &home] {
        fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    Ok((work, home))
}

fn quote(p: &Path) -> String {
    shell_quote(p.as_os_str())
}

/// 200 Bash calls of `true` in one batch, per sandbox mechanism. `true` is read-only, so the
/// batch runner may run up to 10 at once; `:` (the same builtin no-op, not on the read-only
/// list) and `:; exec true` are not, so those run strictly one after the other (`exec true`
/// alone is read as `true`, read-only). `:; exec true` also execs /usr/bin/true, which alone
/// doubles a `bash -c` call (a loop of `bash -c 'exec true'` takes about twice the
/// baseline): `:` is the like-for-like row.
pub fn bash_200(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let (work, home) = workdir(ctx)?;
    let baseline = Cmd::new("sh").arg("-c").arg(format!(
        "i=0; while [ $i -lt {CALLS} ]; do bash -c :; i=$((i+1)); done"
    ));
    let mut results = Vec::new();
    for (command, how) in [
        (":", "sequential"),
        (":; exec true", "sequential, execs /usr/bin/true"),
        ("true", "read-only, batched"),
    ] {
        let stem = command
            .replace(':', "colon")
            .replace(|c: char| !c.is_ascii_alphanumeric(), "-");
        let calls = ctx.scratch.join(format!("shell-200-{stem}.jsonl"));
        let line = format!(r#"{{"tool": "Bash", "input": {{"command": "{command}"}}}}"#);
        fs::write(&calls, format!("{}\n", vec![line; CALLS].join("\n")))
            .with_context(|| format!("writing {}", calls.display()))?;
        for (name, sandbox, usable) in sandboxes() {
            if !usable {
                println!("bash-200: skipping the {name} sandbox (not installed)");
                continue;
            }
            let settings = settings(ctx, name, sandbox)?;
            let ours = Cmd::new("sh")
                .arg("-c")
                .arg(format!(
                    "exec {} batch --cwd {} --mode bypassPermissions --settings {} < {}",
                    quote(&ctx.bin),
                    quote(&work),
                    quote(&settings),
                    quote(&calls)
                ))
                .env("AGENT_TOOLS_HOME", &home);
            // One check run: every call succeeded.
            let out = ours.stdout_string()?;
            let ok = out
                .lines()
                .filter(|l| l.contains(r#""is_error":false"#))
                .count();
            if ok != CALLS {
                bail!(
                    "bash-200 ({name}): {ok} of {CALLS} calls succeeded:\n{}",
                    out.lines()
                        .find(|l| l.contains(r#""is_error":true"#))
                        .unwrap_or("")
                );
            }
            let row = ctx.compare(
                &format!("{CALLS} × `{command}` ({how}), sandbox {name}"),
                &ours,
                &baseline,
                "bash -c : loop",
            )?;
            if command == ":" {
                let ratio = 1.0 / row.speedup();
                println!(
                    "bash-200: `:` under {name}: {ratio:.2}× the loop (target ≤ {BATCH_TARGET}×: {})",
                    if ratio <= BATCH_TARGET {
                        "met"
                    } else {
                        "missed"
                    }
                );
            }
            results.push(row);
            if command == ":" && name != "none" {
                // The same 200 bash starts in the same sandbox: one call runs the loop, so
                // both sides start the process, the session and the sandbox once, and every
                // bash pays the sandbox's own cost (Landlock's path checks, bubblewrap's
                // mounts), which the loop outside does not.
                let input = serde_json::json!({ "command": format!(
                    "i=0; while [ $i -lt {CALLS} ]; do bash -c :; i=$((i+1)); done"
                ) })
                .to_string();
                let inside = Cmd::new(&ctx.bin)
                    .args(["call", "Bash", &input, "--cwd"])
                    .arg(&work)
                    .args(["--mode", "bypassPermissions", "--settings"])
                    .arg(&settings)
                    .env("AGENT_TOOLS_HOME", &home);
                let row = ctx.compare(
                    &format!("{CALLS} × `:` (sequential), sandbox {name}, against the loop in it"),
                    &ours,
                    &inside,
                    "the bash -c : loop run by one call in the same sandbox",
                )?;
                println!(
                    "bash-200: `:` under {name}: {:.2}× the loop in the same sandbox",
                    1.0 / row.speedup()
                );
                results.push(row);
            }
        }
    }
    Ok(results)
}

/// The batch's target: at most this many times the `bash -c :` loop.
const BATCH_TARGET: f64 = 1.3;

/// The one-shot call's target.
const CALL_TARGET: std::time::Duration = std::time::Duration::from_millis(10);

/// The sandboxes the shell benchmarks run under: name, settings, whether usable here.
fn sandboxes() -> [(&'static str, &'static str, bool); 3] {
    [
        (
            "bubblewrap",
            r#"{"mechanism": "bubblewrap"}"#,
            Path::new("/usr/bin/bwrap").is_file(),
        ),
        ("landlock", r#"{"mechanism": "landlock"}"#, true),
        ("none", r#"{"enabled": false}"#, true),
    ]
}

/// One `agent-tools call Bash` of `:` against one `bash -c :`, per sandbox mechanism, in the
/// workspace sandbox (`--mode bypassPermissions`); then, per mechanism that can make one, a
/// default-mode call of `true` (read-only, so it runs in the read-only jail; `:` is not on
/// the read-only list and would ask). The check run before each row also leaves bubblewrap's
/// probe answer in the state directory, as any earlier call would: the rows measure calls
/// after the first.
pub fn bash_call(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let (work, home) = workdir(ctx)?;
    let baseline = Cmd::new("bash").args(["-c", ":"]);
    let mut results = Vec::new();
    let jail_rows = sandboxes()
        .into_iter()
        .filter(|(name, _, _)| *name != "none")
        .map(|(name, sandbox, usable)| (name, sandbox, usable, true));
    let rows = sandboxes()
        .into_iter()
        .map(|(name, sandbox, usable)| (name, sandbox, usable, false))
        .chain(jail_rows);
    for (name, sandbox, usable, jail) in rows {
        if !usable {
            println!("bash-call: skipping the {name} sandbox (not installed)");
            continue;
        }
        let settings = settings(ctx, name, sandbox)?;
        let (input, mode, wanted, what) = if jail {
            (
                r#"{"command": "true"}"#,
                "default",
                "read-only jail",
                format!("one `agent-tools call Bash` of `true`, default mode: the jail ({name})"),
            )
        } else {
            (
                r#"{"command": ":"}"#,
                "bypassPermissions",
                "",
                format!("one `agent-tools call Bash` of `:`, sandbox {name}"),
            )
        };
        let ours = Cmd::new(&ctx.bin)
            .args(["call", "Bash", input, "--cwd"])
            .arg(&work)
            .args(["--mode", mode, "--settings"])
            .arg(&settings)
            .env("AGENT_TOOLS_HOME", &home);
        let out = ours.stdout_string()?;
        if !out.contains(r#""is_error":false"#) || !out.contains(wanted) {
            bail!("bash-call ({name}, {mode}): the call failed: {out}");
        }
        let row = ctx.compare(&what, &ours, &baseline, "bash -c :")?;
        println!(
            "bash-call: {name}{}: {:.1} ms (target ≤ {} ms: {})",
            if jail { ", jail" } else { "" },
            row.ours.as_secs_f64() * 1000.0,
            CALL_TARGET.as_millis(),
            if row.ours <= CALL_TARGET {
                "met"
            } else {
                "missed"
            }
        );
        results.push(row);
    }
    Ok(results)
}

/// 200 auto-approved read-only calls in the jail against the same calls approved by a rule
/// (the workspace sandbox), per mechanism.
pub fn jail_200(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let (work, home) = workdir(ctx)?;
    fs::write(work.join("a.txt"), "alpha\nbeta\n").context("writing a.txt")?;
    let calls = ctx.scratch.join("shell-jail-200.jsonl");
    let line = r#"{"tool": "Bash", "input": {"command": "cat a.txt"}}"#;
    fs::write(&calls, format!("{}\n", vec![line; CALLS].join("\n")))
        .with_context(|| format!("writing {}", calls.display()))?;
    let mut results = Vec::new();
    for (name, sandbox, usable) in [
        (
            "bubblewrap",
            r#"{"mechanism": "bubblewrap"}"#,
            Path::new("/usr/bin/bwrap").is_file(),
        ),
        ("landlock", r#"{"mechanism": "landlock"}"#, true),
    ] {
        if !usable {
            println!("jail-200: skipping the {name} sandbox (not installed)");
            continue;
        }
        let settings = settings(ctx, &format!("jail-{name}"), sandbox)?;
        let batch = |allow: &str| {
            Cmd::new("sh")
                .arg("-c")
                .arg(format!(
                    "exec {} batch --cwd {} --mode default {allow} --settings {} < {}",
                    quote(&ctx.bin),
                    quote(&work),
                    quote(&settings),
                    quote(&calls)
                ))
                .env("AGENT_TOOLS_HOME", &home)
        };
        let jail = batch("");
        let workspace = batch("--allow 'Bash(cat a.txt)'");
        // One check run each: every call succeeded, in the sandbox it should.
        for (cmd, wanted) in [(&jail, "read-only jail"), (&workspace, "workspace-write")] {
            let out = cmd.stdout_string()?;
            let ok = out
                .lines()
                .filter(|l| l.contains(r#""is_error":false"#) && l.contains(wanted))
                .count();
            if ok != CALLS {
                bail!(
                    "jail-200 ({name}): {ok} of {CALLS} calls succeeded in the {wanted} sandbox:\n{}",
                    out.lines().next().unwrap_or("")
                );
            }
        }
        results.push(ctx.compare(
            &format!("{CALLS} × `cat a.txt` auto-approved, in the jail ({name})"),
            &jail,
            &workspace,
            "the same, allowed by a rule (workspace-write)",
        )?);
    }
    Ok(results)
}

/// `yes | head -c 1G` through Bash, with the spill file checked and peak memory reported.
pub fn bash_1g(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let (work, home) = workdir(ctx)?;
    let settings = settings(ctx, "default", "{}")?;
    let spill_root = home.join("tool-results");
    let input = r#"{"command": "yes | head -c 1G"}"#;
    // Each run leaves a 1 GiB spill file; ours removes it after the call (included in the
    // time) so the runs do not fill the disk.
    let call = format!(
        "{} call Bash {} --cwd {} --mode bypassPermissions --settings {}",
        quote(&ctx.bin),
        shell_quote(std::ffi::OsStr::new(input)),
        quote(&work),
        quote(&settings)
    );
    // The check run: the whole GiB is in the spill file, the result names it.
    let check = Cmd::new("sh")
        .arg("-c")
        .arg(&call)
        .env("AGENT_TOOLS_HOME", &home);
    let out = check.stdout_string()?;
    let key = r#""persistedOutputPath":""#;
    let path = out
        .find(key)
        .map(|i| &out[i + key.len()..])
        .and_then(|rest| rest.split('"').next())
        .context("bash-1g: the result names no spill file")?;
    let size = fs::metadata(path)
        .with_context(|| format!("bash-1g: spill file {path}"))?
        .len();
    let number = |key: &str| -> Option<u64> {
        let key = format!(r#""{key}":"#);
        let rest = &out[out.find(&key)? + key.len()..];
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    // The cap keeps the first and last 32 MiB, with the dropped count between them.
    let cap: u64 = 64 << 20;
    if number("persistedOutputSize") != Some(GIB)
        || number("persistedOutputDropped") != Some(GIB - cap)
        || !(cap..cap + 100).contains(&size)
    {
        bail!("bash-1g: the spill file holds {size} bytes; expected the 64 MiB cap of 1 GiB");
    }
    if !out.contains("lines truncated]") {
        bail!("bash-1g: the inline output has no truncation marker");
    }
    let peak = peak_rss_kb(&call, &home, &ctx.scratch);
    let _ = fs::remove_dir_all(&spill_root);
    let ours = Cmd::new("sh")
        .arg("-c")
        .arg(format!("{call} > /dev/null; rm -rf {}", quote(&spill_root)))
        .env("AGENT_TOOLS_HOME", &home);
    let baseline = Cmd::new("sh").args(["-c", "yes | head -c 1G > /dev/null"]);
    let memory = match peak {
        Some(kb) => format!("peak RSS {:.1} MB", kb as f64 / 1024.0),
        None => "peak RSS not measured".to_owned(),
    };
    println!("bash-1g: spill file {size} bytes, {memory}");
    // The floor: the same GiB written to a file on the spill file's filesystem (and removed,
    // as ours is), since writing it costs most of the time and /dev/null writes nothing.
    let floor_file = home.join("bash-1g-floor.out");
    let floor = Cmd::new("sh").arg("-c").arg(format!(
        "yes | head -c 1G > {f}; rm -f {f}",
        f = quote(&floor_file)
    ));
    Ok(vec![
        ctx.compare(
            &format!("yes | head -c 1G, 64 MiB of it spilled, {memory}"),
            &ours,
            &baseline,
            "> /dev/null",
        )?,
        ctx.compare(
            "yes | head -c 1G, 64 MiB of it spilled, vs the GiB to a file",
            &ours,
            &floor,
            "> file (same fs)",
        )?,
    ])
}

/// Peak resident memory of `agent-tools` in one run of the shell command `call`, in KB,
/// through `/usr/bin/time -f %M` wrapped around the binary itself.
fn peak_rss_kb(call: &str, home: &Path, scratch: &Path) -> Option<u64> {
    let time = Path::new("/usr/bin/time");
    if !time.is_file() {
        return None;
    }
    let out = scratch.join("shell-rss.txt");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{} -f %M -o {} {call}", quote(time), quote(&out)))
        .env("AGENT_TOOLS_HOME", home)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    fs::read_to_string(&out)
        .ok()?
        .trim()
        .lines()
        .last()?
        .trim()
        .parse()
        .ok()
}
