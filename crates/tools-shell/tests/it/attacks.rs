//! The shell permissions against an attacker model: generated variants per class, each
//! judged by the permission check and, where it matters, run through the whole execution
//! path, asserting on what is left on disk rather than on messages. Then a differential
//! test: every command the read-only classifier approves is run under `bash -x`, and nothing
//! but the programs it approved may run, and nothing may be written.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;
use tool_core::{AskKind, PermissionDecision, PermissionMode};
use tools_shell::{SandboxSettings, check_command, check_command_with, command_programs};

use crate::{Fixture, default_sandbox};

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum V {
    Allow,
    Ask,
    Deny,
}

fn verdict(d: &PermissionDecision) -> V {
    match d {
        PermissionDecision::Allow => V::Allow,
        PermissionDecision::Ask { .. } => V::Ask,
        PermissionDecision::Deny { .. } => V::Deny,
    }
}

/// The file a program name runs, from `PATH`.
fn which(name: &str) -> std::path::PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap()
}

/// The payloads that write `PWN` if bash ever evaluates them.
const PAYLOADS: &[&str] = &[
    "$(touch PWN)",
    "`touch PWN`",
    "$(touch${IFS}PWN)",
    "$(>PWN)",
    "$(echo>PWN)",
    "$( touch PWN )",
    "$(: ; touch PWN)",
    "$(eval touch PWN)",
];

/// Places where bash evaluates a quoted, literal-looking operand as code.
const EVALUATING: &[&str] = &[
    "test -v 'x[P]'",
    "test -R 'x[P]'",
    "[ -v 'x[P]' ]",
    "[ -R 'x[P]' ]",
    "[[ -v 'x[P]' ]]",
    "[[ -v x[P] ]]",
    "[[ 'x[P]' -eq 1 ]]",
    "[[ 1 -lt 'x[P]' ]]",
    "[[ 'x[P]' -ge 0 && -d . ]]",
    "[[ ! 'x[P]' -ne 1 ]]",
    "printf -v 'a[P]' 1",
    "printf -v a[P] 1",
    "read 'a[P]' <<< 1",
    "let 'x=a[P]'",
    "declare 'a[P]=1'",
    "unset 'a[P]'",
    "echo $((x[P]))",
    "(( x[P] ))",
    "echo ${a[P]}",
    "wait -p 'a[P]'",
    "mapfile -t 'a[P]' < /dev/null",
    "y='a[P]'; echo $((y))",
    "y='a[P]'; [[ $y -eq 1 ]]",
    "y='a[P]'; test -v \"$y\"",
    "echo ok; test -v 'x[P]'",
    "ls | test -v 'x[P]'",
    "cat <<EOF\nP\nEOF",
    "cat <<EOF | wc -l\nline P\nEOF",
    "cat <<-EOF\n\tP\n\tEOF",
];

/// Every combination of an evaluating place and a payload.
fn evaluating_variants() -> Vec<String> {
    let mut out = Vec::new();
    for place in EVALUATING {
        for payload in PAYLOADS {
            out.push(place.replace('P', payload));
        }
    }
    out
}

/// Default, plan and dontAsk modes with no allow rule, and default mode past a deny rule:
/// nothing that evaluates hidden code is approved, and nothing runs headless.
#[tokio::test]
async fn hidden_code_is_never_approved_in_any_mode() {
    let variants = evaluating_variants();
    assert!(variants.len() >= 200, "{}", variants.len());
    for (mode, rules) in [
        (PermissionMode::Default, vec![]),
        (PermissionMode::Plan, vec![]),
        (PermissionMode::DontAsk, vec![]),
        (PermissionMode::Default, vec![("deny", "Bash(rm:*)")]),
    ] {
        let f = Fixture::with(mode, &rules, default_sandbox());
        for cmd in &variants {
            let d = check_command(cmd, &f.ctx, "Bash");
            assert_ne!(verdict(&d), V::Allow, "{cmd:?} in {mode} {rules:?}: {d:?}");
            let r = f.bash(cmd).await;
            assert!(r.is_error, "{cmd:?} in {mode} ran: {}", r.text());
            assert!(
                !f.root.join("PWN").exists(),
                "{cmd:?} in {mode} {rules:?} wrote PWN"
            );
        }
    }
}

/// How `rm` can be spelled.
const RM: &[&str] = &[
    "rm",
    "'rm'",
    "\"rm\"",
    "r''m",
    "r\"\"m",
    "\\rm",
    "$'rm'",
    "$'\\x72m'",
    "$'\\162m'",
    "$'\\u0072m'",
    "$\"rm\"",
    "r\\\nm",
    "{rm,}",
    "/bin/rm",
    "/usr/bin/rm",
    "/bin/r[m]",
    "/usr/bin/../bin/rm",
    "./../../../../../../usr/bin/rm",
];

