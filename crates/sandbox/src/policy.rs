//! The sandbox's settings (the `sandbox` section of the settings files, with the session's
//! Read deny rules) and the policy they resolve to in a session for a [`Profile`]: what
//! commands may write, whether they reach the network, the protected paths bound inside the
//! writable roots (`protect` module; missing ones over placeholders, `placeholder` module),
//! the hidden paths (`mask` module), the environment (`env` module) and the resource limits
//! (`resources` module). The `launch` module chooses the mechanism that enforces it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use tool_core::{RuleBehavior, SettingsLayer, SourcedRule, ToolContext, ToolError, path};

#[cfg(target_os = "linux")]
use crate::filter::Sockets;
use crate::mask::{DenyRead, Mask};
use crate::protect::{Base, Bind};
use crate::resources::ResourceLimits;

/// Which sandbox a command runs in: what approved it decides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Profile {
    /// A person approved it (an allow rule, an answer, the permission mode): the settings'
    /// sandbox (workspace-write by default)
    #[default]
    Workspace,
    /// It runs unasked because it was classified read-only: nothing writable but a private
    /// `/tmp`, no network, the environment scrubbed, credentials, the state directory and
    /// other users' homes hidden (see [`JAIL_HIDDEN`])
    Jail,
}

/// Paths the jail hides besides the Read deny rules and the credential stores
/// ([`SECRETS`](crate::SECRETS), always hidden in the jail): the shadow password files. The
/// state directory and other users' home directories are hidden too.
pub const JAIL_HIDDEN: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
];

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

/// The `sandbox` section of the settings files, and the session's Read deny rules.
///
/// ```json
/// "sandbox": {
///   "enabled": true, "mode": "workspace-write", "network": false,
///   "allowUnsandboxedCommands": true, "allowDegraded": false,
///   "writableRoots": ["../common"], "mechanism": "auto", "hideSecrets": true,
///   "allowEnv": ["NODE_OPTIONS", "CARGO_*"],
///   "limits": {"memory": "8GiB", "processes": 4096, "cpu": 3600}
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
    /// Whether the user's credential stores ([`SECRETS`](crate::SECRETS)) are hidden from
    /// sandboxed commands (default true)
    pub hide_secrets: bool,
    /// The session's Read deny rules, which hold inside the sandbox too: what they match is
    /// hidden from every sandboxed command (filled from the settings files' and the
    /// session's rules, not a key of the section)
    pub deny_read: Vec<DenyRead>,
    /// Variables passed into the sandbox besides the allow-listed ones (see the `env`
    /// module): a name, or a prefix ending in `*`; a variable that looks like a secret
    /// passes only when named exactly (`sandbox.allowEnv`)
    pub allow_env: Vec<String>,
    /// Memory, process and CPU-time limits of sandboxed commands (`sandbox.limits`)
    pub limits: ResourceLimits,
    /// Files that stay read-only inside the sandbox wherever they are (files that approved
    /// configuration names; filled by the host, not a key of the section)
    pub read_only: Vec<PathBuf>,
    /// The state directory, hidden from the jail and read-only in the workspace sandbox
    /// (filled from the session by [`SandboxSettings::from_context`], not a key of the
    /// section)
    pub state_dir: Option<PathBuf>,
}
impl tool_core::ServiceType for SandboxSettings {}

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
            hide_secrets: true,
            deny_read: Vec::new(),
            allow_env: Vec::new(),
            limits: ResourceLimits::default(),
            read_only: Vec::new(),
            state_dir: None,
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
    hide_secrets: Option<bool>,
    #[serde(default)]
    allow_env: Vec<String>,
    limits: Option<serde_json::Map<String, serde_json::Value>>,
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
            if let Some(v) = section.hide_secrets {
                s.hide_secrets = v;
            }
            s.writable_roots.extend(section.writable_roots);
            s.allow_env.extend(section.allow_env);
            if let Some(limits) = &section.limits {
                s.limits
                    .merge(limits)
                    .map_err(|message| ToolError::Settings {
                        path: layer.path.clone(),
                        message: format!("invalid `sandbox.limits`: {message}"),
                    })?;
            }
        }
        s.deny_read = deny_read(layers.iter().flat_map(SettingsLayer::rules));
        Ok(s)
    }

    /// The session's settings: an `Arc<SandboxSettings>` service if the host put one in the
    /// context, else the `sandbox` sections of the loaded settings layers, else defaults;
    /// with the Read deny rules of the session's permission engine (settings files and
    /// command line).
    pub fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        let mut s = if let Some(s) = ctx.services().get::<Arc<SandboxSettings>>() {
            (*s).clone()
        } else {
            match ctx.services().get::<Arc<Vec<SettingsLayer>>>() {
                Some(layers) => Self::from_layers(&layers)?,
                None => SandboxSettings::default(),
            }
        };
        s.deny_read = deny_read(ctx.permissions().rules());
        s.state_dir = Some(ctx.state_dir().to_path_buf());
        Ok(s)
    }
}

