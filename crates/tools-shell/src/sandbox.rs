//! The sandbox every shell command runs in (Linux): a policy (read-only, workspace-write or
//! full access, each with network on or off) enforced with bubblewrap when it is installed and
//! with Landlock plus a seccomp network filter otherwise. When the requested sandbox cannot
//! be applied the command is refused, unless the settings allow a degraded mode.
//!
//! The Landlock path needs no `unsafe`: Landlock and seccomp restrict the calling *thread*
//! (no `TSYNC`), and a child inherits its creator's restrictions, so a short-lived helper
//! thread restricts itself, spawns the command and ends; the rest of the process is
//! untouched.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use tokio::process::{Child, Command};
use tool_core::{SettingsLayer, ToolContext, ToolError, path};

/// What a sandboxed command may write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Nothing
    ReadOnly,
    /// The working directories and the temporary directory, except protected paths
    #[default]
    WorkspaceWrite,
    /// Everything (only the network switch applies)
    FullAccess,
}

/// Which mechanism enforces the sandbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// Bubblewrap when it is installed and works, else Landlock and seccomp
    #[default]
    Auto,
    /// Bubblewrap only
    Bubblewrap,
    /// Landlock and seccomp only
    Landlock,
}

/// The `sandbox` section of the settings files.
///
/// ```json
/// "sandbox": {
///   "enabled": true, "mode": "workspace-write", "network": false,
///   "allowUnsandboxedCommands": true, "allowDegraded": false,
///   "writableRoots": ["../shared"], "mechanism": "auto"
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    /// Whether commands are sandboxed at all (default true)
    pub enabled: bool,
    /// What they may write (default workspace-write)
    pub mode: SandboxMode,
    /// Whether they may use the network (default false)
    pub network: bool,
    /// Whether `dangerouslyDisableSandbox` is honoured (default true, as the reference)
    pub allow_unsandboxed_commands: bool,
    /// Whether a command runs unsandboxed, with a notice, when no mechanism works (default
    /// false: refuse)
    pub allow_degraded: bool,
    /// More writable roots (absolute, or relative to the working directory)
    pub writable_roots: Vec<String>,
    /// The mechanism (default auto)
    pub mechanism: Mechanism,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            enabled: true,
            mode: SandboxMode::WorkspaceWrite,
            network: false,
            allow_unsandboxed_commands: true,
            allow_degraded: false,
            writable_roots: Vec::new(),
            mechanism: Mechanism::Auto,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SandboxSection {
    enabled: Option<bool>,
    mode: Option<SandboxMode>,
    network: Option<bool>,
    allow_unsandboxed_commands: Option<bool>,
    allow_degraded: Option<bool>,
    #[serde(default)]
    writable_roots: Vec<String>,
    mechanism: Option<Mechanism>,
    /// Claude Code's keys that have no meaning here are accepted and ignored
    #[serde(default)]
    auto_allow_bash_if_sandboxed: Option<bool>,
    #[serde(default)]
    excluded_commands: Option<serde_json::Value>,
}

impl SandboxSettings {
    /// Merges the `sandbox` sections of settings layers, lowest precedence first: a later
    /// layer's keys override, writable roots add up. A malformed section is an error naming
    /// the file.
    pub fn from_layers(layers: &[SettingsLayer]) -> Result<Self, ToolError> {
        let mut s = SandboxSettings::default();
        for layer in layers {
            let Some(value) = layer.settings.other.get("sandbox") else {
                continue;
            };
            let section: SandboxSection =
                serde_json::from_value(value.clone()).map_err(|e| ToolError::Settings {
                    path: layer.path.clone(),
                    message: format!("invalid `sandbox` section: {e}"),
                })?;
            let _ = (
                &section.auto_allow_bash_if_sandboxed,
                &section.excluded_commands,
            );
            if let Some(v) = section.enabled {
                s.enabled = v;
            }
            if let Some(v) = section.mode {
                s.mode = v;
            }
            if let Some(v) = section.network {
                s.network = v;
            }
            if let Some(v) = section.allow_unsandboxed_commands {
                s.allow_unsandboxed_commands = v;
            }
            if let Some(v) = section.allow_degraded {
                s.allow_degraded = v;
            }
            if let Some(v) = section.mechanism {
                s.mechanism = v;
            }
            s.writable_roots.extend(section.writable_roots);
        }
        Ok(s)
    }

