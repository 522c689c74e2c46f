//! Stopping a background command under bubblewrap, in a bubblewrap of its own (no
//! supervisor program) and under a supervisor of its own: a stop at any moment of the
//! launch, before bubblewrap has made its sandbox, while it makes it, or once the command
//! runs, leaves none of the command's processes behind.

use std::time::Duration;

use sandbox::{Io, Mechanism, Profile, RunSpec, SandboxSettings};
use tokio_util::sync::CancellationToken;

use crate::survivors;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_at_any_moment_of_the_launch_ends_every_process() {
    crate::require("bubblewrap", sandbox::bubblewrap().is_some());
    // The command starts as a child of this process, as in a host that registered no
    // supervisor program (none is registered here: bubblewrap reads the seccomp filter from
    // stdin, as it does there).
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().canonicalize().unwrap();
    let settings = SandboxSettings {
        mechanism: Mechanism::Bubblewrap,
        ..SandboxSettings::default()
    };
    let prepared = sandbox::prepare_profile(
        Profile::Workspace,
        &settings,
        std::slice::from_ref(&project),
        &project,
        false,
    )
    .unwrap();
    let stopped = CancellationToken::new();
    stopped.cancel();
    let mut left = Vec::new();
    for round in 0..8 {
        // The last rounds start the command under a supervisor of its own.
        let supervised = round >= 4;
        if supervised {
            sandbox::set_supervisor_program(env!("CARGO_BIN_EXE_sandbox-supervisor"));
        }
        for delay in [0, 1, 2, 5, 10, 20, 50, 200] {
            let marker = format!("30.{}{round}{delay:03}", std::process::id());
            let spec = RunSpec {
                command: format!("sleep {marker} & sleep {marker}"),
                cwd: project.clone(),
                env: Vec::new(),
            };
            let (read, write) = rustix::pipe::pipe().unwrap();
            let io = Io::new(write, None);
            let mut running = if supervised {
                sandbox::start_alone(&spec, &prepared.launch, io).await
            } else {
                sandbox::spawn_command(&spec, &prepared.launch, io).await
            }
            .unwrap();
            tokio::time::sleep(Duration::from_millis(delay)).await;
            running.wait(None, &stopped).await;
            drop(read);
            let found = survivors(&marker).await;
            if !found.is_empty() {
                left.push((supervised, delay, found));
            }
        }
    }
    assert!(
        left.is_empty(),
        "left behind (supervised, delay in ms, pids): {left:?}"
    );
}
