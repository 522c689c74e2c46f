//! The shell's lifecycle guarantees through the binary, as root and as user nobody (the
//! binary run under `setpriv` with a project and state directory nobody owns), asserted
//! on the file system and in `/proc`:
//! - links a sandboxed command plants among the session's output files are not followed;
//! - a flood of output takes at most 64 MiB on disk;
//! - unsandboxed commands leave no survivors, not even when agent-tools is killed with
//!   SIGKILL while background and foreground commands run;
//! - many MCP sessions share a bounded number of sandbox instances.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::{binary, text};

/// Who runs the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum User {
    Root,
    Nobody,
}

/// Whether the tests can run as `user`: as nobody they need root (to switch) and setpriv.
/// Without them they print why they skip, or fail under `AGENT_TOOLS_REQUIRE_PEERS=1`.
fn usable(user: User) -> bool {
    if user == User::Root {
        return true;
    }
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(2))
            == Some("0")
    });
    test_support::peers::require(
        "root and /usr/bin/setpriv (to run as user nobody)",
        root && Path::new("/usr/bin/setpriv").is_file(),
    )
}

/// Whether bubblewrap is here for the sandboxed tests: when it is not, they fail under
/// `AGENT_TOOLS_REQUIRE_PEERS=1` and otherwise print why they skip (see `usable`).
fn have_bwrap() -> bool {
    test_support::peers::require(
        "bubblewrap (`cargo xtask peers` installs it)",
        test_support::peers::bwrap().is_some(),
    )
}

/// The binary where user nobody can reach it: the build directory may sit under a home
/// only its owner can search, and the binary registers itself as the sandbox supervisor,
/// which must be a file its user can see. One entry per build, shared by every test process
/// (nextest runs each test in a process of its own), at
/// `$TMPDIR/agent-tools-nobody-<uid>/<build>-<identity>/agent-tools`: a hard link where the
/// temporary directory is on the build's file system (no second 120 MB), else a copy. It is
/// made in a staging directory and renamed into place, so a process sees a whole binary or
/// none; entries of earlier builds of the same binary (its path) are removed, so test runs
/// leave one entry per build directory behind, not one per test.
fn nobody_binary() -> &'static Path {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| shared_binary(binary(), &std::env::temp_dir()))
}

/// See [`nobody_binary`]: the entry for `binary` under `tmp`.
fn shared_binary(binary: &Path, tmp: &Path) -> PathBuf {
    use std::hash::{DefaultHasher, Hash, Hasher};
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let hash = |value: &dyn Fn(&mut DefaultHasher)| {
        let mut h = DefaultHasher::new();
        value(&mut h);
        h.finish()
    };
    let meta = std::fs::metadata(binary).expect("the binary under test");
    let build = hash(&|h| binary.hash(h));
    let identity = hash(&|h| {
        (
            meta.dev(),
            meta.ino(),
            meta.size(),
            meta.mtime(),
            meta.mtime_nsec(),
        )
            .hash(h)
    });
    let uid = std::fs::metadata("/proc/self").expect("/proc/self").uid();
    let base = tmp.join(format!("agent-tools-nobody-{uid}"));
    match std::fs::create_dir(&base) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => panic!("cannot create {}: {e}", base.display()),
    }
    // The directory holds what the tests run: it must be ours and nobody else's to write.
    let dir_meta = std::fs::symlink_metadata(&base).expect("the shared directory");
    assert!(
        dir_meta.is_dir() && dir_meta.uid() == uid && dir_meta.mode() & 0o022 == 0,
        "{} is not a directory only uid {uid} can write; remove it",
        base.display()
    );
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let prefix = format!("{build:016x}-");
    let name = format!("{prefix}{identity:016x}");
    let entry = base.join(&name);
    let target = entry.join("agent-tools");
    if !target.is_file() {
        let staging = tempfile::Builder::new()
            .prefix(".staging-")
            .tempdir_in(&base)
            .expect("a staging directory");
        std::fs::set_permissions(staging.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let staged = staging.path().join("agent-tools");
        if std::fs::hard_link(binary, &staged).is_err() {
            std::fs::copy(binary, &staged).expect("copy the binary");
        }
        match std::fs::rename(staging.path(), &entry) {
            // The staging directory is the entry now: nothing left to remove.
            Ok(()) => drop(staging.keep()),
            // Another test process put the same build in place first: use its entry.
            Err(_) if target.is_file() => drop(staging),
            Err(e) => panic!("cannot move the binary into {}: {e}", entry.display()),
        }
    }
    // Earlier builds of this binary, and staging directories a killed process left.
    for old in std::fs::read_dir(&base).into_iter().flatten().flatten() {
        let file_name = old.file_name();
        let file_name = file_name.to_string_lossy();
        let stale_staging = file_name.starts_with(".staging-")
            && old
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > Duration::from_secs(3600)));
        if (file_name.starts_with(&prefix) && file_name != name) || stale_staging {
            let _ = std::fs::remove_dir_all(old.path());
        }
    }
    target
}

