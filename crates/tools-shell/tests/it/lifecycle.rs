//! The lifecycle guarantees, under every launch (bubblewrap, Landlock, none), as root and as
//! an unprivileged user, asserted on the file system and the process table:
//! - links planted where command output is kept are never followed (not by a command in
//!   the sandbox, not between calls, not in read-only mode);
//! - output on disk is capped, head and tail kept, with what was dropped said;
//! - nothing a command starts survives it (`setsid`, double forks, `nohup`, a timeout,
//!   TaskStop, the end of the session), also without a supervisor program;
//! - the persistent instances of a process are bounded and end when idle.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{PermissionMode, ToolCall};
use tools_shell::{Mechanism, OUTPUT_CAP, SandboxMode, SandboxSettings};

use crate::{
    Fixture, NO_SUPERVISOR_VAR, User, children_named, data_str, in_child, processes_with, survivors,
};

/// The launches to test: bubblewrap and Landlock where available, and none.
fn launches() -> Vec<(&'static str, SandboxSettings)> {
    let mut out = Vec::new();
    if tools_shell::bubblewrap().is_some() {
        out.push((
            "bubblewrap",
            SandboxSettings {
                mechanism: Mechanism::Bubblewrap,
                ..SandboxSettings::default()
            },
        ));
    }
    if tools_shell::landlock_available() {
        out.push((
            "landlock",
            SandboxSettings {
                mechanism: Mechanism::Landlock,
                ..SandboxSettings::default()
            },
        ));
    }
    out.push((
        "none",
        SandboxSettings {
            enabled: false,
            ..SandboxSettings::default()
        },
    ));
    out
}

fn fixture(settings: SandboxSettings) -> Fixture {
    Fixture::with(PermissionMode::BypassPermissions, &[], settings)
}

/// A repository with `.git/config` and `.git/hooks`, and a file no command writes.
fn repo(f: &Fixture) -> PathBuf {
    std::fs::create_dir_all(f.root.join(".git/hooks")).unwrap();
    std::fs::write(f.root.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(f.root.join("sub")).unwrap();
    let victim = f.root.join("victim.txt");
    std::fs::write(&victim, "victim\n").unwrap();
    victim
}

/// Asserts that no target of a planted link was written or created.
#[track_caller]
fn untouched(f: &Fixture, victim: &Path, label: &str) {
    assert_eq!(
        std::fs::read_to_string(f.root.join(".git/config")).unwrap(),
        "[core]\n",
        "{label}: .git/config"
    );
    assert!(
        std::fs::symlink_metadata(f.root.join(".git/hooks/pre-commit")).is_err(),
        "{label}: .git/hooks/pre-commit was created"
    );
    assert_eq!(
        std::fs::read_to_string(victim).unwrap(),
        "victim\n",
        "{label}: victim"
    );
}

/// Replaces every `.output` file in `dir` with a link, and plants links under every name
/// the next output files of the same series could take: to `.git/config`, to a hook that
/// does not exist yet, and to `victim`.
fn plant(dir: &Path, f: &Fixture, victim: &Path) -> usize {
    let targets = [
        f.root.join(".git/config"),
        f.root.join(".git/hooks/pre-commit"),
        victim.to_path_buf(),
    ];
    let mut names: Vec<String> = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".output") {
            names.push(name.clone());
            // `bash-PID-SERIAL-N` and `bN`: the series and its next members.
            let series = stem.rsplit_once('-').map(|(s, _)| format!("{s}-"));
            for n in 0..16 {
                for suffix in ["", "-1", "-2", "-3"] {
                    match &series {
                        Some(s) => names.push(format!("{s}{n}{suffix}.output")),
                        None => names.push(format!("b{n}{suffix}.output")),
                    }
                }
            }
        }
    }
    names.sort();
    names.dedup();
    for (i, name) in names.iter().enumerate() {
        let p = dir.join(name);
        let _ = std::fs::remove_file(&p);
        std::os::unix::fs::symlink(&targets[i % targets.len()], &p).unwrap();
    }
    names.len()
}

