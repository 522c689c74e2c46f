//! A crate outside the workspace that depends on tools-fs alone (without its default
//! features), tool-core, tokio and serde_json, as a user's own program would: it builds
//! offline against the workspace's lock file, runs a Glob and a Read through the pool, and
//! Read refuses an image with the message of a build without image support. Neither
//! `image` nor `lopdf` is in its dependency tree.
//!
//! Its target directory persists beside the tests' own (`<target>/outside-crate`), so a
//! rerun only builds what changed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use crate::{command, run_ok};

/// The program of the outside crate.
const MAIN_RS: &str = r#"//! A program outside the agent-tools workspace, built by the examples' tests.

use std::error::Error;

use serde_json::json;
use tool_core::{ToolContext, ToolPool};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: outside-demo DIR")?;
    let ctx = ToolContext::builder(&dir).build();
    let pool = ToolPool::new(tools_fs::tools());
    let calls = [
        ("Glob", json!({"pattern": "*"})),
        ("Read", json!({"file_path": "notes.txt"})),
        ("Read", json!({"file_path": "pixel.png"})),
    ];
    for (name, input) in calls {
        let result = pool.call(name, input, &ctx).await;
        println!("== {name} error={}\n{}", result.is_error, result.text());
    }
    Ok(())
}
"#;

/// The workspace's root folder.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `<CARGO_TARGET_DIR, else the workspace's target>/outside-crate`.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| workspace().join("target"), PathBuf::from)
        .join("outside-crate")
}

/// The manifest: path dependencies on the two crates, registry ones for the rest, and an
/// empty `[workspace]` so no enclosing workspace claims it.
fn manifest() -> String {
    let crates = workspace().join("crates");
    let path = |name: &str| crates.join(name).display().to_string();
    format!(
        r#"[package]
name = "outside-demo"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
tool-core = {{ path = {tool_core:?} }}
tools-fs = {{ path = {tools_fs:?}, default-features = false }}
tokio = {{ version = "1", features = ["rt-multi-thread", "macros"] }}
serde_json = "1"

[workspace]
"#,
        tool_core = path("tool-core"),
        tools_fs = path("tools-fs"),
    )
}

/// Runs cargo with `args` in `dir`, offline, into the persistent target directory.
fn cargo(dir: &Path, args: &[&str]) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(args)
        .arg("--offline")
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo {args:?} failed: {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn tools_fs_alone_builds_outside_the_workspace_without_image_support() {
    let krate = tempfile::tempdir().unwrap();
    fs::write(krate.path().join("Cargo.toml"), manifest()).unwrap();
    fs::create_dir(krate.path().join("src")).unwrap();
    fs::write(krate.path().join("src/main.rs"), MAIN_RS).unwrap();
    // The workspace's lock file: the same versions, all of them downloaded already.
    fs::copy(
        workspace().join("Cargo.lock"),
        krate.path().join("Cargo.lock"),
    )
    .unwrap();

    let started = Instant::now();
    cargo(krate.path(), &["build", "--quiet"]);
    eprintln!("outside crate built in {:.1?}", started.elapsed());

    // No image or PDF crate anywhere in its tree.
    let tree = cargo(
        krate.path(),
        &["tree", "--edges", "normal,build", "--prefix", "none"],
    );
    let tree = String::from_utf8_lossy(&tree.stdout);
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.contains(&"tools-fs"), "{tree}");
    for banned in ["image", "lopdf"] {
        assert!(!names.contains(&banned), "{banned} in the tree:\n{tree}");
    }

    let project = tempfile::tempdir().unwrap();
    fs::write(project.path().join("notes.txt"), "outside and working\n").unwrap();
    // A PNG's signature and header: enough for Read to take it for an image.
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend_from_slice(&[
        0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89,
    ]);
    fs::write(project.path().join("pixel.png"), png).unwrap();
    let exe = target_dir().join("debug/outside-demo");
    let (stdout, _) =
        run_ok(command(exe.to_str().unwrap(), project.path(), project.path()).arg(project.path()));

    let sections: Vec<&str> = stdout.split("== ").skip(1).collect();
    assert_eq!(sections.len(), 3, "{stdout}");
    assert!(sections[0].starts_with("Glob error=false"), "{stdout}");
    assert!(sections[0].contains("notes.txt") && sections[0].contains("pixel.png"));
    assert!(sections[1].starts_with("Read error=false"), "{stdout}");
    assert!(sections[1].contains("1\toutside and working"), "{stdout}");
    assert!(sections[2].starts_with("Read error=true"), "{stdout}");
    assert!(
        sections[2].contains("this build of the file tools has no image support"),
        "{stdout}"
    );
}
