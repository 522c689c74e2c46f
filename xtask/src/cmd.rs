//! Running external commands: a small builder that can print itself (for `--dry-run` and for
//! error messages), plus the workspace and target-directory lookups every subcommand needs.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// How one environment variable is set for a command.
#[derive(Debug, Clone)]
enum EnvOp {
    /// `KEY=value`.
    Set(OsString),
    /// `KEY=dir1:dir2:$KEY` (or just the directories when the variable is unset).
    Prepend(Vec<PathBuf>),
}

/// An external command: program, arguments, environment changes and working directory.
#[derive(Debug, Clone)]
pub struct Cmd {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(String, EnvOp)>,
    cwd: Option<PathBuf>,
}

impl Cmd {
    /// A command running `program`; `cargo` means the cargo that runs us (`$CARGO`).
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Self {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            envs: Vec::new(),
            cwd: None,
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Appends several arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((key.to_owned(), EnvOp::Set(value.as_ref().to_owned())));
        self
    }

    /// Prepends a directory to a `:`-separated path variable such as `PATH`; directories
    /// prepended to one variable come in the order they were given, before its old value.
    pub fn env_prepend_path(mut self, key: &str, dir: impl Into<PathBuf>) -> Self {
        let earlier = self.envs.iter_mut().find_map(|(k, op)| match op {
            EnvOp::Prepend(dirs) if k == key => Some(dirs),
            _ => None,
        });
        match earlier {
            Some(dirs) => dirs.push(dir.into()),
            None => self
                .envs
                .push((key.to_owned(), EnvOp::Prepend(vec![dir.into()]))),
        }
        self
    }

    /// Runs the command in `dir`.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// The `std` command, ready to spawn.
    pub fn to_command(&self) -> Result<Command> {
        let program = if self.program == "cargo" {
            std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
        } else {
            self.program.clone()
        };
        let mut command = Command::new(program);
        command.args(&self.args);
        for (key, op) in &self.envs {
            match op {
                EnvOp::Set(value) => {
                    command.env(key, value);
                }
                EnvOp::Prepend(new) => {
                    let mut dirs = new.clone();
                    if let Some(old) = std::env::var_os(key) {
                        dirs.extend(std::env::split_paths(&old));
                    }
                    let joined = std::env::join_paths(dirs)
                        .with_context(|| format!("cannot prepend {new:?} to ${key}"))?;
                    command.env(key, joined);
                }
            }
        }
        if let Some(dir) = &self.cwd {
            command.current_dir(dir);
        }
        Ok(command)
    }

    /// Runs the command with inherited stdio; fails unless it exits with status 0.
    pub fn run(&self) -> Result<()> {
        let status = self
            .to_command()?
            .status()
            .with_context(|| self.spawn_error())?;
        if !status.success() {
            bail!("`{self}` failed ({status})");
        }
        Ok(())
    }

    /// Runs the command silently; true when it could start and exited with status 0.
    pub fn succeeds_quietly(&self) -> bool {
        let Ok(mut command) = self.to_command() else {
            return false;
        };
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    }

