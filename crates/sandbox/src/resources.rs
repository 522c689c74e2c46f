//! Resource limits of sandboxed commands: memory, processes and CPU time
//! (`sandbox.limits`).
//!
//! - **Memory**: a cgroup's memory limit where this process may create a cgroup with the
//!   memory controller (cgroup v2 `memory.max` in a delegated subtree, or cgroup v1
//!   `memory.limit_in_bytes`), else `RLIMIT_AS` (address space, per process).
//! - **Processes**: the cgroup's `pids.max` (v2 or v1), else `RLIMIT_NPROC` — which counts
//!   every process of the user, so it is set to the user's count when the sandbox starts plus
//!   the limit, and which the kernel does not apply to root.
//! - **CPU time**: `RLIMIT_CPU` per process (SIGXCPU at the limit, SIGKILL a second later).
//!
//! Core dumps are off (`RLIMIT_CORE` 0). A cgroup belongs to one sandbox instance (a
//! persistent sandbox's concurrent commands share it) and is removed when the instance ends,
//! after everything in it is killed. The rlimits are set by the start-up code of every
//! command (hard and soft, which no sandboxed process can raise again: it holds no
//! capability). What was hit is read from the cgroup's event counters and from how the
//! command ended, and named in the result: "killed: memory limit 8 GiB
//! (sandbox.limits.memory)".

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

/// The default memory limit: 8 GiB.
pub const DEFAULT_MEMORY: u64 = 8 << 30;
/// The default process limit (tasks: threads count).
pub const DEFAULT_PROCESSES: u64 = 4096;
/// The default CPU time limit per process, in seconds.
pub const DEFAULT_CPU: u64 = 3600;

/// Limits of sandboxed commands; `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResourceLimits {
    /// Memory in bytes (`sandbox.limits.memory`, default 8 GiB)
    pub memory: Option<u64>,
    /// Processes and threads (`sandbox.limits.processes`, default 4096)
    pub processes: Option<u64>,
    /// CPU seconds per process (`sandbox.limits.cpu`, default 3600)
    pub cpu: Option<u64>,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        ResourceLimits {
            memory: Some(DEFAULT_MEMORY),
            processes: Some(DEFAULT_PROCESSES),
            cpu: Some(DEFAULT_CPU),
        }
    }
}

/// A limit a command ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitHit {
    /// The memory limit (the cgroup's OOM killer, or an allocation refused)
    Memory(u64),
    /// The process limit
    Processes(u64),
    /// The CPU time limit
    Cpu(u64),
}

impl std::fmt::Display for LimitHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LimitHit::Memory(b) => write!(
                f,
                "killed: memory limit {} (sandbox.limits.memory)",
                format_bytes(*b)
            ),
            LimitHit::Processes(n) => {
                write!(f, "killed: process limit {n} (sandbox.limits.processes)")
            }
            LimitHit::Cpu(s) => write!(f, "killed: CPU time limit {s} s (sandbox.limits.cpu)"),
        }
    }
}

/// `8 GiB`, `512 MiB`, `1000 bytes`.
fn format_bytes(b: u64) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{} {unit}", b >> shift);
        }
    }
    format!("{b} bytes")
}

/// Reads a memory size: bytes as a number, or a string with a unit (`8GiB`, `512M`, `1.5G`).
fn parse_size(v: &Value) -> Result<Option<u64>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_u64() {
            Some(0) => Ok(None),
            Some(n) => Ok(Some(n)),
            None => Err(format!(
                "memory must be a positive number of bytes, not {n}"
            )),
        },
        Value::String(s) => {
            let t = s.trim();
            let split = t
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(t.len());
            let (num, unit) = t.split_at(split);
            let num: f64 = num.parse().map_err(|_| {
                format!("memory `{s}` is not a size such as \"8GiB\" or \"512MiB\"")
            })?;
            let shift = match unit.trim().to_ascii_lowercase().as_str() {
                "" | "b" => 0,
                "k" | "kb" | "kib" => 10,
                "m" | "mb" | "mib" => 20,
                "g" | "gb" | "gib" => 30,
                "t" | "tb" | "tib" => 40,
                _ => {
                    return Err(format!(
                        "memory `{s}` has an unknown unit (use KiB, MiB, GiB or TiB)"
                    ));
                }
            };
            let bytes = (num * (1u64 << shift) as f64) as u64;
            Ok((bytes > 0).then_some(bytes))
        }
        other => Err(format!(
            "memory must be a size such as \"8GiB\" or a number of bytes, not {other}"
        )),
    }
}

