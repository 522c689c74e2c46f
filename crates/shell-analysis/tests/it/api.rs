//! The public API on the classes of the attacker model: `classify`, `programs`, `analyse`
//! and the deny matching, through wrappers and runners.

use shell_analysis::{Verdict, analyse, classify, programs};

fn check(cmd: &str, expected: &str) {
    let got = match classify(cmd) {
        Verdict::ReadOnly => "read-only",
        Verdict::NeedsApproval { .. } => "approval",
        Verdict::Unresolved(_) => "unresolved",
    };
    assert_eq!(got, expected, "{cmd}: {:?}", classify(cmd));
}

#[test]
fn verdicts() {
    for (cmd, v) in [
        ("ls -la", "read-only"),
        ("git status", "read-only"),
        ("git diff --stat", "read-only"),
        ("git log --oneline -3", "read-only"),
        ("grep -rn foo src", "read-only"),
        ("cat a | sort | uniq -c", "read-only"),
        ("cargo --version", "read-only"),
        ("nice -n 5 ls", "read-only"),
        ("timeout 5 cat f", "read-only"),
        ("exec true", "read-only"),
        ("exec -- ls -la", "read-only"),
        ("exec git status", "read-only"),
        ("exec rm v", "approval"),
        ("exec -a ls busybox rm v", "approval"),
        ("exec -a rm busybox v", "approval"),
        ("exec -aRM busybox v", "approval"),
        ("exec -l ls", "approval"),
        ("exec -c ls", "approval"),
        ("exec -cl ls", "approval"),
        ("exec -- -ls", "approval"),
        ("exec > out.txt", "approval"),
        ("exec ls > out.txt", "approval"),
        ("exec 3< f cat", "approval"),
        ("exec", "approval"),
        ("exec \"$CMD\"", "unresolved"),
        ("rm -rf x", "approval"),
        ("cargo fmt", "approval"),
        ("sort --outp=x f", "approval"),
        ("git stash -m list", "approval"),
        ("git config --file=x a b", "approval"),
        ("sort --compress-prog=gzip f", "approval"),
        ("X=rm; $X v", "unresolved"),
        ("make", "unresolved"),
        ("make -C sub all", "unresolved"),
        ("npm test", "unresolved"),
        ("npm run build", "unresolved"),
        ("npx jest", "unresolved"),
        ("yarn", "unresolved"),
        ("cargo build", "unresolved"),
        ("cargo +nightly test", "unresolved"),
        ("cargo --config 'target.x.runner=\"rm\"' run", "unresolved"),
        ("pip install .", "unresolved"),
        ("go test ./...", "unresolved"),
        ("ls --frobnicate", "unresolved"),
        ("git grep --open=true x", "approval"),
        ("git grep -O x", "unresolved"),
        ("git -c core.pager=less log", "unresolved"),
        ("git --exec-path=. status", "unresolved"),
        ("git clone 'ext::sh -c rm% v' d", "unresolved"),
        ("cd sub && git status", "unresolved"),
        ("tar -xf host:a.tar", "unresolved"),
        ("tar \"$OPTS\" -xf a.tar", "unresolved"),
        ("awk -f prog.awk f", "unresolved"),
        ("sed -f prog.sed f", "unresolved"),
        ("env --split-s='rm v'", "approval"),
        ("timeout --sig=KILL 5 rm v", "approval"),
        ("nice --adj=5 rm v", "approval"),
        ("env --frob rm v", "unresolved"),
        ("ssh -F ./cfg host", "unresolved"),
        ("less -k keys f", "approval"),
        ("rg -n foo src", "read-only"),
        ("rg --pre=cat foo", "approval"),
        ("rg -z foo", "unresolved"),
        ("fd -e rs", "read-only"),
        ("fd -x rm", "approval"),
        ("fd -x {} ';'", "unresolved"),
        ("tree -L 2", "read-only"),
        ("tree -o out", "approval"),
        ("man ls", "read-only"),
        ("man -C cfg ls", "unresolved"),
        ("ps aux", "read-only"),
        ("ps auxe", "approval"),
        ("ps -x1", "unresolved"),
        ("hostname -f", "read-only"),
        ("hostname new", "approval"),
        ("sudo ls", "approval"),
        ("sudo -s", "unresolved"),
        ("sudo -i", "unresolved"),
        ("sudo PATH=. ls", "unresolved"),
        ("sudo A=1 -u root ls", "unresolved"),
        ("sudo -R ./root ls", "unresolved"),
        ("chroot ./root ls", "unresolved"),
        ("chroot / ls", "approval"),
    ] {
        check(cmd, v);
    }
}