/// The one subdirectory of `<state>/tasks/`.
fn tasks_dir(f: &Fixture) -> PathBuf {
    std::fs::read_dir(f.state.join("tasks"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .next()
        .unwrap()
}

/// Calls that write, keep and reuse output files, in sequence and in parallel, a change of
/// directory, and background tasks; each result is checked.
async fn exercise(f: &Fixture, label: &str) {
    let r = f.bash("echo small").await;
    assert_eq!(r.text(), "small", "{label}");
    let r = f.bash("seq 1 20000").await;
    assert!(r.text().contains("lines truncated"), "{label}");
    let kept = data_str(&r, "persistedOutputPath").to_owned();
    let meta = std::fs::symlink_metadata(&kept).unwrap();
    assert!(meta.is_file(), "{label}: {kept} is a regular file");
    assert_eq!(
        std::fs::read_to_string(&kept).unwrap().lines().last(),
        Some("20000")
    );
    let calls: Vec<ToolCall> = (0..5)
        .map(|i| ToolCall::new("Bash", json!({"command": format!("echo par{i}; seq 1 3")})))
        .collect();
    for (i, r) in f.pool.batch(calls, &f.ctx).await.iter().enumerate() {
        assert_eq!(r.text(), format!("par{i}\n1\n2\n3"), "{label}");
    }
    let r = f.bash("cd sub && echo moved").await;
    assert_eq!(r.text(), "moved", "{label}");
    assert_eq!(f.ctx.cwd(), f.root.join("sub"), "{label}");
    let r = f.bash("cd .. && exit 4").await;
    assert_eq!(r.data["exitCode"], 4, "{label}");
    let r = f
        .call(
            "Bash",
            json!({"command": "echo bg; sleep 0.2", "run_in_background": true}),
        )
        .await;
    assert!(!r.is_error, "{label}: {}", r.text());
    let id = data_str(&r, "backgroundTaskId").to_owned();
    let out = f.call("TaskOutput", json!({"task_id": id})).await;
    assert!(
        out.text().contains("<output>\nbg\n</output>"),
        "{label}: {}",
        out.text()
    );
}

/// Links planted by the test between calls: every launch, workspace-write and read-only.
async fn links_planted_between_calls() {
    for (label, base) in launches() {
        for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
            let label = format!("{label} {mode:?}");
            let f = fixture(SandboxSettings {
                mode,
                ..base.clone()
            });
            let victim = repo(&f);
            let r = f.bash("echo first").await;
            assert_eq!(r.text(), "first", "{label}");
            let r = f
                .call(
                    "Bash",
                    json!({"command": "echo task", "run_in_background": true}),
                )
                .await;
            assert!(!r.is_error, "{label}: {}", r.text());
            let results = f.state.join("tool-results/test");
            assert!(plant(&results, &f, &victim) > 50, "{label}");
            assert!(plant(&tasks_dir(&f), &f, &victim) > 50, "{label}");
            exercise(&f, &label).await;
            untouched(&f, &victim, &label);
            drop(f);
        }
    }
}

/// Links planted by a sandboxed command (the state directory is in the temporary
/// directory, which commands may write), then parallel calls: the filed attack.
async fn links_planted_by_a_command() {
    for (label, base) in launches() {
        let f = fixture(base);
        let victim = repo(&f);
        let r = f.bash("echo first").await;
        assert_eq!(r.text(), "first", "{label}");
        // The targets sit in variables: the permission check refuses a write to a protected
        // path it can see, and this tests what holds when it cannot.
        let script = format!(
            r#"c='{config}'; h='{hook}'; cd '{dir}' && for f in *.output; do p=${{f%-*}}; done
for n in $(seq 0 20); do ln -sfn "$c" "$p-$n.output"; ln -sfn "$h" "$p-$n-1.output"; done
for f in *.output; do ln -sfn "$c" "$f"; done; ls | wc -l"#,
            dir = f.state.join("tool-results/test").display(),
            config = f.root.join(".git/config").display(),
            hook = f.root.join(".git/hooks/pre-commit").display(),
        );
        let r = f.bash(&script).await;
        assert!(!r.is_error, "{label}: {}", r.text());
        exercise(&f, label).await;
        untouched(&f, &victim, label);
    }
}

#[tokio::test]
async fn planted_links_are_never_followed() {
    links_planted_between_calls().await;
    links_planted_by_a_command().await;
}

#[tokio::test]
async fn planted_links_are_never_followed_unprivileged() {
    if in_child(
        "lifecycle::planted_links_are_never_followed_unprivileged",
        User::Nobody,
        &[],
    ) {
        links_planted_between_calls().await;
        links_planted_by_a_command().await;
    }
}

/// Bytes of the files under `dir`.
fn disk_usage(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.len();
            }
        }
    }
    total
}

