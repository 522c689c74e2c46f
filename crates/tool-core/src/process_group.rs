//! One guard for every external program the tools start: the program leads a process group
//! of its own, and the whole group — whatever it started that stayed in the group — is
//! killed when the guard says so or goes.
//!
//! Signals go straight to the group with `killpg` (through rustix): no program is run to
//! deliver them, and nothing here blocks a thread. [`ProcessGroup::terminate`] waits for the
//! group on the runtime's timer; dropping the guard sends SIGKILL and returns at once (the
//! leader is reaped by its owner: tokio's `kill_on_drop`, or the code holding the child).

use std::io;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};

/// How often [`ProcessGroup::terminate`] looks whether the group is gone.
const POLL: Duration = Duration::from_millis(20);
/// After SIGKILL, how often and how many times [`ProcessGroup::terminate`] looks again
/// (sending SIGKILL again to members that appeared meanwhile).
const AFTER_KILL_POLL: Duration = Duration::from_millis(10);
const AFTER_KILL_ROUNDS: usize = 50;

/// A process group this process started; dropping the guard kills the whole group.
///
/// Get one with [`ProcessGroup::spawn`] (or [`ProcessGroup::spawn_std`]), which start the
/// command as the leader of a new group, or with [`ProcessGroup::adopt`] for a child that
/// something else started that way. [`ProcessGroup::release`] lets the group be (its leader
/// exited by itself and what it left may stay).
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Option<Pid>,
}

impl ProcessGroup {
    /// Starts `command` as the leader of a new process group (and with `kill_on_drop`, so
    /// tokio kills and reaps the leader when the child is dropped): the child and the guard
    /// of its group.
    pub fn spawn(
        command: &mut tokio::process::Command,
    ) -> io::Result<(tokio::process::Child, ProcessGroup)> {
        command.process_group(0).kill_on_drop(true);
        let child = command.spawn()?;
        let group = child
            .id()
            .and_then(ProcessGroup::adopt)
            .ok_or_else(|| io::Error::other("the started program has no process id"))?;
        Ok((child, group))
    }