/// Spellings that survive inside single quotes.
const RM_QUOTABLE: &[&str] = &["rm", "\\rm", "\"rm\"", "/bin/rm", "{rm,}", "r\"\"m"];

/// Wrappers that run their arguments as a command.
const WRAPPERS: &[&str] = &[
    "",
    "env ",
    "/usr/bin/env ",
    "env -i ",
    "env -u HOME ",
    "env A=1 ",
    "nohup ",
    "nohup -- ",
    "nice ",
    "nice -n 1 ",
    "nice -5 ",
    "timeout 5 ",
    "timeout -s KILL 5 ",
    "time ",
    "time -p ",
    "setsid ",
    "setsid -w ",
    "flock /tmp/agent-tools-test.lock ",
    "chroot / ",
    "nsenter -- ",
    "unshare ",
    "taskset 1 ",
    "taskset -c 0 ",
    "setpriv ",
    "setpriv --reuid=0 ",
    "runuser -u root -- ",
    "sudo ",
    "sudo -u root ",
    "sudo -E -- ",
    "doas ",
    "busybox ",
    "command ",
    "command -p ",
    "exec ",
    "exec -a x ",
    "eval ",
    "eval -- ",
    "stdbuf -oL ",
    "ionice -c 3 ",
    "chrt -f 1 ",
    "strace -f -o /dev/null ",
    "xargs -a /dev/null ",
    "unbuffer ",
    "prlimit ",
    "coproc ",
    "nohup nice env timeout 5 ",
];

/// Wrappers that take the command as one string of shell code.
const CODE_WRAPPERS: &[&str] = &[
    "bash -c 'C'",
    "bash -c -- 'C'",
    "sh -c 'C'",
    "dash -ec 'C'",
    "bash -lc 'C'",
    "su -c 'C' root",
    "su root -c 'C'",
    "runuser root -c 'C'",
    "script -qc 'C' /dev/null",
    "script -q -c 'C'",
    "flock /tmp/agent-tools-test.lock -c 'C'",
    "watch -n 1 'C'",
    "eval 'C'",
    "trap 'C' EXIT",
    "trap -- 'C' EXIT",
    "git -c alias.x='!C' x",
    "git rebase --exec 'C' HEAD",
    "git submodule foreach 'C'",
    "env -S 'C'",
    "sg root 'C'",
    "tar --to-command='C' -xf a.tar",
    "rsync -e 'C' a b:",
    "ssh -p 22 host 'C'",
    "man -P 'C' ls",
    "bash -c \"bash -c 'C'\"",
    "sudo -s 'C'",
];

/// Forms whose programs cannot be known before they run.
const DYNAMIC: &[&str] = &[
    "X=rm; $X v",
    "X=rm; ${X} v",
    "$(printf rm) v",
    "`printf rm` v",
    "\"$(echo rm)\" v",
    "bash <<EOF\nrm v\nEOF",
    "sh <<< 'rm v'",
    "printf 'rm v' | bash",
    "echo rm v | sh",
    "bash -s <<< 'rm v'",
    "shopt -s expand_aliases\nalias x=rm\nx v",
    "alias x=rm; x v",
    "git -c core.pager='rm v' log",
    "find . -name v -exec {} \\;",
    "ls | xargs -I{} {} v",
    "bash /dev/stdin <<< 'rm v'",
    "source /dev/stdin <<< 'rm v'",
    ". <(echo rm v)",
    "python3 -c 'import os; os.system(\"rm v\")'",
    "perl -e 'system \"rm v\"'",
    "awk 'BEGIN{system(\"rm v\")}'",
    "sed -n '1e rm v' /etc/hostname",
    "PATH=/tmp:$PATH; ls",
    "BASH_ALIASES[x]=rm; x v",
    "BASH_CMDS[ls]=/bin/rm; ls v",
    "hash -p /bin/rm ls; ls v",
    "LD_PRELOAD=/tmp/x.so ls",
    "a='r'; b='m'; $a$b v",
    "y='a[$(rm v)]'; echo $((y))",
    "coproc X { rm v; }",
    "exec $'\\x72m' v",
    "find . -exec rm {} +",
    "ls | xargs rm",
    "env $(echo rm) v",
    "env 'BASH_FUNC_f%%=() { rm v; }' bash -c f",
    "awk -f /dev/stdin <<< 'BEGIN{system(\"rm v\")}'",
    "ed -s v <<< $'!rm v\\nq'",
    "sqlite3 :memory: '.shell rm v'",
    "socat - EXEC:'rm v'",
    "nc -e /bin/rm 127.0.0.1 9",
    "vim -es -c '!rm v' -c q",
    "echo ${x:=`rm v`}",
    "GIT_SSH_COMMAND='rm v' git fetch origin",
    "PAGER='rm v' git log",
];

