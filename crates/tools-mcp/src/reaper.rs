//! Processes a stopping server's calls leave behind. A sandboxed command's sandbox can
//! outlive the process the shell tools started and killed (bubblewrap's namespace init is a
//! child of that process, in a session of its own); when the server stops, it first becomes
//! the subreaper of its descendants, so such orphans become its children instead of init's,
//! and after the calls and tasks have ended it kills and reaps every child it adopted.
//! Elsewhere than Linux this does nothing.

/// The children this process had before it started adopting orphans.
#[derive(Debug, Default)]
pub struct Adoption {
    #[cfg(target_os = "linux")]
    before: Vec<i32>,
}

/// From now on, descendants whose parent dies become this process's children.
pub fn adopt_orphans() -> Adoption {
    #[cfg(target_os = "linux")]
    {
        let before = children();
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
        Adoption { before }
    }
    #[cfg(not(target_os = "linux"))]
    Adoption::default()
}

/// The pids whose parent is this process.
#[cfg(target_os = "linux")]
fn children() -> Vec<i32> {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    let rest = stat.rsplit_once(')')?.1.to_owned();
                    rest.split_whitespace().nth(1)?.parse::<i32>().ok()
                })
                == Some(me)
        })
        .collect()
}

impl Adoption {
    /// Kills and reaps every child adopted since [`adopt_orphans`] (and the children they
    /// leave in turn), for at most about two seconds.
    pub async fn kill_adopted(&self) {
        #[cfg(target_os = "linux")]
        for _ in 0..100 {
            let adopted: Vec<i32> = children()
                .into_iter()
                .filter(|pid| !self.before.contains(pid))
                .collect();
            if adopted.is_empty() {
                return;
            }
            for pid in adopted {
                if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                    let _ =
                        rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn children_are_found_by_parent() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let pid = child.id() as i32;
        assert!(children().contains(&pid));
        let _ = child.kill();
        let _ = child.wait();
    }
}
