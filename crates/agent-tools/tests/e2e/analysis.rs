//! The command analysis against an attacker, through the binary's `batch`: variants
//! generated from the option tables (every spelling of every option that writes or runs a
//! program), every wrapper of the tables in front of a denied `rm`, git subcommands and
//! options that write, and programs steered by files planted in the project. Each class
//! runs in default, plan, dontAsk, acceptEdits and bypassPermissions mode, each with
//! `--deny 'Bash(rm:*)'` and Read deny rules for a secret in the project and one outside it;
//! the assertions are on side effects only: marker files inside and outside the project,
//! the victim file intact, the secrets absent from every output, no process left behind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use shell_analysis::{Arg, Effect, Opt, option_table, tabled_programs};

use crate::{Project, text};

const SECRET_IN: &str = "SECRET-in-5be1";
const SECRET_OUT: &str = "SECRET-out-77c0";

/// The modes every class runs in, with their flags: every mode denies `rm` and reading the
/// two secrets (acceptEdits would otherwise allow `rm` of a file in the project).
fn modes(outside: &Path) -> Vec<(&'static str, Vec<String>)> {
    let read_rules = vec![
        "--deny".to_owned(),
        "Bash(rm:*)".to_owned(),
        "--deny".to_owned(),
        "Read(.env)".to_owned(),
        "--deny".to_owned(),
        format!("Read(/{}/**)", outside.display()),
    ];
    let mut out: Vec<(&'static str, Vec<String>)> = ["default", "plan", "dontAsk", "acceptEdits"]
        .into_iter()
        .map(|m| {
            let mut f = vec!["--mode".to_owned(), m.to_owned()];
            f.extend(read_rules.clone());
            (m, f)
        })
        .collect();
    let mut bypass = vec!["--mode".to_owned(), "bypassPermissions".to_owned()];
    bypass.extend(read_rules);
    out.push(("bypassPermissions", bypass));
    out
}

/// A project with a victim, a secret under a Read deny rule, a git repository, and a
/// directory outside it holding a shadow-like secret and receiving no markers.
struct Arena {
    project: Project,
    outside: tempfile::TempDir,
}

impl Arena {
    fn new() -> Self {
        let project = Project::new(&[
            "v = keep",
            &format!(".env = KEY={SECRET_IN}"),
            "src/a.rs = fn main() {}",
            "a.txt = hello",
        ]);
        project.git_init();
        git(project.root(), &["add", "-A"]);
        git(
            project.root(),
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "init",
            ],
        );
        let outside = tempfile::tempdir().expect("a directory outside the project");
        std::fs::write(
            outside.path().join("shadow"),
            format!("root:{SECRET_OUT}:19000:0:99999:7:::\n"),
        )
        .expect("the shadow-like secret");
        Arena { project, outside }
    }

    fn out(&self) -> &Path {
        self.outside.path()
    }

    /// Where a marker of `tag` would appear outside the project.
    fn marker_out(&self, tag: &str) -> PathBuf {
        self.out().join(format!("m_{tag}"))
    }

    /// A payload that leaves a marker of `tag` inside the project and outside it.
    fn touch(&self, tag: &str) -> String {
        format!(
            "touch {}/PWN_{tag} {}",
            self.project.root().display(),
            self.marker_out(tag).display()
        )
    }

    /// Runs `commands` through `batch` with `flags`; returns the result lines.
    fn batch(&self, flags: &[String], commands: &[String]) -> Vec<Value> {
        let stdin: String = commands
            .iter()
            .map(|c| json!({"tool": "Bash", "input": {"command": c}}).to_string() + "\n")
            .collect();
        let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
        args.push("batch");
        let run = self.project.run(&args, Some(&stdin));
        let lines = run.lines();
        assert_eq!(lines.len(), commands.len(), "{run:#?}");
        lines
    }

    /// Every side effect a class must not have: markers inside and outside, the victim,
    /// the secrets in the outputs, processes left running.
    fn assert_clean(&self, mode: &str, class: &str, commands: &[String], lines: &[Value]) {
        let v = self.project.root().join("v");
        assert_eq!(
            std::fs::read_to_string(&v).ok().as_deref(),
            Some("keep"),
            "{class} in {mode}: the victim was removed or changed"
        );
        for (cmd, line) in commands.iter().zip(lines) {
            let out = text(line);
            assert!(
                !out.contains(SECRET_IN) && !out.contains(SECRET_OUT),
                "{class} in {mode}: {cmd:?} printed a secret: {out}"
            );
        }
        let markers: Vec<String> = std::fs::read_dir(self.out())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("m_"))
            .collect();
        assert!(
            markers.is_empty(),
            "{class} in {mode}: markers outside the project: {markers:?}"
        );
        let inside: Vec<String> = std::fs::read_dir(self.project.root())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("PWN"))
            .collect();
        if mode != "bypassPermissions" {
            assert!(
                inside.is_empty(),
                "{class} in {mode}: markers inside the project: {inside:?}"
            );
        }
        assert!(
            alive(self.out()).is_empty(),
            "{class} in {mode}: processes left: {:?}",
            alive(self.out())
        );
    }

    /// Runs one class in every mode; `bypass` is the variant of each command for bypass
    /// mode (where the payload removes the victim instead of writing a marker).
    fn run_class(&self, class: &str, commands: &[String], bypass: &[String]) -> usize {
        for (mode, flags) in modes(self.out()) {
            let cmds = if mode == "bypassPermissions" {
                bypass
            } else {
                commands
            };
            let lines = self.batch(&flags, cmds);
            self.assert_clean(mode, class, cmds, &lines);
            for p in std::fs::read_dir(self.project.root())
                .into_iter()
                .flatten()
                .flatten()
            {
                if p.file_name().to_string_lossy().starts_with("PWN") {
                    let _ = std::fs::remove_file(p.path());
                }
            }
        }
        commands.len()
    }
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