    /// The session's settings: an `Arc<SandboxSettings>` service if the host put one in the
    /// context, else the `sandbox` sections of the loaded settings layers, else defaults.
    pub fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        if let Some(s) = ctx.services().get::<Arc<SandboxSettings>>() {
            return Ok((*s).clone());
        }
        match ctx.services().get::<Arc<Vec<SettingsLayer>>>() {
            Some(layers) => Self::from_layers(&layers),
            None => Ok(SandboxSettings::default()),
        }
    }
}

/// Names that stay read-only inside writable roots: version-control hooks and configuration,
/// shell start-up files, agent settings.
const PROTECTED_IN_ROOT: &[&str] = &[
    ".git/hooks",
    ".git/config",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".gitconfig",
    ".agent-tools",
    ".claude",
    ".mcp.json",
];

/// A resolved policy: canonical writable roots and the protected paths inside them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// What may be written
    pub mode: SandboxMode,
    /// Whether the network is reachable
    pub network: bool,
    /// Canonical writable roots (workspace-write only)
    pub writable_roots: Vec<PathBuf>,
    /// Existing protected paths inside the roots, canonical
    pub protected: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// The policy for `settings` in a session whose working directories are `dirs`.
    pub fn new(settings: &SandboxSettings, dirs: &[PathBuf], cwd: &Path) -> Self {
        let mut roots: Vec<PathBuf> = Vec::new();
        // Every directory the roots came from: protected paths are looked for in each, since
        // a working directory may sit inside a broader root such as /tmp.
        let mut bases: Vec<PathBuf> = Vec::new();
        if settings.mode == SandboxMode::WorkspaceWrite {
            let mut candidates: Vec<PathBuf> = dirs.to_vec();
            candidates.push(std::env::temp_dir());
            candidates.push(PathBuf::from("/tmp"));
            for r in &settings.writable_roots {
                candidates.push(path::resolve(cwd, r));
            }
            for c in candidates {
                // Canonical roots: a symlinked root would otherwise be bound at the link.
                let Ok(c) = c.canonicalize() else { continue };
                if !bases.contains(&c) {
                    bases.push(c.clone());
                }
                if !roots.iter().any(|r| path::is_within(&c, r)) {
                    roots.retain(|r| !path::is_within(r, &c));
                    roots.push(c);
                }
            }
        }
        if let Some(h) = path::home_dir().and_then(|h| h.canonicalize().ok())
            && roots.iter().any(|r| path::is_within(&h, r))
            && !bases.contains(&h)
        {
            bases.push(h);
        }
        let mut protected = Vec::new();
        for base in &bases {
            for name in PROTECTED_IN_ROOT {
                let p = base.join(name);
                // Most of these do not exist: one `lstat` says so, where resolving the path
                // walks every component (this runs for every command).
                if std::fs::symlink_metadata(&p).is_err() {
                    continue;
                }
                // Resolve links: binding over a symlink fails, and the target is what needs
                // protecting (when it is writable at all).
                if let Ok(c) = p.canonicalize()
                    && roots.iter().any(|r| path::is_within(&c, r))
                    && !protected.contains(&c)
                {
                    protected.push(c);
                }
            }
        }
        SandboxPolicy {
            mode: settings.mode,
            network: settings.network,
            writable_roots: roots,
            protected,
        }
    }

    /// A short description for results: `workspace-write, network off`.
    pub fn describe(&self) -> String {
        let mode = match self.mode {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::FullAccess => "full-access",
        };
        let net = if self.network { "on" } else { "off" };
        format!("{mode}, network {net}")
    }

    fn is_unrestricted(&self) -> bool {
        self.mode == SandboxMode::FullAccess && self.network
    }
}

