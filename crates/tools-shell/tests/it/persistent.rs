//! The session's persistent bubblewrap sandbox: calls share one instance, a policy change or
//! a dead supervisor starts a new one, timeouts and abandoned calls still kill the whole
//! group, nothing a command starts outlives it (not even outside its group), and nothing
//! survives the session. Under every sandbox, a call run by the bash its supervisor started
//! ahead gives what a bash of its own gives: output, status, working directory, environment.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use test_support::procs::parent_of;
use tool_core::PermissionMode;
use tools_shell::testing::sandbox_instance;
use tools_shell::{Mechanism, SandboxSettings};

use crate::{Fixture, processes_with, require, survivors};

fn bubblewrap() -> Option<Fixture> {
    if !require("bubblewrap (bwrap)", tools_shell::bubblewrap().is_some()) {
        return None;
    }
    Some(Fixture::with(
        PermissionMode::BypassPermissions,
        &[],
        SandboxSettings {
            mechanism: Mechanism::Bubblewrap,
            ..SandboxSettings::default()
        },
    ))
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

async fn gone(pid: u32) -> bool {
    for _ in 0..250 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn sequential_calls_share_one_instance() {
    let Some(f) = bubblewrap() else { return };
    std::fs::create_dir_all(f.root.join("sub")).unwrap();
    assert_eq!(sandbox_instance(&f.ctx), None);
    let r = f.bash("echo first").await;
    assert_eq!(r.text(), "first");
    assert!(
        r.data["sandbox"]
            .as_str()
            .unwrap()
            .starts_with("bubblewrap")
    );
    let first = sandbox_instance(&f.ctx).unwrap();
    assert_eq!(first.generation, 1);
    for i in 0..30 {
        let r = f.bash(&format!("echo call {i}")).await;
        assert_eq!(r.text(), format!("call {i}"));
    }
    // The working directory still persists, and a failing command reports its status.
    let r = f.bash("cd sub").await;
    assert!(!r.is_error, "{}", r.text());
    let r = f.bash("pwd; exit 3").await;
    assert!(r.is_error);
    assert_eq!(r.data["exitCode"], 3);
    assert!(r.text().ends_with("/sub"), "{}", r.text());
    assert_eq!(sandbox_instance(&f.ctx), Some(first));
}

#[tokio::test]
async fn a_policy_change_restarts_the_instance() {
    let Some(f) = bubblewrap() else { return };
    let r = f.bash("true").await;
    assert!(!r.is_error, "{}", r.text());
    let first = sandbox_instance(&f.ctx).unwrap();
    // The network switch.
    f.ctx.services().insert(Arc::new(SandboxSettings {
        mechanism: Mechanism::Bubblewrap,
        network: true,
        ..SandboxSettings::default()
    }));
    let r = f.bash("true").await;
    assert!(r.data["sandbox"].as_str().unwrap().contains("network on"));
    let second = sandbox_instance(&f.ctx).unwrap();
    assert_eq!(second.generation, 2);
    assert_ne!(second.pid, first.pid);
    assert!(gone(first.pid).await, "the old instance ended");
    // A protected path that appears (git init) is bound read-only by a new instance.
    std::fs::create_dir_all(f.root.join(".git/hooks")).unwrap();
    let r = f.bash("p=.git/hooks/pre-commit; echo x > \"$p\"").await;
    assert!(r.is_error, "{}", r.text());
    assert_eq!(sandbox_instance(&f.ctx).unwrap().generation, 3);
    // A bound file replaced outside (git rewrites .git/config by renaming) is seen anew.
    std::fs::write(f.root.join(".git/config"), "old\n").unwrap();
    let r = f.bash("cat .git/config").await;
    assert_eq!(r.text(), "old");
    std::fs::write(f.root.join(".git/config.lock"), "new\n").unwrap();
    std::fs::rename(f.root.join(".git/config.lock"), f.root.join(".git/config")).unwrap();
    let r = f.bash("cat .git/config").await;
    assert_eq!(r.text(), "new");
}

#[tokio::test]
async fn a_killed_supervisor_is_replaced() {
    let Some(f) = bubblewrap() else { return };
    let r = f.bash("true").await;
    assert!(!r.is_error, "{}", r.text());
    let first = sandbox_instance(&f.ctx).unwrap();
    // Kill the supervisor inside the sandbox (its first argument names it; its parent is
    // the sandbox's init, whose parent is bubblewrap), not bubblewrap.
    let ours: Vec<u32> = processes_with(tools_shell::SUPERVISOR_ARG)
        .into_iter()
        .filter(|p| parent_of(*p).and_then(parent_of) == Some(first.pid))
        .collect();
    assert_eq!(ours.len(), 1, "{ours:?}");
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &ours[0].to_string()])
        .status();
    assert!(gone(first.pid).await, "bubblewrap ends with its supervisor");
    let r = f.bash("echo again").await;
    assert_eq!(r.text(), "again", "{}", r.text());
    let second = sandbox_instance(&f.ctx).unwrap();
    assert_eq!(second.generation, 2);
    // bubblewrap itself killed: likewise.
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &second.pid.to_string()])
        .status();
    assert!(gone(second.pid).await);
    let r = f.bash("echo third").await;
    assert_eq!(r.text(), "third", "{}", r.text());
    assert_eq!(sandbox_instance(&f.ctx).unwrap().generation, 3);
}