    /// Runs the command and returns its stdout; fails unless it exits with status 0.
    pub fn stdout_string(&self) -> Result<String> {
        let output = self
            .to_command()?
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| self.spawn_error())?;
        if !output.status.success() {
            bail!("`{self}` failed ({})", output.status);
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    fn spawn_error(&self) -> String {
        format!(
            "could not start `{}` (is it installed and on PATH?)",
            self.program.to_string_lossy()
        )
    }
}

/// Prints like a shell command line: `KEY=value program 'arg with spaces'`.
impl fmt::Display for Cmd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(dir) = &self.cwd {
            write!(f, "(cd {} && ", shell_quote(dir.as_os_str()))?;
        }
        for (key, op) in &self.envs {
            match op {
                EnvOp::Set(value) => write!(f, "{key}={} ", shell_quote(value))?,
                EnvOp::Prepend(dirs) => {
                    write!(f, "{key}=")?;
                    for dir in dirs {
                        write!(f, "{}:", shell_quote(dir.as_os_str()))?;
                    }
                    write!(f, "${key} ")?;
                }
            }
        }
        f.write_str(&shell_quote(&self.program))?;
        for arg in &self.args {
            write!(f, " {}", shell_quote(arg))?;
        }
        if self.cwd.is_some() {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn shell_quote(word: &OsStr) -> String {
    let word = word.to_string_lossy();
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@+,%".contains(c));
    if plain {
        word.into_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The workspace root: the nearest ancestor of the current directory holding both a workspace
/// `Cargo.toml` and `xtask/Cargo.toml`, else the parent of this crate's directory.
pub fn workspace_root() -> Result<PathBuf> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    for dir in cwd.ancestors() {
        if is_workspace_root(dir) {
            return Ok(dir.to_path_buf());
        }
    }
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    match manifest_dir.parent() {
        Some(dir) if is_workspace_root(dir) => Ok(dir.to_path_buf()),
        _ => bail!(
            "cannot find the agent-tools workspace root from {}; run `cargo xtask` inside the workspace",
            cwd.display()
        ),
    }
}

fn is_workspace_root(dir: &Path) -> bool {
    dir.join("xtask/Cargo.toml").is_file()
        && std::fs::read_to_string(dir.join("Cargo.toml"))
            .is_ok_and(|text| text.lines().any(|line| line.trim() == "[workspace]"))
}

/// Cargo's target directory: `$CARGO_TARGET_DIR` (relative to the current directory, as cargo
/// reads it) or `<workspace>/target`.
pub fn target_dir(root: &Path) -> Result<PathBuf> {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                Ok(dir)
            } else {
                Ok(std::env::current_dir()
                    .context("cannot read the current directory")?
                    .join(dir))
            }
        }
        _ => Ok(root.join("target")),
    }
}

/// Formats a duration in seconds with one decimal.
pub fn secs(duration: std::time::Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_like_a_shell_command() {
        let cmd = Cmd::new("cargo")
            .env("A", "1")
            .env_prepend_path("PATH", "/x/bin")
            .args(["nextest", "run", "-E", "test(/schema/)"]);
        assert_eq!(
            cmd.to_string(),
            "A=1 PATH=/x/bin:$PATH cargo nextest run -E 'test(/schema/)'"
        );
        assert_eq!(Cmd::new("ls").cwd("/a b").to_string(), "(cd '/a b' && ls)");
    }

    #[test]
    fn quotes_only_when_needed() {
        assert_eq!(shell_quote(OsStr::new("--all-features")), "--all-features");
        assert_eq!(shell_quote(OsStr::new("")), "''");
        assert_eq!(shell_quote(OsStr::new("it's")), r"'it'\''s'");
        assert_eq!(shell_quote(OsStr::new("*.snap")), "'*.snap'");
    }

    #[test]
    fn runs_commands_and_reports_failures() {
        assert!(Cmd::new("true").succeeds_quietly());
        assert!(!Cmd::new("false").succeeds_quietly());
        assert!(!Cmd::new("/nonexistent/program").succeeds_quietly());
        let err = Cmd::new("false").run().unwrap_err().to_string();
        assert!(err.contains("`false` failed"), "{err}");
        let out = Cmd::new("sh")
            .args(["-c", "echo \"$XTASK_T\""])
            .env("XTASK_T", "hello")
            .stdout_string()
            .unwrap();
        assert_eq!(out.trim(), "hello");
    }

    #[test]
    fn prepends_to_path_variables() {
        let out = Cmd::new("sh")
            .args(["-c", "echo \"$PATH\""])
            .env_prepend_path("PATH", "/xtask-test/bin")
            .stdout_string()
            .unwrap();
        assert!(out.starts_with("/xtask-test/bin:"), "{out}");
    }
}
