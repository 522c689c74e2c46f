//! The bash a session's supervisor starts ahead for the next command, unsandboxed, under
//! Landlock and in bubblewrap: a command run by it sees what a bash of its own shows it;
//! a time limit or a cancellation ends its whole group; it exists only while no command
//! runs, so no command can find or signal it; it dies with the supervisor; and a command
//! whose variables or directory differ, or whose variables act at bash's start, gets a
//! bash of its own.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sandbox::{Ending, Launch, Prepared, Profile, RunSpec};
use test_support::procs::parent_of;
use tokio_util::sync::CancellationToken;

use crate::{Site, survivors};

/// Printed by a command that runs in a bash started ahead (its argument list holds the
/// wait for the command; the pattern does not match itself).
const CHECK: &str = r#"grep -q "__agent_tools_[s]=" /proc/$$/cmdline && echo PREPARED"#;

/// Every launch: none, then each mechanism this machine offers, in the jail (a Landlock
/// instance of the workspace sandbox is keyed on the time of `/tmp`, which other tests keep
/// changing, and a new instance starts its first bash itself).
fn launches(site: &Site) -> Vec<(&'static str, Launch)> {
    let mut out = vec![("none", Launch::Direct)];
    for (name, settings) in crate::mechanisms() {
        let prepared: Prepared = site.prepare(Profile::Jail, &settings);
        out.push((name, prepared.launch));
    }
    out
}