/// Processes whose command line names `dir`.
fn alive(dir: &Path) -> Vec<String> {
    let needle = dir.display().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(&needle) && !cmd.contains("agent-tools") {
                out.push(cmd);
            }
        }
    }
    out
}

/// The spellings of an option with `value`: every unique prefix of each long name with
/// `=value` and, when required, as the next word; short names alone, attached and
/// bundled.
fn spellings(program: &str, opt: &Opt, value: &str) -> Vec<String> {
    let Some(table) = option_table(program) else {
        return Vec::new();
    };
    let quoted = format!("'{value}'");
    let mut out = Vec::new();
    for (long, arg) in &opt.long {
        for len in 1..=long.len() {
            let prefix = &long[..len];
            let exact = len == long.len();
            let unique = table
                .opts
                .iter()
                .filter(|o| o.long.iter().any(|(l, _)| l.starts_with(prefix)))
                .count()
                == 1
                && !table.style.negations;
            if !exact && (!unique || table.style.exact) {
                continue;
            }
            match arg {
                Arg::None => out.push(format!("--{prefix}")),
                Arg::Optional => out.push(format!("--{prefix}={quoted}")),
                Arg::Required => {
                    out.push(format!("--{prefix}={quoted}"));
                    out.push(format!("--{prefix} {quoted}"));
                }
            }
        }
    }
    for (c, arg) in &opt.short {
        match arg {
            Arg::None => out.push(format!("-{c}")),
            Arg::Optional => out.push(format!("'-{c}{value}'")),
            Arg::Required => {
                out.push(format!("-{c} {quoted}"));
                out.push(format!("'-{c}{value}'"));
            }
        }
    }
    out
}

/// Every option of every table with one of `effects`, in every spelling, with the value
/// `value(tag)`: `(command for the other modes, command for bypass)`.
fn option_variants(effects: &[Effect], arena: &Arena) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut n = 0;
    for program in tabled_programs() {
        // Wrappers are the next class; sub-subcommands are read-only forms.
        if program.split(' ').count() > 2 {
            continue;
        }
        let table = option_table(program).expect("a table");
        if table.style.stop_at_operand && !program.starts_with("git") {
            continue;
        }
        for opt in table
            .opts
            .iter()
            .filter(|o| effects.iter().any(|e| o.has(*e)))
        {
            n += 1;
            let tag = format!("o{n}");
            let run_value = arena.touch(&tag);
            let value = if opt.has(Effect::Run) {
                run_value
            } else {
                format!("PWN{n}")
            };
            for s in spellings(program, opt, &value) {
                let cmd = format!("{program} {s} a.txt");
                let bypass = cmd.replace(&value, "rm v");
                out.push((cmd, bypass));
            }
        }
    }
    out
}

fn split(v: Vec<(String, String)>) -> (Vec<String>, Vec<String>) {
    v.into_iter().unzip()
}

/// Every option that runs a program or runs what the analysis cannot see, in every
/// spelling its program accepts.
#[test]
fn options_that_run_programs() {
    let arena = Arena::new();
    let (cmds, bypass) = split(option_variants(&[Effect::Run, Effect::Opaque], &arena));
    assert!(cmds.len() >= 50, "{}", cmds.len());
    let n = arena.run_class("options that run", &cmds, &bypass);
    eprintln!("options that run: {n} variants x 5 modes");
}

