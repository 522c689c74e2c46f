//! Containment, against an attacker inside the sandbox, under bubblewrap and under Landlock:
//! a command cannot create, replace, rename or swap for a link a protected name (existing or
//! not), holds and can use no privilege (no capability, no mount, no new namespace, no
//! `ptrace`), reaches neither the host's network nor a host Unix socket while the network
//! is off (the sandbox's own loopback still works under bubblewrap), and cannot read what
//! Read deny rules and the credential defaults hide; the placeholders leave no trace. Every
//! point is checked on the file system and in the process table, not only in messages, and
//! in every launch path: the persistent sandbox, a background task, and a sandbox whose
//! filter bubblewrap applies itself (no supervisor program).
//!
//! The scenario runs in a child process of this test binary, so that it has a home directory
//! of its own and its own choice of supervisor program: as this user, as this user without a
//! supervisor program, and as an unprivileged user (`setpriv` to `nobody` when the tests run
//! as root).

use std::collections::BTreeMap;
use std::io::Read as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use tool_core::PermissionMode;
use tools_shell::{Mechanism, SandboxMode, SandboxSettings};

use crate::{Fixture, data_str, processes_with, require};

/// Set in the child that runs the scenario.
const CHILD: &str = "AGENT_TOOLS_CONTAINMENT";
/// The supervisor program the child registers, or `none`.
const PROGRAM: &str = "AGENT_TOOLS_CONTAINMENT_PROGRAM";
/// The Python every check uses (not a shim under root's home: the unprivileged user runs it).
const PYTHON: &str = "/usr/bin/python3";

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Runs the scenario in a child: as `nobody` with `unprivileged` (when this is root), with
/// the supervisor program or without one.
fn run_child(unprivileged: bool, with_program: bool) {
    let dir = tempfile::Builder::new()
        .prefix("agent-tools-containment-")
        .tempdir()
        .unwrap();
    let home = dir.path().join("home");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let mut exe = std::env::current_exe().unwrap();
    let mut program = PathBuf::from(env!("CARGO_BIN_EXE_agent-tools-sandbox-supervisor"));
    let as_nobody = unprivileged && is_root();
    if as_nobody {
        // The unprivileged user needs to reach both binaries and own its home.
        let reachable = |p: &Path| {
            Command::new("setpriv")
                .args([
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    "test",
                    "-x",
                ])
                .arg(p)
                .status()
                .is_ok_and(|s| s.success())
        };
        for p in [&mut exe, &mut program] {
            if !reachable(p) {
                let copy = dir.path().join(p.file_name().unwrap());
                std::fs::copy(&*p, &copy).unwrap();
                *p = copy;
            }
        }
        for d in [dir.path(), &home, &tmp] {
            std::os::unix::fs::chown(d, Some(65534), Some(65534)).unwrap();
        }
    }
    let mut cmd = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&exe);
        c
    } else {
        Command::new(&exe)
    };
    cmd.args([
        "--exact",
        "containment::scenario",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, "1")
    .env("HOME", &home)
    .env("TMPDIR", &tmp)
    .env(
        PROGRAM,
        if with_program {
            program.as_os_str()
        } else {
            "none".as_ref()
        },
    );
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the scenario failed:\n{text}");
    assert!(
        text.contains("1 passed"),
        "the scenario did not run:\n{text}"
    );
    // Every mechanism this process can use was exercised by the child (the unprivileged
    // one may lack some: it says why it skipped, and fails under AGENT_TOOLS_REQUIRE_PEERS).
    if !as_nobody {
        for (name, present) in [
            ("Bubblewrap", tools_shell::bubblewrap().is_some()),
            ("Landlock", tools_shell::landlock_available()),
        ] {
            assert!(
                !present || text.contains(&format!("{name}: contained")),
                "{name} was not exercised:\n{text}"
            );
        }
    } else {
        eprintln!("{text}");
    }
    // Nothing of the child's sandboxes is left running (they bound its temporary
    // directories).
    assert_eq!(
        processes_with(&tmp.display().to_string()),
        Vec::<u32>::new()
    );
}

#[test]
fn contained_as_this_user() {
    run_child(false, true);
}

#[test]
fn contained_without_a_supervisor_program() {
    run_child(false, false);
}

