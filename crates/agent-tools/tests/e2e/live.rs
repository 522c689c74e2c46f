//! A driver for a live `batch`, as an agent talks to it: send a line, read lines as they
//! come (results and event lines), each read bounded so a hang fails the test.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::Project;

/// How long one line may take before the test fails: far beyond any step, it only keeps a
/// broken build from hanging the suite (never a timing assertion).
const GUARD: Duration = Duration::from_secs(120);

/// A live `batch` of `binary` in a project, in `bypassPermissions` mode.
pub struct Live {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<Value>,
}

impl Live {
    /// Starts `binary --cwd ROOT --mode bypassPermissions batch` with the project's home.
    pub fn start(binary: &Path, project: &Project) -> Self {
        let mut child = project
            .command_of(
                binary,
                project.root(),
                &["--mode", "bypassPermissions", "batch"],
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str(&line)
                    && tx.send(v).is_err()
                {
                    break;
                }
            }
        });
        Live {
            child,
            stdin,
            lines,
        }
    }

    /// Sends one line.
    pub fn send(&mut self, call: Value) {
        let stdin = self.stdin.as_mut().expect("input still open");
        stdin.write_all(call.to_string().as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line that satisfies `want` (others are skipped), within the guard.
    pub fn next(&self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(GUARD)
                .unwrap_or_else(|_| panic!("no {what} arrived"));
            if want(&line) {
                return line;
            }
        }
    }

    /// The next result line (event lines are skipped), within the guard.
    pub fn result(&self) -> Value {
        self.next("result line", |l| l.get("tool").is_some())
    }

    /// A result line that has already arrived, without waiting (event lines are skipped).
    pub fn try_result(&self) -> Option<Value> {
        loop {
            match self.lines.try_recv() {
                Ok(l) if l.get("tool").is_some() => return Some(l),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// Closes the input and waits (within the guard) for the exit status.
    pub fn finish(mut self) -> Option<i32> {
        drop(self.stdin.take());
        for _ in 0..GUARD.as_millis() / 20 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("batch did not end after its input closed");
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