#[test]
fn the_binary_for_nobody_is_one_shared_entry_per_build() {
    use std::os::unix::fs::MetadataExt;
    let (_dir, base) = test_support::tempdir();
    let tmp = base.join("tmp");
    std::fs::create_dir(&tmp).expect("mkdir");
    let build = base.join("agent-tools");
    std::fs::write(&build, "first build").expect("write");
    let first = shared_binary(&build, &tmp);
    assert_eq!(
        std::fs::read_to_string(&first).expect("read"),
        "first build"
    );
    // Every process of the same build gets the same entry; nothing else is left behind.
    assert_eq!(shared_binary(&build, &tmp), first);
    let shared = first
        .parent()
        .and_then(Path::parent)
        .expect("the shared directory");
    let entries = || {
        std::fs::read_dir(shared)
            .expect("read_dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(entries().len(), 1, "{:?}", entries());
    assert_eq!(
        std::fs::metadata(shared).expect("stat").mode() & 0o777,
        0o755
    );
    // A new build replaces the entry of the old one; another binary keeps its own.
    std::fs::remove_file(&build).expect("rm");
    std::fs::write(&build, "second build").expect("write");
    let other = base.join("other");
    std::fs::write(&other, "another build directory").expect("write");
    let second = shared_binary(&build, &tmp);
    let elsewhere = shared_binary(&other, &tmp);
    assert_ne!(second, first);
    assert_eq!(
        std::fs::read_to_string(&second).expect("read"),
        "second build"
    );
    assert!(!first.exists(), "the old build's entry is still there");
    assert!(elsewhere.is_file());
    assert_eq!(entries().len(), 2, "{:?}", entries());
}

/// A project and a state directory that `user` owns.
struct Place {
    user: User,
    _dir: TempDir,
    root: PathBuf,
    home: PathBuf,
}

impl Place {
    fn new(user: User) -> Place {
        let (dir, base) = test_support::tempdir();
        let root = base.join("work");
        let home = base.join("home");
        for d in [&root, &home] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::create_dir_all(root.join(".git/hooks")).expect("mkdir");
        std::fs::write(root.join(".git/config"), "[core]\n").expect("write");
        if user == User::Nobody {
            for p in [
                base.clone(),
                root.clone(),
                home.clone(),
                root.join(".git"),
                root.join(".git/hooks"),
                root.join(".git/config"),
            ] {
                std::os::unix::fs::chown(&p, Some(65534), Some(65534)).expect("chown");
            }
        }
        Place {
            user,
            _dir: dir,
            root,
            home,
        }
    }

    /// `agent-tools --cwd ROOT ARGS`, as the place's user.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = match self.user {
            User::Root => Command::new(binary()),
            User::Nobody => {
                let mut c = Command::new("/usr/bin/setpriv");
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                    .arg(nobody_binary());
                c
            }
        };
        cmd.arg("--cwd")
            .arg(&self.root)
            .args(args)
            .current_dir(&self.root)
            .env("AGENT_TOOLS_HOME", &self.home)
            .env("HOME", &self.home);
        cmd
    }

    /// A settings file (given with `--settings`, so a person's choice) that turns the
    /// sandbox off: how a session runs commands unsandboxed without asking for each.
    fn unsandboxed_settings(&self) -> String {
        let file = self.home.join("unsandboxed.json");
        std::fs::write(&file, r#"{"sandbox": {"enabled": false}}"#).expect("write settings");
        if self.user == User::Nobody {
            std::os::unix::fs::chown(&file, Some(65534), Some(65534)).expect("chown");
        }
        file.display().to_string()
    }

    /// `call Bash INPUT --mode bypassPermissions`: the result line.
    fn bash(&self, input: Value) -> Value {
        self.bash_with(&[], input)
    }

    /// `call Bash INPUT --mode bypassPermissions` with more options.
    fn bash_with(&self, options: &[&str], input: Value) -> Value {
        let input = input.to_string();
        let mut args = options.to_vec();
        args.extend(["call", "Bash", &input, "--mode", "bypassPermissions"]);
        let out = self
            .command(&args)
            .stdin(Stdio::null())
            .output()
            .expect("run agent-tools");
        let stdout = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "no result ({e}): {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }

    /// `batch --mode bypassPermissions` over `lines`: the result lines.
    fn batch(&self, lines: &[Value]) -> Vec<Value> {
        let mut child = self
            .command(&["batch", "--mode", "bypassPermissions"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn agent-tools batch");
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("wait");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }
}

/// Processes whose command line contains `marker` (zombies left out).
fn with_marker(marker: &str) -> Vec<u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z'));
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            !zombie && String::from_utf8_lossy(&cmdline).contains(marker)
        })
        .collect()
}

/// Waits (bounded) until no process carries `marker`; returns those left.
fn survivors(marker: &str) -> Vec<u32> {
    for _ in 0..250 {
        if with_marker(marker).is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The test fails; kill what is left so it does not fail the next run too.
    let left = with_marker(marker);
    for p in &left {
        let _ = Command::new("kill").args(["-9", &p.to_string()]).status();
    }
    left
}

fn marker(test: u32, user: User, n: u32) -> String {
    format!("{test}.{}{n:02}9", user as u32)
}

fn planted_links_are_not_followed(user: User) {
    if !usable(user) || !have_bwrap() {
        return;
    }
    let place = Place::new(user);
    let dir = place.home.join("tool-results");
    let config = place.root.join(".git/config");
    let hook = place.root.join(".git/hooks/pre-commit");
    // The attack as filed: a command replaces the session's output files and every name
    // they could take next with links to .git/config and a hook, then parallel calls run.
    // The targets sit in variables: the permission check refuses a write to a protected
    // path it can see, and this tests what holds when it cannot.
    let plant = format!(
        r#"c='{config}'; h='{hook}'; (cd '{dir}'/* && for f in *.output; do p=${{f%-*}}; done
for n in $(seq 0 20); do ln -sfn "$c" "$p-$n.output"; ln -sfn "$h" "$p-$n-1.output"; done
for f in *.output; do ln -sfn "$c" "$f"; done); echo planted"#,
        dir = dir.display(),
        config = config.display(),
        hook = hook.display(),
    );
    let bash = |c: &str| json!({"tool": "Bash", "input": {"command": c}});
    let lines = place.batch(&[
        bash("echo first"),
        bash(&plant),
        bash("echo a; seq 1 3"),
        bash("echo b; seq 4 6"),
        bash("seq 1 20000"),
        bash("cat .git/config"),
        json!({"tool": "Bash", "input": {"command": "echo bg", "run_in_background": true}}),
    ]);
    let texts: Vec<String> = lines.iter().map(text).collect();
    // The state directory is read-only inside the sandbox, so the links are not even made
    // now; what follows holds either way.
    assert!(texts[1].ends_with("planted"), "{user:?}: {}", texts[1]);
    assert_eq!(texts[2], "a\n1\n2\n3", "{user:?}");
    assert_eq!(texts[3], "b\n4\n5\n6", "{user:?}");
    assert!(texts[4].contains("lines truncated"), "{user:?}");
    let kept = lines[4]["data"]["persistedOutputPath"]
        .as_str()
        .expect("a kept output");
    assert!(
        std::fs::symlink_metadata(kept).is_ok_and(|m| m.is_file()),
        "{user:?}: {kept}"
    );
    assert_eq!(texts[5], "[core]", "{user:?}");
    assert_eq!(
        std::fs::read_to_string(&config).expect(".git/config"),
        "[core]\n",
        "{user:?}"
    );
    assert!(
        std::fs::symlink_metadata(&hook).is_err(),
        "{user:?}: a hook was created"
    );
}

#[test]
fn planted_links_are_not_followed_as_root() {
    planted_links_are_not_followed(User::Root);
}

#[test]
fn planted_links_are_not_followed_as_nobody() {
    planted_links_are_not_followed(User::Nobody);
}

fn a_flood_is_capped_on_disk(user: User) {
    if !usable(user) {
        return;
    }
    let place = Place::new(user);
    let r = place.bash(json!({"command": "timeout 3 yes"}));
    let dropped = r["data"]["persistedOutputDropped"]
        .as_u64()
        .unwrap_or_else(|| panic!("{user:?}: nothing dropped: {r}"));
    let total = r["data"]["persistedOutputSize"].as_u64().expect("a size");
    assert_eq!(total - dropped, 64 << 20, "{user:?}");
    assert!(
        text(&r).contains(&format!("… [{dropped} bytes dropped] …")),
        "{user:?}: {}",
        text(&r)
    );
    let path = r["data"]["persistedOutputPath"].as_str().expect("a path");
    let size = std::fs::metadata(path).expect("the saved output").len();
    assert!(size <= (64 << 20) + 100, "{user:?}: {size}");
    // Nothing else of the flood is left on disk.
    let mut used = 0;
    let mut stack = vec![place.home.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let m = e.metadata().expect("metadata");
            if m.is_dir() {
                stack.push(e.path());
            } else {
                used += m.len();
            }
        }
    }
    assert!(used <= (64 << 20) + (1 << 20), "{user:?}: {used}");
}

