//! Finding and ending what a command started outside its process group (`setsid`, double
//! forks), from the process table.
//!
//! - The supervisor is a child subreaper (`PR_SET_CHILD_SUBREAPER`): whatever a command
//!   starts stays in the supervisor's subtree however often it forks or changes session,
//!   since an orphan goes to its nearest subreaper ancestor. [`kill_descendants`] ends that
//!   subtree; [`has_children`] is its cheap first look.
//! - Without a supervisor program (a library host that registered none), commands carry a
//!   mark in their environment ([`MARK_VAR`]) that every process they start inherits, and
//!   [`kill_marked`] ends the processes that carry it: this catches `setsid` and double
//!   forks but not a process that clears its environment, and nothing is left to clean up
//!   should the host itself be killed. Registering a supervisor program closes both gaps.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};

/// The variable that marks the processes of one command when there is no supervisor.
pub const MARK_VAR: &str = "AGENT_TOOLS_RUN";

/// How many times the table is scanned and what was found killed before giving up (a fork
/// bomb that outruns every round).
const ROUNDS: usize = 200;
/// The pause between rounds.
const PAUSE: Duration = Duration::from_millis(5);

/// `(pid, ppid, zombie, pgrp)` of every process.
pub(crate) fn processes() -> Vec<(i32, i32, bool, i32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
            let state = fields.next()?;
            let ppid: i32 = fields.next()?.parse().ok()?;
            let pgrp: i32 = fields.next()?.parse().ok()?;
            Some((pid, ppid, state == "Z" || state == "X", pgrp))
        })
        .collect()
}

/// `(pid, ppid)` of every live process (zombies left out).
fn table() -> Vec<(i32, i32)> {
    processes()
        .into_iter()
        .filter(|(_, _, zombie, _)| !zombie)
        .map(|(pid, ppid, _, _)| (pid, ppid))
        .collect()
}

/// Every live descendant of `root`, `root` left out.
pub fn descendants(root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (pid, ppid) in table() {
        children.entry(ppid).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        for c in children.get(&p).into_iter().flatten() {
            if seen.insert(*c) {
                out.push(*c);
                stack.push(*c);
            }
        }
    }
    out
}

/// How many times the threads' child lists are read when a thread ends during a reading.
const TASK_READS: usize = 4;

/// The children of this process, live or zombie, from `/proc/self/task/TID/children` of
/// each of its threads; `None` where the kernel does not provide those files. A thread that
/// ends between the listing and the reading of its file (a spool's copier, a blocking
/// thread that idled out) is not a failure: its children, had it any, went to another
/// thread, so the threads are read again.
fn task_children() -> Option<Vec<i32>> {
    'again: for _ in 0..TASK_READS {
        let tasks = std::fs::read_dir("/proc/self/task").ok()?;
        let mut out = Vec::new();
        for t in tasks.flatten() {
            match std::fs::read_to_string(t.path().join("children")) {
                Ok(s) => out.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue 'again,
                Err(_) => return None,
            }
        }
        return Some(out);
    }
    None
}

/// The children of this process, live or zombie: from `/proc/self/task/TID/children`, or
/// from the whole table where the kernel does not provide those files.
pub fn children() -> Vec<i32> {
    let me = std::process::id() as i32;
    task_children().unwrap_or_else(|| {
        processes()
            .into_iter()
            .filter(|(_, ppid, _, _)| *ppid == me)
            .map(|(pid, _, _, _)| pid)
            .collect()
    })
}

/// Whether this process has any child, live or zombie: `/proc/self/task/TID/children` for
/// each of its threads; when the kernel does not provide those files, assumed yes.
pub fn has_children() -> bool {
    task_children().is_none_or(|c| !c.is_empty())
}

