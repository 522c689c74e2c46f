//! The host never runs what a command could have planted: git's hooks and every
//! configuration key that makes git run a program are planted — in the project's own
//! repository, and in a repository nested in the project that the shell `cd`s into — and
//! a batch in default mode with no rules calls EnterWorktree and ExitWorktree. The variants
//! come from git itself: its hooks from githooks(5) and the samples `git init` installs, its
//! program-valued keys from `git help --config`. Each planted program would leave a marker
//! file and a process named by a token; the checks are on those, never on messages. A
//! control run of plain git on the same plant shows the plant is live.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::{Project, text};

/// A planted program: writes a marker named after itself and its first argument, and
/// leaves a process behind (its command line holds `token`).
fn planted_script(markers: &Path, token: &str) -> String {
    format!(
        "#!/bin/sh\nm='{m}'\nmkdir -p \"$m\"\nname=\"$(basename \"$0\")-$(printf %s \"$1\" | tr -c 'A-Za-z0-9_.-' _ | cut -c1-40)\"\ntouch \"$m/$name\"\nsetsid sh -c 'sleep 300' {token} </dev/null >/dev/null 2>&1 &\ncat >/dev/null 2>&1\nexit 0\n",
        m = markers.display()
    )
}

/// Git's hook names: githooks(5) when its manual page is installed, and the samples
/// `git init` writes.
fn hook_names() -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    if let Ok(out) = Command::new("sh")
        .args([
            "-c",
            "zcat /usr/share/man/man5/githooks.5.gz 2>/dev/null | sed -n 's/^\\.SS \"\\(.*\\)\"$/\\1/p' | sed 's/\\\\-/-/g'",
        ])
        .output()
    {
        names.extend(String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned));
    }
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "."]);
    for entry in std::fs::read_dir(dir.path().join(".git/hooks")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(hook) = name.strip_suffix(".sample") {
            names.push(hook.to_owned());
        }
    }
    names.sort();
    names.dedup();
    names.retain(|n| !n.is_empty() && !n.contains(' '));
    assert!(names.len() >= 13, "too few hooks found: {names:?}");
    for expected in ["post-checkout", "pre-commit", "fsmonitor-watchman"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    names
}

/// The configuration keys of `git help --config` whose value is a program to run (or a
/// place programs are found: `core.hooksPath`, `include.path`), with placeholders filled.
fn program_keys() -> Vec<String> {
    let out = Command::new("git")
        .args(["help", "--config"])
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    let program = |key: &str| {
        let last = key
            .rsplit('.')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let section = key.split('.').next().unwrap_or_default();
        !matches!(section, "advice" | "color" | "column" | "gitcvs")
            && !last.contains("cachetextconv")
            && ([
                "cmd",
                "command",
                "program",
                "helper",
                "textconv",
                "clean",
                "smudge",
                "driver",
                "editor",
                "pager",
                "fsmonitor",
                "hookspath",
                "askpass",
                "gitproxy",
                "hook",
                "uploadpack",
                "receivepack",
            ]
            .iter()
            .any(|suffix| last.ends_with(suffix))
                || key == "include.path"
                || key.starts_with("includeIf."))
    };
    let mut keys: Vec<String> = listing
        .lines()
        .map(str::trim)
        .filter(|k| k.contains('.') && program(k))
        .map(|k| {
            k.replace("<driver>", "evil")
                .replace("<tool>", "evil")
                .replace("<name>", "evil")
                .replace("<format>", "ssh")
                .replace("<condition>", "gitdir:/")
        })
        .collect();
    // Keys git reads that its listing leaves out or spells as a pattern.
    for extra in [
        "filter.evil.process",
        "remote.origin.url",
        "hook.evil.command",
        "core.hooksPath",
        "diff.external",
    ] {
        keys.push(extra.to_owned());
    }
    keys.sort();
    keys.dedup();
    for expected in [
        "core.fsmonitor",
        "core.pager",
        "core.sshCommand",
        "diff.external",
        "diff.evil.textconv",
        "filter.evil.smudge",
        "filter.evil.clean",
        "include.path",
        "core.editor",
        "sequence.editor",
        "credential.helper",
        "gpg.program",
        "uploadpack.packObjectsHook",
    ] {
        assert!(keys.iter().any(|k| k == expected), "{expected} in {keys:?}");
    }
    keys
}

/// Plain git, as a person runs it in the tests (no hardening).
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?} in {}: {out:?}",
        dir.display()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository at `dir` with one commit, files every driver applies to, and the plant.
struct Plant {
    markers: PathBuf,
    token: String,
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

impl Plant {
    fn new(home: &Path) -> Self {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        Plant {
            markers: home.join(format!("markers-{n}")),
            token: format!("agent-tools-planted-git-{}-{n}", std::process::id()),
        }
    }

