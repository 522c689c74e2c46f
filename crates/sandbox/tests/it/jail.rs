//! The read-only jail, run directly through the crate's API (no classifier): every kind of
//! write (to the project, its git internals, outside it, the host's /tmp) leaves nothing
//! behind; no network reaches a host listener; no credential store, shadow file, state
//! directory, other user's home or Read-denied file can be read; and what read-only
//! commands need keeps working.

use std::io::Read as _;
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sandbox::{DenyRead, Profile, SandboxSettings};

use crate::{Site, in_child, mechanisms};

/// A project that is a git repository with a commit, a victim file and a git config.
fn repo(site: &Site) {
    let p = &site.project;
    std::fs::write(p.join("victim"), "keep").unwrap();
    std::fs::create_dir_all(p.join("sub")).unwrap();
    std::fs::write(p.join("sub/file.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(p.join("sub/victim"), "keep").unwrap();
    std::fs::write(site.outside.join("victim"), "keep").unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(p)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", p)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@t", "add", "-A"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "first",
    ]);
}

/// Everything a write could change: files and their contents, recursively (`.git` too).
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions());
            let mtime = std::os::unix::fs::MetadataExt::mtime_nsec(&meta)
                + 1_000_000_000 * std::os::unix::fs::MetadataExt::mtime(&meta);
            let rel = format!(
                "{} {mode:o} {mtime}",
                p.strip_prefix(dir).unwrap().display()
            );
            if meta.is_dir() {
                out.push((format!("{rel}/"), Vec::new()));
                stack.push(p);
            } else if meta.file_type().is_symlink() {
                out.push((
                    rel,
                    std::fs::read_link(&p)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                ));
            } else {
                out.push((rel, std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

/// Ways to write `T` (a path): the shell's, coreutils', git's, interpreters'.
const WRITES: &[&str] = &[
    "echo planted > {T}",
    "echo planted >> {T}",
    "printf planted | tee {T}",
    "printf planted | tee -a {T}",
    "cp /etc/hostname {T}",
    "touch {T}",
    "mv victim {T}",
    "ln -s /etc/passwd {T}",
    "mkdir -p {T}",
    "sort -o {T} /etc/hostname",
    "dd if=/etc/hostname of={T} status=none",
    "truncate -s 0 {T}",
    "rm -rf {T}",
    "sed -i s/keep/gone/ {T}",
    "install -D /etc/hostname {T}",
    "chmod 777 {T}",
    "/usr/bin/python3 -c \"open('{T}', 'w').write('planted')\"",
    "perl -e 'open(F, \">\", \"{T}\") or die; print F \"planted\"'",
    "exec 3>{T}; echo planted >&3",
    "cat /etc/hostname | dd of={T} status=none",
    "split -b 1 /etc/hostname {T}",
    "tar cf {T} /etc/hostname",
];

/// Where the writes aim (`P` the project, `O` outside it, `N` a number): existing victims,
/// new names, git internals and the host's /tmp.
const TARGETS: &[&str] = &[
    "P/victim",
    "P/new-marker",
    "P/sub/new-marker",
    "P/.git/config",
    "P/.git/hooks/pre-commit",
    "P/.git/index",
    "O/victim",
    "O/new-marker",
    "/tmp/agent-tools-jail-N",
];

/// Commands that write through git: the index, the config, hooks, refs, objects.
const GIT_WRITES: &[&str] = &[
    "git add -A",
    "git -c user.name=x -c user.email=x@x commit --allow-empty -qm x",
    "git config user.name planted",
    "git config --file=.git/config core.hooksPath /tmp",
    "git update-index --refresh",
    "git stash",
    "git tag planted",
    "git branch planted",
    "git checkout -b planted",
    "git gc --quiet",
    "git init -q sub",
    "git notes add -m x",
    "git update-ref refs/heads/planted HEAD",
    "git reset --hard",
    "git rm -q victim",
];

#[tokio::test]
async fn no_write_leaves_the_jail() {
    let mut variants = 0;
    for (label, settings) in mechanisms() {
        let site = Site::new();
        repo(&site);
        let jail = site.prepare(Profile::Jail, &settings);
        assert!(
            jail.description.contains("read-only jail"),
            "{label}: {}",
            jail.description
        );
        let before = (snapshot(&site.project), snapshot(&site.outside));
        let mut n = 0;
        for target in TARGETS {
            for write in WRITES {
                n += 1;
                let host_tmp = format!("/tmp/agent-tools-jail-{}-{n}", std::process::id());
                let t = target
                    .replace("P/", &format!("{}/", site.project.display()))
                    .replace("O/", &format!("{}/", site.outside.display()))
                    .replace("/tmp/agent-tools-jail-N", &host_tmp);
                let command = write.replace("{T}", &t);
                let ran = site.run(&jail, &command).await;
                variants += 1;
                assert!(
                    snapshot(&site.project) == before.0 && snapshot(&site.outside) == before.1,
                    "{label}: `{command}` changed something: {}",
                    ran.text()
                );
                assert!(
                    !Path::new(&host_tmp).exists(),
                    "{label}: `{command}` wrote the host's /tmp: {}",
                    ran.text()
                );
                let _ = std::fs::remove_file(&host_tmp);
            }
        }
        for command in GIT_WRITES {
            let ran = site.run(&jail, command).await;
            variants += 1;
            assert!(
                snapshot(&site.project) == before.0,
                "{label}: `{command}` changed the project: {}",
                ran.text()
            );
        }
        assert!(
            snapshot(&site.project) == before.0,
            "{label}: the project changed"
        );
        assert!(
            snapshot(&site.outside) == before.1,
            "{label}: outside changed"
        );
    }
    assert!(variants >= 50, "{variants}");
}

#[tokio::test]
async fn each_write_does_write_where_it_may() {
    // The control of `no_write_leaves_the_jail`: in the workspace sandbox every way of
    // writing changes the project.
    for (label, settings) in mechanisms() {
        for write in WRITES {
            let site = Site::new();
            repo(&site);
            let before = snapshot(&site.project);
            let workspace = site.prepare(Profile::Workspace, &settings);
            // In `sub`: Landlock cannot let a command add or remove entries at the top of a
            // working directory (see docs/sandbox.md).
            for target in ["victim", "new-marker"] {
                let t = format!("{}/sub/{target}", site.project.display());
                let _ = site
                    .run(
                        &workspace,
                        &format!("cd sub && {}", write.replace("{T}", &t)),
                    )
                    .await;
            }
            assert!(
                snapshot(&site.project) != before,
                "{label}: `{write}` wrote nothing"
            );
        }
    }
}

#[tokio::test]
async fn programs_run_through_config_write_nothing_either() {
    // Config a read-only command obeys, planted beforehand (a checkout, an earlier
    // command): git's fsmonitor, diff drivers and textconv, a toolchain file, each running
    // a program of the project that tries to write in and outside it.
    for (label, settings) in mechanisms() {
        let site = Site::new();
        repo(&site);
        let p = &site.project;
        let payload = p.join("payload.sh");
        std::fs::write(
            &payload,
            format!(
                "#!/bin/sh\necho planted > {p}/PWNED; echo planted > {o}/PWNED; echo planted > /tmp/agent-tools-pwned-{pid}; touch {p}/.git/hooks/post-checkout\n",
                p = p.display(),
                o = site.outside.display(),
                pid = std::process::id()
            ),
        )
        .unwrap();
        std::fs::set_permissions(
            &payload,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let mut config = std::fs::read_to_string(p.join(".git/config")).unwrap();
        config.push_str(&format!(
            "[core]\n\tfsmonitor = {payload}\n[diff \"x\"]\n\tcommand = {payload}\n\ttextconv = {payload}\n[filter \"x\"]\n\tclean = {payload}\n\tsmudge = {payload}\n",
            payload = payload.display()
        ));
        std::fs::write(p.join(".git/config"), config).unwrap();
        std::fs::write(p.join(".gitattributes"), "* diff=x filter=x\n").unwrap();
        std::fs::write(
            p.join("rust-toolchain.toml"),
            format!("[toolchain]\npath = \"{}\"\n", p.display()),
        )
        .unwrap();
        std::fs::write(p.join("victim"), "changed").unwrap();
        let before = (snapshot(&site.project), snapshot(&site.outside));
        let jail = site.prepare(Profile::Jail, &settings);
        for command in [
            "git status",
            "git diff",
            "git diff HEAD",
            "git log -p",
            "git show HEAD",
            "git diff --textconv",
            "git blame victim",
            "git ls-files -m",
            "./payload.sh",
            "sh payload.sh",
            "cargo --version",
            "rustc --version",
        ] {
            let ran = site.run(&jail, command).await;
            for pwned in [
                p.join("PWNED"),
                site.outside.join("PWNED"),
                Path::new(&format!("/tmp/agent-tools-pwned-{}", std::process::id())).to_path_buf(),
                p.join(".git/hooks/post-checkout"),
            ] {
                assert!(
                    !pwned.exists(),
                    "{label}: `{command}` ran the planted program with write access ({}): {}",
                    pwned.display(),
                    ran.text()
                );
            }
        }
        assert!(
            snapshot(&site.project) == before.0,
            "{label}: the project changed"
        );
        assert!(
            snapshot(&site.outside) == before.1,
            "{label}: outside changed"
        );
    }
}

/// A TCP listener on the host's loopback counting the connections it accepts.
struct Listener {
    port: u16,
    accepted: Arc<AtomicUsize>,
}

fn listen(addr: &str) -> Option<Listener> {
    let l = TcpListener::bind(addr).ok()?;
    let port = l.local_addr().ok()?.port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 16];
            let _ = s.read(&mut buf);
        }
    });
    Some(Listener { port, accepted })
}