#[test]
fn unresolved_names_the_word() {
    for (cmd, word) in [
        ("x=rm; $x v", "$x"),
        ("ls --frobnicate", "ls"),
        ("make all", "make"),
        ("git -c core.fsmonitor=x status", "git -c core.fsmonitor"),
    ] {
        match classify(cmd) {
            Verdict::Unresolved(u) => assert_eq!(u.word, word, "{cmd}: {u:?}"),
            other => panic!("{cmd}: {other:?}"),
        }
    }
}

#[test]
fn deny_matching_sees_through_wrappers() {
    for cmd in [
        "env --split-s='rm v'",
        "env -S'rm v'",
        "timeout --sig=KILL 5 rm v",
        "nice --adj=5 rm v",
        "nice -5 rm v",
        "stdbuf -oL rm v",
        "stdbuf --out=L rm v",
        "ionice --cl=3 rm v",
        "chrt -f 1 rm v",
        "taskset -c 0 rm v",
        "setsid -w rm v",
        "flock /tmp/l rm v",
        "flock /tmp/l -c 'rm v'",
        "flock --conf=3 /tmp/l rm v",
        "xargs --repl=% rm v",
        "xargs -0 rm v",
        "find . -exec rm v ';'",
        "sort --compress-prog='rm v' f",
        "tar --to-com='rm v' -xf a.tar",
        "tar '-Irm v' -xf a",
        "tar xIf 'rm v' a.tar",
        "tar --checkpoint-act='exec=rm v' -cf a .",
        "git grep --open='rm v' x",
        "git grep '-Orm v' x",
        "git ls-remote --upload-pac='rm v' origin",
        "git fetch --upload-p='rm v' origin",
        "rsync --rsh='rm v' a b:",
        "watch -n 1 rm v",
        "watch -x rm v",
        "su -c 'rm v' root",
        "su --comm='rm v' root",
        "time rm v",
        "command rm v",
        "exec rm v",
        "builtin rm v",
        "nohup rm v",
        "man --pag='rm v' ls",
        "man --pager 'rm v' ls",
        "less '+!rm v' f",
        "rg --pre 'rm v' x",
        "rg --hostname-bin='rm v' x",
        "fd -x rm v",
        "fd -x rm v ';' -e rs",
        "fd -Hx rm v",
        "fd -HIx rm v",
        "fdfind --exec rm v",
        "fd -X rm v",
        "fd --exec-batch rm v",
        "sudo rm v",
        "sudo -u root -- rm v",
        "sudo -E rm v",
        "sudo --preserve-env=A rm v",
        "sudo -nu root rm v",
        "sudo A=1 rm v",
        "sudo -s rm v",
        "sudo -i 'rm v'",
        "sudo -- sudo rm v",
    ] {
        let a = analyse(cmd).unwrap_or_else(|e| panic!("{cmd}: {e}"));
        assert!(
            a.find_match(|t| t == "rm v").is_some(),
            "{cmd}: {:?}",
            a.candidates()
                .iter()
                .map(|c| c.deny_texts())
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn programs_with_their_argv() {
    let p = programs("nice -n 5 env grep -n x f | wc -l").unwrap();
    let mut names: Vec<&str> = p.iter().map(|p| p.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["env", "grep", "nice", "wc"], "{p:?}");
    let grep = p.iter().find(|p| p.name == "grep").unwrap();
    assert_eq!(grep.argv, ["grep", "-n", "x", "f"]);
    assert!(programs("$(printf rm) v").is_err());
}

/// fd's command attached to its option is one word, the program: every clap spelling of it
/// is found.
#[test]
fn fd_commands_in_every_clap_spelling() {
    for cmd in [
        "fd -xrm",
        "fd -x=rm",
        "fd --exec=rm",
        "fd -Hxrm",
        "fd -Xrm",
        "fd -X=rm",
        "fd --exec-batch=rm",
    ] {
        let a = analyse(cmd).unwrap_or_else(|e| panic!("{cmd}: {e}"));
        assert!(a.find_match(|t| t == "rm").is_some(), "{cmd}");
        assert_ne!(classify(cmd), Verdict::ReadOnly, "{cmd}");
    }
}
