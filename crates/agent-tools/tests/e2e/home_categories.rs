//! Protected paths by category, not by name: in every mode, bypassPermissions included, the
//! file tools write no dot-entry of the home directory (existing or not), nothing under
//! `~/.config` and `~/.local`, and nothing in the XDG base directories — unless a person's
//! allow rule names the path. The variants are the configuration files real tools read
//! (git, ssh, cargo, npm, pip, shells, editors, gpg, docker, kube, aws, ...), random
//! `~/.X` names, files under `~/.config/*` and `~/.local/bin/*`, the XDG directories, and
//! every one reached through `~`, a symbolic link from the project, a `..` spelling and a
//! case variant. Every check is on the disk: the file is not created or changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::{Project, binary};

/// Configuration files of real tools, relative to the home directory.
const TOOL_FILES: &[&str] = &[
    ".gitconfig",
    ".gitattributes",
    ".gitignore_global",
    ".git-credentials",
    ".ssh/config",
    ".ssh/authorized_keys",
    ".ssh/rc",
    ".ssh/environment",
    ".cargo/config.toml",
    ".cargo/config",
    ".cargo/credentials.toml",
    ".cargo/bin/cargo",
    ".rustup/settings.toml",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    ".pip/pip.conf",
    ".condarc",
    ".bashrc",
    ".bash_profile",
    ".bash_aliases",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".inputrc",
    ".vimrc",
    ".vim/plugin/evil.vim",
    ".emacs",
    ".emacs.d/init.el",
    ".nanorc",
    ".editorconfig",
    ".gnupg/gpg.conf",
    ".gnupg/gpg-agent.conf",
    ".docker/config.json",
    ".kube/config",
    ".aws/config",
    ".aws/credentials",
    ".netrc",
    ".curlrc",
    ".wgetrc",
    ".tmux.conf",
    ".xinitrc",
    ".gemrc",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".terraformrc",
    ".hgrc",
    ".psqlrc",
    ".my.cnf",
];

/// Under `~/.config` and `~/.local`.
const CONFIG_FILES: &[&str] = &[
    ".config/git/config",
    ".config/git/attributes",
    ".config/fish/config.fish",
    ".config/nvim/init.lua",
    ".config/systemd/user/evil.service",
    ".config/autostart/evil.desktop",
    ".config/pip/pip.conf",
    ".config/gh/hosts.yml",
    ".config/gcloud/credentials.db",
    ".config/agent-tools-new/x.json",
    ".local/bin/git",
    ".local/bin/python3",
    ".local/bin/ls",
    ".local/share/applications/evil.desktop",
    ".local/lib/python3.12/site-packages/evil.pth",
    ".local/state/evil",
];

/// Files in each XDG base directory, which the test points outside `~/.`-names.
const XDG: &[(&str, &str)] = &[
    ("XDG_CONFIG_HOME", "xdg-config"),
    ("XDG_DATA_HOME", "xdg-data"),
    ("XDG_STATE_HOME", "xdg-state"),
    ("XDG_CACHE_HOME", "xdg-cache"),
    ("XDG_RUNTIME_DIR", "xdg-runtime"),
];

/// A small deterministic generator for the random names.
fn random_names(n: usize) -> Vec<String> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.";
    (0..n)
        .map(|_| {
            let mut name = String::from(".");
            let len = 1 + (state % 12) as usize;
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                name.push(alphabet[(state % alphabet.len() as u64) as usize] as char);
            }
            if name == ".." || name == "." {
                name.push('x');
            }
            name
        })
        .collect()
}

/// The home directory, the project and the variants: (class, the path the model sends, the
/// file it would reach).
struct Scene {
    project: Project,
    home: PathBuf,
    env: Vec<(String, String)>,
    variants: Vec<(&'static str, String, PathBuf)>,
}

fn scene() -> Scene {
    let project = Project::new(&["src/main.rs = fn main() {}\\n"]);
    let home = project.home().to_path_buf();
    let mut env: Vec<(String, String)> = Vec::new();
    let mut variants: Vec<(&'static str, String, PathBuf)> = Vec::new();
    for rel in TOOL_FILES {
        let target = home.join(rel);
        variants.push(("tool config", format!("~/{rel}"), target.clone()));
        variants.push(("tool config", target.display().to_string(), target));
    }
    for name in random_names(12) {
        let target = home.join(&name);
        variants.push(("random ~/.X", format!("~/{name}"), target));
    }
    for rel in CONFIG_FILES {
        let target = home.join(rel);
        variants.push(("~/.config, ~/.local", target.display().to_string(), target));
    }
    for (var, dir) in XDG {
        let base = home.join(dir);
        env.push(((*var).to_owned(), base.display().to_string()));
        let target = base.join("evil/file.conf");
        variants.push(("XDG base directory", target.display().to_string(), target));
    }
    // A symbolic link in the project to the home directory, and to a dot-file there.
    std::os::unix::fs::symlink(&home, project.root().join("home-link")).unwrap();
    std::os::unix::fs::symlink(home.join(".npmrc"), project.root().join("npmrc-link")).unwrap();
    for rel in [
        ".config/git/config",
        ".bashrc",
        ".local/bin/git",
        ".ssh/config",
    ] {
        let target = home.join(rel);
        variants.push(("symlink", format!("home-link/{rel}"), target));
    }
    variants.push(("symlink", "npmrc-link".to_owned(), home.join(".npmrc")));
    // `..` spellings from the project.
    let ups = "../".repeat(project.root().components().count() - 1);
    for rel in [
        ".gitconfig",
        ".config/git/config",
        ".local/bin/git",
        ".cargo/config.toml",
    ] {
        let target = home.join(rel);
        let spelled = format!(
            "{ups}{}/{rel}",
            home.display().to_string().trim_start_matches('/')
        );
        variants.push(("'..' spelling", spelled, target.clone()));
        variants.push((
            "'..' spelling",
            format!("{}/x/../{rel}", home.display()),
            target,
        ));
    }
    // Case variants: other dot-entries on a case-sensitive file system, protected all the same.
    for rel in [
        ".SSH/config",
        ".Config/git/config",
        ".GITCONFIG",
        ".Local/bin/git",
    ] {
        let target = home.join(rel);
        variants.push(("case variant", format!("~/{rel}"), target));
    }
    // Files that exist already keep their content.
    for rel in [
        ".bashrc",
        ".gitconfig",
        ".config/git/config",
        ".local/bin/git",
    ] {
        let path = home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "original\n").unwrap();
    }
    Scene {
        project,
        home,
        env,
        variants,
    }
}

impl Scene {
    /// A batch with `args`, the test's XDG variables and `calls`.
    fn batch(&self, args: &[&str], calls: &[Value]) -> Vec<Value> {
        let stdin: String = calls.iter().map(|c| format!("{c}\n")).collect();
        let mut child = Command::new(binary())
            .arg("--cwd")
            .arg(self.project.root())
            .args(args)
            .arg("batch")
            .env("AGENT_TOOLS_HOME", &self.home)
            .env("HOME", &self.home)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines.len(),
            calls.len(),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        lines
    }