fn parse_count(key: &str, v: &Value) -> Result<Option<u64>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_u64() {
            Some(0) => Ok(None),
            Some(n) => Ok(Some(n)),
            None => Err(format!("{key} must be a positive whole number, not {n}")),
        },
        other => Err(format!(
            "{key} must be a positive whole number, not {other}"
        )),
    }
}

impl ResourceLimits {
    /// No limit at all.
    pub fn none() -> Self {
        ResourceLimits {
            memory: None,
            processes: None,
            cpu: None,
        }
    }

    /// Applies a `limits` section over these: each key given replaces the value (`null` or
    /// 0 removes the limit). An unknown key or a bad value is an error naming it.
    pub fn merge(&mut self, section: &Map<String, Value>) -> Result<(), String> {
        for (key, value) in section {
            match key.as_str() {
                "memory" => self.memory = parse_size(value)?,
                "processes" => self.processes = parse_count("processes", value)?,
                "cpu" => self.cpu = parse_count("cpu", value)?,
                other => {
                    return Err(format!(
                        "unknown key `{other}` (the limits are memory, processes and cpu)"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The value of the start-up code's `AGENT_TOOLS_LIMITS` variable: the rlimits to set,
    /// `AS_KIB:CPU_SECONDS:NPROC` (an empty field is no limit). Memory and processes go
    /// through the instance's cgroup when it has one (`cgroup`).
    pub(crate) fn rlimits(&self, cgroup: Option<&Cgroup>) -> String {
        let memory = match (self.memory, cgroup.is_some_and(|c| c.memory)) {
            (Some(b), false) => (b / 1024).max(1).to_string(),
            _ => String::new(),
        };
        let cpu = self.cpu.map(|s| s.to_string()).unwrap_or_default();
        let nproc = match (self.processes, cgroup.is_some_and(|c| c.pids)) {
            // Root is not subject to RLIMIT_NPROC; elsewhere it counts the user's tasks.
            (Some(n), false) if !rustix::process::getuid().is_root() => {
                (user_tasks() + n).to_string()
            }
            _ => String::new(),
        };
        format!("{memory}:{cpu}:{nproc}")
    }
}

/// How many tasks (processes and threads) this user runs now.
fn user_tasks() -> u64 {
    let uid = rustix::process::getuid().as_raw();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        };
        if field("Uid:") == Some(u64::from(uid)) {
            n += field("Threads:").unwrap_or(1);
        }
    }
    n
}

/// Which cgroup interface this process can use.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Hierarchy {
    /// cgroup v2: our cgroup's directory, with the controllers its children get
    V2 {
        dir: PathBuf,
        memory: bool,
        pids: bool,
    },
    /// cgroup v1: the memory and pids controllers' directories of our cgroup
    V1 {
        memory: Option<PathBuf>,
        pids: Option<PathBuf>,
    },
    /// Neither: rlimits only
    None,
}

/// Where the controllers are, learned once; the groups earlier processes left there are
/// removed in the background then.
fn hierarchy() -> &'static Hierarchy {
    static FOUND: OnceLock<Hierarchy> = OnceLock::new();
    FOUND.get_or_init(|| {
        let found = find_hierarchy();
        let parents: Vec<PathBuf> = match &found {
            Hierarchy::V2 { dir, .. } => vec![dir.clone()],
            Hierarchy::V1 { memory, pids } => memory.iter().chain(pids).cloned().collect(),
            Hierarchy::None => Vec::new(),
        };
        if !parents.is_empty() {
            let _ = std::thread::Builder::new()
                .name("agent-tools-cgroup".into())
                .spawn(move || parents.iter().for_each(|p| remove_left_behind(p)));
        }
        found
    })
}

/// Where the controllers are.
fn find_hierarchy() -> Hierarchy {
    let Ok(cgroups) = std::fs::read_to_string("/proc/self/cgroup") else {
        return Hierarchy::None;
    };
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Hierarchy::None;
    };
    // cgroup2 first: a delegated subtree whose children get the controllers.
    if let Some(path) = cgroups.lines().find_map(|l| l.strip_prefix("0::"))
        && let Some(mount) = mount_point(&mounts, "cgroup2", None)
    {
        let dir = mount.join(path.trim_start_matches('/'));
        let control =
            std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
        let memory = control.split_whitespace().any(|c| c == "memory");
        let pids = control.split_whitespace().any(|c| c == "pids");
        if (memory || pids) && trial(&dir) {
            return Hierarchy::V2 { dir, memory, pids };
        }
    }
    let v1 = |controller: &str| {
        let path = cgroups.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, list, path) = (parts.next()?, parts.next()?, parts.next()?);
            list.split(',').any(|c| c == controller).then_some(path)
        })?;
        let mount = mount_point(&mounts, "cgroup", Some(controller))?;
        let dir = mount.join(path.trim_start_matches('/'));
        trial(&dir).then_some(dir)
    };
    let (memory, pids) = (v1("memory"), v1("pids"));
    if memory.is_some() || pids.is_some() {
        return Hierarchy::V1 { memory, pids };
    }
    Hierarchy::None
}