    /// Makes `dir` a repository with one commit, then plants `what` in it: `Hooks` (every
    /// hook of git's list) or one configuration key.
    fn plant(&self, dir: &Path, what: &Variant) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        git(dir, &["init", "-q", "."]);
        std::fs::write(dir.join("a.txt"), "hello\n").unwrap();
        std::fs::write(
            dir.join(".gitattributes"),
            "* filter=evil diff=evil merge=evil\n",
        )
        .unwrap();
        git(dir, &["add", "."]);
        git(dir, &["commit", "-qm", "first"]);
        let script = dir.join("planted.sh");
        std::fs::write(&script, planted_script(&self.markers, &self.token)).unwrap();
        chmod_x(&script);
        let run = format!("{} ", script.display());
        match what {
            Variant::Hooks(hooks) => {
                for hook in hooks {
                    let path = dir.join(".git/hooks").join(hook);
                    std::fs::write(&path, planted_script(&self.markers, &self.token)).unwrap();
                    chmod_x(&path);
                }
            }
            Variant::Key(key) => {
                let value = match key.as_str() {
                    "core.hooksPath" => {
                        let hooks = dir.join("planted-hooks");
                        std::fs::create_dir_all(&hooks).unwrap();
                        for hook in [
                            "post-checkout",
                            "reference-transaction",
                            "post-index-change",
                        ] {
                            let path = hooks.join(hook);
                            std::fs::write(&path, planted_script(&self.markers, &self.token))
                                .unwrap();
                            chmod_x(&path);
                        }
                        hooks.display().to_string()
                    }
                    k if k == "include.path" || k.starts_with("includeIf.") => {
                        let included = dir.join("planted.config");
                        std::fs::write(
                            &included,
                            format!(
                                "[core]\n\tfsmonitor = {run}fsmonitor\n[filter \"evil\"]\n\tsmudge = {run}smudge\n\tclean = {run}clean\n\trequired = true\n[hook \"evil\"]\n\tcommand = {run}hook\n\tevent = post-checkout\n"
                            ),
                        )
                        .unwrap();
                        included.display().to_string()
                    }
                    "remote.origin.url" => format!("ext::{run}remote"),
                    _ => format!("{run}{}", key.replace('.', "_")),
                };
                git(dir, &["config", key, &value]);
                if key == "remote.origin.url" {
                    git(dir, &["config", "protocol.ext.allow", "always"]);
                }
                if key.starts_with("hook.") {
                    git(dir, &["config", "hook.evil.event", "post-checkout"]);
                }
                if key.starts_with("filter.") {
                    git(dir, &["config", "filter.evil.required", "true"]);
                }
            }
        }
        script
    }

    /// Every marker written and every process left, as a message (empty when none).
    fn leftovers(&self) -> String {
        let mut found: Vec<String> = std::fs::read_dir(&self.markers)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        let procs = processes_with(&self.token);
        if !procs.is_empty() {
            found.push(format!("processes {procs:?}"));
        }
        for pid in procs {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        found.join(", ")
    }
}

fn chmod_x(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The pids of processes whose command line holds `token`.
fn processes_with(token: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(token))
        })
        .collect()
}

#[derive(Debug, Clone)]
enum Variant {
    Hooks(Vec<String>),
    Key(String),
}

/// Every variant: all hooks at once, then each key on its own.
fn variants() -> Vec<Variant> {
    let mut out = vec![Variant::Hooks(hook_names())];
    out.extend(program_keys().into_iter().map(Variant::Key));
    out
}

/// The result lines of a batch in default mode with no rules.
fn batch(p: &Project, calls: &[Value]) -> Vec<Value> {
    let stdin: String = calls.iter().map(|c| format!("{c}\n")).collect();
    let run = p.run(&["batch"], Some(&stdin));
    let lines = run.lines();
    assert_eq!(lines.len(), calls.len(), "{run:#?}");
    lines
}

/// The plant in the project's own repository: EnterWorktree and ExitWorktree work (the
/// hardened git checks the worktree out with every planted driver emptied) and nothing
/// planted runs.
fn in_the_project(variant: &Variant) -> usize {
    let p = Project::new(&[]);
    let plant = Plant::new(p.home());
    plant.plant(p.root(), variant);
    let lines = batch(
        &p,
        &[
            json!({"tool": "EnterWorktree", "input": {"name": "w"}}),
            json!({"tool": "Bash", "input": {"command": "pwd"}}),
            json!({"tool": "ExitWorktree", "input": {"action": "remove"}}),
        ],
    );
    assert_eq!(lines[0]["is_error"], false, "{variant:?}: {}", lines[0]);
    assert_eq!(lines[2]["is_error"], false, "{variant:?}: {}", lines[2]);
    assert!(!p.root().join(".agent-tools/worktrees/w").exists());
    let left = plant.leftovers();
    assert!(left.is_empty(), "{variant:?} ran: {left}");
    1
}