#[test]
fn contained_as_an_unprivileged_user() {
    if is_root() && !require("setpriv", Path::new("/usr/bin/setpriv").exists()) {
        return;
    }
    run_child(true, true);
}

/// The scenario itself; does nothing unless started by `run_child`.
#[tokio::test]
async fn scenario() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    // First registration wins: a missing file stands for "no supervisor program".
    match std::env::var(PROGRAM).as_deref() {
        Ok("none") | Err(_) => tools_shell::set_supervisor_program("/nonexistent/supervisor"),
        Ok(p) => tools_shell::set_supervisor_program(p),
    }
    if !require("python3", Path::new(PYTHON).exists()) {
        return;
    }
    for mechanism in [Mechanism::Bubblewrap, Mechanism::Landlock] {
        let present = match mechanism {
            Mechanism::Bubblewrap => tools_shell::bubblewrap().is_some(),
            _ => tools_shell::landlock_available(),
        };
        if !require(&format!("{mechanism:?}"), present) {
            continue;
        }
        protected_names(mechanism).await;
        no_privilege(mechanism).await;
        no_host_network(mechanism).await;
        hidden_paths(mechanism).await;
        background_tasks_too(mechanism).await;
        eprintln!("{mechanism:?}: contained");
    }
}

fn settings(mechanism: Mechanism, network: bool) -> SandboxSettings {
    SandboxSettings {
        mechanism,
        mode: SandboxMode::WorkspaceWrite,
        network,
        ..SandboxSettings::default()
    }
}

fn fixture(mechanism: Mechanism, rules: &[(&str, &str)]) -> Fixture {
    Fixture::with(
        PermissionMode::BypassPermissions,
        rules,
        settings(mechanism, false),
    )
}

/// Whether `p` is one of the sandbox's placeholders (which stand for a missing name; a
/// sandbox of its own per command makes and removes them around each command).
fn placeholder(p: &Path) -> bool {
    let mut buf = [0_u8; 8];
    rustix::fs::lgetxattr(p, "user.agent-tools.placeholder", &mut buf[..]).is_ok()
}

/// What a path is: missing (or a placeholder), a link and its target, a file's inode and
/// content, or a directory's inode and entries.
fn fingerprint(p: &Path) -> String {
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return "missing".to_owned();
    };
    if placeholder(p) {
        return "missing".to_owned();
    }
    if meta.file_type().is_symlink() {
        return format!("link {:?}", std::fs::read_link(p).ok());
    }
    if meta.is_dir() {
        let mut names: Vec<String> = std::fs::read_dir(p)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        return format!("dir {} {names:?}", meta.ino());
    }
    let content = std::fs::read(p).unwrap_or_default();
    format!(
        "file {} {:?}",
        meta.ino(),
        String::from_utf8_lossy(&content)
    )
}

/// The protected paths of a project, and inside its `.git` (whose other contents stay
/// writable: only its identity is compared).
const WATCHED: &[&str] = &[
    ".git",
    ".agent-tools",
    ".claude",
    ".vscode",
    ".idea",
    ".mcp.json",
    ".gitmodules",
    ".git/config",
    ".git/hooks",
    ".git/commondir",
    ".git/config.worktree",
    ".git/hooks/pre-commit",
    ".vscode/settings.json",
];

fn snapshot(root: &Path) -> BTreeMap<&'static str, String> {
    WATCHED
        .iter()
        .map(|w| {
            let p = root.join(w);
            let f = if *w == ".git" {
                std::fs::symlink_metadata(&p).map_or("missing".to_owned(), |m| {
                    format!("{:?} {}", m.file_type(), m.ino())
                })
            } else {
                fingerprint(&p)
            };
            (*w, f)
        })
        .collect()
}