/// How old a group must be before [`remove_left_behind`] may take it for one left behind.
const LEFT_BEHIND_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes the groups processes that ended first left in `parent` (see [`make_dirs`]):
/// directories named as this module names them, with no process in them (the kernel
/// refuses to remove a group that has one) and made more than [`LEFT_BEHIND_AFTER`] ago
/// (a live instance's group is empty only between its making and its first process).
fn remove_left_behind(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > LEFT_BEHIND_AFTER);
        if old && e.file_name().to_str().is_some_and(is_group_name) {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// Whether `name` is one [`make_dirs`] gives (`agent-tools-PID-N`), or the probe's of
/// earlier versions (`agent-tools-probe-PID`).
fn is_group_name(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let Some(rest) = name.strip_prefix("agent-tools-") else {
        return false;
    };
    if let Some(pid) = rest.strip_prefix("probe-") {
        return digits(pid);
    }
    rest.split_once('-')
        .is_some_and(|(pid, n)| digits(pid) && digits(n))
}

/// Whether a child cgroup can be made (and removed) in `dir`.
fn trial(dir: &Path) -> bool {
    match make_dirs(&[dir.to_path_buf()]) {
        Ok(made) => {
            for d in made {
                let _ = std::fs::remove_dir(d);
            }
            true
        }
        Err(_) => false,
    }
}

/// The mount point of a file system of type `fstype` (with the super option `option`).
fn mount_point(mountinfo: &str, fstype: &str, option: Option<&str>) -> Option<PathBuf> {
    mountinfo.lines().find_map(|l| {
        let (before, after) = l.split_once(" - ")?;
        let mut after = after.split_whitespace();
        if after.next()? != fstype {
            return None;
        }
        let options = after.nth(1).unwrap_or("");
        if let Some(o) = option
            && !options.split(',').any(|x| x == o)
        {
            return None;
        }
        let mount = before.split_whitespace().nth(4)?;
        Some(PathBuf::from(unescape(mount)))
    })
}

/// Mount points escape spaces and a few other bytes as `\ooo`.
fn unescape(s: &str) -> String {
    let mut out = Vec::new();
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 4 <= bytes.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 4], 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where resource limits come from on this machine: `cgroup v2`, `cgroup v1` or `rlimits`.
pub fn mechanism() -> &'static str {
    match hierarchy() {
        Hierarchy::V2 { .. } => "cgroup v2",
        Hierarchy::V1 { .. } => "cgroup v1",
        Hierarchy::None => "rlimits",
    }
}

static GROUPS: AtomicU64 = AtomicU64::new(0);

/// How many names [`make_dirs`] tries before it gives up.
const NAME_TRIES: usize = 4096;