#[test]
fn a_flood_is_capped_on_disk_as_root() {
    a_flood_is_capped_on_disk(User::Root);
}

#[test]
fn a_flood_is_capped_on_disk_as_nobody() {
    a_flood_is_capped_on_disk(User::Nobody);
}

fn unsandboxed_commands_leave_nothing(user: User) {
    if !usable(user) {
        return;
    }
    let place = Place::new(user);
    // As filed: `setsid sleep 1201 &` unsandboxed, and a double fork past a timeout. Leaving
    // the sandbox call by call needs a person now; a session a person runs unsandboxed is
    // the same case.
    let settings = place.unsandboxed_settings();
    let options = ["--settings", settings.as_str()];
    let m = marker(1201, user, 0);
    let r = place.bash_with(
        &options,
        json!({"command": format!("setsid sleep {m} >/dev/null 2>&1 & echo started")}),
    );
    assert_eq!(text(&r), "started", "{user:?}: {r}");
    assert!(
        r["data"]["sandbox"]
            .as_str()
            .unwrap_or_default()
            .starts_with("none"),
        "{user:?}: {r}"
    );
    assert_eq!(survivors(&m), Vec::<u32>::new(), "{user:?}");
    let (a, b) = (marker(1301, user, 0), marker(1302, user, 0));
    let r = place.bash_with(
        &options,
        json!({
            "command": format!("setsid sh -c \"sleep {a}\" & sleep {b}"),
            "timeout": 1000
        }),
    );
    assert_eq!(r["data"]["timedOut"], true, "{user:?}: {r}");
    assert_eq!(survivors(&a), Vec::<u32>::new(), "{user:?}");
    assert_eq!(survivors(&b), Vec::<u32>::new(), "{user:?}");
}