fn deny_variants() -> Vec<String> {
    let mut out = Vec::new();
    for w in WRAPPERS {
        for rm in RM {
            out.push(format!("{w}{rm} v"));
        }
    }
    for w in CODE_WRAPPERS {
        for rm in RM_QUOTABLE {
            out.push(w.replace('C', &format!("{rm} v")));
        }
        // Shell code that hides the program once more.
        out.push(w.replace('C', "X=rm; $X v"));
        out.push(w.replace('C', "true && rm v"));
    }
    // Compounds and nesting around the plain form.
    for sep in [" && ", "; ", " | ", " || ", "\n", " & ", " |& "] {
        out.push(format!("echo ok{sep}rm v"));
    }
    for shape in [
        "(rm v)",
        "{ rm v; }",
        "if true; then rm v; fi",
        "for f in v; do rm $f; done",
        "while false; do :; done; rm v",
        "f() { rm v; }; f",
        "echo $(rm v)",
        "echo \"$(rm v)\"",
        "cat <(rm v)",
        "! rm v",
        "case x in x) rm v;; esac",
        "cat <<EOF\n`rm v`\nEOF",
        "cat <<EOF\n$(rm v)\nEOF",
    ] {
        out.push(shape.to_owned());
    }
    out
}

/// With `--deny 'Bash(rm:*)'`, no spelling, wrapper, shell or dynamic form runs `rm`, in
/// any mode, `bypassPermissions` and a blanket allow included.
#[tokio::test]
async fn deny_rules_hold_in_every_mode() {
    let variants = deny_variants();
    assert!(variants.len() >= 700, "{}", variants.len());
    let modes = [
        (
            PermissionMode::BypassPermissions,
            vec![("deny", "Bash(rm:*)")],
        ),
        (PermissionMode::Default, vec![("deny", "Bash(rm:*)")]),
        (PermissionMode::AcceptEdits, vec![("deny", "Bash(rm:*)")]),
        (PermissionMode::Plan, vec![("deny", "Bash(rm:*)")]),
        (PermissionMode::DontAsk, vec![("deny", "Bash(rm:*)")]),
        (
            PermissionMode::Default,
            vec![("deny", "Bash(rm:*)"), ("allow", "Bash")],
        ),
        (
            PermissionMode::BypassPermissions,
            vec![("deny", "Bash(rm *)"), ("allow", "Bash(*)")],
        ),
    ];
    for (mode, rules) in &modes {
        let f = Fixture::with(*mode, rules, default_sandbox());
        for cmd in variants.iter().chain(
            DYNAMIC
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .iter(),
        ) {
            let d = check_command(cmd, &f.ctx, "Bash");
            assert_eq!(verdict(&d), V::Deny, "{cmd:?} in {mode} {rules:?}: {d:?}");
        }
    }
    // Through the whole path in bypass mode: the file survives every one.
    let f = Fixture::with(
        PermissionMode::BypassPermissions,
        &[("deny", "Bash(rm:*)")],
        default_sandbox(),
    );
    let v = f.root.join("v");
    for cmd in variants.iter().chain(
        DYNAMIC
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .iter(),
    ) {
        std::fs::write(&v, "keep").unwrap();
        let r = f.bash(cmd).await;
        assert!(r.is_error, "{cmd:?} ran: {}", r.text());
        assert!(v.exists(), "{cmd:?} removed v");
    }
    // Shell scripts the command runs are read and checked; one written by the same line
    // cannot be known before it runs.
    std::fs::write(f.root.join("clean.sh"), "#!/bin/sh\necho clean\n").unwrap();
    std::fs::write(f.root.join("evil.sh"), "#!/bin/bash\nset -e\nrm v\n").unwrap();
    std::fs::write(f.root.join("plain"), "echo hi; rm v\n").unwrap();
    std::fs::write(f.root.join("nested.sh"), "bash evil.sh\n").unwrap();
    std::fs::write(f.root.join("tool.py"), "#!/usr/bin/env python3\nprint(1)\n").unwrap();
    for (cmd, expected) in [
        ("bash clean.sh", V::Ask),
        ("sh ./clean.sh", V::Ask),
        ("bash evil.sh", V::Deny),
        ("sh -e evil.sh", V::Deny),
        ("source evil.sh", V::Deny),
        (". ./evil.sh", V::Deny),
        ("./evil.sh", V::Deny),
        ("./plain", V::Deny),
        ("bash nested.sh", V::Deny),
        ("printf 'rm v' > x.sh; bash x.sh", V::Deny),
        ("echo 'rm v' | tee x.sh && sh x.sh", V::Deny),
        ("cp evil.sh y.sh; bash y.sh", V::Deny),
        ("cd sub && bash evil.sh", V::Deny),
        ("python3 tool.py", V::Ask),
        ("./tool.py", V::Ask),
    ] {
        let d = check_command(cmd, &f.ctx, "Bash");
        let got = verdict(&d);
        // In bypass mode an ask is allowed by the engine; what matters is the deny.
        assert_eq!(got == V::Deny, expected == V::Deny, "{cmd:?}: {d:?}");
        std::fs::write(&v, "keep").unwrap();
        let r = f.bash(cmd).await;
        if expected == V::Deny {
            assert!(r.is_error, "{cmd:?} ran: {}", r.text());
        }
        assert!(v.exists(), "{cmd:?} removed v");
    }

    // A denied program under another name: a copy, a hard link, a symbolic link, made
    // earlier or on the same line.
    let rm = which("rm");
    std::fs::copy(&rm, f.root.join("copied")).unwrap();
    std::os::unix::fs::symlink(&rm, f.root.join("linked")).unwrap();
    for cmd in [
        "./copied v",
        "./linked v",
        "cp /bin/rm ./xx; ./xx v",
        "ln -s /bin/rm ./yy; ./yy v",
        "install /bin/rm zz && ./zz v",
        "/proc/self/exe -c 'rm v'",
        "echo ${x:=`rm v`}",
        "make -f /dev/stdin <<< $'all:\\n\\trm v'",
        "make --eval=$'all:\\n\\trm v'",
    ] {
        assert_eq!(
            verdict(&check_command(cmd, &f.ctx, "Bash")),
            V::Deny,
            "{cmd:?}"
        );
        std::fs::write(&v, "keep").unwrap();
        let r = f.bash(cmd).await;
        assert!(r.is_error, "{cmd:?} ran: {}", r.text());
        assert!(v.exists(), "{cmd:?} removed v");
    }

    // Without deny rules the dynamic forms ask rather than deny.
    let f = Fixture::with(PermissionMode::Default, &[], default_sandbox());
    for cmd in DYNAMIC {
        assert_eq!(
            verdict(&check_command(cmd, &f.ctx, "Bash")),
            V::Ask,
            "{cmd:?}"
        );
    }
}