/// A new directory of one name in each of `parents` (one per controller under v1), named
/// `agent-tools-PID-N` with the next N of this process. A name some directory already has
/// is skipped: a process that ended before its groups were removed (killed, or exited
/// while the thread removing them ran) left them behind, and a later process with the
/// same id counts from 0 again.
fn make_dirs(parents: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
    for _ in 0..NAME_TRIES {
        let name = format!(
            "agent-tools-{}-{}",
            std::process::id(),
            GROUPS.fetch_add(1, Ordering::Relaxed)
        );
        let mut made = Vec::with_capacity(parents.len());
        let mut failed = None;
        for parent in parents {
            let dir = parent.join(&name);
            match std::fs::create_dir(&dir) {
                Ok(()) => made.push(dir),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        match failed {
            None => return Ok(made),
            Some(e) => {
                for d in made {
                    let _ = std::fs::remove_dir(d);
                }
                if e.kind() != std::io::ErrorKind::AlreadyExists {
                    return Err(e);
                }
            }
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!("{NAME_TRIES} cgroup names of this process are taken"),
    ))
}

/// Counters of limits hit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Events {
    oom_kills: u64,
    pids_max: u64,
}

/// The counter files of a [`Cgroup`].
struct Counters {
    oom_kills: Option<PathBuf>,
    pids_max: Option<PathBuf>,
}

/// One sandbox instance's cgroup (one directory under v2, one per controller under v1);
/// removed when dropped, after everything in it is killed.
#[derive(Debug)]
pub(crate) struct Cgroup {
    dirs: Vec<PathBuf>,
    v2: bool,
    /// Whether it limits memory
    memory: bool,
    /// Whether it limits processes
    pids: bool,
    limits: ResourceLimits,
}

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.write_all(value.as_bytes())
}

fn counter(path: &Path, key: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == key).then(|| v.trim().parse().ok()).flatten()
            })
        })
        .unwrap_or(0)
}

impl Cgroup {
    /// A new cgroup with `limits`, when the machine offers one and a limit needs it
    /// (`None` otherwise); an error where one it offers could not be made.
    pub(crate) fn create(limits: &ResourceLimits) -> std::io::Result<Option<Cgroup>> {
        if limits.memory.is_none() && limits.processes.is_none() {
            return Ok(None);
        }
        // The directories the group's are made in: one under v2, one per controller under v1.
        let (parents, v2, memory, pids) = match hierarchy() {
            Hierarchy::V2 { dir, memory, pids } => (
                vec![dir.clone()],
                true,
                *memory && limits.memory.is_some(),
                *pids && limits.processes.is_some(),
            ),
            Hierarchy::V1 { memory, pids } => {
                let memory = memory.as_ref().filter(|_| limits.memory.is_some());
                let pids = pids.as_ref().filter(|_| limits.processes.is_some());
                (
                    memory.into_iter().chain(pids).cloned().collect(),
                    false,
                    memory.is_some(),
                    pids.is_some(),
                )
            }
            Hierarchy::None => return Ok(None),
        };
        if parents.is_empty() || !(memory || pids) {
            return Ok(None);
        }
        let dirs = make_dirs(&parents)?;
        let group = Cgroup {
            dirs,
            v2,
            memory,
            pids,
            limits: *limits,
        };
        let set = |g: &Cgroup| -> std::io::Result<()> {
            if g.v2 {
                let d = &g.dirs[0];
                if let (true, Some(b)) = (g.memory, g.limits.memory) {
                    write(&d.join("memory.max"), &b.to_string())?;
                    let _ = write(&d.join("memory.swap.max"), "0");
                }
                if let (true, Some(n)) = (g.pids, g.limits.processes) {
                    write(&d.join("pids.max"), &n.to_string())?;
                }
            } else {
                for d in &g.dirs {
                    if let (true, Some(b)) =
                        (d.join("memory.limit_in_bytes").exists(), g.limits.memory)
                    {
                        write(&d.join("memory.limit_in_bytes"), &b.to_string())?;
                        let _ = write(&d.join("memory.memsw.limit_in_bytes"), &b.to_string());
                    }
                    if let (true, Some(n)) = (d.join("pids.max").exists(), g.limits.processes) {
                        write(&d.join("pids.max"), &n.to_string())?;
                    }
                }
            }
            Ok(())
        };
        // A group that failed is removed when dropped.
        set(&group)?;
        Ok(Some(group))
    }

    /// Whether the group limits memory.
    pub(crate) fn limits_memory(&self) -> bool {
        self.memory
    }

    /// Whether the group limits processes.
    pub(crate) fn limits_pids(&self) -> bool {
        self.pids
    }