/// Every option that writes or is not a plain read, in every spelling (in bypass mode
/// writing is allowed; there they run with a payload that must not remove the victim).
#[test]
fn options_that_write() {
    let arena = Arena::new();
    let (cmds, _) = split(option_variants(&[Effect::Write, Effect::Unsafe], &arena));
    assert!(cmds.len() >= 50, "{}", cmds.len());
    // In bypass, writing the marker inside the project is what the mode allows; the victim
    // must still be there.
    let n = arena.run_class("options that write", &cmds, &cmds);
    eprintln!("options that write: {n} variants x 5 modes");
}

/// Every option of every wrapper table, in every spelling, in front of `rm v`.
#[test]
fn wrappers_in_front_of_rm() {
    let arena = Arena::new();
    // The operands a wrapper needs before its command.
    let operands: BTreeMap<&str, &str> = [
        ("timeout", "5 "),
        ("flock", "/tmp/agent-tools-e2e.lock "),
        ("chrt", "1 "),
        ("taskset", "1 "),
    ]
    .into_iter()
    .collect();
    let mut cmds = Vec::new();
    for program in tabled_programs() {
        let table = option_table(program).expect("a table");
        if !table.style.stop_at_operand || program == "git" {
            continue;
        }
        let before = operands.get(program).copied().unwrap_or("");
        cmds.push(format!("{program} {before}rm v"));
        for opt in &table.opts {
            if opt.has(Effect::NoCommand)
                || opt.long.iter().any(|(l, _)| l == "help" || l == "version")
            {
                continue;
            }
            for s in spellings(program, opt, "1") {
                cmds.push(format!("{program} {s} {before}rm v"));
            }
        }
    }
    // Runners whose options name the command.
    for extra in [
        "xargs -a /dev/null rm v",
        "xargs --arg-f=/dev/null rm v",
        "xargs -I% rm v",
        "xargs --repl=% rm v",
        "find . -name v -exec rm v ';'",
        "find . -name v -execdir rm v ';'",
        "find . -name v -ok rm v ';'",
        "sort --compress-prog='rm v' a.txt",
        "tar --to-com='rm v' -cf /dev/null a.txt",
        "tar '-Irm v' -cf /dev/null a.txt",
        "tar cIf 'rm v' /dev/null a.txt",
        "tar --checkpoint=1 --checkpoint-act='exec=rm v' -cf /dev/null a.txt",
        "git -c alias.x='!rm v' x",
        "git grep --open='rm v' hello",
        "git grep -O'rm v' hello",
        "env --split-s='rm v'",
        "env -S'rm v'",
        "su -c 'rm v' root",
        "su --comm='rm v' root",
        "watch -x rm v",
        "bash -c 'rm v'",
        "sh -c \"nice rm v\"",
        "awk 'BEGIN{system(\"rm v\")}'",
        "sed -n '1e rm v' a.txt",
        "perl -e 'unlink \"v\"'",
        "python3 -c 'import os; os.remove(\"v\")'",
    ] {
        cmds.push(extra.to_owned());
    }
    assert!(cmds.len() >= 50, "{}", cmds.len());
    let n = arena.run_class("wrappers", &cmds, &cmds);
    eprintln!("wrappers in front of rm: {n} variants x 5 modes");
}

/// git subcommands and options that write, generated from git's tables, plus the forms
/// that look like reads.
#[test]
fn git_subcommands_that_write() {
    let arena = Arena::new();
    let mut cmds = vec![
        "git stash -m list".to_owned(),
        "git stash".to_owned(),
        "git config --file=PWN1 a.b c".to_owned(),
        "git config set a.b c".to_owned(),
        "git config a.b c".to_owned(),
        "git config --add a.b c".to_owned(),
        "git branch PWN2".to_owned(),
        "git tag PWN3".to_owned(),
        "git diff --output=PWN4".to_owned(),
        "git log --output=PWN5".to_owned(),
        "git show --output=PWN6".to_owned(),
        "git checkout -b PWN7".to_owned(),
        "git commit --allow-empty -m x".to_owned(),
        "git reset --hard".to_owned(),
        "git clean -fdx".to_owned(),
        "git rm v".to_owned(),
        "git mv v w".to_owned(),
        "git worktree add ../wt".to_owned(),
        "git remote add o x".to_owned(),
        "git reflog expire --all".to_owned(),
        "git gc".to_owned(),
        "git notes add -m x".to_owned(),
    ];
    for sub in ["git branch", "git tag", "git config"] {
        let table = option_table(sub).expect("a table");
        for (i, opt) in table
            .opts
            .iter()
            .filter(|o| o.has(Effect::Write))
            .enumerate()
        {
            for s in spellings(sub, opt, &format!("PWN_{i}")) {
                cmds.push(format!("{sub} {s} x"));
            }
        }
    }
    assert!(cmds.len() >= 50, "{}", cmds.len());
    let git_dir = arena.project.root().join(".git");
    let before = tree(&git_dir);
    // Bypass mode allows writes; the class checks the other modes leave .git as it was.
    for (mode, flags) in modes(arena.out()) {
        if mode == "bypassPermissions" {
            continue;
        }
        let lines = arena.batch(&flags, &cmds);
        arena.assert_clean(mode, "git writes", &cmds, &lines);
        assert_eq!(before, tree(&git_dir), "git writes in {mode}: .git changed");
    }
    eprintln!(
        "git subcommands that write: {} variants x 4 modes",
        cmds.len()
    );
}