#[tokio::test]
async fn no_network_reaches_the_host() {
    let v4 = listen("127.0.0.1:0").unwrap();
    let v6 = listen("[::1]:0");
    let all = listen("0.0.0.0:0").unwrap();
    let unix_dir = tempfile::tempdir().unwrap();
    let unix_path = unix_dir.path().join("host.sock");
    let unix = std::os::unix::net::UnixListener::bind(&unix_path).unwrap();
    unix.set_nonblocking(true).unwrap();
    let mut variants = 0;
    for (label, settings) in mechanisms() {
        let site = Site::new();
        let jail = site.prepare(Profile::Jail, &settings);
        let mut targets: Vec<(String, u16)> = vec![
            ("127.0.0.1".into(), v4.port),
            ("localhost".into(), v4.port),
            ("127.0.0.1".into(), all.port),
            ("0.0.0.0".into(), all.port),
            ("127.1".into(), v4.port),
        ];
        if let Some(v6) = &v6 {
            targets.push(("::1".into(), v6.port));
        }
        for (host, port) in &targets {
            let bracketed = if host.contains(':') {
                format!("[{host}]")
            } else {
                host.clone()
            };
            for command in [
                format!("exec 3<>/dev/tcp/{host}/{port} && echo connected >&3"),
                format!("echo x > /dev/tcp/{host}/{port}"),
                format!(
                    "/usr/bin/python3 -c \"import socket; socket.create_connection(('{host}', {port}), 2).send(b'x')\""
                ),
                format!(
                    "perl -MIO::Socket::INET -e 'IO::Socket::INET->new(PeerAddr => \"{host}\", PeerPort => {port}) or die'"
                ),
                format!("curl -s -m 2 http://{bracketed}:{port}/"),
                format!("wget -q -t 1 -T 2 -O- http://{bracketed}:{port}/"),
                format!("git ls-remote http://{bracketed}:{port}/repo"),
                format!("timeout 2 bash -c 'cat < /dev/tcp/{host}/{port}'"),
            ] {
                let _ = site.run(&jail, &command).await;
                variants += 1;
            }
        }
        for command in [
            format!("/usr/bin/python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{}')\"", unix_path.display()),
            format!("perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Peer => \"{}\") or die'", unix_path.display()),
            format!("curl -s -m 2 --unix-socket {} http://x/", unix_path.display()),
            "/usr/bin/python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('\\0agent-tools-abstract')\"".to_owned(),
        ] {
            let _ = site.run(&jail, &command).await;
            variants += 1;
        }
        assert_eq!(
            v4.accepted.load(Ordering::SeqCst),
            0,
            "{label}: 127.0.0.1 reached"
        );
        // The control: with the network on (a person's settings, the workspace sandbox)
        // the same commands do connect.
        let open = site.prepare(
            Profile::Workspace,
            &SandboxSettings {
                network: true,
                ..settings.clone()
            },
        );
        let port = v4.port;
        for command in [
            format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected >&3"),
            format!(
                "/usr/bin/python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2).send(b'x')\""
            ),
            format!(
                "perl -MIO::Socket::INET -e 'IO::Socket::INET->new(PeerAddr => \"127.0.0.1\", PeerPort => {port}) or die'"
            ),
        ] {
            let before = v4.accepted.load(Ordering::SeqCst);
            let _ = site.run(&open, &command).await;
            for _ in 0..100 {
                if v4.accepted.load(Ordering::SeqCst) > before {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            assert!(
                v4.accepted.load(Ordering::SeqCst) > before,
                "{label}: `{command}` did not connect with the network on"
            );
        }
        v4.accepted.store(0, Ordering::SeqCst);
        assert_eq!(
            all.accepted.load(Ordering::SeqCst),
            0,
            "{label}: 0.0.0.0 reached"
        );
        if let Some(v6) = &v6 {
            assert_eq!(
                v6.accepted.load(Ordering::SeqCst),
                0,
                "{label}: ::1 reached"
            );
        }
        assert!(
            unix.accept().is_err(),
            "{label}: the host's Unix socket was reached"
        );
    }
    assert!(variants >= 50, "{variants}");
}

/// Ways to print a file `F` (or a directory `D` holding it).
const READERS: &[&str] = &[
    "cat {F}",
    "head -c 4096 {F}",
    "tail -n 50 {F}",
    "grep -r . {D}",
    "base64 {F} | base64 -d",
    "od -An -v -tx1 {F} | xxd -r -p",
    "xxd {F} | xxd -r",
    "cp {F} /dev/stdout",
    "dd if={F} status=none",
    "sed -n p {F}",
    "awk 1 {F}",
    "while IFS= read -r l; do echo \"$l\"; done < {F}",
    "tar cf - {F} | cat",
    "find {D} -type f -exec cat {} +",
    "/usr/bin/python3 -c \"print(open('{F}').read())\"",
    "perl -pe 1 {F}",
    "strings {F}",
    "less {F}",
    "git --no-pager diff --no-index /dev/null {F}",
    "ls -la {D}; cat {D}/*",
];

#[tokio::test]
async fn secrets_stay_hidden() {
    // A home directory of its own (the default credential stores live there) and a state
    // directory: in a child run with HOME set. Both outside /tmp, which the jail replaces
    // with an empty one: there the secrets would be absent whether masked or not.
    let outside_tmp = || {
        tempfile::Builder::new()
            .prefix("agent-tools-secrets-")
            .tempdir_in("/var/tmp")
            .unwrap()
    };
    let home = outside_tmp();
    let home_path = home.path().canonicalize().unwrap();
    let home_str = home_path.display().to_string();
    if !in_child("jail::secrets_stay_hidden", &[("HOME", &home_str)]) {
        return;
    }
    let home = std::path::PathBuf::from(std::env::var("HOME").unwrap());
    let state = outside_tmp();
    let mut secrets: Vec<(std::path::PathBuf, String)> = Vec::new();
    let plant =
        |secrets: &mut Vec<(std::path::PathBuf, String)>, path: std::path::PathBuf, n: usize| {
            let token = format!("SECRET-TOKEN-{n}-{}", std::process::id());
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, format!("{token}\n")).unwrap();
            secrets.push((path, token));
        };
    for (n, rel) in [
        ".ssh/id_ed25519",
        ".aws/credentials",
        ".gnupg/private-keys-v1.d/key",
        ".netrc",
        ".config/gcloud/application_default_credentials.json",
        ".kube/config",
        ".docker/config.json",
        ".git-credentials",
        ".npmrc",
    ]
    .iter()
    .enumerate()
    {
        plant(&mut secrets, home.join(rel), n);
    }
    plant(
        &mut secrets,
        state.path().canonicalize().unwrap().join("trust.json"),
        100,
    );
    // Another user's home, where there is a /home to put it in.
    let other =
        std::path::Path::new("/home").join(format!("agent-tools-other-{}", std::process::id()));
    let other_made = std::fs::create_dir_all(&other).is_ok();
    if other_made {
        plant(&mut secrets, other.join("notes.txt"), 200);
    }
    let mut variants = 0;
    for (label, base) in mechanisms() {
        let site = Site::new();
        let mut secrets = secrets.clone();
        plant(&mut secrets, site.project.join(".env"), 300 + variants);
        let settings = SandboxSettings {
            deny_read: vec![DenyRead {
                pattern: ".env".to_owned(),
                root: site.project.clone(),
            }],
            state_dir: Some(state.path().to_path_buf()),
            hide_secrets: false, // the jail hides them whatever the setting says
            ..base
        };
        let jail = site.prepare(Profile::Jail, &settings);
        // Each reader does print a file it may read (so its silence below means something).
        let visible = site.project.join("visible/notes.txt");
        std::fs::create_dir_all(visible.parent().unwrap()).unwrap();
        std::fs::write(&visible, "VISIBLE-TOKEN\n").unwrap();
        for reader in READERS {
            let command = reader
                .replace("{F}", &visible.display().to_string())
                .replace("{D}", &visible.parent().unwrap().display().to_string());
            let ran = site.run(&jail, &command).await;
            assert!(
                ran.text().contains("VISIBLE-TOKEN"),
                "{label}: `{command}` printed nothing: {}",
                ran.text()
            );
        }
        for (file, token) in &secrets {
            let dir = file.parent().unwrap();
            for reader in READERS {
                let command = reader
                    .replace("{F}", &file.display().to_string())
                    .replace("{D}", &dir.display().to_string());
                let ran = site.run(&jail, &command).await;
                variants += 1;
                assert!(
                    !ran.text().contains(token.as_str()),
                    "{label}: `{command}` read {}: {}",
                    file.display(),
                    ran.text()
                );
            }
        }
        // The shadow files, which hold hashes on any machine that has them.
        for file in ["/etc/shadow", "/etc/gshadow"] {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            let Some(line) = text.lines().find(|l| !l.trim().is_empty()) else {
                continue;
            };
            for reader in ["cat {F}", "grep -r . {F}", "base64 {F}", "awk 1 {F}"] {
                let ran = site.run(&jail, &reader.replace("{F}", file)).await;
                variants += 1;
                assert!(!ran.text().contains(line), "{label}: {file} was read");
            }
        }
    }
    if other_made {
        let _ = std::fs::remove_dir_all(&other);
    }
    assert!(variants >= 50, "{variants}");
}

#[tokio::test]
async fn what_reads_keeps_working() {
    for (label, settings) in mechanisms() {
        let site = Site::new();
        repo(&site);
        std::fs::write(site.project.join("victim"), "changed").unwrap();
        let jail = site.prepare(Profile::Jail, &settings);
        for (command, expected) in [
            ("ls", "victim"),
            ("cat sub/file.txt", "beta"),
            ("grep -rn beta .", "sub/file.txt:2:beta"),
            ("git status --short", " M victim"),
            ("git diff", "+changed"),
            ("git log --oneline", "first"),
            ("git show --stat HEAD", "victim"),
            ("find . -name file.txt", "./sub/file.txt"),
            ("wc -l sub/file.txt", "2 sub/file.txt"),
            ("head -n 1 sub/file.txt", "alpha"),
            ("cd sub && pwd", "/sub"),
            ("echo scratch > /tmp/x && cat /tmp/x", "scratch"),
        ] {
            let ran = site.run(&jail, command).await;
            if command.contains("/tmp/x") && label == "landlock" {
                // Landlock cannot give the jail a /tmp of its own: the host's is read-only.
                continue;
            }
            assert_eq!(ran.finished.code, 0, "{label}: `{command}`: {}", ran.text());
            assert!(
                ran.text().contains(expected),
                "{label}: `{command}`: {}",
                ran.text()
            );
        }
        if let Some(rg) = which("rg") {
            let ran = site.run(&jail, &format!("{} -n beta", rg.display())).await;
            assert!(ran.text().contains("beta"), "{label}: rg: {}", ran.text());
        }
        // git could not refresh its index: nothing changed.
        assert!(!site.project.join(".git/index.lock").exists());
    }
}

/// A home under /tmp (as in many containers) and a directory of PATH there: the jail's /tmp
/// is its own and empty, yet both stay, read-only and the home's secrets masked, so what is
/// installed in them runs; what else lies in the host's /tmp stays out.
#[tokio::test]
async fn a_home_in_the_hosts_tmp_stays_usable_in_the_jail() {
    let home = tempfile::Builder::new()
        .prefix("agent-tools-jail-home-")
        .tempdir_in("/tmp")
        .unwrap();
    let home_str = home.path().canonicalize().unwrap().display().to_string();
    // And a directory of PATH there, outside the home (peers a CI run installed, say).
    let bin = tempfile::Builder::new()
        .prefix("agent-tools-jail-bin-")
        .tempdir_in("/tmp")
        .unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        let tool = bin.path().join("hello-on-path");
        std::fs::write(&tool, "#!/bin/sh\necho hello from PATH\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    if !in_child(
        "jail::a_home_in_the_hosts_tmp_stays_usable_in_the_jail",
        &[("HOME", &home_str), ("PATH", &path)],
    ) {
        return;
    }
    use std::os::unix::fs::PermissionsExt as _;
    let home = std::path::PathBuf::from(std::env::var("HOME").unwrap());
    let tool = home.join(".local/bin/hello");
    std::fs::create_dir_all(tool.parent().unwrap()).unwrap();
    std::fs::write(&tool, "#!/bin/sh\necho hello from the home\n").unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "SECRET-KEY").unwrap();
    let outside = tempfile::Builder::new()
        .prefix("agent-tools-jail-outside-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::write(outside.path().join("other.txt"), "OTHER-TMP").unwrap();
    for (label, settings) in mechanisms() {
        let site = Site::new();
        let jail = site.prepare(Profile::Jail, &settings);
        let ran = site.run(&jail, &tool.display().to_string()).await;
        assert_eq!(ran.finished.code, 0, "{label}: {}", ran.text());
        assert!(
            ran.text().contains("hello from the home"),
            "{label}: {}",
            ran.text()
        );
        let ran = site.run(&jail, "hello-on-path").await;
        assert!(
            ran.text().contains("hello from PATH"),
            "{label}: {}",
            ran.text()
        );
        let ran = site
            .run(&jail, &format!("cat {}/.ssh/id_ed25519", home.display()))
            .await;
        assert!(
            !ran.text().contains("SECRET-KEY"),
            "{label}: {}",
            ran.text()
        );
        let ran = site
            .run(&jail, &format!("echo x > {}/planted", home.display()))
            .await;
        assert_ne!(ran.finished.code, 0, "{label}: {}", ran.text());
        assert!(!home.join("planted").exists(), "{label}");
        if label != "landlock" {
            // Landlock cannot give the jail a /tmp of its own.
            let ran = site
                .run(
                    &jail,
                    &format!("cat {}/other.txt", outside.path().display()),
                )
                .await;
            assert!(!ran.text().contains("OTHER-TMP"), "{label}: {}", ran.text());
        }
    }
}

/// `name` on `PATH`, or among the peers.
fn which(name: &str) -> Option<std::path::PathBuf> {
    let mut dirs: Vec<std::path::PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(peers) = std::env::var_os("AGENT_TOOLS_PEERS_DIR") {
        dirs.push(std::path::PathBuf::from(peers).join("cargo/bin"));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

#[tokio::test]
async fn a_jail_without_a_supervisor_program_holds_too() {
    // Every command in a sandbox of its own (a host that registered no program).
    if !in_child(
        "jail::a_jail_without_a_supervisor_program_holds_too",
        &[(crate::NO_SUPERVISOR_VAR, "1")],
    ) {
        return;
    }
    for (label, settings) in mechanisms() {
        let site = Site::new();
        repo(&site);
        let before = snapshot(&site.project);
        let jail = site.prepare(Profile::Jail, &settings);
        for command in [
            "echo planted > victim",
            "touch new",
            "git add -A",
            "rm -rf sub",
        ] {
            let _ = site.run(&jail, command).await;
        }
        let ran = site.run(&jail, "git status --short; cat victim").await;
        assert!(ran.text().contains("keep"), "{label}: {}", ran.text());
        assert!(
            snapshot(&site.project) == before,
            "{label}: the project changed"
        );
    }
}