#[tokio::test]
async fn timeouts_and_abandoned_calls_kill_the_group() {
    let Some(f) = bubblewrap() else { return };
    let marker = "1000.0201";
    let r = f
        .call(
            "Bash",
            json!({"command": format!("sh -c 'sleep {marker} & sleep {marker}'"), "timeout": 500}),
        )
        .await;
    assert!(r.is_error);
    assert_eq!(r.data["timedOut"], true);
    assert_eq!(survivors(marker).await, Vec::<u32>::new());
    // The instance survives a timeout.
    let r = f.bash("echo still").await;
    assert_eq!(r.text(), "still");
    assert_eq!(sandbox_instance(&f.ctx).unwrap().generation, 1);
    // A call whose future is dropped mid-run.
    let marker = "1000.0202";
    let command = format!("sleep {marker}");
    let call = f.bash(&command);
    assert!(
        tokio::time::timeout(Duration::from_millis(500), call)
            .await
            .is_err()
    );
    assert_eq!(survivors(marker).await, Vec::<u32>::new());
    let r = f.bash("echo after").await;
    assert_eq!(r.text(), "after");
}

#[tokio::test]
async fn nothing_a_command_starts_outlives_it() {
    let Some(f) = bubblewrap() else { return };
    // setsid leaves the command's process group; a double fork leaves its parent.
    let marker = "1000.0203";
    let r = f
        .bash(&format!(
            "setsid sleep {marker} >/dev/null 2>&1 & (sleep {marker} >/dev/null 2>&1 &) ; echo started"
        ))
        .await;
    assert_eq!(r.text(), "started", "{}", r.text());
    assert_eq!(survivors(marker).await, Vec::<u32>::new());
    // Concurrent calls share the instance.
    let (a, b, c, d) = tokio::join!(
        f.bash("sleep 0.2; echo 0"),
        f.bash("echo 1"),
        f.bash("sleep 0.1; echo 2"),
        f.bash("echo 3")
    );
    for (i, r) in [a, b, c, d].iter().enumerate() {
        assert_eq!(r.text(), i.to_string());
    }
    assert_eq!(sandbox_instance(&f.ctx).unwrap().generation, 1);
}

#[tokio::test]
async fn nothing_survives_the_session() {
    let Some(f) = bubblewrap() else { return };
    let marker = "1000.0207";
    let r = f.bash("echo hi").await;
    assert_eq!(r.text(), "hi");
    let instance = sandbox_instance(&f.ctx).unwrap();
    // The supervisor inside: the child of the sandbox's init, whose parent is bubblewrap.
    let inside: Vec<u32> = processes_with(tools_shell::SUPERVISOR_ARG)
        .into_iter()
        .filter(|p| parent_of(*p).and_then(parent_of) == Some(instance.pid))
        .collect();
    assert_eq!(inside.len(), 1, "{inside:?}");
    // A command still running when the session ends.
    let command = format!("setsid sleep {marker} & sleep {marker}");
    let call = f.bash(&command);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), call)
            .await
            .is_err()
    );
    drop(f);
    assert!(gone(instance.pid).await, "bubblewrap ends with the session");
    assert!(
        gone(inside[0]).await,
        "the supervisor ends with the session"
    );
    assert_eq!(survivors(marker).await, Vec::<u32>::new());
}