/// Kills every descendant of `root` (SIGKILL), scanning again until none is left; with
/// `reap`, also collects this process's exited children on the way (only for a caller that
/// waits for no child of its own). Returns whether none is left.
pub fn kill_descendants(root: i32, reap: bool) -> bool {
    for round in 0..ROUNDS {
        if reap {
            reap_children();
        }
        let found = descendants(root);
        if found.is_empty() {
            return true;
        }
        for p in found {
            if let Some(pid) = Pid::from_raw(p) {
                let _ = kill_process(pid, Signal::KILL);
            }
        }
        if round > 0 {
            std::thread::sleep(PAUSE);
        }
    }
    if reap {
        reap_children();
    }
    descendants(root).is_empty()
}

/// Collects every exited child of this process without waiting.
pub fn reap_children() {
    use rustix::process::{WaitId, WaitIdOptions, waitid};
    while let Ok(Some(_)) = waitid(WaitId::All, WaitIdOptions::EXITED | WaitIdOptions::NOHANG) {}
}

static MARKS: AtomicU64 = AtomicU64::new(0);

/// A mark no other command of any process carries.
pub fn new_mark() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{}-{nanos:x}",
        std::process::id(),
        MARKS.fetch_add(1, Ordering::Relaxed)
    )
}

/// Processes whose environment holds `MARK_VAR=mark`.
fn marked(mark: &str) -> Vec<i32> {
    let needle = format!("{MARK_VAR}={mark}");
    let me = std::process::id() as i32;
    table()
        .into_iter()
        .map(|(pid, _)| pid)
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
        })
        .collect()
}

/// Kills every process carrying `mark` (SIGKILL) until none is left; returns whether none
/// is left.
pub fn kill_marked(mark: &str) -> bool {
    // A process being forked is not in the table yet: only two empty looks in a row, a
    // pause apart, mean none is left.
    let mut empty_before = false;
    for round in 0..ROUNDS {
        let found = marked(mark);
        if found.is_empty() {
            if empty_before {
                return true;
            }
            empty_before = true;
            std::thread::sleep(PAUSE);
            continue;
        }
        empty_before = false;
        for p in found {
            if let Some(pid) = Pid::from_raw(p) {
                let _ = kill_process(pid, Signal::KILL);
            }
        }
        if round > 0 {
            std::thread::sleep(PAUSE);
        }
    }
    marked(mark).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: i32) -> bool {
        table().iter().any(|(p, _)| *p == pid)
    }

    #[test]
    fn threads_that_end_while_the_child_lists_are_read_are_no_failure() {
        // Threads start and end one after another while the lists are read: one that ends
        // between the listing and its file is read again, not taken for a missing file.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let churn = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = std::thread::spawn(|| ()).join();
                }
            })
        };
        let read = (0..200).filter(|_| task_children().is_some()).count();
        stop.store(true, Ordering::Relaxed);
        churn.join().unwrap();
        assert!(read >= 190, "{read} of 200 readings succeeded");
    }

    #[test]
    fn descendants_are_found_through_every_level() {
        // sh → sh → sleep, a chain two levels below the child.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sh -c 'sleep 30.0301 & wait' & wait"])
            .spawn()
            .unwrap();
        let root = child.id() as i32;
        let mut found = Vec::new();
        for _ in 0..500 {
            found = descendants(root);
            if found.len() >= 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(found.len() >= 2, "{found:?}");
        assert!(kill_descendants(root, false));
        for p in &found {
            for _ in 0..200 {
                if !alive(*p) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(descendants(root).is_empty());
    }

    #[test]
    fn marked_processes_are_killed_wherever_they_went() {
        let mark = new_mark();
        assert_ne!(mark, new_mark());
        // setsid and a double fork: neither is in the group nor below the child.
        let status = std::process::Command::new("sh")
            .args([
                "-c",
                "setsid sleep 30.0302 >/dev/null 2>&1 & (sleep 30.0302 >/dev/null 2>&1 &) ; true",
            ])
            .env(MARK_VAR, &mark)
            .status()
            .unwrap();
        assert!(status.success());
        let mut found = Vec::new();
        for _ in 0..500 {
            found = marked(&mark);
            if found.len() >= 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(kill_marked(&mark));
        assert!(marked(&mark).is_empty());
    }
}