    /// The state of every variant's file, to compare before and after.
    fn snapshot(&self) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        self.variants
            .iter()
            .map(|(_, _, target)| (target.clone(), std::fs::read(target).ok()))
            .collect()
    }
}

fn writes(path: &str) -> Vec<Value> {
    vec![
        json!({"tool": "Read", "input": {"file_path": path}}),
        json!({"tool": "Write", "input": {"file_path": path, "content": "planted\n"}}),
        json!({"tool": "Edit", "input": {"file_path": path, "old_string": "original", "new_string": "planted"}}),
    ]
}

#[test]
fn no_mode_writes_the_home_directorys_configuration() {
    let s = scene();
    let before = s.snapshot();
    let mut per_class: BTreeMap<&str, usize> = BTreeMap::new();
    for mode in [
        "default",
        "acceptEdits",
        "bypassPermissions",
        "dontAsk",
        "plan",
    ] {
        let calls: Vec<Value> = s.variants.iter().flat_map(|(_, p, _)| writes(p)).collect();
        let lines = s.batch(&["--mode", mode], &calls);
        for (i, (class, spelled, target)) in s.variants.iter().enumerate() {
            for line in &lines[i * 3 + 1..i * 3 + 3] {
                assert_eq!(line["is_error"], true, "{mode} {spelled}: {line}");
            }
            assert_eq!(
                std::fs::read(target).ok(),
                before[target],
                "{mode}: {spelled} reached {}",
                target.display()
            );
            *per_class.entry(class).or_default() += 1;
        }
    }
    assert_eq!(s.snapshot(), before);
    let total: usize = per_class.values().sum();
    eprintln!("home categories refused, per class (x5 modes): {per_class:?}; {total} in all");
    assert!(total >= 250);
}

/// A person's allow rule that names the path lets it be written; a broad one does not,
/// and a project file's rule does not, approved or not.
#[test]
fn a_persons_allow_rule_naming_the_path_lets_it_be_written() {
    let s = scene();
    let home = &s.home;
    let check = |args: &[&str], path: &Path, written: bool| {
        let _ = std::fs::remove_file(path);
        let spelled = path.display().to_string();
        let lines = s.batch(
            args,
            &[json!({"tool": "Write", "input": {"file_path": spelled, "content": "by a person\n"}})],
        );
        assert_eq!(
            path.exists(),
            written,
            "{args:?} {}: {}",
            path.display(),
            lines[0]
        );
    };
    let foo = home.join(".config/foo/bar.toml");
    check(&["--allow", "Edit(~/.config/foo/**)"], &foo, true);
    check(
        &[
            "--allow",
            "Edit(~/.config/**)",
            "--mode",
            "bypassPermissions",
        ],
        &foo,
        true,
    );
    check(&["--allow", "Edit(~/.npmrc)"], &home.join(".npmrc"), true);
    let xdg = PathBuf::from(&s.env[0].1).join("tool/settings.json");
    check(&[], &xdg, false);
    check(
        &["--allow", &format!("Edit(/{}/tool/**)", s.env[0].1)],
        &xdg,
        true,
    );
    // Broad rules name no category.
    check(
        &["--allow", "Edit(~/**)", "--mode", "bypassPermissions"],
        &foo,
        false,
    );
    check(&["--allow", "Edit(//**)"], &home.join(".npmrc"), false);
    check(&["--mode", "bypassPermissions"], &foo, false);
    // User settings are a person's.
    std::fs::write(
        home.join("settings.json"),
        r#"{"permissions":{"allow":["Edit(~/.config/foo/**)"]}}"#,
    )
    .unwrap();
    check(&[], &foo, true);
    std::fs::remove_file(home.join("settings.json")).unwrap();
    // A project file's rule is not, even once approved.
    let settings = s.project.root().join(".agent-tools/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"permissions":{"allow":["Edit(~/.config/foo/**)"]}}"#,
    )
    .unwrap();
    check(&[], &foo, false);
    s.project.trust();
    check(&[], &foo, false);
    check(&["--mode", "bypassPermissions"], &foo, false);
}