/// How a command is started.
#[derive(Debug, Clone)]
pub enum Launch {
    /// Directly, unsandboxed
    Direct,
    /// Under bubblewrap with this policy
    Bubblewrap(Arc<SandboxPolicy>),
    /// Under Landlock and seccomp with this policy
    #[cfg(target_os = "linux")]
    Landlock(Arc<SandboxPolicy>),
}

/// A prepared launch with what to tell the model about it.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// How to start commands
    pub launch: Launch,
    /// `bubblewrap (workspace-write, network off)`, `none`, ...
    pub description: String,
    /// A notice for the model (a degraded sandbox), if any
    pub notice: Option<String>,
}

/// Finds bubblewrap and checks once that it can start a sandbox here.
pub fn bubblewrap() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let candidates = ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"];
            let path = candidates
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
                .or_else(|| {
                    std::env::var_os("PATH").and_then(|paths| {
                        std::env::split_paths(&paths)
                            .map(|d| d.join("bwrap"))
                            .find(|p| p.is_file())
                    })
                })?;
            let ok = std::process::Command::new(&path)
                .args([
                    "--ro-bind",
                    "/",
                    "/",
                    "--dev",
                    "/dev",
                    "--proc",
                    "/proc",
                    "--unshare-pid",
                    "--unshare-net",
                    "--die-with-parent",
                    "--new-session",
                    "--",
                    "true",
                ])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            ok.then_some(path)
        })
        .as_deref()
}