/// A supervisor program on its own (outside bubblewrap: a subreaper that ends its
/// descendants), driven over its socket: requests and descriptors in, one `x ID STATUS`
/// line out per command.
struct Driven {
    child: std::process::Child,
    socket: Option<std::os::unix::net::UnixStream>,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Driven {
    fn start() -> Driven {
        use std::io::BufRead;
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut child =
            std::process::Command::new(env!("CARGO_BIN_EXE_agent-tools-sandbox-supervisor"))
                .arg(tools_shell::SUPERVISOR_ARG)
                .arg("/bin/bash")
                .arg("eval \"$1\"")
                .arg("300")
                .stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(
                    theirs,
                )))
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
        let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut d = Driven {
            child,
            socket: Some(ours),
            lines,
        };
        assert_eq!(d.next(), "ready");
        d
    }

    fn next(&mut self) -> String {
        self.lines.next().unwrap().unwrap()
    }

    fn send(&self, fields: &[&str], fds: &[std::os::fd::BorrowedFd<'_>]) {
        use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
        let mut req = Vec::new();
        for f in fields {
            req.extend_from_slice(f.as_bytes());
            req.push(0);
        }
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !fds.is_empty() {
            assert!(control.push(SendAncillaryMessage::ScmRights(fds)));
        }
        let n = sendmsg(
            self.socket.as_ref().unwrap(),
            &[std::io::IoSlice::new(&req)],
            &mut control,
            SendFlags::NOSIGNAL,
        )
        .unwrap();
        assert_eq!(n, req.len());
    }

    /// Runs a command; returns the read end of its output.
    fn run(&self, id: &str, dir: &str, vars: &[&str], command: &str) -> std::fs::File {
        use std::os::fd::AsFd;
        let (r, w) = rustix::pipe::pipe().unwrap();
        let null = std::fs::File::open("/dev/null").unwrap();
        let n = vars.len().to_string();
        let mut fields = vec![id, "run", dir, &n];
        fields.extend_from_slice(vars);
        fields.push(command);
        self.send(&fields, &[w.as_fd(), null.as_fd()]);
        std::fs::File::from(r)
    }
}

fn read_all(mut f: std::fs::File) -> String {
    let mut s = String::new();
    std::io::Read::read_to_string(&mut f, &mut s).unwrap();
    s
}

#[test]
fn the_supervisor_speaks_its_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().to_str().unwrap();
    let mut d = Driven::start();
    // A command: its output, variables and working directory.
    let out = d.run("1", work, &["GREETING=hi"], "echo $GREETING; pwd; exit 3");
    assert_eq!(d.next(), "x 1 3");
    assert_eq!(read_all(out), format!("hi\n{work}\n"));
    // A directory that cannot be entered: 126 and the reason.
    let out = d.run("2", "/nonexistent/dir", &[], "true");
    assert_eq!(d.next(), "x 2 126");
    let text = read_all(out);
    assert!(
        text.contains("/nonexistent/dir cannot be entered"),
        "{text}"
    );
    // What the command leaves in its group is ended (TERM first) before `x`, and so is
    // what left the group: the supervisor is their subreaper.
    let marker = "1000.0204";
    let out = d.run(
        "3",
        work,
        &[],
        &format!(
            "sleep {marker} & setsid sleep {marker} >/dev/null 2>&1 & (sleep {marker} >/dev/null 2>&1 &); echo left"
        ),
    );
    assert_eq!(d.next(), "x 3 0");
    assert!(
        processes_with(marker).is_empty(),
        "{:?}",
        processes_with(marker)
    );
    assert_eq!(read_all(out), "left\n");
    // A kill request for a running command (by its id); the status says which signal. A
    // kill for a command that is gone, or never was, does nothing.
    let _out = d.run("4", work, &[], "sleep 1000.0205");
    d.send(&["1", "kill", "KILL"], &[]);
    d.send(&["99", "kill", "KILL"], &[]);
    d.send(&["4", "kill", "TERM"], &[]);
    assert_eq!(d.next(), "x 4 143");
    // A run request without its descriptors cannot run.
    d.send(&["5", "run", work, "0", "true"], &[]);
    assert_eq!(d.next(), "x 5 127");
    // Garbage is skipped; end of input ends the supervisor, and every command with it.
    let marker = "1000.0206";
    let _out = d.run(
        "6",
        work,
        &[],
        &format!("setsid sleep {marker} & sleep {marker}"),
    );
    d.send(&["0", "dance", "now"], &[]);
    std::thread::sleep(Duration::from_millis(200));
    assert!(!processes_with(marker).is_empty());
    d.socket = None;
    assert!(d.child.wait().unwrap().success());
    assert!(
        processes_with(marker).is_empty(),
        "{:?}",
        processes_with(marker)
    );
}

/// Printed by a command that runs in a bash started ahead (the pattern does not match
/// itself).
const PREPARED: &str =
    r#"{ grep -q "__agent_tools_[s]=" /proc/$$/cmdline && echo PREPARED; } || :"#;

