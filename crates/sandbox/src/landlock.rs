//! The Landlock mechanism (no bubblewrap): a thread restricts itself and starts commands,
//! which inherit its restrictions. It needs no `unsafe`: Landlock, seccomp and capabilities
//! restrict the calling *thread* (no `TSYNC`), and a child inherits its creator's
//! restrictions, so a helper thread restricts itself, spawns commands and the rest of the
//! process is untouched.
//!
//! A restricted thread:
//! - drops every capability, the bounding set included (root keeps none across `exec`);
//! - is confined by a Landlock ruleset: reading everywhere but the hidden paths (granted
//!   entry by entry around them, with directory listings allowed everywhere), writing the
//!   writable roots except the protected paths and the hidden ones (a directory holding
//!   one is granted entry by entry, and the protection's base directories always are, so
//!   no name can be created directly in them; a protected path is neither writable nor
//!   replaceable, existing or not), TCP binds and connects refused when the network is off,
//!   and, where the kernel has them (ABI 6), abstract Unix sockets and signals scoped to
//!   the sandbox;
//! - applies the seccomp filter (`filter` module) with no socket at all when the network is
//!   off (Landlock cannot tell the host's loopback from the sandbox's), and, read-only (the
//!   jail), no call that changes a file's mode, owner, times or extended attributes
//!   (Landlock does not govern those).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, mpsc};

use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};
use tokio::process::{Child, Command};
use tool_core::ToolError;

use crate::policy::{SandboxMode, SandboxPolicy};
use crate::protect::Bind;

const ABI_USED: ABI = ABI::V5;

/// Device files any command may write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
];

/// How deep a directory is granted entry by entry; below, nothing is granted.
const PIECEWISE_DEPTH: usize = 32;

/// Whether Landlock can be enforced here (checked once, in a throw-away thread).
pub fn available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        std::thread::spawn(|| restrict_thread(&SandboxPolicy::bare(), &[]).is_ok())
            .join()
            .unwrap_or(false)
    })
}

/// The Landlock ABI version of the running kernel, or `None` when it has no Landlock or
/// Landlock is turned off (learned once, by restricting a throw-away thread).
pub fn abi() -> Option<i32> {
    static ABI_FOUND: OnceLock<Option<i32>> = OnceLock::new();
    *ABI_FOUND.get_or_init(|| {
        std::thread::spawn(|| {
            let status = Ruleset::default()
                .handle_access(AccessFs::from_all(ABI_USED))
                .ok()?
                .create()
                .ok()?
                .restrict_self()
                .ok()?;
            match status.landlock {
                LandlockStatus::Available {
                    effective_abi,
                    kernel_abi,
                } => Some(kernel_abi.unwrap_or(effective_abi as i32)),
                _ => None,
            }
        })
        .join()
        .unwrap_or(None)
    })
}

/// Work for a restricted thread (starting a command).
type Job = Box<dyn FnOnce() + Send>;

/// What a restricted thread was restricted to: the policy, the writable files, the paths
/// granted, and the identity (device, inode) of each, since Landlock holds the inode it
/// saw (a directory granted entry by entry changes with its entries).
type Key = (
    SandboxPolicy,
    Vec<PathBuf>,
    Vec<(PathBuf, Option<(u64, u64)>)>,
);

/// Starts `cmd` from a thread restricted to `policy` and `files`.
pub async fn spawn(
    policy: &SandboxPolicy,
    files: &[PathBuf],
    mut cmd: Command,
) -> Result<Child, ToolError> {
    let spawner = spawner(policy, files)?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let handle = tokio::runtime::Handle::current();
    spawner
        .send(Box::new(move || {
            let _guard = handle.enter();
            let _ = tx.send(
                cmd.spawn()
                    .map_err(|e| ToolError::fatal(format!("cannot start bash: {e}"))),
            );
        }))
        .map_err(|_| ToolError::fatal("the sandbox thread is gone"))?;
    rx.await
        .map_err(|_| ToolError::fatal("the sandbox thread ended without starting the command"))?
}

