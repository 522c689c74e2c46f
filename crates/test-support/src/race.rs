//! The symbolic-link race the file tools' tests run: [`Swapper`] exchanges two paths
//! atomically (`renameat2(RENAME_EXCHANGE)`) in a tight loop on its own thread, so that a
//! directory and a link to a directory elsewhere keep trading places while tools write
//! under them; [`EXPECTED_ERRORS`] are the refusals a racing call may end with.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

/// The error texts a racing call may end with: the permission check saw the link (the
/// target is outside), the path changed after the check, or the file changed under the call.
pub const EXPECTED_ERRORS: &[&str] = &[
    "Path is outside allowed working directories",
    "changed after the permission check",
    "has been unexpectedly modified",
];

/// Swaps two paths atomically until stopped (or dropped).
pub struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    handle: Option<JoinHandle<()>>,
}

impl Swapper {
    /// Starts swapping `a` and `b` on a new thread; both must exist.
    pub fn start(a: PathBuf, b: PathBuf) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let (stop2, swaps2) = (Arc::clone(&stop), Arc::clone(&swaps));
        let handle = std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &a,
                    rustix::fs::CWD,
                    &b,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .expect("renameat2(RENAME_EXCHANGE)");
                swaps2.fetch_add(1, Ordering::Relaxed);
            }
        });
        Swapper {
            stop,
            swaps,
            handle: Some(handle),
        }
    }

    /// Stops and returns how many swaps happened.
    pub fn stop(mut self) -> u64 {
        self.halt();
        self.swaps.load(Ordering::Relaxed)
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            h.join().expect("the swapper thread");
        }
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_a_directory_and_a_link_until_stopped() {
        let (_dir, root) = crate::tempdir();
        std::fs::create_dir(root.join("d")).expect("set up");
        std::fs::write(root.join("d/f"), "real").expect("set up");
        std::os::unix::fs::symlink("/", root.join("d.alt")).expect("set up");
        let swapper = Swapper::start(root.join("d"), root.join("d.alt"));
        while swapper.swaps.load(Ordering::Relaxed) < 3 {
            std::thread::yield_now();
        }
        let swaps = swapper.stop();
        assert!(swaps >= 3);
        // An even count leaves the directory where it started.
        let real = if swaps.is_multiple_of(2) {
            "d"
        } else {
            "d.alt"
        };
        assert_eq!(
            std::fs::read_to_string(root.join(real).join("f")).expect("the test tree"),
            "real"
        );
    }
}