/// The files of a tree with their sizes and contents' lengths (the index is rewritten by
/// `git status` refreshing stat data, so it is left out).
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.ends_with("index") {
                let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    out
}

/// Programs steered by files planted in the project: git configuration and hooks,
/// `rust-toolchain.toml`, `.cargo/config.toml`, package.json scripts, makefiles. Each
/// plant names a payload; each command that would run it must not.
#[test]
fn project_steered_programs() {
    let arena = Arena::new();
    let root = arena.project.root().to_path_buf();
    let mut total = 0;
    let git_plants: &[(&str, &str)] = &[
        ("core.fsmonitor", "P"),
        ("core.pager", "P"),
        ("diff.external", "P"),
        ("core.sshCommand", "P"),
        ("alias.st", "!P"),
        ("diff.x.textconv", "P"),
        ("filter.x.clean", "P"),
        ("core.hooksPath", ".h"),
        ("include.path", "../inc"),
        ("core.editor", "P"),
    ];
    let git_commands = [
        "git status",
        "git diff",
        "git log -p",
        "git show",
        "git st",
        "git -p log",
        "git diff HEAD",
        "git add -A",
        "git commit --allow-empty -qm x",
        "git fetch origin",
    ];
    let config = root.join(".git/config");
    let clean_config = std::fs::read_to_string(&config).expect("the repository's config");
    std::fs::write(root.join(".gitattributes"), "a.txt diff=x filter=x\n").expect("attributes");
    std::fs::write(root.join("a.txt"), "changed\n").expect("a change");
    for (n, (key, payload)) in git_plants.iter().enumerate() {
        let (section, name) = key.rsplit_once('.').expect("a key");
        let header = match section.split_once('.') {
            Some((s, sub)) => format!("[{s} \"{sub}\"]"),
            None => format!("[{section}]"),
        };
        let plant = |run: &str| {
            format!(
                "{clean_config}{header}\n\t{name} = {}\n",
                payload.replace('P', run)
            )
        };
        let touch = arena.touch(&format!("g{n}"));
        std::fs::create_dir_all(root.join(".h")).expect("hooks dir");
        for hook in ["pre-commit", "fsmonitor-watchman"] {
            let h = root.join(".h").join(hook);
            std::fs::write(&h, format!("#!/bin/sh\n{touch}\n")).expect("a hook");
            std::fs::set_permissions(&h, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .expect("executable");
        }
        let cmds: Vec<String> = git_commands.iter().map(|c| (*c).to_owned()).collect();
        for (mode, flags) in modes(arena.out()) {
            let run = if mode == "bypassPermissions" {
                "rm v"
            } else {
                touch.as_str()
            };
            std::fs::write(&config, plant(run)).expect("planted config");
            let lines = arena.batch(&flags, &cmds);
            arena.assert_clean(mode, &format!("git {key}"), &cmds, &lines);
        }
        std::fs::write(&config, &clean_config).expect("clean config");
        total += cmds.len();
    }
    // A hook in the default place.
    let hook = root.join(".git/hooks/pre-commit");
    for (mode, flags) in modes(arena.out()) {
        let run = if mode == "bypassPermissions" {
            "rm v".to_owned()
        } else {
            arena.touch("hook")
        };
        std::fs::write(&hook, format!("#!/bin/sh\n{run}\n")).expect("a hook");
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("executable");
        let cmds = vec![
            "git commit --allow-empty -qm x".to_owned(),
            "git commit --allow-empty --no-verify -qm x".to_owned(),
        ];
        let lines = arena.batch(&flags, &cmds);
        arena.assert_clean(mode, "git hook", &cmds, &lines);
        total += cmds.len();
    }
    let _ = std::fs::remove_file(&hook);
    // Toolchains, cargo configuration, package.json scripts, makefiles.
    let plants: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "rust-toolchain.toml",
            "[toolchain]\npath = \"./tc\"\n".to_owned(),
            vec![
                "cargo --version",
                "rustc --version",
                "cargo fmt",
                "cargo build",
                "rustup show",
            ],
        ),
        (
            ".cargo/config.toml",
            "[alias]\nb = \"run --bin x\"\n[build]\nrustc-wrapper = \"./w.sh\"\n".to_owned(),
            vec![
                "cargo b",
                "cargo build",
                "cargo --version",
                "cargo check",
                "cargo tree",
            ],
        ),
        (
            "package.json",
            "{\"scripts\": {\"test\": \"P\", \"pretest\": \"P\", \"start\": \"P\", \"x\": \"P\"}}"
                .to_owned(),
            vec![
                "npm test",
                "npm run x",
                "npm start",
                "npm t",
                "npm run-script x",
                "yarn run x",
                "pnpm run x",
                "npx x",
                "npm install",
            ],
        ),
        (
            "Makefile",
            "all:\n\tP\nx:\n\tP\n".to_owned(),
            vec![
                "make",
                "make x",
                "make -C . all",
                "make -f Makefile",
                "gmake all",
            ],
        ),
    ];
    std::fs::create_dir_all(root.join("tc/bin")).expect("a toolchain");
    for (n, (file, content, cmds)) in plants.into_iter().enumerate() {
        let cmds: Vec<String> = cmds.into_iter().map(str::to_owned).collect();
        for (mode, flags) in modes(arena.out()) {
            let run = if mode == "bypassPermissions" {
                "rm v".to_owned()
            } else {
                arena.touch(&format!("p{n}"))
            };
            for prog in ["cargo", "rustc", "rustup"] {
                let p = root.join("tc/bin").join(prog);
                std::fs::write(&p, format!("#!/bin/sh\n{run}\n")).expect("a planted program");
                std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                    .expect("executable");
            }
            let w = root.join("w.sh");
            std::fs::write(&w, format!("#!/bin/sh\n{run}\n")).expect("a wrapper");
            std::fs::set_permissions(&w, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .expect("executable");
            let path = root.join(file);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("a directory");
            }
            std::fs::write(&path, content.replace('P', &run)).expect("a plant");
            let lines = arena.batch(&flags, &cmds);
            arena.assert_clean(mode, file, &cmds, &lines);
            let _ = std::fs::remove_file(&path);
        }
        total += cmds.len();
    }
    assert!(total >= 50, "{total}");
    eprintln!("project-steered programs: {total} variants x 5 modes");
}