/// Runs `job` (which starts a program) on a thread restricted to `policy`, and returns
/// what it returns; blocks the caller until then.
pub fn run_restricted<T: Send + 'static>(
    policy: &SandboxPolicy,
    job: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ToolError> {
    let spawner = spawner(policy, &[])?;
    let (tx, rx) = mpsc::channel();
    spawner
        .send(Box::new(move || {
            let _ = tx.send(job());
        }))
        .map_err(|_| ToolError::fatal("the sandbox thread is gone"))?;
    rx.recv()
        .map_err(|_| ToolError::fatal("the sandbox thread ended without starting the program"))
}

/// A thread restricted to `policy` and `files` that starts commands: restricting a new
/// thread per command (building the ruleset, walking directories granted entry by entry)
/// cost more than a short command. Threads are kept per policy and set of files (a
/// session's slots reuse the same files), at most 32, the oldest dropped first.
fn spawner(policy: &SandboxPolicy, files: &[PathBuf]) -> Result<mpsc::Sender<Job>, ToolError> {
    type Spawners = Mutex<Vec<(Key, mpsc::Sender<Job>)>>;
    static SPAWNERS: Spawners = Mutex::new(Vec::new());
    let grants = Grants::of(policy);
    let identity = grants
        .write
        .iter()
        .chain(&grants.read)
        .chain(&policy.protected)
        .chain(files)
        .map(|p| {
            let id = std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
            (p.clone(), id)
        })
        .collect();
    let key: Key = (policy.clone(), files.to_vec(), identity);
    let mut spawners = SPAWNERS
        .lock()
        .map_err(|_| ToolError::fatal("internal error: the sandbox thread table is poisoned"))?;
    if let Some((_, tx)) = spawners.iter().find(|(k, _)| *k == key) {
        return Ok(tx.clone());
    }
    let (tx, rx) = mpsc::channel::<Job>();
    let (ready_tx, ready_rx) = mpsc::channel();
    let (policy, files) = (key.0.clone(), key.1.clone());
    std::thread::Builder::new()
        .name("agent-tools-sandbox".into())
        .spawn(move || {
            // The grants walked above, not walked again.
            let restricted = restrict_with(&policy, &files, grants);
            let ok = restricted.is_ok();
            let _ = ready_tx.send(restricted);
            if !ok {
                return;
            }
            for job in rx {
                job();
            }
        })
        .map_err(|e| ToolError::fatal(format!("cannot start the sandbox thread: {e}")))?;
    ready_rx
        .recv()
        .map_err(|_| ToolError::fatal("the sandbox thread ended before restricting itself"))??;
    if spawners.len() >= 32 {
        spawners.remove(0);
    }
    spawners.push((key, tx.clone()));
    Ok(tx)
}

/// The paths a restricted thread is granted.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Grants {
    /// Full access (writes)
    pub write: Vec<PathBuf>,
    /// Read access; empty means everything
    pub read: Vec<PathBuf>,
    /// Whether reading is granted entry by entry (directory listings stay allowed
    /// everywhere)
    pub piecewise_read: bool,
}

impl Grants {
    /// The grants for `policy` (its writable files aside).
    pub fn of(policy: &SandboxPolicy) -> Grants {
        let masked: Vec<PathBuf> = policy
            .masks()
            .iter()
            .map(|m| m.path().to_path_buf())
            .collect();
        let mut g = Grants::default();
        match policy.mode {
            SandboxMode::ReadOnly => {}
            SandboxMode::FullAccess => {
                piecewise(Path::new("/"), &masked, &[], &mut g.write, 0);
            }
            SandboxMode::WorkspaceWrite => {
                let mut excluded = masked.clone();
                let mut fixed: Vec<PathBuf> = policy.bases().to_vec();
                for b in policy.binds() {
                    match b {
                        Bind::ReadOnly(p) => excluded.push(p.clone()),
                        Bind::Missing(p, _) => {
                            excluded.push(p.clone());
                            if let Some(parent) = p.parent() {
                                fixed.push(parent.to_path_buf());
                            }
                        }
                        Bind::Pinned(_) | Bind::Writable(_) => {}
                    }
                }
                for root in &policy.writable_roots {
                    piecewise(root, &excluded, &fixed, &mut g.write, 0);
                }
                for b in policy.binds() {
                    if let Bind::Writable(p) = b
                        && !masked.iter().any(|m| p.starts_with(m))
                    {
                        g.write.push(p.clone());
                    }
                }
            }
        }
        if !masked.is_empty() {
            g.piecewise_read = true;
            piecewise(Path::new("/"), &masked, &[], &mut g.read, 0);
        }
        g
    }
}