#[tokio::test]
async fn calls_run_by_a_bash_started_ahead_give_what_they_gave() {
    let mut sandboxes = vec![(
        "none",
        SandboxSettings {
            enabled: false,
            ..SandboxSettings::default()
        },
    )];
    for (name, mechanism, there) in [
        (
            "bubblewrap",
            Mechanism::Bubblewrap,
            tools_shell::bubblewrap().is_some(),
        ),
        (
            "landlock",
            Mechanism::Landlock,
            tools_shell::landlock_available(),
        ),
    ] {
        if require(name, there) {
            let settings = SandboxSettings {
                mechanism,
                ..SandboxSettings::default()
            };
            sandboxes.push((name, settings));
        }
    }
    let probe = format!(
        r#"echo "$LINENO|$_|$((SECONDS < 2))|$0|$#|$-|$PWD|${{OLDPWD-unset}}|${{FOO-unset}}"
printf %s "$BASH_EXECUTION_STRING" | cksum
ls /proc/$$/fd; readlink /proc/$$/fd/0; trap -p
[ "$(cut -d' ' -f5 /proc/$$/stat)" = $$ ] && echo leader
env | LC_ALL=C sort; ulimit -a; set | grep ^__agent_tools_start
export FOO=1
{PREPARED}
echo err >&2; exit 5"#
    );
    for (name, settings) in sandboxes {
        let f = Fixture::with(PermissionMode::BypassPermissions, &[], settings);
        // A call on the instance of the call before it (a Landlock instance of the
        // workspace sandbox is keyed on the time of `/tmp`, which other tests keep
        // changing, and a new instance starts its first bash itself) is run by the bash
        // started ahead: its result with the mark of one, or without when it had to be new.
        let bash = |command: String| {
            let f = &f;
            async move {
                let before = sandbox_instance(&f.ctx);
                let r = f.bash(&command).await;
                let kept = before.is_some() && sandbox_instance(&f.ctx) == before;
                (r, kept)
            }
        };
        let mark = |kept: bool, text: &str| {
            if kept {
                format!("{text}\nPREPARED")
            } else {
                text.to_owned()
            }
        };
        // Made first: a new entry changes what Landlock grants, which takes a new instance.
        std::fs::create_dir_all(f.root.join("sub")).unwrap();
        // The session's first call starts a bash of its own.
        let (fresh, _) = bash(probe.clone()).await;
        assert_eq!(fresh.data["exitCode"], 5, "{name}: {}", fresh.text());
        let fresh = fresh.text();
        assert!(!fresh.contains("\nPREPARED"), "{name}: {fresh}");
        for _ in 0..2 {
            let (r, kept) = bash(probe.clone()).await;
            assert_eq!(r.data["exitCode"], 5, "{name}");
            assert_eq!(r.text().replace("\nPREPARED", ""), fresh, "{name}");
            assert_eq!(r.text().contains("\nPREPARED\nerr"), kept, "{name}");
        }
        // `cd` persists: the next call starts in the new directory (a bash of its own,
        // since the one started ahead is in the old one), and the one after it too.
        let sub = f.root.join("sub").display().to_string();
        let root = f.root.display().to_string();
        let (r, kept) = bash(format!("cd sub; {PREPARED}")).await;
        let only = if kept { "PREPARED" } else { "(no output)" };
        assert_eq!(r.text(), only, "{name}");
        let (r, _) = bash(format!("pwd; {PREPARED}")).await;
        assert_eq!(r.text(), sub, "{name}");
        let (r, kept) = bash(format!("pwd; {PREPARED}")).await;
        assert_eq!(r.text(), mark(kept, &sub), "{name}");
        let (r, kept) = bash(format!("cd ..; {PREPARED}")).await;
        let only = if kept { "PREPARED" } else { "(no output)" };
        assert_eq!(r.text(), only, "{name}");
        let (r, _) = bash(format!("pwd; {PREPARED}")).await;
        assert_eq!(r.text(), root, "{name}");
        // A time limit ends the whole group of a command run by a bash started ahead.
        let marker = format!("1000.{}31", std::process::id());
        let before = sandbox_instance(&f.ctx);
        let r = f
            .call(
                "Bash",
                json!({
                    "command": format!("{PREPARED}; sleep {marker} & sleep {marker}"),
                    "timeout": 500
                }),
            )
            .await;
        assert!(r.is_error, "{name}");
        if sandbox_instance(&f.ctx) == before {
            assert!(r.text().contains("PREPARED"), "{name}: {}", r.text());
        }
        assert!(survivors(&marker).await.is_empty(), "{name}: left running");
    }
}