/// A deny rule on one program leaves ordinary commands alone (no over-blocking of what the
/// checker fully understands).
#[test]
fn deny_rules_leave_known_programs_alone() {
    let f = Fixture::with(
        PermissionMode::BypassPermissions,
        &[("deny", "Bash(rm:*)")],
        default_sandbox(),
    );
    for cmd in [
        "ls -la",
        "cargo --version",
        "git status && git diff",
        "for i in 1 2 3; do echo $((i*2)); done",
        "RUST_LOG=debug cargo fmt --check",
        "grep -rn 'rm v' src",
        "echo rm",
        "sudo apt-get update",
        "bash build.sh",
        "python3 -m pytest",
        "x=1; echo $x",
        "npm run build && npm test",
        "git commit -m 'rm the old file'",
        "trash-put v",
        "find . -name '*.o' -print",
    ] {
        let d = check_command(cmd, &f.ctx, "Bash");
        assert_ne!(verdict(&d), V::Deny, "{cmd:?}: {d:?}");
    }
    // Runners of the project's own code run what the line does not name (build scripts,
    // recipes, packages' install scripts): under a deny rule they are refused, unlike the
    // reference; without one an allow rule covers them.
    for cmd in [
        "cargo build --release",
        "cargo test",
        "make",
        "make -C sub all",
        "npm install",
        "npx jest",
        "pip install .",
        "go test ./...",
    ] {
        let d = check_command(cmd, &f.ctx, "Bash");
        assert_eq!(verdict(&d), V::Deny, "{cmd:?}: {d:?}");
    }
}