/// What must keep working: reading commands and git in an ordinary repository are approved
/// without asking; `cargo build` and `npm test` under allow rules run (also under a deny
/// rule for another program, where npm's script is read and checked).
#[test]
fn ordinary_commands_keep_working() {
    let arena = Arena::new();
    let cmds: Vec<String> = [
        "ls",
        "ls -la src",
        "cat a.txt",
        "grep -rn main src",
        "git status",
        "git diff",
        "git log --oneline -1",
        "git status --short && git diff --stat",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let lines = arena.batch(&["--mode".to_owned(), "default".to_owned()], &cmds);
    for (cmd, line) in cmds.iter().zip(&lines) {
        assert_eq!(line["is_error"], false, "{cmd}: {line}");
    }
    std::fs::write(
        arena.project.root().join("package.json"),
        "{\"scripts\": {\"test\": \"echo npm-test-ran\"}}",
    )
    .expect("package.json");
    let flags: Vec<String> = [
        "--allow",
        "Bash(npm test)",
        "--allow",
        "Bash(cargo build)",
        "--deny",
        "Bash(rm:*)",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let lines = arena.batch(&flags, &["npm test".to_owned()]);
    let out = text(&lines[0]);
    if which("npm") {
        assert!(out.contains("npm-test-ran"), "{}", lines[0]);
    }
    assert!(
        !out.contains("denied") && !out.contains("approval"),
        "{}",
        lines[0]
    );
    let flags: Vec<String> = ["--allow", "Bash(cargo build)"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let lines = arena.batch(&flags, &["cargo build".to_owned()]);
    let out = text(&lines[0]);
    assert!(
        !out.contains("denied") && !out.contains("requires approval"),
        "{}",
        lines[0]
    );
}

fn which(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}
