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
/// bundled, as the program's style reads them (clap's `-x=value`, tree's value after the
/// bundle, fd's command as words up to `;` or its first word attached, ps's BSD letters).
fn spellings(program: &str, opt: &Opt, value: &str) -> Vec<String> {
    let Some(table) = option_table(program) else {
        return Vec::new();
    };
    let style = table.style;
    let quoted = format!("'{value}'");
    let first = value.split(' ').next().unwrap_or(value);
    let words = format!("{value} ';'");
    let flag = table.opts.iter().find_map(|o| {
        o.effects
            .is_empty()
            .then(|| o.short.iter().find(|(_, a)| *a == Arg::None))
            .flatten()
    });
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
                Arg::Words => {
                    out.push(format!("--{prefix}={first}"));
                    out.push(format!("--{prefix} {words}"));
                }
            }
        }
    }
    for (c, arg) in &opt.short {
        match arg {
            Arg::None => out.push(format!("-{c}")),
            Arg::Optional => out.push(format!("'-{c}{value}'")),
            Arg::Required if style.next_word_values => {
                out.push(format!("-{c} {quoted}"));
                if let Some((f, _)) = flag {
                    out.push(format!("-{c}{f} {quoted}"));
                }
            }
            Arg::Required => {
                out.push(format!("-{c} {quoted}"));
                out.push(format!("'-{c}{value}'"));
                if style.equals_short {
                    out.push(format!("'-{c}={value}'"));
                }
            }
            Arg::Words => {
                out.push(format!("-{c} {words}"));
                out.push(format!("-{c}{first}"));
                out.push(format!("-{c}={first}"));
                if let Some((f, _)) = flag {
                    out.push(format!("-{f}{c} {words}"));
                }
            }
        }
    }
    for (c, arg) in &opt.bsd {
        match arg {
            Arg::None => {
                out.push(format!("{c}"));
                out.push(format!("ax{c}"));
            }
            _ => out.push(format!("{c} {quoted}")),
        }
    }
    out
}

/// Whether `rg` on `PATH` is the peers' pinned ripgrep (`cargo xtask peers` installs it in
/// `<peers>/cargo/bin`, which CI puts on `PATH`); says why when it is not (see
/// [`test_support::peers::require`]).
fn peers_rg_on_path() -> bool {
    let Some(pinned) = test_support::peers::path("cargo/bin/rg") else {
        return false;
    };
    test_support::peers::require(
        &format!("{} first on PATH", pinned.display()),
        test_support::peers::on_path("rg").as_deref() == Some(pinned.as_path()),
    )
}