/// Commands the read-only classifier used to approve that write files.
#[tokio::test]
async fn read_only_means_no_write() {
    let f = Fixture::with(PermissionMode::Default, &[], default_sandbox());
    std::fs::write(f.root.join("magic"), "0 string x X\n").unwrap();
    for (cmd, marker) in [
        ("file -C -m magic", "magic.mgc"),
        ("file -Cm magic", "magic.mgc"),
        ("file --compile -m magic", "magic.mgc"),
        ("sort -o OUT magic", "OUT"),
        ("sort -uoOUT magic", "OUT"),
        ("tree -o OUT", "OUT"),
        ("git diff --output=OUT", "OUT"),
        ("date -s 2000-01-01 > /dev/null; touch OUT", "OUT"),
        ("uniq magic OUT", "OUT"),
        ("find . -fprint OUT", "OUT"),
    ] {
        let d = check_command(cmd, &f.ctx, "Bash");
        assert_ne!(verdict(&d), V::Allow, "{cmd:?}: {d:?}");
        let r = f.bash(cmd).await;
        assert!(r.is_error, "{cmd:?}: {}", r.text());
        assert!(!f.root.join(marker).exists(), "{cmd:?} wrote {marker}");
    }
    // A wildcard rule for a reading command does not cover the option that writes.
    let f = Fixture::with(
        PermissionMode::Default,
        &[("allow", "Bash(git diff *)"), ("allow", "Bash(sort:*)")],
        default_sandbox(),
    );
    for (cmd, v) in [
        ("git diff --output=PWN", V::Ask),
        ("git diff -- src", V::Allow),
        ("sort -o PWN a", V::Ask),
        ("sort a", V::Allow),
    ] {
        assert_eq!(verdict(&check_command(cmd, &f.ctx, "Bash")), v, "{cmd:?}");
    }
    // An exact rule is the person's own words.
    let f = Fixture::with(
        PermissionMode::Default,
        &[("allow", "Bash(git diff --output=out.patch)")],
        default_sandbox(),
    );
    assert_eq!(
        verdict(&check_command(
            "git diff --output=out.patch",
            &f.ctx,
            "Bash"
        )),
        V::Allow
    );
}

/// Read deny rules hold for the shell; reads outside the working directories ask.
#[tokio::test]
async fn read_rules_cover_the_shell() {
    let secret = "SECRET-4d2c";
    let f = Fixture::with(
        PermissionMode::Default,
        &[("deny", "Read(.env)"), ("deny", "Read(secrets/**)")],
        default_sandbox(),
    );
    std::fs::write(f.root.join(".env"), format!("KEY={secret}\n")).unwrap();
    std::fs::create_dir_all(f.root.join("secrets")).unwrap();
    std::fs::write(f.root.join("secrets/key"), secret).unwrap();
    std::fs::create_dir_all(f.root.join("src")).unwrap();
    std::fs::write(f.root.join("src/a.rs"), "fn main() {}\n").unwrap();
    let denied = [
        "cat .env",
        "cat ./.env",
        "cat src/../.env",
        "head .env",
        "tail -n 1 .env",
        "base64 .env",
        "od -c .env",
        "strings .env",
        "sort .env",
        "grep KEY .env",
        "grep -r SECRET .",
        "grep -r SECRET",
        "grep -rn SECRET src/..",
        "grep -R SECRET",
        "rg SECRET",
        "rg SECRET .",
        "wc -c < .env",
        "cat < .env",
        "diff .env /dev/null",
        "cp .env leak",
        "cat .e*",
        "cat .en?",
        "cat .[e]nv",
        "cat secrets/key",
        "cat secrets/*",
        "grep -r SECRET secrets",
        "tar -cf - .env",
        "awk 1 .env",
        "sed -n p .env",
        "xxd .env",
        "python3 script.py .env",
        "bash -c 'cat .env'",
        "env cat .env",
        "cat $'.env'",
        "cat '.env'",
        "cat .\\env",
        "cd src && cat ../.env",
        "cd / && grep -r SECRET tmp",
    ];
    for cmd in denied {
        let d = check_command(cmd, &f.ctx, "Bash");
        assert_eq!(verdict(&d), V::Deny, "{cmd:?}: {d:?}");
    }
    // Through the whole path, in bypass mode too: the secret never reaches the output.
    for mode in [PermissionMode::Default, PermissionMode::BypassPermissions] {
        let f2 = Fixture::with(
            mode,
            &[("deny", "Read(.env)"), ("deny", "Read(secrets/**)")],
            default_sandbox(),
        );
        std::fs::write(f2.root.join(".env"), format!("KEY={secret}\n")).unwrap();
        for cmd in denied {
            let r = f2.bash(cmd).await;
            assert!(
                !r.text().contains(secret),
                "{cmd:?} in {mode} leaked: {}",
                r.text()
            );
            assert!(!f2.root.join("leak").exists(), "{cmd:?} copied the secret");
        }
    }
    // Reading what is allowed stays allowed; reading outside the working directories asks.
    for (cmd, v) in [
        ("cat src/a.rs", V::Allow),
        ("grep -rn main src", V::Allow),
        ("ls -la", V::Allow),
        ("cat /etc/passwd", V::Ask),
        ("ls /", V::Ask),
        ("ls ~", V::Ask),
        ("head -n 3 /etc/hostname", V::Ask),
        ("jq -n env", V::Ask),
        ("jq -n '$ENV'", V::Ask),
        ("grep root /etc/passwd", V::Ask),
        ("find / -name x", V::Ask),
        ("cd /etc && cat passwd", V::Ask),
        ("echo .env", V::Allow),
    ] {
        let d = check_command(cmd, &f.ctx, "Bash");
        assert_eq!(verdict(&d), v, "{cmd:?}: {d:?}");
    }
    // A Read allow rule opens a path outside, as it does for the Read tool.
    let f = Fixture::with(
        PermissionMode::Default,
        &[("allow", "Read(//etc/hostname)")],
        default_sandbox(),
    );
    assert_eq!(
        verdict(&check_command("cat /etc/hostname", &f.ctx, "Bash")),
        V::Allow
    );
}