    /// [`ProcessGroup::spawn`] for a blocking [`std::process::Command`]; the caller reaps
    /// the child.
    pub fn spawn_std(
        command: &mut std::process::Command,
    ) -> io::Result<(std::process::Child, ProcessGroup)> {
        std::os::unix::process::CommandExt::process_group(command, 0);
        let mut child = command.spawn()?;
        match ProcessGroup::adopt(child.id()) {
            Some(group) => Ok((child, group)),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(io::Error::other("the started program has no process id"))
            }
        }
    }

    /// The group led by `leader`, a child this process started as the leader of a group of
    /// its own (`process_group(0)`, or a wrapper doing the same). `None` for pid 0 or one
    /// out of range, which name no group.
    pub fn adopt(leader: u32) -> Option<ProcessGroup> {
        let pgid = i32::try_from(leader).ok().and_then(Pid::from_raw)?;
        Some(ProcessGroup { pgid: Some(pgid) })
    }

    /// The group's id (its leader's process id); `None` once released.
    pub fn id(&self) -> Option<u32> {
        self.pgid.map(|p| p.as_raw_nonzero().get().unsigned_abs())
    }

    /// Whether the group has a member that is not a zombie (a member that exited stays in
    /// the group until its parent collects it). Where `/proc` cannot be read, whether the
    /// group has any member at all.
    pub fn is_alive(&self) -> bool {
        self.pgid
            .is_some_and(|p| test_kill_process_group(p).is_ok() && has_live_member(p))
    }

    /// Sends SIGKILL to the whole group, now.
    pub fn kill(&self) {
        if let Some(pgid) = self.pgid {
            let _ = kill_process_group(pgid, Signal::KILL);
        }
    }

    /// Stops the whole group: SIGTERM, up to `grace` for every member to go, then SIGKILL
    /// (sent again for up to half a second while members remain). Waits on the runtime's
    /// timer, never blocking a thread. Returns whether SIGKILL was needed.
    pub async fn terminate(&self, grace: Duration) -> bool {
        let Some(pgid) = self.pgid else {
            return false;
        };
        if !self.is_alive() {
            return false;
        }
        let _ = kill_process_group(pgid, Signal::TERM);
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            if !self.is_alive() {
                return false;
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                break;
            }
            tokio::time::sleep(POLL.min(deadline - now)).await;
        }
        let _ = kill_process_group(pgid, Signal::KILL);
        for _ in 0..AFTER_KILL_ROUNDS {
            if !self.is_alive() {
                break;
            }
            tokio::time::sleep(AFTER_KILL_POLL).await;
            let _ = kill_process_group(pgid, Signal::KILL);
        }
        true
    }

    /// Lets the group be: the guard no longer kills it.
    pub fn release(mut self) {
        self.pgid = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether a process of group `pgid` is not a zombie, from `/proc`; `true` when `/proc`
/// cannot be listed (the caller's `kill(-pgid, 0)` then decides).
fn has_live_member(pgid: Pid) -> bool {
    let pgid = pgid.as_raw_nonzero().get();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries.flatten().any(|e| {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            return false;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // After the command name: state, ppid, pgrp, ...
        let mut fields = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .unwrap_or_default()
            .split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
        pgrp == Some(pgid) && !matches!(state, Some("Z" | "X") | None)
    })
}

#[cfg(test)]
mod tests {
    use std::process::Stdio;
    use std::time::Instant;

    use tokio::io::AsyncBufReadExt;

    use super::*;

    /// Whether `pid` is a process that still runs: `kill(pid, 0)` finds it and `/proc` does
    /// not show a zombie.
    fn running(pid: i32) -> bool {
        let Some(p) = Pid::from_raw(pid) else {
            return false;
        };
        if rustix::process::test_kill_process(p).is_err() {
            return false;
        }
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => {
                let state = stat.rsplit_once(')').map(|(_, r)| r.trim_start());
                !state.is_some_and(|s| s.starts_with('Z') || s.starts_with('X'))
            }
            Err(_) => false,
        }
    }

    /// Waits up to five seconds for `pid` to stop running.
    async fn gone(pid: i32) -> bool {
        for _ in 0..500 {
            if !running(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    /// Starts `script` under `sh` and reads the first line it prints (a pid).
    async fn start(script: &str) -> (tokio::process::Child, ProcessGroup, i32) {
        let mut command = tokio::process::Command::new("sh");
        command
            .args(["-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        let (mut child, group) = ProcessGroup::spawn(&mut command).unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        tokio::io::BufReader::new(stdout)
            .read_line(&mut line)
            .await
            .unwrap();
        (child, group, line.trim().parse().unwrap())
    }

    #[tokio::test]
    async fn a_group_that_ignores_sigterm_is_killed_after_the_grace_period() {
        // The shell ignores TERM, and so does the sleep it starts (an ignored signal stays
        // ignored across exec).
        let (mut child, group, sleeper) = start("trap '' TERM; sleep 30 & echo $!; wait").await;
        let leader = i32::try_from(child.id().unwrap()).unwrap();
        assert_eq!(group.id(), child.id());
        assert!(running(leader) && running(sleeper));
        assert!(group.is_alive());
        let grace = Duration::from_millis(300);
        let started = Instant::now();
        let killed = group.terminate(grace).await;
        assert!(killed);
        assert!(started.elapsed() >= grace);
        assert!(!group.is_alive());
        child.wait().await.unwrap();
        assert!(gone(leader).await);
        assert!(gone(sleeper).await);
    }

    #[tokio::test]
    async fn a_group_that_takes_sigterm_ends_without_sigkill() {
        let (mut child, group, sleeper) = start("sleep 30 & echo $!; wait").await;
        assert!(!group.terminate(Duration::from_secs(10)).await);
        child.wait().await.unwrap();
        assert!(gone(sleeper).await);
    }

    #[tokio::test]
    async fn a_grandchild_in_the_group_is_gone_after_the_guard_is_dropped() {
        // The grandchild is started by a child that then exits: only the group holds it.
        let (child, group, grandchild) = start("sh -c 'sleep 30 & echo $!' ; sleep 30").await;
        assert!(running(grandchild));
        drop(group);
        assert!(gone(grandchild).await);
        drop(child);
    }

    #[tokio::test]
    async fn a_released_group_is_left_alone() {
        let (mut child, group, sleeper) = start("sleep 30 & echo $!").await;
        child.wait().await.unwrap();
        let id = group.id().unwrap();
        group.release();
        assert!(running(sleeper));
        let again = ProcessGroup::adopt(id).unwrap();
        assert!(again.is_alive());
        again.kill();
        assert!(gone(sleeper).await);
    }

    #[test]
    fn the_blocking_form_kills_on_drop_too() {
        let mut command = std::process::Command::new("sh");
        command.args(["-c", "sleep 30"]);
        let (mut child, group) = ProcessGroup::spawn_std(&mut command).unwrap();
        assert!(group.is_alive());
        drop(group);
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert!(ProcessGroup::adopt(0).is_none());
    }
}
