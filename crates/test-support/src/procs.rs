//! Processes found by a marker in their command line, for tests that check a command
//! started, or that nothing it started outlived what should have ended it.

use std::time::Duration;

/// A unique marker for the processes of one test.
pub fn marker(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{name}-{}-{nanos}", std::process::id())
}

/// The pids of processes (zombies aside) whose command line contains `marker`.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z "));
            !zombie && String::from_utf8_lossy(&cmdline).contains(marker)
        })
        .collect()
}

/// Waits up to `seconds` for every process with `marker` to be gone; the survivors.
pub fn survivors(marker: &str, seconds: u64) -> Vec<u32> {
    for _ in 0..seconds * 20 {
        if processes_with(marker).is_empty() {
            return Vec::new();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    processes_with(marker)
}

/// Waits up to `seconds` for a process with `marker` to appear.
pub fn wait_for_process(marker: &str, seconds: u64) -> bool {
    for _ in 0..seconds * 20 {
        if !processes_with(marker).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// The parent of process `pid`, from its `stat` (read after the command name, which may
/// hold spaces and parentheses).
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