/// Writes to protected paths ask in every mode; Edit deny rules deny.
#[test]
fn protected_paths_and_edit_rules_cover_the_shell() {
    let f = Fixture::with(
        PermissionMode::BypassPermissions,
        &[("deny", "Edit(generated/**)")],
        default_sandbox(),
    );
    for cmd in [
        "echo x > .bashrc",
        "echo x >> .git/config",
        "cp hook .git/hooks/pre-commit",
        "mv x .mcp.json",
        "tee .agent-tools/settings.json < x",
        "touch .zshrc",
        "ln -s /x .gitmodules",
        "rm -rf .git",
        "git config core.fsmonitor 'touch PWN'",
        "git config --global alias.x '!sh'",
        "mkdir .vscode",
        "sed -i s/a/b/ .claude/settings.json",
    ] {
        let d = check_command(cmd, &f.ctx, "Bash");
        assert!(
            matches!(
                d,
                PermissionDecision::Ask {
                    kind: AskKind::SafetyCheck,
                    ..
                }
            ),
            "{cmd:?}: {d:?}"
        );
    }
    for cmd in [
        "echo x > generated/a.rs",
        "rm generated/a.rs",
        "cp x generated/",
    ] {
        assert_eq!(
            verdict(&check_command(cmd, &f.ctx, "Bash")),
            V::Deny,
            "{cmd:?}"
        );
    }
    // Reading protected paths, and writing ordinary ones, is up to the mode.
    for cmd in [
        "cat .git/config",
        "ls .git",
        "git status",
        "echo x > notes.txt",
    ] {
        let d = check_command(cmd, &f.ctx, "Bash");
        assert!(
            matches!(
                d,
                PermissionDecision::Allow
                    | PermissionDecision::Ask {
                        kind: AskKind::Default,
                        ..
                    }
            ),
            "{cmd:?}: {d:?}"
        );
    }
}