/// The directories of `dirs` that are not inside another of them.
fn top_level(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = dirs
        .iter()
        .filter(|d| !dirs.iter().any(|o| o != *d && d.starts_with(o)))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What of the host's /tmp a jail, whose /tmp is its own and empty, keeps read-only: the
/// working directories, the home when it lives there (as in many containers; read-only and
/// masked as any home is) and the directories of the commands' `PATH` (`env`) that resolve
/// there, so that what is installed in them runs. Canonical, the top-level ones only.
fn kept_in_tmp(working: &[PathBuf], home: Option<&Path>, env: &[(String, String)]) -> Vec<PathBuf> {
    let tmp = Path::new("/tmp");
    let on_path = env
        .iter()
        .filter(|(k, _)| k == "PATH")
        .flat_map(|(_, v)| std::env::split_paths(v).collect::<Vec<_>>())
        .filter_map(|d| d.canonicalize().ok())
        .filter(|d| d.is_dir());
    let kept: Vec<PathBuf> = working
        .iter()
        .cloned()
        .chain(home.map(Path::to_path_buf))
        .chain(on_path)
        .filter(|p| p.starts_with(tmp))
        .collect();
    top_level(&kept)
}

/// The Read deny rules among `rules`.
fn deny_read(rules: impl IntoIterator<Item = SourcedRule>) -> Vec<DenyRead> {
    let mut out: Vec<DenyRead> = Vec::new();
    for r in rules {
        if r.behavior != RuleBehavior::Deny || r.rule.tool != "Read" {
            continue;
        }
        let Some(pattern) = r.rule.content else {
            continue;
        };
        let d = DenyRead {
            pattern,
            root: r.source.root,
        };
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// A resolved policy: canonical writable roots, what stays read-only inside them, and what
/// is hidden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// The profile it was built for
    pub profile: Profile,
    /// What may be written
    pub mode: SandboxMode,
    /// Whether the network is reachable
    pub network: bool,
    /// Canonical writable roots (workspace-write only)
    pub writable_roots: Vec<PathBuf>,
    /// Every path the sandbox binds over: protected paths and placeholders inside the
    /// writable roots, and hidden paths; canonical. A running sandbox serves a policy only
    /// while each of them keeps its identity (a bind keeps showing what was there when the
    /// sandbox started, and the host replacing a bound file detaches the bind).
    pub protected: Vec<PathBuf>,
    /// How the protected paths are bound, parents first
    binds: Vec<Bind>,
    /// Directories whose own entries must not change (where missing protected names are
    /// protected)
    bases: Vec<PathBuf>,
    /// Hidden paths
    masks: Vec<Mask>,
    /// The working directories (canonical)
    working: Vec<PathBuf>,
    /// What of the host's /tmp a jail keeps (see [`kept_in_tmp`]); empty for other profiles
    kept_in_tmp: Vec<PathBuf>,
    /// The environment commands get (see the `env` module)
    pub env: Vec<(String, String)>,
    /// The resource limits
    pub limits: ResourceLimits,
    /// The placeholders bound (bubblewrap)
    #[cfg(target_os = "linux")]
    pub(crate) leases: crate::placeholder::Leases,
}

impl SandboxPolicy {
    /// The workspace policy for `settings` in a session whose working directories are
    /// `dirs`.
    pub fn new(settings: &SandboxSettings, dirs: &[PathBuf], cwd: &Path) -> Self {
        Self::for_profile(Profile::Workspace, settings, dirs, cwd)
    }

    /// The policy of `profile` for `settings` in a session whose working directories are
    /// `dirs`.
    pub fn for_profile(
        profile: Profile,
        settings: &SandboxSettings,
        dirs: &[PathBuf],
        cwd: &Path,
    ) -> Self {
        Self::build(profile, settings, dirs, cwd, |decide| decide())
    }

    /// The policy for bubblewrap: the placeholders of the protected names that do not exist
    /// are made (or shared) as their binds are decided, in one step, so that a placeholder
    /// another sandbox just released is not removed under this one. A name that cannot be
    /// created here is dropped from the policy (no sandboxed command could create it).
    #[cfg(target_os = "linux")]
    pub(crate) fn for_bubblewrap(
        profile: Profile,
        settings: &SandboxSettings,
        dirs: &[PathBuf],
        cwd: &Path,
    ) -> Result<Self, ToolError> {
        let mut leases = crate::placeholder::Leases::default();
        let mut failed = Ok(());
        let mut policy = Self::build(profile, settings, dirs, cwd, |decide| {
            let _gate = crate::placeholder::gate();
            let mut binds = decide();
            let wanted: Vec<(PathBuf, crate::placeholder_shape::Shape)> = binds
                .iter()
                .filter_map(|b| match b {
                    Bind::Missing(p, shape) => Some((p.clone(), *shape)),
                    _ => None,
                })
                .collect();
            let (taken, failure) = crate::placeholder::acquire(&wanted);
            binds.retain(|b| match b {
                Bind::Missing(p, _) => taken.holds(p),
                _ => true,
            });
            leases = taken;
            if let Some(e) = failure {
                failed = Err(e);
            }
            binds
        });
        // The leases outlive the gate: dropping them (on failure) may remove placeholders.
        failed?;
        policy.leases = leases;
        Ok(policy)
    }

    /// Builds the policy; `protect` gets the function that decides the protection's binds
    /// and returns the binds to use.
    fn build(
        profile: Profile,
        settings: &SandboxSettings,
        dirs: &[PathBuf],
        cwd: &Path,
        protect: impl FnOnce(&dyn Fn() -> Vec<Bind>) -> Vec<Bind>,
    ) -> Self {
        let jail = profile == Profile::Jail;
        let mode = if jail {
            SandboxMode::ReadOnly
        } else {
            settings.mode
        };
        let (roots, extra) = writable_roots(settings, mode, dirs, cwd);
        let working: Vec<PathBuf> = dirs.iter().filter_map(|d| d.canonicalize().ok()).collect();
        let home = path::home_dir().and_then(|h| h.canonicalize().ok());
        let bases = protection_bases(&working, home.as_ref(), &extra, &roots);
        #[cfg_attr(not(target_os = "linux"), allow(unused_mut))]
        let mut read_only = read_only_paths(settings, home.as_deref(), &extra, &working);
        // A placeholder another sandbox made there (a home inside a writable root gets them)
        // is not bound: it goes when that sandbox ends, and bubblewrap cannot bind what is
        // gone. The protected names of the home are this policy's own placeholders instead.
        #[cfg(target_os = "linux")]
        read_only.retain(|p| !crate::placeholder::marked(p));
        let binds = protect(&|| crate::protect::binds(&bases, &roots, &read_only));
        let mut keep = working.clone();
        keep.extend(roots.iter().cloned());
        if let Ok(c) = cwd.canonicalize() {
            keep.push(c);
        }
        let mut hidden: Vec<PathBuf> = Vec::new();
        if jail {
            hidden.extend(JAIL_HIDDEN.iter().map(PathBuf::from));
            hidden.extend(settings.state_dir.iter().cloned());
            hidden.extend(crate::mask::other_homes(home.as_deref()));
        }
        let masks = crate::mask::masks(
            &settings.deny_read,
            settings.hide_secrets || jail,
            &hidden,
            &crate::mask::Scope {
                dirs: &working,
                cwd,
                home: home.as_deref(),
                keep: &keep,
            },
        );
        // Under Landlock, the directories where missing names are protected are granted
        // entry by entry.
        let bases: Vec<PathBuf> = bases
            .iter()
            .filter(|b| b.project || b.home)
            .map(|b| b.dir.to_path_buf())
            .collect();
        let env = crate::env::scrubbed(std::env::vars_os(), &settings.allow_env, jail);
        let mut policy = SandboxPolicy {
            profile,
            mode,
            network: settings.network && !jail,
            writable_roots: roots,
            protected: Vec::new(),
            binds,
            bases,
            masks,
            // The top-level ones: a `cd` into a subdirectory does not change the policy.
            working: top_level(&working),
            kept_in_tmp: if jail {
                kept_in_tmp(&working, home.as_deref(), &env)
            } else {
                Vec::new()
            },
            env,
            limits: settings.limits,
            #[cfg(target_os = "linux")]
            leases: crate::placeholder::Leases::default(),
        };
        policy.protected = policy.bound_paths();
        policy
    }

    fn bound_paths(&self) -> Vec<PathBuf> {
        self.binds
            .iter()
            .map(|b| b.path().to_path_buf())
            .chain(self.masks.iter().map(|m| m.path().to_path_buf()))
            .collect()
    }

    /// A read-only policy without network, protection or masks (for probes).
    pub(crate) fn bare() -> Self {
        SandboxPolicy {
            profile: Profile::Jail,
            mode: SandboxMode::ReadOnly,
            network: false,
            writable_roots: Vec::new(),
            protected: Vec::new(),
            binds: Vec::new(),
            bases: Vec::new(),
            masks: Vec::new(),
            working: Vec::new(),
            kept_in_tmp: Vec::new(),
            env: Vec::new(),
            limits: ResourceLimits::none(),
            #[cfg(target_os = "linux")]
            leases: crate::placeholder::Leases::default(),
        }
    }

    /// A short description for results: `workspace-write, network off`, `read-only jail,
    /// network off`.
    pub fn describe(&self) -> String {
        if self.profile == Profile::Jail {
            return "read-only jail, network off".to_owned();
        }
        let mode = match self.mode {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::FullAccess => "full-access",
        };
        let net = if self.network { "on" } else { "off" };
        format!("{mode}, network {net}")
    }

    /// The protected paths' binds, parents first.
    pub(crate) fn binds(&self) -> &[Bind] {
        &self.binds
    }

    /// The directories whose own entries must not change.
    pub(crate) fn bases(&self) -> &[PathBuf] {
        &self.bases
    }

    /// What of the host's /tmp a jail keeps, read-only (see [`kept_in_tmp`]).
    pub(crate) fn kept_in_tmp(&self) -> &[PathBuf] {
        &self.kept_in_tmp
    }

    /// The hidden paths.
    pub fn masks(&self) -> &[Mask] {
        &self.masks
    }

    /// Which sockets commands may create.
    #[cfg(target_os = "linux")]
    pub(crate) fn sockets(&self, own_netns: bool) -> Sockets {
        match (self.network, own_netns) {
            (true, _) => Sockets::Host,
            (false, true) => Sockets::Private,
            (false, false) => Sockets::None,
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_jail_keeps_the_top_level_working_home_and_path_directories_in_tmp() -> std::io::Result<()>
    {
        let t = tempfile::Builder::new()
            .prefix("agent-tools-kept-")
            .tempdir_in("/tmp")?;
        let root = t.path().canonicalize()?;
        let (work, home, bin) = (root.join("work"), root.join("home"), root.join("bin"));
        for d in [&work, &home, &bin, &home.join("inner")] {
            std::fs::create_dir_all(d)?;
        }
        // A PATH entry outside /tmp that leads there counts; /usr/bin, a missing entry and a
        // directory inside another kept one do not add a line.
        let outside = tempfile::tempdir_in("/var/tmp")?;
        let link = outside.path().join("bin");
        std::os::unix::fs::symlink(&bin, &link)?;
        let path = format!(
            "/usr/bin:{}:{}:{}",
            link.display(),
            root.join("missing").display(),
            home.join("inner").display()
        );
        let env = vec![("PATH".to_owned(), path)];
        assert_eq!(
            kept_in_tmp(std::slice::from_ref(&work), Some(&home), &env),
            vec![bin, home, work]
        );
        assert!(kept_in_tmp(&[PathBuf::from("/usr")], Some(Path::new("/root")), &[]).is_empty());
        Ok(())
    }

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
    fn policy_protects_existing_and_missing_paths_inside_roots() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().canonicalize()?;
        std::fs::create_dir_all(root.join(".git/hooks"))?;
        std::fs::write(root.join(".git/config"), "")?;
        std::fs::write(root.join(".bashrc"), "")?;
        std::fs::create_dir_all(root.join("src"))?;
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
        for p in [
            ".git",
            ".git/hooks",
            ".git/config",
            ".bashrc",
            ".mcp.json",
            ".claude",
        ] {
            assert!(policy.protected.contains(&root.join(p)), "{p}: {policy:?}");
        }
        assert!(policy.binds().contains(&Bind::Pinned(root.join(".git"))));
        // A shell start-up file is read from home only: no placeholder in a project. (Home's
        // own is protected when home is inside a writable root, as it is when HOME is in the
        // temporary directory: look only inside the project.)
        assert!(
            !policy
                .protected
                .iter()
                .any(|p| p.starts_with(&root) && p.ends_with(".zshrc"))
        );
        // Landlock grants the project entry by entry, without the protected paths.
        let grants = crate::landlock::Grants::of(&policy).write;
        assert!(!grants.contains(&root));
        assert!(grants.contains(&root.join("src")));
        assert!(
            grants.contains(&root.join(".git"))
                || grants.iter().any(|g| g.starts_with(root.join(".git")))
                || !root.join(".git/objects").exists()
        );
        assert!(
            !grants
                .iter()
                .any(|g| g.starts_with(root.join(".git/hooks")) || g == &root.join(".git/config"))
        );
        assert!(!grants.contains(&root.join(".bashrc")));
        assert!(!grants.contains(&root.join(".git")));
        Ok(())
    }
}

/// The writable roots (canonical, none inside another) of a policy in `mode`: the working
/// directories, the temporary directories and the roots the settings name; and, apart, the
/// settings' roots that exist.
fn writable_roots(
    settings: &SandboxSettings,
    mode: SandboxMode,
    dirs: &[PathBuf],
    cwd: &Path,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut roots: Vec<PathBuf> = Vec::new();
    let mut extra: Vec<PathBuf> = Vec::new();
    if mode == SandboxMode::WorkspaceWrite {
        let mut candidates: Vec<PathBuf> = dirs.to_vec();
        candidates.push(std::env::temp_dir());
        candidates.push(PathBuf::from("/tmp"));
        for r in &settings.writable_roots {
            let p = path::resolve(cwd, r);
            if let Ok(c) = p.canonicalize() {
                extra.push(c);
            }
            candidates.push(p);
        }
        for c in candidates {
            // Canonical roots: a symlinked root would otherwise be bound at the link.
            let Ok(c) = c.canonicalize() else { continue };
            if !roots.iter().any(|r| path::is_within(&c, r)) {
                roots.retain(|r| !path::is_within(r, &c));
                roots.push(c);
            }
        }
    }
    (roots, extra)
}

/// The protection's bases: working directories, the home directory and the other writable
/// roots, each once, each inside a writable root. A working directory inside another (the
/// shell's `cd` into a subdirectory) only protects the names that exist there.
fn protection_bases<'a>(
    working: &'a [PathBuf],
    home: Option<&'a PathBuf>,
    extra: &'a [PathBuf],
    roots: &[PathBuf],
) -> Vec<Base<'a>> {
    let mut bases: Vec<Base<'_>> = Vec::new();
    for d in working {
        let nested = working.iter().any(|o| o != d && d.starts_with(o));
        bases.push(Base {
            dir: d,
            project: !nested,
            home: home == Some(d),
        });
    }
    if let Some(h) = home
        && !working.contains(h)
    {
        bases.push(Base {
            dir: h,
            project: false,
            home: true,
        });
    }
    for d in extra {
        if !working.contains(d) && home != Some(d) {
            bases.push(Base {
                dir: d,
                project: false,
                home: false,
            });
        }
    }
    bases.retain(|b| roots.iter().any(|r| path::is_within(b.dir, r)));
    bases
}

/// What is read-only wherever it is (canonical): the files approved configuration names,
/// the state directory, and the home directory's configuration (its dot-entries,
/// `~/.config`, `~/.local`, the XDG base directories), unless a writable root the settings
/// name, or a working directory, lies inside one of them (the person chose to write there).
fn read_only_paths(
    settings: &SandboxSettings,
    home: Option<&Path>,
    extra: &[PathBuf],
    working: &[PathBuf],
) -> Vec<PathBuf> {
    let mut read_only: Vec<PathBuf> = settings.read_only.clone();
    if let Some(state) = &settings.state_dir {
        read_only.push(state.clone());
    }
    if let Some(h) = home {
        read_only.extend(path::protected_home_categories(h));
    }
    read_only
        .iter()
        .filter_map(|p| p.canonicalize().ok())
        .filter(|p| {
            !extra.iter().any(|e| path::is_within(e, p))
                && !working.iter().any(|w| path::is_within(w, p))
        })
        .collect()
}