/// Grants the tree under `dir` except `excluded` paths (and what is under them): whole
/// when nothing excluded or `fixed` lies in it, else entry by entry (a `fixed` directory's
/// own entries cannot be created, removed or renamed then). Symbolic links are not
/// granted: a grant follows them to their target.
fn piecewise(
    dir: &Path,
    excluded: &[PathBuf],
    fixed: &[PathBuf],
    out: &mut Vec<PathBuf>,
    depth: usize,
) {
    if excluded.iter().any(|e| e == dir) {
        return;
    }
    let strictly_inside = |p: &PathBuf| p.as_path() != dir && p.starts_with(dir);
    let split = fixed.iter().any(|f| f == dir)
        || excluded.iter().any(strictly_inside)
        || fixed.iter().any(strictly_inside);
    if !split {
        out.push(dir.to_path_buf());
        return;
    }
    if depth >= PIECEWISE_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(t) = e.file_type() else { continue };
        let p = e.path();
        if t.is_symlink() {
            continue;
        }
        if t.is_dir() {
            piecewise(&p, excluded, fixed, out, depth + 1);
        } else if !excluded.contains(&p) {
            out.push(p);
        }
    }
}

/// Restricts the calling thread (and every process it starts afterwards) to `policy`.
pub fn restrict_thread(
    policy: &SandboxPolicy,
    writable_files: &[PathBuf],
) -> Result<(), ToolError> {
    restrict_with(policy, writable_files, Grants::of(policy))
}

/// [`restrict_thread`] with the policy's grants already known.
fn restrict_with(
    policy: &SandboxPolicy,
    writable_files: &[PathBuf],
    grants: Grants,
) -> Result<(), ToolError> {
    let fail = |e: &dyn std::fmt::Display| {
        ToolError::fatal(format!("cannot apply the Landlock sandbox: {e}"))
    };
    crate::filter::drop_capabilities()?;
    let all = AccessFs::from_all(ABI_USED);
    let read = AccessFs::from_read(ABI_USED);
    let restrict_files = policy.mode != SandboxMode::FullAccess || grants.piecewise_read;
    let mut ruleset = Ruleset::default()
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(|e| fail(&e))?;
    if restrict_files {
        ruleset = ruleset.handle_access(all).map_err(|e| fail(&e))?;
    }
    if !policy.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI_USED))
            .map_err(|e| fail(&e))?;
    }
    let mut created = ruleset.create().map_err(|e| fail(&e))?;
    if restrict_files {
        if grants.piecewise_read {
            created = created
                .add_rules(path_beneath_rules(["/"], AccessFs::ReadDir))
                .map_err(|e| fail(&e))?
                .add_rules(path_beneath_rules(grants.read.iter(), read))
                .map_err(|e| fail(&e))?;
        } else {
            created = created
                .add_rules(path_beneath_rules(["/"], read))
                .map_err(|e| fail(&e))?;
        }
        let mut writes: Vec<PathBuf> = DEVICES.iter().map(PathBuf::from).collect();
        writes.extend(writable_files.iter().cloned());
        writes.extend(grants.write);
        created = created
            .add_rules(path_beneath_rules(writes.iter(), all))
            .map_err(|e| fail(&e))?;
    }
    let status = created.restrict_self().map_err(|e| fail(&e))?;
    if restrict_files && status.ruleset == RulesetStatus::NotEnforced {
        return Err(fail(&"the kernel does not enforce Landlock"));
    }
    crate::filter::apply_landlock(policy.sockets(false), policy.mode == SandboxMode::ReadOnly)
}
