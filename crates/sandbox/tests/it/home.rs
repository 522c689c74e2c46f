//! Protected paths by category inside the workspace sandbox: with the home directory in a
//! writable root, every dot-entry directly in it, everything under `~/.config` and
//! `~/.local`, the state directory and the files approved configuration names stay
//! read-only — while ordinary files of the home directory and the project stay writable,
//! and a writable root a person named inside a category is theirs to write.

use sandbox::{Profile, SandboxSettings};

use crate::{Site, in_child, mechanisms};

/// Files the attacker wrote in bypass mode, and their kin.
const CONFIG: &[&str] = &[
    ".bashrc",
    ".gitconfig",
    ".gitattributes",
    ".config/git/config",
    ".config/fish/config.fish",
    ".local/bin/git",
    ".local/share/applications/x.desktop",
    ".cargo/config.toml",
    ".ssh/config",
    ".npmrc",
    ".profile",
    ".cache/x/settings",
];

/// Ways to change `{T}`.
const CHANGES: &[&str] = &[
    "echo planted > {T}",
    "echo planted >> {T}",
    "printf planted | tee {T}",
    "rm -f {T}",
    "mv {T} {T}.moved",
    "ln -sf /tmp/evil {T}",
    "/usr/bin/python3 -c \"open('{T}', 'w').write('planted')\"",
];

#[tokio::test]
async fn home_configuration_stays_read_only() {
    // A home directory under /tmp, a writable root of the workspace sandbox.
    let home = tempfile::Builder::new()
        .prefix("agent-tools-home-")
        .tempdir_in("/tmp")
        .unwrap();
    let home_str = home.path().canonicalize().unwrap().display().to_string();
    if !in_child(
        "home::home_configuration_stays_read_only",
        &[("HOME", &home_str)],
    ) {
        return;
    }
    let home = std::path::PathBuf::from(std::env::var("HOME").unwrap());
    for rel in CONFIG {
        let p = home.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "keep").unwrap();
    }
    std::fs::write(home.join("notes.txt"), "keep").unwrap();
    let mut variants = 0;
    for (label, settings) in mechanisms() {
        let site = Site::new();
        let approved = site.project.join("scripts/server.js");
        std::fs::create_dir_all(approved.parent().unwrap()).unwrap();
        std::fs::write(&approved, "keep").unwrap();
        let settings = SandboxSettings {
            read_only: vec![approved.clone()],
            ..settings
        };
        let workspace = site.prepare(Profile::Workspace, &settings);
        assert!(workspace.description.contains("workspace-write"), "{label}");
        let targets: Vec<std::path::PathBuf> = CONFIG
            .iter()
            .map(|r| home.join(r))
            .chain([approved.clone()])
            .collect();
        for target in &targets {
            for change in CHANGES {
                let t = target.display().to_string();
                let command = change.replace("{T}", &t);
                let ran = site.run(&workspace, &command).await;
                variants += 1;
                assert_eq!(
                    std::fs::read_to_string(target).ok().as_deref(),
                    Some("keep"),
                    "{label}: `{command}` changed it: {}",
                    ran.text()
                );
                assert!(
                    !std::path::Path::new(&format!("{t}.moved")).exists(),
                    "{label}: `{command}`"
                );
            }
        }
        // New dot-entries under ~/.config cannot be made either; ordinary files can.
        let ran = site
            .run(
                &workspace,
                &format!("echo x > {}/.config/new-tool.conf", home.display()),
            )
            .await;
        assert!(
            !home.join(".config/new-tool.conf").exists(),
            "{label}: {}",
            ran.text()
        );
        let ran = site
            .run(
                &workspace,
                &format!("echo changed > {}/notes.txt", home.display()),
            )
            .await;
        assert_eq!(ran.finished.code, 0, "{label}: {}", ran.text());
        std::fs::write(home.join("notes.txt"), "keep").unwrap();
        // A writable root the person named inside a category is writable.
        let cache = home.join(".cache/x");
        let named = SandboxSettings {
            writable_roots: vec![cache.display().to_string()],
            ..settings.clone()
        };
        let workspace = site.prepare(Profile::Workspace, &named);
        let ran = site
            .run(
                &workspace,
                &format!("echo changed > {}/settings", cache.display()),
            )
            .await;
        assert_eq!(ran.finished.code, 0, "{label}: {}", ran.text());
        std::fs::write(cache.join("settings"), "keep").unwrap();
    }
    assert!(variants >= 50, "{variants}");
}
