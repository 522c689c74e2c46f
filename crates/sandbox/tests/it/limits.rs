//! Resource limits: a command that runs into the memory, process or CPU-time limit ends,
//! the result names the limit, and nothing it started is left in the process table —
//! in the jail and in the workspace sandbox, under each mechanism.

use std::time::Duration;

use sandbox::{LimitHit, Profile, ResourceLimits, SandboxSettings};

use crate::{Site, mechanisms, survivors};

const MEMORY: u64 = 64 << 20;
const PROCESSES: u64 = 48;
const CPU: u64 = 1;

/// `settings` with one class of limit set low (the others at their defaults, so that one
/// limit does not end a command meant for another: 48 forked interpreters need more than
/// 64 MiB).
fn limited(settings: &SandboxSettings, limits: ResourceLimits) -> SandboxSettings {
    SandboxSettings {
        limits,
        ..settings.clone()
    }
}

fn only(memory: Option<u64>, processes: Option<u64>, cpu: Option<u64>) -> ResourceLimits {
    let d = ResourceLimits::default();
    ResourceLimits {
        memory: memory.or(d.memory),
        processes: processes.or(d.processes),
        cpu: cpu.or(d.cpu),
    }
}

/// Commands that want far more than 64 MiB (`{M}` a marker in their command line).
const HOGS: &[&str] = &[
    "/usr/bin/python3 -c 'b = b\"a\" * (512 << 20)' {M}",
    "perl -e '$x = \"a\" x (512 << 20); sleep 0' {M}",
    "head -c 512M /dev/zero | tail -c 400M > /dev/null # {M}",
    "x=$(head -c 256M /dev/zero | tr \"\\0\" a); echo ${#x} # {M}",
    "awk 'BEGIN { s = \"a\"; while (length(s) < 400000000) s = s s; print length(s) }' # {M}",
    "/usr/bin/python3 -c 'l = [b\"a\" * (1 << 20) for _ in range(600)]' {M}",
];

/// Commands that start far more than 48 processes (`{M}` a marker).
const FORKERS: &[&str] = &[
    "for i in $(seq 500); do sleep 30.{M} & done; wait",
    "seq 500 | xargs -P 500 -I{} sleep 30.{M}",
    "/usr/bin/python3 -c 'import os, time\nfor i in range(500):\n    if os.fork() == 0:\n        time.sleep(30)\n        os._exit(0)\ntime.sleep(30)' 30.{M}",
    "perl -e 'for (1..500) { fork or do { sleep 30; exit } } sleep 30' 30.{M}",
    "f() { sleep 30.{M} & f; }; f",
];

/// Commands that burn CPU without end (`{M}` a marker).
const BURNERS: &[&str] = &[
    "while :; do :; done # {M}",
    "/usr/bin/python3 -c 'while True: pass' {M}",
    "perl -e '1 while 1' {M}",
    "sha256sum /dev/zero # {M}",
];

fn marked(command: &str, marker: &str) -> String {
    command.replace("{M}", marker)
}

