//! `cargo xtask schemas`: regenerates the insta snapshots of the tool schemas.
//!
//! Runs every test whose name contains `schema` with `INSTA_UPDATE=always` and
//! `INSTA_FORCE_PASS=1`, so each snapshot is rewritten in place, then lists the `.snap` files
//! git sees as changed. Review them with `git diff` before committing.

use std::path::Path;

use anyhow::{Context, Result};

use crate::cmd::Cmd;

/// The nextest command that rewrites the schema snapshots.
fn regenerate() -> Cmd {
    Cmd::new("cargo")
        .args([
            "nextest",
            "run",
            "--workspace",
            "--all-features",
            "--no-tests=warn",
            "-E",
            "test(/schema/)",
        ])
        .env("INSTA_UPDATE", "always")
        .env("INSTA_FORCE_PASS", "1")
}

fn changed_snapshots() -> Cmd {
    Cmd::new("git").args(["status", "--short", "--untracked-files=all", "--", "*.snap"])
}

/// Regenerates the snapshots and prints what changed.
pub fn run(root: &Path) -> Result<()> {
    let cmd = regenerate();
    println!("$ {cmd}");
    cmd.cwd(root)
        .run()
        .context("regenerating the schema snapshots failed")?;
    let status = changed_snapshots();
    println!("$ {status}");
    let changed = status.cwd(root).stdout_string()?;
    if changed.trim().is_empty() {
        println!("schemas: no snapshot changed");
    } else {
        print!("{changed}");
        println!("schemas: review the changes above with `git diff -- '*.snap'`");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regenerates_with_insta_forced_to_write() {
        assert_eq!(
            regenerate().to_string(),
            "INSTA_UPDATE=always INSTA_FORCE_PASS=1 cargo nextest run --workspace \
             --all-features --no-tests=warn -E 'test(/schema/)'"
        );
        assert_eq!(
            changed_snapshots().to_string(),
            "git status --short --untracked-files=all -- '*.snap'"
        );
    }
}