/// Whether Landlock can be enforced here (checked once, in a throw-away thread).
pub fn landlock_available() -> bool {
    #[cfg(target_os = "linux")]
    {
        static OK: OnceLock<bool> = OnceLock::new();
        *OK.get_or_init(|| {
            std::thread::spawn(|| {
                linux::restrict_thread(
                    &SandboxPolicy {
                        mode: SandboxMode::ReadOnly,
                        network: false,
                        writable_roots: Vec::new(),
                        protected: Vec::new(),
                    },
                    &[],
                )
                .is_ok()
            })
            .join()
            .unwrap_or(false)
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Chooses how to start commands for `settings` in a session whose working directories are
/// `dirs`. `disable` is the call's `dangerouslyDisableSandbox`, honoured only when the
/// settings allow unsandboxed commands.
pub fn prepare(
    settings: &SandboxSettings,
    dirs: &[PathBuf],
    cwd: &Path,
    disable: bool,
) -> Result<Prepared, ToolError> {
    // Probed only when a mechanism is needed: starting bubblewrap to check it costs more
    // than an unsandboxed command.
    let available = || Available {
        bubblewrap: matches!(settings.mechanism, Mechanism::Auto | Mechanism::Bubblewrap)
            && bubblewrap().is_some(),
        landlock: matches!(settings.mechanism, Mechanism::Auto | Mechanism::Landlock)
            && landlock_available(),
    };
    prepare_with(settings, dirs, cwd, disable, available)
}

/// Which mechanisms can be used.
#[derive(Debug, Clone, Copy)]
struct Available {
    bubblewrap: bool,
    landlock: bool,
}

fn prepare_with(
    settings: &SandboxSettings,
    dirs: &[PathBuf],
    cwd: &Path,
    disable: bool,
    available: impl FnOnce() -> Available,
) -> Result<Prepared, ToolError> {
    let direct = |description: &str, notice: Option<String>| Prepared {
        launch: Launch::Direct,
        description: description.to_owned(),
        notice,
    };
    if !settings.enabled {
        return Ok(direct("none (sandbox disabled in settings)", None));
    }
    if disable {
        if settings.allow_unsandboxed_commands {
            return Ok(direct("none (dangerouslyDisableSandbox)", None));
        }
        return Err(ToolError::respond(
            "dangerouslyDisableSandbox is not allowed: the settings set sandbox.allowUnsandboxedCommands to false. Run the command inside the sandbox.",
        ));
    }
    let policy = SandboxPolicy::new(settings, dirs, cwd);
    if policy.is_unrestricted() {
        return Ok(direct("none (full-access, network on)", None));
    }
    let described = policy.describe();
    let policy = Arc::new(policy);
    let available = available();
    if available.bubblewrap {
        return Ok(Prepared {
            launch: Launch::Bubblewrap(policy),
            description: format!("bubblewrap ({described})"),
            notice: None,
        });
    }
    #[cfg(target_os = "linux")]
    if available.landlock {
        return Ok(Prepared {
            launch: Launch::Landlock(policy),
            description: format!("landlock+seccomp ({described})"),
            notice: None,
        });
    }
    let wanted = match settings.mechanism {
        Mechanism::Auto => {
            "neither bubblewrap (install the `bubblewrap` package) nor Landlock is available"
        }
        Mechanism::Bubblewrap => {
            "bubblewrap is not installed or cannot create a sandbox here (install the `bubblewrap` package)"
        }
        Mechanism::Landlock => "Landlock is not available in this kernel",
    };
    if settings.allow_degraded {
        return Ok(direct(
            "none (degraded: no sandbox mechanism available)",
            Some(format!(
                "Note: the command ran without a sandbox because {wanted}; sandbox.allowDegraded is true."
            )),
        ));
    }
    Err(ToolError::fatal(format!(
        "The command was not run: the sandbox ({described}) cannot be applied because {wanted}. Set sandbox.allowDegraded to true in the settings to run commands unsandboxed, or sandbox.enabled to false."
    )))
}

impl Launch {
    /// What goes before `bash -c COMMAND` (bubblewrap's command line, or nothing).
    /// `writable_files` are files the command must be able to write (its output file).
    pub fn prefix(&self, cwd: &Path, writable_files: &[PathBuf]) -> Vec<OsString> {
        let Launch::Bubblewrap(policy) = self else {
            return Vec::new();
        };
        let mut a: Vec<OsString> = Vec::new();
        let mut push =
            |items: &[&std::ffi::OsStr]| a.extend(items.iter().map(|s| s.to_os_string()));
        let bwrap = bubblewrap().unwrap_or(Path::new("bwrap"));
        push(&[bwrap.as_os_str()]);
        push(&[
            "--new-session".as_ref(),
            "--die-with-parent".as_ref(),
            "--unshare-pid".as_ref(),
        ]);
        if policy.mode == SandboxMode::FullAccess {
            push(&["--bind".as_ref(), "/".as_ref(), "/".as_ref()]);
        } else {
            push(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
        }
        push(&[
            "--dev".as_ref(),
            "/dev".as_ref(),
            "--proc".as_ref(),
            "/proc".as_ref(),
        ]);
        for root in &policy.writable_roots {
            push(&["--bind".as_ref(), root.as_os_str(), root.as_os_str()]);
        }
        if policy.mode != SandboxMode::FullAccess {
            for f in writable_files {
                push(&["--bind".as_ref(), f.as_os_str(), f.as_os_str()]);
            }
        }
        for p in &policy.protected {
            push(&["--ro-bind".as_ref(), p.as_os_str(), p.as_os_str()]);
        }
        if !policy.network {
            push(&["--unshare-net".as_ref()]);
        }
        push(&["--chdir".as_ref(), cwd.as_os_str(), "--".as_ref()]);
        a
    }

    /// Spawns the prepared command.
    pub async fn spawn(
        &self,
        mut cmd: Command,
        writable_files: &[PathBuf],
    ) -> Result<Child, ToolError> {
        match self {
            Launch::Direct | Launch::Bubblewrap(_) => cmd
                .spawn()
                .map_err(|e| ToolError::fatal(format!("cannot start bash: {e}"))),
            #[cfg(target_os = "linux")]
            Launch::Landlock(policy) => {
                let spawner = landlock_spawner(policy, writable_files)?;
                let (tx, rx) = tokio::sync::oneshot::channel();
                spawner
                    .send((cmd, tokio::runtime::Handle::current(), tx))
                    .map_err(|_| ToolError::fatal("the sandbox thread is gone"))?;
                rx.await.map_err(|_| {
                    ToolError::fatal("the sandbox thread ended without starting the command")
                })?
            }
        }
    }
}

/// A command for a restricted thread to start, with the runtime to register it with.
#[cfg(target_os = "linux")]
type LandlockJob = (
    Command,
    tokio::runtime::Handle,
    tokio::sync::oneshot::Sender<Result<Child, ToolError>>,
);

/// What a restricted thread was restricted to: the policy, the writable files, the paths
/// granted (a root holding protected paths is granted entry by entry, so new entries change
/// them), and the identity (device, inode) of each, since Landlock holds the inode it saw.
#[cfg(target_os = "linux")]
type LandlockKey = (
    SandboxPolicy,
    Vec<PathBuf>,
    Vec<(PathBuf, Option<(u64, u64)>)>,
);

/// A thread restricted to `policy` and `files` that starts commands: restricting a new
/// thread per command (building the ruleset, walking roots that hold protected paths) cost
/// more than a short command. Threads are kept per policy and set of files (a session's
/// slots reuse the same files), at most 32, the oldest dropped first.
#[cfg(target_os = "linux")]
fn landlock_spawner(
    policy: &SandboxPolicy,
    files: &[PathBuf],
) -> Result<std::sync::mpsc::Sender<LandlockJob>, ToolError> {
    use std::os::unix::fs::MetadataExt;
    use std::sync::Mutex;
    use std::sync::mpsc;
    type Spawners = Mutex<Vec<(LandlockKey, mpsc::Sender<LandlockJob>)>>;
    static SPAWNERS: Spawners = Mutex::new(Vec::new());
    let grants = if policy.mode == SandboxMode::WorkspaceWrite {
        linux::write_grants(policy)
    } else {
        Vec::new()
    };
    let identity = grants
        .iter()
        .chain(&policy.protected)
        .chain(files)
        .map(|p| {
            let id = std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
            (p.clone(), id)
        })
        .collect();
    let key: LandlockKey = (policy.clone(), files.to_vec(), identity);
    let mut spawners = SPAWNERS
        .lock()
        .map_err(|_| ToolError::fatal("internal error: the sandbox thread table is poisoned"))?;
    if let Some((_, tx)) = spawners.iter().find(|(k, _)| *k == key) {
        return Ok(tx.clone());
    }
    let (tx, rx) = mpsc::channel::<LandlockJob>();
    let (ready_tx, ready_rx) = mpsc::channel();
    let (policy, files) = (key.0.clone(), key.1.clone());
    std::thread::Builder::new()
        .name("agent-tools-sandbox".into())
        .spawn(move || {
            let restricted = linux::restrict_thread(&policy, &files);
            let ok = restricted.is_ok();
            let _ = ready_tx.send(restricted);
            if !ok {
                return;
            }
            for (mut cmd, handle, reply) in rx {
                let _guard = handle.enter();
                let _ = reply.send(
                    cmd.spawn()
                        .map_err(|e| ToolError::fatal(format!("cannot start bash: {e}"))),
                );
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

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};
    use std::sync::OnceLock;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
        path_beneath_rules,
    };
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule,
    };
    use tool_core::{ToolError, path};

    use super::{SandboxMode, SandboxPolicy};

    const ABI_USED: ABI = ABI::V5;

    /// Device files any command may write.
    const DEVICES: &[&str] = &[
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/tty",
        "/dev/ptmx",
    ];

    /// The paths to grant write access on for `policy`: every writable root, except that a
    /// root holding protected paths is granted piecewise (its entries, recursively, minus the
    /// protected ones), because Landlock rules only add access and a grant on a directory
    /// covers everything beneath it. The price: new entries cannot be created directly in
    /// such a root (bubblewrap has no such limit).
    pub fn write_grants(policy: &SandboxPolicy) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for root in &policy.writable_roots {
            grant(root, &policy.protected, &mut out, 0);
        }
        out
    }

    fn grant(dir: &Path, protected: &[PathBuf], out: &mut Vec<PathBuf>, depth: usize) {
        if protected.iter().any(|p| p == dir) {
            return;
        }
        if !protected.iter().any(|p| path::is_within(p, dir)) || depth > 8 {
            out.push(dir.to_path_buf());
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            let is_real_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_real_dir {
                grant(&p, protected, out, depth + 1);
            } else if !protected.iter().any(|q| q == &p) {
                out.push(p);
            }
        }
    }

    fn network_filter() -> Result<&'static BpfProgram, ToolError> {
        static FILTER: OnceLock<Result<BpfProgram, String>> = OnceLock::new();
        FILTER
            .get_or_init(|| {
                let arch = std::env::consts::ARCH
                    .try_into()
                    .map_err(|e| format!("seccomp: unsupported architecture: {e:?}"))?;
                // socket(2) for anything but AF_UNIX fails with EPERM; io_uring (which can open
                // sockets without socket(2)) is refused outright.
                let not_unix = SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Ne,
                    libc::AF_UNIX as u64,
                )
                .map_err(|e| e.to_string())?;
                let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
                rules.insert(
                    libc::SYS_socket,
                    vec![SeccompRule::new(vec![not_unix]).map_err(|e| e.to_string())?],
                );
                rules.insert(libc::SYS_io_uring_setup, Vec::new());
                let filter = SeccompFilter::new(
                    rules,
                    SeccompAction::Allow,
                    SeccompAction::Errno(libc::EPERM as u32),
                    arch,
                )
                .map_err(|e| e.to_string())?;
                BpfProgram::try_from(filter).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| ToolError::fatal(format!("cannot build the network filter: {e}")))
    }

    /// Restricts the calling thread (and every process it starts afterwards) to `policy`.
    pub fn restrict_thread(
        policy: &SandboxPolicy,
        writable_files: &[PathBuf],
    ) -> Result<(), ToolError> {
        let fail = |e: &dyn std::fmt::Display| {
            ToolError::fatal(format!("cannot apply the Landlock sandbox: {e}"))
        };
        if policy.mode != SandboxMode::FullAccess {
            let read = AccessFs::from_read(ABI_USED);
            let all = AccessFs::from_all(ABI_USED);
            let mut writes: Vec<PathBuf> = DEVICES.iter().map(PathBuf::from).collect();
            writes.extend(writable_files.iter().cloned());
            if policy.mode == SandboxMode::WorkspaceWrite {
                writes.extend(write_grants(policy));
            }
            let mut ruleset = Ruleset::default()
                .handle_access(all)
                .map_err(|e| fail(&e))?;
            if !policy.network {
                ruleset = ruleset
                    .handle_access(AccessNet::from_all(ABI_USED))
                    .map_err(|e| fail(&e))?;
            }
            let status = ruleset
                .create()
                .map_err(|e| fail(&e))?
                .add_rules(path_beneath_rules(["/"], read))
                .map_err(|e| fail(&e))?
                .add_rules(path_beneath_rules(writes.iter(), all))
                .map_err(|e| fail(&e))?
                .restrict_self()
                .map_err(|e| fail(&e))?;
            if status.ruleset == RulesetStatus::NotEnforced {
                return Err(fail(&"the kernel does not enforce Landlock"));
            }
        }
        if !policy.network {
            seccompiler::apply_filter(network_filter()?)
                .map_err(|e| ToolError::fatal(format!("cannot apply the network filter: {e}")))?;
        } else if policy.mode == SandboxMode::FullAccess {
            return Ok(());
        }
        Ok(())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn settings_merge_by_key() -> Result<(), ToolError> {
        let a = SettingsLayer::parse(
            tool_core::RuleSourceKind::UserSettings,
            Path::new("/u/settings.json"),
            r#"{"sandbox": {"network": true, "writableRoots": ["/a"]}}"#,
        )?;
        let b = SettingsLayer::parse(
            tool_core::RuleSourceKind::ProjectSettings,
            Path::new("/p/.agent-tools/settings.json"),
            r#"{"sandbox": {"mode": "read-only", "writableRoots": ["/b"], "autoAllowBashIfSandboxed": true}}"#,
        )?;
        let s = SandboxSettings::from_layers(&[a, b])?;
        assert!(s.network);
        assert_eq!(s.mode, SandboxMode::ReadOnly);
        assert_eq!(s.writable_roots, vec!["/a".to_owned(), "/b".to_owned()]);
        let bad = SettingsLayer::parse(
            tool_core::RuleSourceKind::UserSettings,
            Path::new("/u/settings.json"),
            r#"{"sandbox": {"mode": "wide-open"}}"#,
        )?;
        let err = SandboxSettings::from_layers(&[bad])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("/u/settings.json") && err.contains("sandbox"),
            "{err}"
        );
        Ok(())
    }

    #[test]
    fn fails_closed_unless_degraded_mode_is_allowed() {
        let none = Available {
            bubblewrap: false,
            landlock: false,
        };
        let dir = std::env::temp_dir();
        let dirs = [dir.clone()];
        let s = SandboxSettings::default();
        let err = prepare_with(&s, &dirs, &dir, false, || none)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("The command was not run"), "{err}");
        assert!(err.contains("sandbox.allowDegraded"), "{err}");
        let degraded = SandboxSettings {
            allow_degraded: true,
            ..SandboxSettings::default()
        };
        let p = prepare_with(&degraded, &dirs, &dir, false, || none).ok();
        assert!(
            p.as_ref()
                .is_some_and(|p| matches!(p.launch, Launch::Direct))
        );
        assert!(
            p.and_then(|p| p.notice)
                .is_some_and(|n| n.contains("without a sandbox"))
        );
        // dangerouslyDisableSandbox only when the settings allow unsandboxed commands.
        let strict = SandboxSettings {
            allow_unsandboxed_commands: false,
            ..SandboxSettings::default()
        };
        assert!(prepare_with(&strict, &dirs, &dir, true, || none).is_err());
        assert!(matches!(
            prepare_with(&s, &dirs, &dir, true, || none).map(|p| p.launch),
            Ok(Launch::Direct)
        ));
        // Full access with network needs no mechanism.
        let open = SandboxSettings {
            mode: SandboxMode::FullAccess,
            network: true,
            ..SandboxSettings::default()
        };
        assert!(prepare_with(&open, &dirs, &dir, false, || none).is_ok());
    }

    #[test]
    fn policy_protects_existing_paths_inside_roots() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().canonicalize()?;
        std::fs::create_dir_all(root.join(".git/hooks"))?;
        std::fs::write(root.join(".git/config"), "")?;
        std::fs::write(root.join(".bashrc"), "")?;
        let policy = SandboxPolicy::new(
            &SandboxSettings::default(),
            std::slice::from_ref(&root),
            &root,
        );
        assert!(
            policy
                .writable_roots
                .iter()
                .any(|r| path::is_within(&root, r))
        );
        for p in [".git/hooks", ".git/config", ".bashrc"] {
            assert!(policy.protected.contains(&root.join(p)), "{p}: {policy:?}");
        }
        assert!(!policy.protected.iter().any(|p| p.ends_with(".zshrc")));
        let grants = linux::write_grants(&policy);
        assert!(!grants.contains(&root));
        assert!(
            !grants
                .iter()
                .any(|g| g.starts_with(root.join(".git/hooks")))
        );
        assert!(!grants.contains(&root.join(".bashrc")));
        Ok(())
    }
}