/// The plant in a repository nested in the project, which the shell `cd`s into:
/// EnterWorktree refuses (it works only for the project's own repository) and nothing
/// planted runs. The nested `.git` is a directory, or a `.git` file pointing elsewhere.
fn nested(variant: &Variant, git_file: bool) -> usize {
    let p = Project::new(&["README.md = project\\n"]);
    git(p.root(), &["init", "-q", "."]);
    git(p.root(), &["add", "README.md"]);
    git(p.root(), &["commit", "-qm", "project"]);
    let plant = Plant::new(p.home());
    let sub = p.root().join("vendor/sub");
    plant.plant(&sub, variant);
    if git_file {
        let moved = p.root().join("vendor/.hidden-git");
        std::fs::rename(sub.join(".git"), &moved).unwrap();
        std::fs::write(sub.join(".git"), format!("gitdir: {}\n", moved.display())).unwrap();
    }
    let lines = batch(
        &p,
        &[
            json!({"tool": "Bash", "input": {"command": "cd vendor/sub"}}),
            json!({"tool": "EnterWorktree", "input": {"name": "w"}}),
            json!({"tool": "ExitWorktree", "input": {"action": "remove"}}),
            json!({"tool": "Bash", "input": {"command": "pwd"}}),
        ],
    );
    assert_eq!(lines[0]["is_error"], false, "{}", lines[0]);
    assert_eq!(
        text(&lines[3]).trim(),
        sub.display().to_string(),
        "{}",
        lines[3]
    );
    assert_eq!(lines[1]["is_error"], true, "{variant:?}: {}", lines[1]);
    assert!(
        text(&lines[1]).contains("works only in the project's own repository"),
        "{}",
        lines[1]
    );
    assert!(!sub.join(".agent-tools").exists() && !p.root().join(".agent-tools").exists());
    let left = plant.leftovers();
    assert!(
        left.is_empty(),
        "{variant:?} (git file: {git_file}) ran: {left}"
    );
    1
}

/// Plain git on the plant runs it: the variants are live, and only the hardening keeps the
/// runs above clean.
#[test]
fn the_plant_runs_under_plain_git() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().canonicalize().unwrap();
    for (variant, expected) in [
        (Variant::Hooks(hook_names()), "post-checkout"),
        (Variant::Key("core.fsmonitor".into()), "core_fsmonitor"),
        (
            Variant::Key("filter.evil.smudge".into()),
            "filter_evil_smudge",
        ),
        (Variant::Key("include.path".into()), "smudge"),
        (Variant::Key("core.hooksPath".into()), "post-checkout"),
    ] {
        let plant = Plant::new(&home);
        let repo = home.join(format!("repo-{}", COUNTER.fetch_add(1, Ordering::SeqCst)));
        plant.plant(&repo, &variant);
        let wt = home.join(format!("wt-{}", COUNTER.fetch_add(1, Ordering::SeqCst)));
        let _ = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["worktree", "add", "-b", "plain"])
            .arg(&wt)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &home)
            .output();
        let _ = Command::new("git")
            .arg("-C")
            .arg(&wt)
            .args(["status", "--porcelain"])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &home)
            .output();
        let left = plant.leftovers();
        assert!(
            left.contains(expected),
            "{variant:?}: plain git left {left:?}"
        );
    }
}

/// Every variant, in the project's repository and nested (with a `.git` directory and a
/// `.git` file); the counts are printed for the report.
#[test]
fn planted_hooks_and_program_keys_never_run_on_the_host() {
    let all = variants();
    let hooks = match &all[0] {
        Variant::Hooks(h) => h.len(),
        Variant::Key(_) => 0,
    };
    let keys = all.len() - 1;
    let chunks: Vec<Vec<Variant>> = all
        .chunks(all.len().div_ceil(3))
        .map(<[_]>::to_vec)
        .collect();
    let counts: Vec<(usize, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                s.spawn(move || {
                    let mut project = 0;
                    let mut nested_count = 0;
                    for v in chunk {
                        project += in_the_project(v);
                        nested_count += nested(v, false) + nested(v, true);
                    }
                    (project, nested_count)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let project: usize = counts.iter().map(|c| c.0).sum();
    let nested_runs: usize = counts.iter().map(|c| c.1).sum();
    eprintln!(
        "planted git: {hooks} hooks (planted together) and {keys} program keys; {project} runs in the project's repository, {nested_runs} in nested repositories; {} variants",
        (hooks + keys) * 3
    );
    assert!((hooks + keys) * 3 >= 50);
}