async fn run(site: &Site, launch: &Launch, spec: &RunSpec) -> (Ending, String) {
    let ran = site
        .instances
        .run(spec, launch, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    (ran.finished.ending, ran.text())
}

fn spec(site: &Site, command: &str) -> RunSpec {
    RunSpec {
        command: command.to_owned(),
        cwd: site.project.clone(),
        env: Vec::new(),
    }
}

/// The bashes waiting for a command below process `root` (the session's supervisor, or
/// its bubblewrap).
fn waiting_below(root: u32) -> Vec<u32> {
    crate::processes_with("read -r -d")
        .into_iter()
        .filter(|&p| {
            let mut at = p;
            for _ in 0..16 {
                match parent_of(at) {
                    Some(up) if up == root => return true,
                    Some(up) if up > 1 => at = up,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}

/// Waits (bounded) until a bash waits below `root`.
async fn a_bash_waits_below(root: u32) -> Vec<u32> {
    for _ in 0..250 {
        let found = waiting_below(root);
        if !found.is_empty() {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Vec::new()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_sees_what_a_bash_of_its_own_shows_it() {
    let site = Site::new();
    // Everything bash itself makes of its start and of the start-up code; not the process
    // ids or the pipes' inodes, which differ from call to call.
    let probe = format!(
        r#"echo "$LINENO|$_|$((SECONDS < 2))|$0|$#|$-|$PWD|${{OLDPWD-unset}}|$SHLVL"
printf %s "$BASH_EXECUTION_STRING" | cksum
ls /proc/$$/fd; readlink /proc/$$/fd/0
[ -p /proc/$$/fd/1 ] && [ -p /proc/$$/fd/2 ] && echo pipes
[ "$(cut -d' ' -f5 /proc/$$/stat)" = $$ ] && echo leader
env | LC_ALL=C sort; ulimit -a; trap -p; set | grep ^__agent_tools; shopt | cksum
{CHECK}
exit 3"#
    );
    for (name, launch) in launches(&site) {
        // The first command of an instance starts a bash of its own; the next ones are
        // run by the bash started ahead.
        let (ending, fresh) = run(&site, &launch, &spec(&site, &probe)).await;
        assert_eq!(ending, Ending::Exited, "{name}: {fresh}");
        assert!(!fresh.lines().any(|l| l == "PREPARED"), "{name}: {fresh}");
        for _ in 0..3 {
            let ran = site
                .instances
                .run(&spec(&site, &probe), &launch, None)
                .await
                .unwrap();
            let text = ran.text();
            assert_eq!(ran.finished.code, 3, "{name}: {text}");
            assert_eq!(
                text.replace("PREPARED\n", ""),
                fresh,
                "{name}: a bash started ahead shows something else"
            );
            assert!(text.ends_with("PREPARED\n"), "{name}: {text}");
        }
        // `$SECONDS` counts from the command's arrival, not from its bash's start: after a
        // wait of two seconds it still says 0 (or 1, across a second's boundary). The probe
        // above shows it only as under 2, since a bash of its own can cross a boundary too.
        tokio::time::sleep(Duration::from_millis(2100)).await;
        let (_, text) = run(
            &site,
            &launch,
            &spec(&site, &format!("echo \"$SECONDS\"; {CHECK}")),
        )
        .await;
        assert!(
            text == "0\nPREPARED\n" || text == "1\nPREPARED\n",
            "{name}: {text}"
        );
        // Output and status as they come, stdout and stderr to the same pipe.
        let (_, text) = run(
            &site,
            &launch,
            &spec(&site, "echo out; echo err >&2; false"),
        )
        .await;
        assert_eq!(text, "out\nerr\n", "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_limit_or_a_cancellation_ends_the_whole_group() {
    let site = Site::new();
    for (name, launch) in launches(&site) {
        run(&site, &launch, &spec(&site, ":")).await;
        let marker = format!("31.{}7", std::process::id());
        let command = format!("{CHECK}; sleep {marker} & sleep {marker}");
        let ran = site
            .instances
            .run(
                &spec(&site, &command),
                &launch,
                Some(Duration::from_secs(1)),
            )
            .await
            .unwrap();
        assert_eq!(ran.finished.ending, Ending::TimedOut, "{name}");
        assert_eq!(ran.text(), "PREPARED\n", "{name}");
        assert!(survivors(&marker).await.is_empty(), "{name}: left running");

        // Its leftovers may keep the next bash from starting ahead at once.
        run(&site, &launch, &spec(&site, ":")).await;
        let root = site.instances.instance().unwrap().pid;
        assert_eq!(crate::prestart::a_bash_waits_below(root).await.len(), 1);
        let cancel = CancellationToken::new();
        let pipes = site.instances.pipes(false).unwrap();
        let (read, io) = (pipes.output, pipes.io);
        let mut running = site
            .instances
            .start(&spec(&site, &command), &launch, io)
            .await
            .unwrap();
        let stop = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            stop.cancel();
        });
        let finished = running.wait(None, &cancel).await;
        drop(running);
        assert_eq!(finished.ending, Ending::Cancelled, "{name}");
        let mut out = String::new();
        std::io::Read::read_to_string(&mut std::fs::File::from(read), &mut out).unwrap();
        assert_eq!(out, "PREPARED\n", "{name}");
        assert!(survivors(&marker).await.is_empty(), "{name}: left running");
        let (_, text) = run(&site, &launch, &spec(&site, "echo after")).await;
        assert_eq!(text, "after\n", "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_command_can_reach_the_next_commands_bash() {
    let site = Site::new();
    // Every other child of the supervisor (the command's parent) is listed and killed.
    let attack = r#"for s in /proc/[0-9]*/stat; do
  read -r p c st pp rest 2>/dev/null < "$s" || continue
  if [ "$pp" = "$PPID" ] && [ "$p" != $$ ]; then echo "found $p $c"; kill -9 "$p"; fi
done
echo searched"#;
    for (name, launch) in launches(&site) {
        run(&site, &launch, &spec(&site, ":")).await;
        let root = site.instances.instance().unwrap().pid;
        assert_eq!(a_bash_waits_below(root).await.len(), 1, "{name}");
        let (_, text) = run(&site, &launch, &spec(&site, attack)).await;
        assert_eq!(text, "searched\n", "{name}: the command found something");
        // While a command runs, nothing waits.
        let pipes = site.instances.pipes(false).unwrap();
        let mut running = site
            .instances
            .start(
                &spec(&site, &format!("{CHECK}; sleep 1")),
                &launch,
                pipes.io,
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        // The bash started ahead is the command now; no other waits.
        assert_eq!(waiting_below(root).len(), 1, "{name}");
        let finished = running.wait(None, &CancellationToken::new()).await;
        assert_eq!(finished.code, 0, "{name}");
        drop(running);
        let mut out = String::new();
        std::io::Read::read_to_string(&mut std::fs::File::from(pipes.output), &mut out).unwrap();
        assert_eq!(out, "PREPARED\n", "{name}");
        let (_, text) = run(&site, &launch, &spec(&site, CHECK)).await;
        assert_eq!(text, "PREPARED\n", "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_waiting_bash_ends_with_its_supervisor() {
    for index in 0.. {
        let site = Site::new();
        let Some((name, launch)) = launches(&site).into_iter().nth(index) else {
            break;
        };
        run(&site, &launch, &spec(&site, ":")).await;
        let root = site.instances.instance().unwrap().pid;
        let waiting = a_bash_waits_below(root).await;
        assert_eq!(waiting.len(), 1, "{name}");
        drop(site);
        let gone = |p: u32| !Path::new(&format!("/proc/{p}")).exists();
        for _ in 0..250 {
            if gone(waiting[0]) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Not even a zombie is left.
        assert!(
            gone(waiting[0]),
            "{name}: the waiting bash outlived its supervisor"
        );
        // Bubblewrap's own process (killed with the session, and collected by the runtime
        // as any child it let go of) may take a moment longer.
        for _ in 0..250 {
            if gone(root) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            gone(root),
            "{name}: the supervisor outlived its session: {}",
            std::fs::read_to_string(format!("/proc/{root}/stat")).unwrap_or_default()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_variables_or_directories_get_a_bash_of_their_own() {
    let site = Site::new();
    let sub: PathBuf = site.project.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let startup = site.project.join("startup.sh");
    std::fs::write(&startup, "echo from-bash-env\n").unwrap();
    for (name, launch) in launches(&site) {
        let with = |env: &[(&str, &str)], cwd: &Path| RunSpec {
            command: format!("echo \"${{FOO-none}} $PWD\"; {CHECK}"),
            cwd: cwd.to_path_buf(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        };
        let project = site.project.display();
        run(&site, &launch, &with(&[], &site.project)).await;
        let (_, text) = run(&site, &launch, &with(&[], &site.project)).await;
        assert_eq!(text, format!("none {project}\nPREPARED\n"), "{name}");
        // Another variable: a bash of its own, then the one started ahead with it.
        let (_, text) = run(&site, &launch, &with(&[("FOO", "1")], &site.project)).await;
        assert_eq!(text, format!("1 {project}\n"), "{name}");
        let (_, text) = run(&site, &launch, &with(&[("FOO", "1")], &site.project)).await;
        assert_eq!(text, format!("1 {project}\nPREPARED\n"), "{name}");
        // Another directory: the same.
        let (_, text) = run(&site, &launch, &with(&[("FOO", "1")], &sub)).await;
        assert_eq!(text, format!("1 {}\n", sub.display()), "{name}");
        let (_, text) = run(&site, &launch, &with(&[("FOO", "1")], &sub)).await;
        assert_eq!(text, format!("1 {}\nPREPARED\n", sub.display()), "{name}");
        // A directory replaced since the bash started in it.
        let root = site.instances.instance().unwrap().pid;
        assert_eq!(a_bash_waits_below(root).await.len(), 1, "{name}");
        std::fs::rename(&sub, site.project.join("old")).unwrap();
        std::fs::create_dir(&sub).unwrap();
        let (_, text) = run(&site, &launch, &with(&[("FOO", "1")], &sub)).await;
        assert_eq!(text, format!("1 {}\n", sub.display()), "{name}");
        std::fs::remove_dir(site.project.join("old")).unwrap();
        // A variable bash acts on at its start: never a bash started ahead.
        let startup = startup.display().to_string();
        for _ in 0..2 {
            let env = [("BASH_ENV", startup.as_str())];
            let (_, text) = run(&site, &launch, &with(&env, &site.project)).await;
            assert_eq!(text, format!("from-bash-env\nnone {project}\n"), "{name}");
        }
        // A long command.
        run(&site, &launch, &spec(&site, ":")).await;
        let long = format!("{}{CHECK}; echo long", ":; ".repeat(2000));
        let (_, text) = run(&site, &launch, &spec(&site, &long)).await;
        assert_eq!(text, "long\n", "{name}");
    }
}