    /// The files through which a process moves *itself* into the group, opened for writing
    /// here (the kernel checks the opener's rights, not the writer's): under cgroup v1,
    /// each directory's `tasks`, to which a thread writes `0`. Moving another process
    /// (`add`) takes the kernel's global lock of thread groups for writing, which waits
    /// for an RCU grace period, about 9 ms on a small VM; a thread moving itself does not
    /// take it. `None` under v2, where one thread alone moves only within a threaded
    /// subtree: there the process is moved by `add`.
    pub(crate) fn own_move_files(&self) -> Option<Vec<std::fs::File>> {
        if self.v2 {
            return None;
        }
        self.dirs
            .iter()
            .map(|d| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(d.join("tasks"))
            })
            .collect::<std::io::Result<Vec<_>>>()
            .ok()
    }

    /// Whether the process `pid` is in the group under every controller it has.
    pub(crate) fn holds(&self, pid: u32) -> bool {
        let Ok(listed) = std::fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
            return false;
        };
        let Some(name) = self.dirs.first().and_then(|d| d.file_name()) else {
            return false;
        };
        let suffix = format!("/{}", name.to_string_lossy());
        let inside = listed
            .lines()
            .filter(|l| l.ends_with(suffix.as_str()))
            .count();
        inside >= self.dirs.len()
    }

    /// Moves the process `pid` into the group.
    pub(crate) fn add(&self, pid: u32) -> std::io::Result<()> {
        for d in &self.dirs {
            write(&d.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// The files whose counters say a limit this group sets was hit (`oom_kill`, and `max`
    /// for pids): under v2 both are in its one directory; under v1 the memory one is in
    /// the first directory, the pids one in the last (no file of the other controller is
    /// opened in vain).
    fn counters(&self) -> Counters {
        let (first, last) = (self.dirs.first(), self.dirs.last());
        let oom = if self.v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        Counters {
            oom_kills: first.filter(|_| self.memory).map(|d| d.join(oom)),
            pids_max: last.filter(|_| self.pids).map(|d| d.join("pids.events")),
        }
    }

    /// The counters of limits hit so far.
    pub(crate) fn events(&self) -> Events {
        let files = self.counters();
        let read = |file: Option<PathBuf>, key| file.map_or(0, |f| counter(&f, key));
        Events {
            oom_kills: read(files.oom_kills, "oom_kill"),
            pids_max: read(files.pids_max, "max"),
        }
    }

    /// The limit hit between `before` and now, if any.
    pub(crate) fn hit_since(&self, before: Events) -> Option<LimitHit> {
        let now = self.events();
        if now.oom_kills > before.oom_kills
            && let Some(b) = self.limits.memory
        {
            return Some(LimitHit::Memory(b));
        }
        if now.pids_max > before.pids_max
            && let Some(n) = self.limits.processes
        {
            return Some(LimitHit::Processes(n));
        }
        None
    }

    /// Every process in the group.
    fn procs(&self) -> Vec<i32> {
        let mut out = Vec::new();
        for d in &self.dirs {
            if let Ok(s) = std::fs::read_to_string(d.join("cgroup.procs")) {
                out.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Kills everything in the group; returns whether it is empty.
    fn kill_all(&self) -> bool {
        if self.v2 {
            let _ = write(&self.dirs[0].join("cgroup.kill"), "1");
        }
        for _ in 0..100 {
            let procs = self.procs();
            if procs.is_empty() {
                return true;
            }
            for p in procs {
                if let Some(pid) = rustix::process::Pid::from_raw(p) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        self.procs().is_empty()
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if self.dirs.is_empty() {
            return;
        }
        let dirs = std::mem::take(&mut self.dirs);
        let group = Cgroup {
            dirs,
            v2: self.v2,
            memory: self.memory,
            pids: self.pids,
            limits: self.limits,
        };
        // Killing and waiting for the processes to go takes a moment: not on the caller's
        // thread. A directory is removed once its processes are gone (zombies included).
        let _ = std::thread::Builder::new()
            .name("agent-tools-cgroup".into())
            .spawn(move || {
                group.kill_all();
                for _ in 0..200 {
                    let left: Vec<&PathBuf> = group
                        .dirs
                        .iter()
                        .filter(|d| std::fs::remove_dir(d).is_err() && d.exists())
                        .collect();
                    if left.is_empty() {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(25));
                }
                // Everything was moved out of the clone: nothing left for its own drop.
                let mut group = group;
                group.dirs.clear();
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(section: Value) -> Result<ResourceLimits, String> {
        let mut l = ResourceLimits::default();
        let Value::Object(map) = section else {
            return Err("not an object".into());
        };
        l.merge(&map)?;
        Ok(l)
    }

    #[test]
    fn limits_parse_and_print() {
        let l = merged(serde_json::json!({"memory": "512MiB", "processes": 64, "cpu": 5}));
        assert_eq!(
            l,
            Ok(ResourceLimits {
                memory: Some(512 << 20),
                processes: Some(64),
                cpu: Some(5)
            })
        );
        let l = merged(serde_json::json!({"memory": null, "cpu": 0}));
        assert_eq!(
            l,
            Ok(ResourceLimits {
                memory: None,
                processes: Some(DEFAULT_PROCESSES),
                cpu: None
            })
        );
        for (v, want) in [
            ("8GiB", 8u64 << 30),
            ("8G", 8 << 30),
            ("1.5g", 3 << 29),
            ("4096", 4096),
            ("64 MiB", 64 << 20),
        ] {
            assert_eq!(parse_size(&Value::from(v)), Ok(Some(want)), "{v}");
        }
        for bad in [
            serde_json::json!({"memory": "lots"}),
            serde_json::json!({"memory": "3 parsecs"}),
            serde_json::json!({"processes": -1}),
            serde_json::json!({"cpu": "1h"}),
            serde_json::json!({"disk": 1}),
        ] {
            let err = merged(bad.clone()).err().unwrap_or_default();
            assert!(!err.is_empty(), "{bad}");
        }
        assert_eq!(
            LimitHit::Memory(8 << 30).to_string(),
            "killed: memory limit 8 GiB (sandbox.limits.memory)"
        );
        assert_eq!(
            LimitHit::Processes(64).to_string(),
            "killed: process limit 64 (sandbox.limits.processes)"
        );
        assert_eq!(
            LimitHit::Cpu(5).to_string(),
            "killed: CPU time limit 5 s (sandbox.limits.cpu)"
        );
    }

    #[test]
    fn a_group_name_left_behind_is_skipped() {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let parents: Vec<PathBuf> = dirs.iter().map(|d| d.path().to_path_buf()).collect();
        // What an earlier process with this id left: the next names of this process, in one
        // controller's directory or in both.
        let next = GROUPS.load(Ordering::Relaxed);
        let mut left = Vec::new();
        for n in next..next + 64 {
            let name = format!("agent-tools-{}-{n}", std::process::id());
            for p in &parents[..1 + (n % 2) as usize] {
                std::fs::create_dir(p.join(&name)).unwrap();
                left.push(p.join(&name));
            }
        }
        let made = make_dirs(&parents).unwrap();
        assert_eq!(made.len(), 2);
        assert_eq!(made[0].file_name(), made[1].file_name());
        assert!(!left.contains(&made[0]) && !left.contains(&made[1]));
        assert!(left.iter().all(|d| d.is_dir()), "a leftover was removed");
        // Other failures are not retried.
        let missing = parents[0].join("missing");
        let err = make_dirs(&[missing]).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn only_group_names_are_taken_for_left_behind() {
        for name in [
            "agent-tools-123-0",
            "agent-tools-4-5678",
            "agent-tools-probe-99",
        ] {
            assert!(is_group_name(name), "{name}");
        }
        for name in [
            "agent-tools",
            "agent-tools-",
            "agent-tools-123",
            "agent-tools-123-",
            "agent-tools-123-x",
            "agent-tools-probe-",
            "agent-tools-1-2-3",
            "user.slice",
            "other-123-0",
        ] {
            assert!(!is_group_name(name), "{name}");
        }
    }

    #[test]
    fn mount_points_are_found_and_unescaped() {
        let info = "25 30 0:23 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n\
                    26 30 0:24 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n\
                    27 30 0:25 / /mnt/with\\040space rw - cgroup cgroup rw,pids\n";
        assert_eq!(
            mount_point(info, "cgroup", Some("memory")),
            Some(PathBuf::from("/sys/fs/cgroup/memory"))
        );
        assert_eq!(
            mount_point(info, "cgroup2", None),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(
            mount_point(info, "cgroup", Some("pids")),
            Some(PathBuf::from("/mnt/with space"))
        );
        assert_eq!(mount_point(info, "cgroup", Some("cpu")), None);
    }
}