/// `dangerouslyDisableSandbox` needs its own approval: no allow rule, read-only command or
/// mode (bypass included) is enough, and settings can forbid it outright.
#[tokio::test]
async fn leaving_the_sandbox_needs_its_own_approval() {
    let rule_sets: &[&[(&str, &str)]] = &[
        &[],
        &[("allow", "Bash")],
        &[("allow", "Bash(*)")],
        &[("allow", "Bash(curl:*)"), ("allow", "Bash(touch:*)")],
        &[("allow", "Bash(touch OUT)")],
        &[("allow", "Bash(ls:*)"), ("allow", "Bash(echo:*)")],
    ];
    let modes = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::BypassPermissions,
        PermissionMode::Plan,
        PermissionMode::DontAsk,
    ];
    let commands = [
        "touch OUT",
        "ls",
        "cat README",
        "curl -s http://127.0.0.1:9/",
        "echo x > OUT",
    ];
    let mut cases = 0;
    for rules in rule_sets {
        for mode in modes {
            let f = Fixture::with(mode, rules, default_sandbox());
            for cmd in commands {
                let d = check_command_with(cmd, &f.ctx, "Bash", true);
                // Plan mode refuses a write outright, which is stricter still.
                let refused_in_plan = mode == PermissionMode::Plan && verdict(&d) == V::Deny;
                assert!(
                    refused_in_plan
                        || matches!(
                            d,
                            PermissionDecision::Ask {
                                kind: AskKind::Unsandboxed,
                                ..
                            }
                        ),
                    "{cmd:?} in {mode} {rules:?}: {d:?}"
                );
                let r = f
                    .call(
                        "Bash",
                        json!({"command": cmd, "dangerouslyDisableSandbox": true}),
                    )
                    .await;
                assert!(r.is_error, "{cmd:?} in {mode} {rules:?} ran: {}", r.text());
                assert!(!f.root.join("OUT").exists(), "{cmd:?} in {mode}");
                cases += 1;
            }
        }
    }
    assert!(cases >= 150);
    // Without the flag the same command is allowed by its rule.
    let f = Fixture::with(
        PermissionMode::Default,
        &[("allow", "Bash(touch:*)")],
        default_sandbox(),
    );
    let r = f.bash("touch OUT").await;
    assert!(!r.is_error, "{}", r.text());
    let f = Fixture::with(
        PermissionMode::BypassPermissions,
        &[],
        SandboxSettings {
            allow_unsandboxed_commands: false,
            ..default_sandbox()
        },
    );
    let d = check_command_with("ls", &f.ctx, "Bash", true);
    assert_eq!(verdict(&d), V::Deny, "{d:?}");
    // With the sandbox off in the settings there is nothing to leave.
    let f = Fixture::with(
        PermissionMode::Default,
        &[("allow", "Bash(ls:*)")],
        SandboxSettings {
            enabled: false,
            ..default_sandbox()
        },
    );
    assert_eq!(
        verdict(&check_command_with("ls", &f.ctx, "Bash", true)),
        V::Allow
    );
}

/// A repeated key in an input is refused, naming the key; neither value runs.
#[tokio::test]
async fn repeated_keys_are_refused() {
    let f = Fixture::new();
    let mut texts: Vec<String> = Vec::new();
    let fields = [
        ("command", "\"touch PWN\"", "\"ls\""),
        ("timeout", "1000", "2000"),
        ("description", "\"a\"", "\"b\""),
        ("run_in_background", "true", "false"),
        ("dangerouslyDisableSandbox", "true", "false"),
    ];
    for (key, a, b) in fields {
        let base = if key == "command" {
            String::new()
        } else {
            "\"command\":\"touch PWN\",".to_owned()
        };
        for spelled in [key.to_owned(), escape_first(key)] {
            texts.push(format!("{{{base}\"{key}\":{a},\"{spelled}\":{b}}}"));
            texts.push(format!("{{\"{spelled}\":{b},{base}\"{key}\":{a}}}"));
            texts.push(format!(
                "{{ {base} \"{key}\" : {a} ,\n \"{spelled}\" : {b} }}"
            ));
        }
    }
    assert!(texts.len() >= 30, "{}", texts.len());
    for text in &texts {
        let input = tool_core::parse_input_text(text).unwrap();
        let r = f.call("Bash", input).await;
        assert!(r.is_error, "{text}: {}", r.text());
        assert!(r.text().contains("appears more than once"), "{}", r.text());
        assert!(!f.root.join("PWN").exists(), "{text}");
    }
    // The same inputs without the repetition run.
    let r = f
        .call(
            "Bash",
            tool_core::parse_input_text(r#"{"command":"echo once"}"#).unwrap(),
        )
        .await;
    assert_eq!(r.text(), "once");
}

/// `command` → `\u0063ommand`: the same key to a JSON parser.
fn escape_first(key: &str) -> String {
    let mut chars = key.chars();
    let first = chars.next().unwrap_or('x');
    format!("\\u{:04x}{}", first as u32, chars.as_str())
}

/// What the read-only classifier must consider: ordinary commands and the shapes attackers
/// hide code in.
fn differential_corpus() -> Vec<String> {
    let mut out: Vec<String> = [
        "ls",
        "ls -la",
        "ls -R dir",
        "cat a.txt",
        "cat a.txt | wc -l",
        "head -n 2 a.txt && tail -n 1 a.txt",
        "grep -n x a.txt",
        "grep -rn x dir",
        "grep -e '$(touch PWN)' a.txt",
        "grep '`touch PWN`' a.txt",
        "echo '$(touch PWN)'",
        "echo \"\\$(touch PWN)\"",
        "printf '%s\\n' '$(touch PWN)'",
        "printf '%b' '\\x41'",
        "test -f a.txt",
        "test -n 'x[$(touch PWN)]'",
        "test 'x[$(touch PWN)]' = y",
        "[ -d dir ] && echo yes",
        "[ 'a[$(touch PWN)]' ]",
        "[[ -f a.txt && -d dir ]]",
        "[[ 'x[$(touch PWN)]' == x* ]]",
        "[[ 1 -eq 1 ]]",
        "[[ 010 -eq 8 ]]",
        "test 1 -lt 2",
        "wc -c a.txt",
        "sort a.txt | uniq -c",
        "cut -d ' ' -f 1 a.txt",
        "tr a-z A-Z < a.txt",
        "find . -name '*.txt'",
        "find dir -type f",
        "stat a.txt",
        "file a.txt",
        "du -sh dir",
        "diff a.txt dir/b.txt",
        "cmp a.txt a.txt",
        "sha256sum a.txt",
        "base64 a.txt",
        "od -c a.txt",
        "nl a.txt",
        "basename /x/y.txt",
        "dirname /x/y.txt",
        "realpath a.txt",
        "pwd",
        "echo hi; echo there",
        "true && false || true",
        "seq 3",
        "expr 1 + 2",
        "date",
        "uname -a",
        "id",
        "whoami",
        "which ls",
        "type ls",
        "cd dir && ls",
        "jq -n 1",
        "jq . data.json",
        "git status",
        "git log --oneline -3",
        "echo $'\\x41'",
        "cat \"a.txt\"",
        "cat 'a.txt' dir/b.txt",
        "echo a\\ b",
        "ls 2>/dev/null",
        "ls > /dev/null 2>&1",
        "timeout 5 cat a.txt",
        "nice -n 5 ls",
        "time ls",
        "nohup ls",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    out.extend(evaluating_variants());
    for w in ["", "timeout 5 ", "nice "] {
        for p in PAYLOADS {
            out.push(format!("{w}test -v 'x[{p}]'"));
            out.push(format!("{w}echo '{p}' | cat"));
        }
    }
    out
}

/// The files of a directory tree with their sizes and modification times.
fn snapshot(root: &Path) -> BTreeMap<String, (u64, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p.clone());
            }
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            out.insert(rel, (meta.len(), meta.modified().unwrap()));
        }
    }
    out
}