#[test]
fn unsandboxed_commands_leave_nothing_as_root() {
    unsandboxed_commands_leave_nothing(User::Root);
}

#[test]
fn unsandboxed_commands_leave_nothing_as_nobody() {
    unsandboxed_commands_leave_nothing(User::Nobody);
}

fn killing_agent_tools_ends_its_commands(user: User) {
    if !usable(user) {
        return;
    }
    let place = Place::new(user);
    let (unsandboxed, sandboxed, foreground) = (
        marker(1401, user, 0),
        marker(1402, user, 0),
        marker(1403, user, 0),
    );
    // One server runs commands unsandboxed (its settings, a person's choice), one sandboxed.
    let settings = place.unsandboxed_settings();
    let mut server = Server::start_with(&place, &["--settings", &settings]);
    let mut sandboxed_server = Server::start(&place);
    let session = server.session();
    let escape = |m: &str| format!("setsid sleep {m} & (sleep {m} &) ; sleep {m}");
    let r = server.bash(
        &session,
        json!({"command": escape(&unsandboxed), "run_in_background": true}),
    );
    assert!(r.contains("Command running in background"), "{user:?}: {r}");
    let bwrap = have_bwrap();
    if bwrap {
        let sandboxed_session = sandboxed_server.session();
        let r = sandboxed_server.bash(
            &sandboxed_session,
            json!({"command": escape(&sandboxed), "run_in_background": true}),
        );
        assert!(r.contains("Command running in background"), "{user:?}: {r}");
    }
    // And a foreground command still running when the kill comes.
    let call = {
        let authority = server.authority.clone();
        let session = session.clone();
        let input = json!({"command": escape(&foreground)});
        std::thread::spawn(move || Server::post_to(&authority, Some(&session), &tool_call(input)))
    };
    let expected = [
        (&unsandboxed, 3),
        (&sandboxed, if bwrap { 3 } else { 0 }),
        (&foreground, 3),
    ];
    let sleeping = |m: &str| {
        with_marker(m)
            .into_iter()
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c == format!("sleep\0{m}\0").as_bytes())
            })
            .count()
    };
    for _ in 0..500 {
        if expected.iter().all(|(m, n)| sleeping(m) == *n) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for (m, n) in expected {
        assert_eq!(sleeping(m), n, "{user:?}: {m} before the kill");
    }
    for s in [&mut server, &mut sandboxed_server] {
        s.child.kill().expect("SIGKILL agent-tools");
        s.child.wait().expect("reap agent-tools");
    }
    for (m, _) in expected {
        assert_eq!(
            survivors(m),
            Vec::<u32>::new(),
            "{user:?}: {m} after the kill"
        );
    }
    // The foreground call got no answer.
    let (_, _, body) = call.join().expect("the caller thread");
    assert!(!body.contains(&foreground), "{user:?}: {body}");
}