/// The groups a `/proc/PID/cgroup` listing names: the last path component of its `memory`
/// and `pids` lines (v1), or of its one line (v2), sorted.
fn groups_of(listing: &str) -> Vec<String> {
    // Under v1 (a hybrid mount may list an unrelated `0::` line too), else the v2 line.
    let v1 = listing.contains(":memory:") || listing.contains(":pids:");
    let mut out: Vec<String> = listing
        .lines()
        .filter(|l| {
            if v1 {
                l.contains(":memory:") || l.contains(":pids:")
            } else {
                l.starts_with("0::")
            }
        })
        .filter_map(|l| l.rsplit('/').next().map(str::to_owned))
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn commands_run_in_their_instances_group_which_the_supervisor_joined_first() {
    let v1 = sandbox::limits_mechanism() == "cgroup v1";
    if sandbox::limits_mechanism() == "rlimits" {
        return;
    }
    for (label, base) in mechanisms() {
        let site = Site::new();
        let launch = site.prepare(
            Profile::Workspace,
            &limited(&base, only(Some(MEMORY), Some(PROCESSES), None)),
        );
        let ran = site.run(&launch, "cat /proc/self/cgroup").await;
        assert_eq!(ran.finished.code, 0, "{label}: {}", ran.text());
        let groups = groups_of(&ran.text());
        assert!(
            !groups.is_empty() && groups.iter().all(|g| g.starts_with("agent-tools-")),
            "{label}: a command outside its instance's group: {}",
            ran.text()
        );
        let instance = site.instances.instance().unwrap();
        let outer = std::fs::read_to_string(format!("/proc/{}/cgroup", instance.pid)).unwrap();
        let outer_in = groups_of(&outer) == groups;
        if label == "bubblewrap" && v1 {
            // Under v1 the supervisor moves itself (no grace period to wait for):
            // bubblewrap's own process, which runs no command, stays where it was.
            assert!(!outer_in, "{label}: bubblewrap was moved: {outer}");
        } else {
            // The supervisor itself (Landlock), or bubblewrap moved by the host (v2).
            assert!(outer_in, "{label}: {outer} against {}", ran.text());
        }
    }
}

#[tokio::test]
async fn limits_end_commands_and_name_themselves() {
    let cgroup = sandbox::limits_mechanism() != "rlimits";
    let mut variants = 0;
    let mut n = 0;
    for (label, base) in mechanisms() {
        for profile in [Profile::Jail, Profile::Workspace] {
            // A site per class: a sandbox instance's cgroup is shared by its commands.
            let site = Site::new();
            let launch = site.prepare(profile, &limited(&base, only(Some(MEMORY), None, None)));
            for hog in HOGS {
                n += 1;
                let marker = format!("agent-tools-hog-{}-{n}", std::process::id());
                let ran = site.run(&launch, &marked(hog, &marker)).await;
                variants += 1;
                assert_ne!(
                    ran.finished.code,
                    0,
                    "{label} {profile:?} `{hog}`: {}",
                    ran.text()
                );
                // With cgroups, the instance has one and the limit is named.
                if cgroup {
                    let instance = site.instances.instance().unwrap();
                    assert_eq!(
                        instance.memory_limited_by,
                        sandbox::limits_mechanism(),
                        "{label} {profile:?}: the instance has no cgroup"
                    );
                    assert_eq!(
                        ran.finished.limit,
                        Some(LimitHit::Memory(MEMORY)),
                        "{label} {profile:?} `{hog}`: {}",
                        ran.text()
                    );
                }
                assert!(
                    survivors(&marker).await.is_empty(),
                    "{label} {profile:?} `{hog}`"
                );
            }
            let site = Site::new();
            let launch = site.prepare(profile, &limited(&base, only(None, Some(PROCESSES), None)));
            if cgroup || !rustix::process::getuid().is_root() {
                for forker in FORKERS {
                    n += 1;
                    let marker = format!("{}{n}", std::process::id() % 1000);
                    let command = marked(forker, &marker);
                    let started = std::time::Instant::now();
                    let ran = site.run(&launch, &command).await;
                    variants += 1;
                    if cgroup {
                        assert_eq!(
                            ran.finished.limit,
                            Some(LimitHit::Processes(PROCESSES)),
                            "{label} {profile:?} `{command}`: {}",
                            ran.text()
                        );
                        assert!(
                            started.elapsed() < Duration::from_secs(25),
                            "{label}: not ended at the limit"
                        );
                    }
                    assert!(
                        survivors(&format!("30.{marker}")).await.is_empty(),
                        "{label} {profile:?} `{command}`"
                    );
                }
            }
            let site = Site::new();
            let launch = site.prepare(profile, &limited(&base, only(None, None, Some(CPU))));
            for burner in BURNERS {
                n += 1;
                let marker = format!("agent-tools-burn-{}-{n}", std::process::id());
                let ran = site.run(&launch, &marked(burner, &marker)).await;
                variants += 1;
                assert_eq!(
                    ran.finished.limit,
                    Some(LimitHit::Cpu(CPU)),
                    "{label} {profile:?} `{burner}`: {} {:?}",
                    ran.text(),
                    ran.finished
                );
                assert!(survivors(&marker).await.is_empty(), "{label} {profile:?}");
            }
            // Ordinary work is untouched by the limits.
            let ran = site.run(&launch, "seq 10 | sort -n | tail -1").await;
            assert_eq!(ran.text(), "10\n", "{label} {profile:?}");
            assert_eq!(ran.finished.limit, None);
        }
    }
    assert!(variants >= 50, "{variants}");
}

#[test]
fn limit_messages_name_the_setting() {
    for (hit, text) in [
        (
            LimitHit::Memory(64 << 20),
            "killed: memory limit 64 MiB (sandbox.limits.memory)",
        ),
        (
            LimitHit::Processes(48),
            "killed: process limit 48 (sandbox.limits.processes)",
        ),
        (
            LimitHit::Cpu(1),
            "killed: CPU time limit 1 s (sandbox.limits.cpu)",
        ),
    ] {
        assert_eq!(hit.to_string(), text);
    }
}