/// Every command the classifier approves in default mode with no rules runs under
/// `bash -x`; the trace may show only the programs it approved, and no file may change.
#[test]
fn differential_bash_x() {
    let f = Fixture::with(PermissionMode::Default, &[], default_sandbox());
    let scratch = f.root.join("scratch");
    std::fs::create_dir_all(scratch.join("dir")).unwrap();
    std::fs::write(scratch.join("a.txt"), "b\na\nb\n").unwrap();
    std::fs::write(scratch.join("dir/b.txt"), "x\n").unwrap();
    std::fs::write(scratch.join("data.json"), "{\"a\":1}\n").unwrap();
    // Judge from inside the scratch directory, as the commands will run there.
    f.ctx.set_cwd(&scratch);
    let corpus = differential_corpus();
    assert!(corpus.len() >= 300, "{}", corpus.len());
    let mut approved = 0;
    // Shell keywords and builtins xtrace shows besides programs.
    let always = ["[[", "]]", "[", "test", "(("];
    for cmd in &corpus {
        let d = check_command(cmd, &f.ctx, "Bash");
        if verdict(&d) != V::Allow {
            continue;
        }
        approved += 1;
        let programs = command_programs(cmd)
            .unwrap_or_else(|e| panic!("{cmd:?} was approved but its programs are unknown: {e}"));
        let before = snapshot(&scratch);
        let out = std::process::Command::new("bash")
            .arg("-x")
            .arg("-c")
            .arg(cmd)
            .current_dir(&scratch)
            .env("PS4", "+ ")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let trace = String::from_utf8_lossy(&out.stderr);
        for line in trace.lines().filter(|l| l.starts_with('+')) {
            let line = line.trim_start_matches('+').trim_start();
            let first = line.split([' ', '\t']).next().unwrap_or_default();
            let first = first.trim_matches('\'');
            let ran = first.rsplit('/').next().unwrap_or(first);
            assert!(
                programs.iter().any(|p| p == ran) || always.contains(&ran),
                "{cmd:?} ran `{line}`, not among the approved {programs:?}"
            );
        }
        assert_eq!(before, snapshot(&scratch), "{cmd:?} changed files");
        assert!(!scratch.join("PWN").exists(), "{cmd:?} wrote PWN");
    }
    assert!(approved >= 60, "only {approved} commands were approved");
}