#[test]
fn killing_agent_tools_ends_its_commands_as_root() {
    killing_agent_tools_ends_its_commands(User::Root);
}

#[test]
fn killing_agent_tools_ends_its_commands_as_nobody() {
    killing_agent_tools_ends_its_commands(User::Nobody);
}

/// `agent-tools serve --http 127.0.0.1:0` as the place's user, killed on drop.
struct Server {
    child: Child,
    authority: String,
}

impl Server {
    fn start(place: &Place) -> Server {
        Server::start_with(place, &[])
    }

    /// The same with more options.
    fn start_with(place: &Place, options: &[&str]) -> Server {
        let mut args = options.to_vec();
        args.extend([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--no-auth",
            "--mode",
            "bypassPermissions",
        ]);
        let mut child = place
            .command(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn agent-tools serve");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        // Notices may come first; the address line names the URL.
        let url = loop {
            let line = lines.next().expect("an address line").expect("readable");
            if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
                break url.to_owned();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        let authority = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        Server { child, authority }
    }

    /// One POST: the status line, the session header, the body.
    fn post(&self, session: Option<&str>, body: &Value) -> (String, Option<String>, String) {
        Server::post_to(&self.authority, session, body)
    }

    /// A new MCP session, initialized: its id.
    fn session(&self) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}});
        let (status, id, _) = self.post(None, &init);
        assert!(status.contains(" 200"), "{status}");
        let id = id.expect("a session id");
        let (status, _, _) = self.post(
            Some(&id),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        assert!(status.contains(" 202"), "{status}");
        id
    }

    /// A Bash call in `session`: the response (status line, headers and body).
    fn bash(&self, session: &str, input: Value) -> String {
        let (status, _, body) = self.post(Some(session), &tool_call(input));
        assert!(status.contains(" 200"), "{status}");
        body
    }

    /// One POST to `authority`: the status line, the session header, the response.
    fn post_to(
        authority: &str,
        session: Option<&str>,
        body: &Value,
    ) -> (String, Option<String>, String) {
        let mut stream = std::net::TcpStream::connect(authority).expect("connect");
        let session = session
            .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
            .unwrap_or_default();
        let body = body.to_string();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-06-18\r\n{session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("write");
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        let status = response.lines().next().unwrap_or("").to_owned();
        let id = response
            .lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| {
                l.split_once(':')
                    .filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
                    .map(|(_, v)| v.trim().to_owned())
            });
        (status, id, response)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `tools/call` of Bash with `input`.
fn tool_call(input: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "Bash", "arguments": input}})
}

/// Live `bwrap` processes whose parent is `parent`.
fn bwrap_children(parent: u32) -> usize {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let Some((head, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut f = rest.split_whitespace();
            let state = f.next().unwrap_or("Z");
            let ppid: u32 = f.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            head.ends_with("(bwrap") && ppid == parent && state != "Z"
        })
        .count()
}

fn mcp_sessions_share_bounded_sandboxes(user: User, sessions: usize) {
    if !usable(user) || !have_bwrap() {
        return;
    }
    let place = Place::new(user);
    let server = Server::start(&place);
    let pid = server.child.id();
    let mut most = 0;
    for i in 0..sessions {
        let id = server.session();
        let body = server.bash(&id, json!({"command": format!("echo session-{i}")}));
        assert!(body.contains(&format!("session-{i}")), "{user:?}: {body}");
        assert!(!body.contains(r#""isError":true"#), "{user:?}: {body}");
        most = most.max(bwrap_children(pid));
    }
    // The sessions stay open: instances pile up to the cap, and no further.
    assert!(most <= 32, "{user:?}: {most} bubblewrap instances at once");
    assert!(most > 16, "{user:?}: only {most} instances seen");
}

#[test]
fn mcp_sessions_share_bounded_sandboxes_as_root() {
    mcp_sessions_share_bounded_sandboxes(User::Root, 200);
}

#[test]
fn mcp_sessions_share_bounded_sandboxes_as_nobody() {
    mcp_sessions_share_bounded_sandboxes(User::Nobody, 60);
}
