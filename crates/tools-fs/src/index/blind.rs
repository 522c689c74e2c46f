//! File systems whose notifications cannot be trusted: network, cluster and FUSE file
//! systems (NFS, SMB, 9p as in WSL's `/mnt/c`, virtiofs as in container bind mounts,
//! sshfs, ...) report through inotify only the changes made through this kernel, never those
//! made by another machine, the host of a VM or a FUSE daemon's own side. An index kept
//! fresh by notifications there would answer from a stale state, so such a project gets
//! none, and every query validates its scope first.
//!
//! The list errs toward blindness: a local FUSE file system counted blind costs a walk of
//! each query's scope, never a wrong answer, where a blind one counted seeing would.

use std::path::Path;

/// `statfs` magic numbers of the file systems above (`linux/magic.h` and the file systems'
/// own sources).
const BLIND_MAGIC: &[(u64, &str)] = &[
    (0x6969, "nfs"),
    (0x517B, "smbfs"),
    (0xFF53_4D42, "cifs"),
    (0xFE53_4D42, "smb2"),
    (0x0102_1997, "9p"),
    (0x6573_5546, "fuse"),
    (0x00C3_6400, "ceph"),
    (0x5346_414F, "afs"),
    (0x6B41_4653, "afs"),
    (0x7375_7245, "coda"),
    (0x786F_4256, "vboxsf"),
    (0x564C, "ncpfs"),
    (0x0BD0_0BD0, "lustre"),
    (0x0116_1970, "gfs2"),
    (0x7461_636F, "ocfs2"),
];

/// Type names in `/proc/self/mountinfo` of the same file systems (a FUSE file system is
/// `fuse.NAME`).
const BLIND_TYPES: &[&str] = &[
    "nfs", "nfs4", "smbfs", "cifs", "smb3", "9p", "virtiofs", "fuse", "fuseblk", "ceph", "afs",
    "coda", "vboxsf", "ncpfs", "lustre", "gfs2", "ocfs2", "drvfs", "prl_fs", "vmhgfs",
];

/// The name of a file system under `root` (canonical) whose changes may send no
/// notification: the one holding `root`, or one mounted below it. `None` when every one
/// reports its changes (or nothing could be learnt: then the watch's own errors decide).
pub(crate) fn blind_file_system(root: &Path) -> Option<String> {
    if let Ok(fs) = rustix::fs::statfs(root) {
        // The magic's width and sign differ between architectures (a 32-bit signed field
        // holds CIFS's 0xFF534D42 as a negative number); its low 32 bits are the magic.
        #[allow(clippy::cast_sign_loss)]
        let magic = fs.f_type as u64 & 0xFFFF_FFFF;
        if let Some((_, name)) = BLIND_MAGIC.iter().find(|(m, _)| *m == magic) {
            return Some((*name).to_owned());
        }
    }
    let mounts = std::fs::read("/proc/self/mountinfo").ok()?;
    blind_mount_below(root, &mounts)
}

/// The type of a blind file system mounted at or below `root`, from `mountinfo`'s text.
fn blind_mount_below(root: &Path, mountinfo: &[u8]) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let root = root.as_os_str().as_bytes();
    for line in mountinfo.split(|&b| b == b'\n') {
        let Some(at) = memchr::memmem::find(line, b" - ") else {
            continue;
        };
        let (before, after) = (&line[..at], &line[at + 3..]);
        let Some(point) = before.split(|&b| b == b' ').nth(4) else {
            continue;
        };
        let point = unescape(point);
        let below = point.strip_prefix(root).is_some_and(|rest| {
            rest.is_empty() || rest.first() == Some(&b'/') || root.last() == Some(&b'/')
        });
        if !below {
            continue;
        }
        let Some(kind) = after.split(|&b| b == b' ').next() else {
            continue;
        };
        let kind = String::from_utf8_lossy(kind);
        if kind.starts_with("fuse.") || BLIND_TYPES.contains(&kind.as_ref()) {
            return Some(kind.into_owned());
        }
    }
    None
}

/// A mount point as the kernel writes it: space, tab, newline and backslash as `\` and
/// three octal digits.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field
            .get(i + 1..i + 4)
            .filter(|d| field[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                let v = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:40 / /work/p/remote rw,relatime shared:5 - nfs4 srv:/export rw,vers=4.2
31 22 0:41 / /work/pp rw,relatime shared:6 - nfs srv:/other rw
32 22 0:42 / /work/q/my\\040dir rw,nosuid - fuse.sshfs me@host:/src rw
33 22 0:43 / /work/r/tmp rw - tmpfs tmpfs rw
34 22 0:44 / /mnt/c rw,noatime - 9p drvfs rw,aname=drvfs
malformed line without the separator
";

    fn check(root: &str, expected: Option<&str>) {
        assert_eq!(
            blind_mount_below(Path::new(root), MOUNTINFO.as_bytes()).as_deref(),
            expected,
            "{root}"
        );
    }

    #[test]
    fn mounts_below_the_root_that_send_no_notifications_are_found() {
        check("/work/p", Some("nfs4"));
        check("/work/p/remote", Some("nfs4"));
        check("/work/p/remote/src", None);
        // A sibling whose name only starts like the root is not below it.
        check("/work/pp/x", None);
        check("/work/pp", Some("nfs"));
        check("/work/q", Some("fuse.sshfs"));
        check("/work/r", None);
        check("/mnt", Some("9p"));
        check("/", Some("nfs4"));
        check("/srv", None);
    }

    #[test]
    fn mount_points_are_unescaped() {
        assert_eq!(unescape(br"/a\040b\011c\134d"), b"/a b\tc\\d");
        assert_eq!(unescape(br"/a\04"), br"/a\04");
        assert_eq!(unescape(br"/a\999"), br"/a\999");
    }
}