/// What an attacker tries on the protected name `name` (a file or a directory).
fn attacks(name: &str) -> Vec<String> {
    vec![
        format!("echo evil > {name}"),
        format!("echo evil >> {name}"),
        format!("mkdir -p {name}/x"),
        format!("echo evil > {name}/settings.json"),
        format!("touch {name}"),
        format!("rm -rf {name}"),
        format!("mv {name} moved.tmp"),
        format!("echo evil > new.tmp && mv -f new.tmp {name}"),
        format!("mkdir -p dir.tmp/x && mv -fT dir.tmp {name}"),
        format!("ln -sfn /tmp {name}"),
        format!("ln -s /tmp {name}"),
        format!("echo evil > new.tmp && ln -f new.tmp {name}"),
        format!("cp -a {name} copy.tmp; rm -rf {name}; mv copy.tmp {name}"),
        format!("{PYTHON} -c \"open('{name}', 'w').write('evil')\""),
        format!("{PYTHON} -c \"import os; os.rename('{name}', 'py.tmp')\""),
        format!("{PYTHON} -c \"import os; os.mkdir('{name}')\""),
    ]
}

/// What an attacker tries on git.
fn git_attacks() -> Vec<String> {
    [
        "mv .git .git-old && cp -a .git-old .git && echo '[core] fsmonitor = touch PWNED' >> .git/config",
        "echo '[core] fsmonitor = touch PWNED' >> .git/config",
        "git config core.fsmonitor 'touch PWNED'",
        "git config core.hooksPath /tmp",
        "printf '#!/bin/sh\\ntouch PWNED\\n' > .git/hooks/pre-commit",
        "chmod +x .git/hooks/pre-commit",
        "ln -s /tmp/evil .git/hooks/post-checkout",
        "rm -rf .git/hooks",
        "mv .git/hooks .git/hooks-old",
        "echo /tmp > .git/commondir",
        "printf '[core]\\nhooksPath = /tmp\\n' > .git/config.worktree",
        "mv .git/config .git/config.old",
        "echo 'gitdir: /tmp' > .git.tmp && mv -f .git.tmp .git",
        "rm -rf .git",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

async fn protected_names(mechanism: Mechanism) {
    let label = format!("{mechanism:?}");
    let f = fixture(mechanism, &[]);
    let root = f.root.clone();
    // A repository with a hook and an editor folder; the other names are missing.
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(&root)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    let hook = root.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(root.join(".vscode")).unwrap();
    std::fs::write(root.join(".vscode/settings.json"), "{}").unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    let missing_at_start: Vec<&str> = WATCHED
        .iter()
        .copied()
        .filter(|w| !root.join(w).exists())
        .collect();

    // Ordinary work goes on: files anywhere else, and (under bubblewrap, where `.git`
    // stays writable) git commits.
    let r = f.bash("echo ok > src/ok.txt && cat src/ok.txt").await;
    assert_eq!(r.text(), "ok", "{label}: {}", r.text());
    if mechanism == Mechanism::Bubblewrap {
        let r = f
            .bash("git add -A && git -c user.name=t -c user.email=t@t commit -qm work && git log --oneline | wc -l")
            .await;
        assert_eq!(r.text(), "1", "{label}: {}", r.text());
        let r = f
            .bash("mkdir top && echo x > top/a && echo x > top.txt")
            .await;
        assert!(!r.is_error, "{label}: {}", r.text());
    }
    let before = snapshot(&root);
    let mut commands: Vec<String> = Vec::new();
    for name in [
        ".git",
        ".agent-tools",
        ".claude",
        ".vscode",
        ".idea",
        ".mcp.json",
        ".gitmodules",
    ] {
        commands.extend(attacks(name));
    }
    commands.extend(git_attacks());
    for cmd in &commands {
        let _ = f.bash(cmd).await;
        assert_eq!(
            snapshot(&root),
            before,
            "{label}: `{cmd}` changed a protected path"
        );
        // What the attack left beside them goes, so the next one starts afresh.
        for t in [
            "moved.tmp",
            "new.tmp",
            "dir.tmp",
            "copy.tmp",
            "py.tmp",
            ".git-old",
            ".git.tmp",
        ] {
            let p = root.join(t);
            let _ = std::fs::remove_file(&p);
            let _ = std::fs::remove_dir_all(&p);
        }
    }
    assert!(!root.join("PWNED").exists());

    // The host's git runs nothing planted (the attacks may have emptied the repository).
    let _ = Command::new("git")
        .args(["status", "--short"])
        .current_dir(&root)
        .output();
    assert!(!root.join("PWNED").exists());

    // The session ends: every placeholder goes, and nothing else is left.
    let Fixture {
        _dir, pool, ctx, ..
    } = f;
    drop(pool);
    drop(ctx);
    let left = || -> Vec<&str> {
        missing_at_start
            .iter()
            .copied()
            .filter(|w| std::fs::symlink_metadata(root.join(w)).is_ok())
            .collect()
    };
    for _ in 0..300 {
        if left().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        left(),
        Vec::<&str>::new(),
        "{label}: placeholders left behind"
    );
}

async fn no_privilege(mechanism: Mechanism) {
    let label = format!("{mechanism:?}");
    let f = fixture(mechanism, &[]);
    let r = f
        .bash(
            "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status",
        )
        .await;
    let status: BTreeMap<String, String> = r
        .text()
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect();
    for cap in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
        assert_eq!(
            status[cap], "0000000000000000",
            "{label}: {cap}: {status:?}"
        );
    }
    if mechanism == Mechanism::Bubblewrap || is_root() {
        assert_eq!(status["CapBnd"], "0000000000000000", "{label}: {status:?}");
    }
    assert_eq!(status["NoNewPrivs"], "1", "{label}: {status:?}");
    assert_eq!(status["Seccomp"], "2", "{label}: {status:?}");

    let outside = tempfile::Builder::new()
        .prefix("agent-tools-containment-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let canary = outside.path().join("canary");
    let c = canary.display();
    for cmd in [
        format!("mount -o remount,bind,rw / && echo x > {c}"),
        format!("mount -o remount,rw / ; echo x > {c}"),
        format!("mount -t tmpfs none /var/tmp && echo x > {c}"),
        format!("umount -l /proc && echo x > {c}"),
        format!("unshare --user --map-root-user sh -c 'echo x > {c}'"),
        format!("unshare --mount sh -c 'echo x > {c}'"),
        format!("unshare --net sh -c 'echo x > {c}'"),
        format!("unshare -U -r -m sh -c 'mount --bind /tmp /var/tmp && echo x > {c}'"),
        format!("nsenter --net=/proc/1/ns/net sh -c 'echo x > {c}'"),
        format!("nsenter --mount=/proc/1/ns/mnt sh -c 'echo x > {c}'"),
        format!(
            "{PYTHON} -c \"import ctypes, sys; sys.exit(ctypes.CDLL(None).unshare(0x10000000) != 0)\""
        ),
    ] {
        let r = f.bash(&cmd).await;
        assert!(r.is_error, "{label}: `{cmd}` succeeded: {}", r.text());
        assert!(!canary.exists(), "{label}: `{cmd}` wrote outside");
    }
    // ptrace of a child, of the shell, of the supervisor.
    let marker = format!("31.{}", std::process::id());
    let r = f
        .bash(&format!(
            "sleep {marker} & {PYTHON} -c \"import ctypes, sys\nlibc = ctypes.CDLL(None, use_errno=True)\nfor pid in map(int, sys.argv[1:]):\n    print('ptrace', libc.ptrace(16, pid, 0, 0), ctypes.get_errno())\" $! $$ 2; kill $!"
        ))
        .await;
    assert_eq!(
        r.text().lines().filter(|l| *l == "ptrace -1 1").count(),
        3,
        "{label}: {}",
        r.text()
    );
    let r = f.bash("strace -f true").await;
    assert!(r.is_error, "{label}: strace ran: {}", r.text());
    // Nothing left running, nothing in a new namespace.
    assert_eq!(processes_with(&marker), Vec::<u32>::new(), "{label}");
}

async fn no_host_network(mechanism: Mechanism) {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    let label = format!("{mechanism:?}");
    let f = fixture(mechanism, &[]);
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let port = tcp.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("host.sock");
    let unix = UnixListener::bind(&path).unwrap();
    unix.set_nonblocking(true).unwrap();
    let name = format!("agent-tools-containment-{}", std::process::id());
    let abstract_ =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap();
    abstract_.set_nonblocking(true).unwrap();
    let connect = |target: &str| {
        format!(
            "{PYTHON} -c \"import socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.connect({target})\ns.sendall(b'hello')\nprint('CONNECTED')\""
        )
    };
    for cmd in [
        format!(": < /dev/tcp/127.0.0.1/{port} && echo CONNECTED"),
        format!("curl -s --max-time 2 http://127.0.0.1:{port}/ && echo CONNECTED"),
        connect(&format!("'{}'", path.display())),
        connect(&format!("'\\\\0{name}'")),
        format!(
            "{PYTHON} -c \"import socket\ns = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)\nprint('CONNECTED')\""
        ),
    ] {
        let r = f.bash(&cmd).await;
        assert!(
            !r.text().contains("CONNECTED"),
            "{label}: `{cmd}`: {}",
            r.text()
        );
    }
    assert!(
        tcp.accept().is_err(),
        "{label}: a TCP connection reached the host"
    );
    assert!(
        unix.accept().is_err(),
        "{label}: a Unix socket connection reached the host"
    );
    assert!(
        abstract_.accept().is_err(),
        "{label}: an abstract socket connection reached the host"
    );
    if mechanism == Mechanism::Bubblewrap {
        // The sandbox's own loopback: a server and a client of a test suite, inside.
        let r = f
            .bash(&format!(
                "{PYTHON} -c \"import socket\nsrv = socket.create_server(('127.0.0.1', 0))\nc = socket.create_connection(srv.getsockname())\na, _ = srv.accept()\nc.sendall(b'ping')\nprint(a.recv(4).decode())\""
            ))
            .await;
        assert_eq!(r.text(), "ping", "{label}: {}", r.text());
    }
    let mut buf = [0_u8; 8];
    if let Ok((mut s, _)) = unix.accept() {
        let _ = s.read(&mut buf);
        panic!("{label}: the host's Unix socket was reached");
    }
}

async fn hidden_paths(mechanism: Mechanism) {
    let label = format!("{mechanism:?}");
    let home = PathBuf::from(std::env::var_os("HOME").unwrap());
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "TOPSECRET-ssh").unwrap();
    std::fs::write(home.join(".netrc"), "TOPSECRET-netrc").unwrap();
    let f = fixture(
        mechanism,
        &[
            ("deny", "Read(./secret.txt)"),
            ("deny", "Read(*.key)"),
            ("deny", "Read(.env)"),
            ("deny", "Read(./private/**)"),
        ],
    );
    let root = f.root.clone();
    for (p, content) in [
        ("secret.txt", "TOPSECRET-file"),
        ("keys/deploy.key", "TOPSECRET-key"),
        ("app/.env", "TOPSECRET-env"),
        ("private/notes/a.txt", "TOPSECRET-dir"),
        ("README.md", "visible"),
    ] {
        let p = root.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    let secrets = [
        "secret.txt",
        "keys/deploy.key",
        "app/.env",
        "private/notes/a.txt",
        "~/.ssh/id_ed25519",
        "~/.netrc",
    ];
    let mut commands = vec![
        "grep -r TOPSECRET . ~ 2>/dev/null".to_owned(),
        "find . ~ -type f -exec cat {} + 2>/dev/null".to_owned(),
        "tar cf - . 2>/dev/null | strings".to_owned(),
    ];
    for s in secrets {
        commands.extend([
            format!("cat {s}"),
            format!("head -c 100 {s}"),
            format!("cp {s} copied.tmp; cat copied.tmp"),
            format!("ln -s {s} link.tmp; cat link.tmp"),
            format!("ln {s} hard.tmp; cat hard.tmp"),
            format!("{PYTHON} -c \"import os; print(open(os.path.expanduser('{s}')).read())\""),
        ]);
    }
    for cmd in &commands {
        let r = f.bash(cmd).await;
        assert!(
            !r.text().contains("TOPSECRET"),
            "{label}: `{cmd}`: {}",
            r.text()
        );
        for t in ["copied.tmp", "link.tmp", "hard.tmp"] {
            let p = root.join(t);
            // A copy made inside would hold the secret; a link holds only a path.
            let regular = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file());
            let on_disk = if regular {
                std::fs::read_to_string(&p).unwrap_or_default()
            } else {
                String::new()
            };
            assert!(
                !on_disk.contains("TOPSECRET"),
                "{label}: `{cmd}` copied a secret"
            );
            let _ = std::fs::remove_file(&p);
        }
    }
    let r = f.bash("cat README.md").await;
    assert_eq!(r.text(), "visible", "{label}");
    // The secrets themselves are untouched.
    assert_eq!(
        std::fs::read_to_string(root.join("secret.txt")).unwrap(),
        "TOPSECRET-file"
    );
}

async fn background_tasks_too(mechanism: Mechanism) {
    let label = format!("{mechanism:?}");
    let f = fixture(mechanism, &[]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bg.sock");
    let unix = std::os::unix::net::UnixListener::bind(&path).unwrap();
    unix.set_nonblocking(true).unwrap();
    let cmd = format!(
        "grep -E '^(CapEff|Seccomp):' /proc/self/status; m=.mcp.json; echo evil > \"$m\"; {PYTHON} -c \"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('{}')\nprint('CONNECTED')\"",
        path.display()
    );
    let r = f
        .call("Bash", json!({"command": cmd, "run_in_background": true}))
        .await;
    assert!(!r.is_error, "{label}: {}", r.text());
    let id = data_str(&r, "backgroundTaskId").to_owned();
    let out = f
        .call("TaskOutput", json!({"task_id": id, "timeout": 20000}))
        .await;
    let text = out.text();
    assert!(
        text.contains("CapEff:\t0000000000000000"),
        "{label}: {text}"
    );
    assert!(text.contains("Seccomp:\t2"), "{label}: {text}");
    assert!(!text.contains("CONNECTED"), "{label}: {text}");
    assert!(
        unix.accept().is_err(),
        "{label}: a background task reached the host"
    );
    let mcp = std::fs::read_to_string(f.root.join(".mcp.json")).unwrap_or_default();
    assert!(
        !mcp.contains("evil"),
        "{label}: a background task planted .mcp.json"
    );
    #[cfg(feature = "monitor")]
    {
        let r = f
            .call("Monitor", json!({"command": cmd, "description": "probe"}))
            .await;
        assert!(!r.is_error, "{label}: {}", r.text());
        let id = data_str(&r, "taskId").to_owned();
        // Each read returns the lines since the previous one: read until the task ends.
        let mut text = String::new();
        for _ in 0..50 {
            let out = f
                .call("TaskOutput", json!({"task_id": id, "timeout": 20000}))
                .await;
            text.push_str(&out.text());
            if !out.text().contains("<status>running</status>") {
                break;
            }
        }
        assert!(
            text.contains("CapEff:\t0000000000000000"),
            "{label}: {text}"
        );
        assert!(text.contains("Seccomp:\t2"), "{label}: {text}");
        assert!(!text.contains("CONNECTED"), "{label}: {text}");
        assert!(unix.accept().is_err(), "{label}: Monitor reached the host");
    }
}

/// Read deny rules hold in every mode, even full access with the network on (which has no
/// sandbox otherwise).
#[tokio::test]
async fn hidden_paths_hold_in_every_mode() {
    for mechanism in [Mechanism::Bubblewrap, Mechanism::Landlock] {
        let present = match mechanism {
            Mechanism::Bubblewrap => tools_shell::bubblewrap().is_some(),
            _ => tools_shell::landlock_available(),
        };
        if !require(&format!("{mechanism:?}"), present) {
            continue;
        }
        for (mode, network) in [
            (SandboxMode::ReadOnly, false),
            (SandboxMode::FullAccess, false),
            (SandboxMode::FullAccess, true),
        ] {
            let label = format!("{mechanism:?} {mode:?} network {network}");
            let f = Fixture::with(
                PermissionMode::BypassPermissions,
                &[("deny", "Read(./secret.txt)")],
                SandboxSettings {
                    mechanism,
                    mode,
                    network,
                    ..SandboxSettings::default()
                },
            );
            std::fs::write(f.root.join("secret.txt"), "TOPSECRET").unwrap();
            std::fs::write(f.root.join("open.txt"), "visible").unwrap();
            // The path sits in a variable: the permission check refuses a read of a denied
            // path it can see; this tests what holds when it cannot.
            let r = f.bash("s=secret.txt; cat \"$s\"; cat open.txt").await;
            assert!(
                !data_str(&r, "sandbox").starts_with("none"),
                "{label}: {:?}",
                r.data
            );
            assert!(!r.text().contains("TOPSECRET"), "{label}: {}", r.text());
            assert!(r.text().contains("visible"), "{label}: {}", r.text());
        }
    }
}