/// What a generated variant of `program` ends with: a pattern fd matches the victim with
/// (so a command fd runs on what it finds reaches it), a file for the others.
fn tail(program: &str) -> &'static str {
    if matches!(program, "fd" | "fdfind") {
        "v"
    } else {
        "a.txt"
    }
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
            // rg runs the program `--pre` and `--hostname-bin` name (one path, no shell) on
            // every file it searches: `rm` removes the victim in any mode it runs in.
            let (value, bypass_value) = if program == "rg" && opt.has(Effect::Run) {
                ("rm".to_owned(), "rm".to_owned())
            } else if opt.has(Effect::Run) {
                (arena.touch(&tag), "rm v".to_owned())
            } else {
                (format!("PWN{n}"), "rm v".to_owned())
            };
            for (s, b) in spellings(program, opt, &value).into_iter().zip(spellings(
                program,
                opt,
                &bypass_value,
            )) {
                let tail = tail(program);
                out.push((
                    format!("{program} {s} {tail}"),
                    format!("{program} {b} {tail}"),
                ));
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

/// The reading programs whose tables are checked against their own help (rg, fd, tree,
/// man, ps, hostname): every flag their table classifies as only reading runs without asking
/// in default mode; under `--deny 'Bash(rm:*)'` in bypass mode, what runs a command is
/// refused (each option in every spelling is the `options_that_run_programs` class) and
/// sudo is unwrapped to the command it runs, the victim intact.
#[test]
fn reading_programs_run_unasked() {
    if !peers_rg_on_path() {
        return;
    }
    let arena = Arena::new();
    let mut cmds = Vec::new();
    for program in ["rg", "fdfind", "tree", "man", "ps", "hostname"] {
        let table = option_table(program).expect("a table");
        let word = program;
        let tail = match program {
            "rg" => "hello a.txt",
            "fdfind" => "a",
            "tree" => "src",
            "man" => "-w ls",
            _ => "",
        };
        for opt in table.opts.iter().filter(|o| o.effects.is_empty()) {
            // man --HANG sleeps an hour and -K reads every manual page: reads, but slow.
            if opt
                .long
                .iter()
                .any(|(l, _)| l == "HANG" || l == "global-apropos")
            {
                continue;
            }
            let flag = opt
                .long
                .iter()
                .find(|(_, a)| *a == Arg::None)
                .map(|(l, _)| format!("--{l}"))
                .or_else(|| {
                    opt.short
                        .iter()
                        .find(|(_, a)| *a == Arg::None)
                        .map(|(c, _)| format!("-{c}"))
                })
                .or_else(|| {
                    opt.bsd
                        .iter()
                        .find(|(_, a)| *a == Arg::None)
                        .map(|(c, _)| c.to_string())
                });
            if let Some(flag) = flag {
                cmds.push(format!("{word} {flag} {tail}"));
            }
        }
    }
    cmds.extend(
        [
            "rg -n -e hello -g '*.txt' .",
            "rg -e=hello --files-with-matches",
            "fdfind -e txt -t f",
            "fdfind -tf -E src a",
            "tree -L 1 -I src",
            "tree -La 1",
            "man -k ls",
            "ps -eo pid,comm",
            "ps -o pid= -p 1",
            "ps axjf",
            "hostname -s",
        ]
        .map(str::to_owned),
    );
    assert!(cmds.len() >= 150, "{}", cmds.len());
    let lines = arena.batch(&["--mode".to_owned(), "default".to_owned()], &cmds);
    for (cmd, line) in cmds.iter().zip(&lines) {
        let out = text(line);
        assert!(
            !out.contains("to approve it") && !out.contains("denied"),
            "{cmd} asked: {out}"
        );
    }
    arena.assert_clean("default", "reading programs", &cmds, &lines);
    eprintln!("reading programs run unasked: {} commands", cmds.len());

    // What runs a command, under a deny rule for rm in bypass mode.
    let refused: Vec<String> = [
        "rg --pre rm a.txt",
        "rg --pre=rm a.txt",
        "rg --hostname-bin=rm --hyperlink-format=default a.txt",
        "rg -z a.txt",
        "fdfind -x rm v ';' v",
        "fdfind -xrm v",
        "fdfind -x=rm v",
        "fdfind --exec=rm v",
        "fdfind -Hx rm v",
        "fdfind --exec-batch rm v",
        "fdfind -X rm v ';' v",
        "fdfind -Xrm v",
        "man -P 'rm v' ls",
        "man --pag='rm v' ls",
        "man -H'rm v' ls",
        "sudo rm v",
        "sudo -u root rm v",
        "sudo -E -- rm v",
        "sudo -nu root rm v",
        "sudo -s 'rm v'",
        "sudo -i 'rm v'",
        "sudo A=1 rm v",
        "sudo A=1 -u root rm v",
        "sudo PATH=/usr/bin rm v",
        "echo 'rm v' | sudo -s",
        "sudo -- sudo rm v",
        "sudo -R / rm v",
        "chroot / rm v",
        "sudo fdfind -x rm v ';' v",
        "nice sudo -u root rm v",
    ]
    .iter()
    .map(|c| (*c).to_owned())
    .collect();
    // Sandboxed (where sudo cannot change user) and with the sandbox off, where every one of
    // them that ran would remove the victim.
    let settings = arena.out().join("no-sandbox.json");
    std::fs::write(&settings, r#"{"sandbox": {"enabled": false}}"#).expect("settings");
    for extra in [
        Vec::new(),
        vec!["--settings".to_owned(), settings.display().to_string()],
    ] {
        let mut flags: Vec<String> = ["--mode", "bypassPermissions", "--deny", "Bash(rm:*)"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        flags.extend(extra);
        let lines = arena.batch(&flags, &refused);
        for (cmd, line) in refused.iter().zip(&lines) {
            assert!(
                text(line).contains("denied"),
                "{cmd} was not refused: {line}"
            );
        }
        arena.assert_clean(
            "bypassPermissions",
            "runners of reading programs",
            &refused,
            &lines,
        );
        assert!(arena.project.root().join("a.txt").exists(), "a.txt removed");
    }
    eprintln!(
        "runners of reading programs refused: {} commands",
        refused.len()
    );
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