async fn output_cap() {
    let cap = OUTPUT_CAP;
    for (label, settings) in launches() {
        let f = fixture(settings);
        // 100 MiB of 11-byte lines: 36 MiB are dropped from the middle.
        let total: u64 = 100 << 20;
        let r = f.bash("yes abcdefghij | head -c 100M").await;
        assert!(
            !r.is_error,
            "{label}: {}",
            &r.text()[r.text().len() - 400..]
        );
        let dropped = total - cap;
        assert_eq!(r.data["persistedOutputSize"], total, "{label}");
        assert_eq!(r.data["persistedOutputDropped"], dropped, "{label}");
        let text = r.text();
        assert!(text.starts_with("abcdefghij\nabcdefghij\n"), "{label}");
        assert!(
            text.contains(&format!("\"… [{dropped} bytes dropped] …\"")),
            "{label}: {}",
            &text[text.len() - 400..]
        );
        let path = data_str(&r, "persistedOutputPath");
        let saved = std::fs::read(path).unwrap();
        let marker = format!("\n… [{dropped} bytes dropped] …\n");
        assert_eq!(saved.len() as u64, cap + marker.len() as u64, "{label}");
        let head = (cap / 2) as usize;
        assert_eq!(
            &saved[head..head + marker.len()],
            marker.as_bytes(),
            "{label}"
        );
        // Head and tail are the stream's first and last bytes.
        let pattern = b"abcdefghij\n";
        let tail = cap - cap / 2;
        let start = head + marker.len();
        assert!(
            saved[..head]
                .iter()
                .enumerate()
                .all(|(i, b)| *b == pattern[i % 11]),
            "{label}"
        );
        assert!(
            saved[start..]
                .iter()
                .enumerate()
                .all(|(i, b)| *b == pattern[((total - tail) as usize + i) % 11]),
            "{label}"
        );
        drop(saved);

        // A flood that only the time limit ends.
        let r = f
            .call("Bash", json!({"command": "yes", "timeout": 1500}))
            .await;
        assert_eq!(r.data["timedOut"], true, "{label}");
        let path = data_str(&r, "persistedOutputPath");
        let size = std::fs::metadata(path).unwrap().len();
        assert!(size <= cap + 100, "{label}: {size}");

        // A background flood, and a background command that keeps writing after a kill.
        let r = f
            .call(
                "Bash",
                json!({"command": "timeout 1.5 yes", "run_in_background": true}),
            )
            .await;
        let id = data_str(&r, "backgroundTaskId").to_owned();
        let out = f
            .call("TaskOutput", json!({"task_id": id, "timeout": 20000}))
            .await;
        assert!(out.text().contains("<output>"), "{label}: {}", out.text());
        assert!(out.text().ends_with("y\ny\n</output>"), "{label}");
        let path = data_str(&r, "persistedOutputPath");
        let size = std::fs::metadata(path).unwrap().len();
        assert!(size <= cap + 100, "{label}: {size}");
        // Everything kept: three capped outputs and small files.
        let used = disk_usage(&f.state);
        assert!(used <= 3 * (cap + 100) + 64 * 1024, "{label}: {used}");
    }
}

#[tokio::test]
async fn output_on_disk_is_capped() {
    output_cap().await;
}

#[tokio::test]
async fn output_on_disk_is_capped_unprivileged() {
    if in_child(
        "lifecycle::output_on_disk_is_capped_unprivileged",
        User::Nobody,
        &[],
    ) {
        output_cap().await;
    }
}

/// Ways a command leaves its process group or its parent; `{m}` is the marker.
const ESCAPES: &[&str] = &[
    "setsid sleep {m} >/dev/null 2>&1 &",
    "(sleep {m} >/dev/null 2>&1 &)",
    "nohup sleep {m} >/dev/null 2>&1 &",
    "sleep {m} >/dev/null 2>&1 & disown",
    "setsid -f sleep {m} >/dev/null 2>&1",
    "sh -c 'setsid sleep {m} >/dev/null 2>&1 &'",
    "(cd / && exec setsid sh -c 'sleep {m}' </dev/null >/dev/null 2>&1 &)",
    "bash -c '(setsid sleep {m} </dev/null >/dev/null 2>&1 &) &'",
];

/// The `sleep MARKER` processes.
fn sleeping(m: &str) -> Vec<u32> {
    processes_with(m)
        .into_iter()
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c == format!("sleep\0{m}\0").as_bytes())
        })
        .collect()
}

/// A marker unique to a test, a launch and a variant: a `sleep` argument.
fn marker(test: u32, launch: usize, variant: usize) -> String {
    format!("{test}.{launch}{variant:02}7")
}

/// The survivor scenarios under `launches` (label, settings, extra Bash input).
async fn no_survivors(test: u32, launches: Vec<(String, SandboxSettings, Value)>) {
    for (l, (label, settings, extra)) in launches.into_iter().enumerate() {
        let f = fixture(settings);
        // Leaving the sandbox needs a person: this one says yes.
        crate::approve_unsandboxed(&f.ctx);
        let call = |command: String, more: Value| {
            let mut input = json!({ "command": command });
            for (k, v) in extra.as_object().into_iter().flatten() {
                input[k] = v.clone();
            }
            for (k, v) in more.as_object().into_iter().flatten() {
                input[k] = v.clone();
            }
            f.call("Bash", input)
        };
        // Returning.
        for (i, escape) in ESCAPES.iter().enumerate() {
            let m = marker(test, l, i);
            let r = call(
                format!("{}\necho started", escape.replace("{m}", &m)),
                json!({}),
            )
            .await;
            assert_eq!(r.text(), "started", "{label} {escape}");
            assert_eq!(survivors(&m).await, Vec::<u32>::new(), "{label}: {escape}");
        }
        // A time limit.
        let (a, b) = (marker(test, l, 20), marker(test, l, 21));
        let r = call(
            format!("setsid sh -c 'sleep {a}' & sleep {b}"),
            json!({"timeout": 1000}),
        )
        .await;
        assert_eq!(r.data["timedOut"], true, "{label}");
        assert_eq!(survivors(&a).await, Vec::<u32>::new(), "{label}");
        assert_eq!(survivors(&b).await, Vec::<u32>::new(), "{label}");
        // TaskStop of a background command.
        let m = marker(test, l, 22);
        let r = call(
            format!("setsid sleep {m} & (sleep {m} &) ; sleep {m}"),
            json!({"run_in_background": true}),
        )
        .await;
        let id = data_str(&r, "backgroundTaskId").to_owned();
        let mut running = Vec::new();
        for _ in 0..250 {
            running = sleeping(&m);
            if running.len() == 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            running.len(),
            3,
            "{label}: {}",
            running
                .iter()
                .map(|p| std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n")
        );
        let stop = f.call("TaskStop", json!({"task_id": id})).await;
        assert!(!stop.is_error, "{label}: {}", stop.text());
        assert_eq!(survivors(&m).await, Vec::<u32>::new(), "{label}");
        // The end of the session, with a background command and an abandoned call.
        let (bg, fg) = (marker(test, l, 23), marker(test, l, 24));
        let r = call(
            format!("setsid sleep {bg} & sleep {bg}"),
            json!({"run_in_background": true}),
        )
        .await;
        assert!(!r.is_error, "{label}: {}", r.text());
        let abandoned = call(format!("setsid sleep {fg} & sleep {fg}"), json!({}));
        assert!(
            tokio::time::timeout(Duration::from_millis(500), abandoned)
                .await
                .is_err()
        );
        drop(f);
        assert_eq!(survivors(&bg).await, Vec::<u32>::new(), "{label}");
        assert_eq!(survivors(&fg).await, Vec::<u32>::new(), "{label}");
    }
}

/// Every launch, and dangerouslyDisableSandbox under the default settings.
fn survivor_launches() -> Vec<(String, SandboxSettings, Value)> {
    let mut out: Vec<(String, SandboxSettings, Value)> = launches()
        .into_iter()
        .map(|(l, s)| (l.to_owned(), s, json!({})))
        .collect();
    out.push((
        "dangerouslyDisableSandbox".to_owned(),
        crate::default_sandbox(),
        json!({"dangerouslyDisableSandbox": true}),
    ));
    out
}

#[tokio::test]
async fn nothing_survives_sandboxed_or_not() {
    no_survivors(1201, survivor_launches()).await;
}

#[tokio::test]
async fn nothing_survives_sandboxed_or_not_unprivileged() {
    if in_child(
        "lifecycle::nothing_survives_sandboxed_or_not_unprivileged",
        User::Nobody,
        &[],
    ) {
        no_survivors(1202, survivor_launches()).await;
    }
}

/// A host that registers no supervisor program: commands are children of the host, found
/// afterwards by the mark in their environment (bubblewrap's pid namespace needs none).
async fn without_a_supervisor(test: u32) {
    no_survivors(test, survivor_launches()).await;
    // The rest works as with one: the working directory, the cap, the links.
    for (label, settings) in launches() {
        let f = fixture(settings);
        let victim = repo(&f);
        let r = f.bash("echo first").await;
        assert_eq!(r.text(), "first", "{label}");
        let r = f
            .call(
                "Bash",
                json!({"command": "echo task", "run_in_background": true}),
            )
            .await;
        assert!(!r.is_error, "{label}: {}", r.text());
        plant(&f.state.join("tool-results/test"), &f, &victim);
        plant(&tasks_dir(&f), &f, &victim);
        exercise(&f, label).await;
        untouched(&f, &victim, label);
        let r = f.bash("yes | head -c 70M").await;
        assert_eq!(r.data["persistedOutputDropped"], (70 << 20) - OUTPUT_CAP);
    }
}

#[tokio::test]
async fn without_a_supervisor_program() {
    if in_child(
        "lifecycle::without_a_supervisor_program",
        User::Same,
        &[(NO_SUPERVISOR_VAR, "1")],
    ) {
        without_a_supervisor(1203).await;
    }
}

#[tokio::test]
async fn without_a_supervisor_program_unprivileged() {
    if in_child(
        "lifecycle::without_a_supervisor_program_unprivileged",
        User::Nobody,
        &[(NO_SUPERVISOR_VAR, "1")],
    ) {
        without_a_supervisor(1204).await;
    }
}

/// Live bubblewrap and supervisor processes started by this process.
fn instances_in_table() -> usize {
    let me = std::process::id();
    children_named(me, "bwrap").len() + children_named(me, "agent-tools-san").len()
}

/// At most 3 instances, 1 s idle: sessions take each other's idle instances, a call finds
/// all of them busy, idle instances end.
async fn bounded_instances() {
    let limits = tools_shell::SandboxLimits {
        max_instances: 3,
        idle_timeout: Duration::from_secs(1),
    };
    tools_shell::set_sandbox_limits(limits);
    for (label, settings) in launches() {
        let sessions: Vec<Fixture> = (0..6).map(|_| fixture(settings.clone())).collect();
        for (i, f) in sessions.iter().enumerate() {
            let r = f.bash(&format!("echo {i}")).await;
            assert_eq!(r.text(), i.to_string(), "{label}");
            assert!(tools_shell::live_sandbox_instances() <= 3, "{label}");
            assert!(
                instances_in_table() <= 3,
                "{label}: {}",
                instances_in_table()
            );
        }
        // Three sessions keep every instance busy (until the test releases them); a fourth
        // is told so, and nothing runs.
        let gate = tempfile::tempdir().unwrap();
        let hold = |i: usize| {
            format!(
                "touch '{g}/started-{i}'; while [ ! -e '{g}/release' ]; do sleep 0.02; done; echo {i}",
                g = gate.path().display()
            )
        };
        let (h0, h1, h2) = (hold(0), hold(1), hold(2));
        let busy = tokio::join!(
            sessions[0].bash(&h0),
            sessions[1].bash(&h1),
            sessions[2].bash(&h2),
            async {
                for _ in 0..1000 {
                    if (0..3).all(|i| gate.path().join(format!("started-{i}")).exists()) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                let r = sessions[3].bash("touch refused.txt").await;
                assert!(instances_in_table() <= 3, "{label}");
                std::fs::write(gate.path().join("release"), "").unwrap();
                r
            },
        );
        assert_eq!(
            [busy.0.text(), busy.1.text(), busy.2.text()],
            ["0", "1", "2"],
            "{label}"
        );
        let refused = busy.3;
        assert!(
            refused.is_error,
            "{label}: {} | {:?}",
            refused.text(),
            [busy.0.text(), busy.1.text(), busy.2.text()]
        );
        assert!(
            refused
                .text()
                .contains("all 3 sandbox instances this process allows are running commands"),
            "{label}: {}",
            refused.text()
        );
        assert!(!sessions[3].root.join("refused.txt").exists(), "{label}");
        // Idle: every instance ends within a few seconds, sessions still open.
        let mut left = usize::MAX;
        for _ in 0..100 {
            left = tools_shell::live_sandbox_instances() + instances_in_table();
            if left == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(left, 0, "{label}: idle instances remain");
        // And a session whose instance ended gets a new one.
        let r = sessions[0].bash("echo again").await;
        assert_eq!(r.text(), "again", "{label}");
        drop(sessions);
    }
}

#[tokio::test]
async fn instances_are_bounded_and_end_when_idle() {
    if in_child(
        "lifecycle::instances_are_bounded_and_end_when_idle",
        User::Same,
        &[],
    ) {
        bounded_instances().await;
    }
}

#[tokio::test]
async fn instances_are_bounded_and_end_when_idle_unprivileged() {
    if in_child(
        "lifecycle::instances_are_bounded_and_end_when_idle_unprivileged",
        User::Nobody,
        &[],
    ) {
        bounded_instances().await;
    }
}
