//! The seccomp filter every sandboxed command runs under (Linux), and dropping
//! capabilities for the Landlock mechanism.
//!
//! The filter denies what could undo or escape the sandbox — mounting, new namespaces
//! (`unshare`, `setns`, `clone` with a namespace flag), `ptrace` and reading or writing
//! another process's memory, the kernel keyring, `bpf`, `perf_event_open`, `userfaultfd`,
//! loading modules, `kexec`, `reboot`, swap and accounting, and io_uring (which could open
//! sockets without `socket(2)`) — and restricts which sockets can be created
//! ([`Sockets`]). `clone3` fails with `ENOSYS` rather than `EPERM`, so the C library falls
//! back to `clone`, whose flags the filter can see; x32 system calls fail with `ENOSYS`.
//!
//! One BPF program holds it all: seccompiler builds each part (one action per filter), and
//! the parts are chained (every "allow" of a part jumps to the next part), so the same
//! program can be applied in-process or handed to bubblewrap's `--seccomp`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, sock_filter,
};
use tool_core::ToolError;

/// Which sockets a sandboxed command may create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sockets {
    /// Network off in a network namespace of the sandbox's own (bubblewrap): IP sockets
    /// reach only the sandbox's loopback, netlink only its own interfaces; no Unix socket
    /// can be created, so no host Unix socket (a path in a shared directory, or abstract)
    /// can be reached. Socket pairs stay.
    Private,
    /// Network off in the host's network namespace (Landlock): no socket at all; socket
    /// pairs stay.
    None,
    /// Network on: every family but VM sockets (which reach the host or hypervisor
    /// whatever the network namespace).
    Host,
}

impl Sockets {
    /// The argument the sandbox helper takes.
    pub fn as_arg(self) -> &'static str {
        match self {
            Sockets::Private => "private",
            Sockets::None => "none",
            Sockets::Host => "host",
        }
    }

    /// Reads [`Sockets::as_arg`].
    pub fn from_arg(arg: &str) -> Option<Sockets> {
        match arg {
            "private" => Some(Sockets::Private),
            "none" => Some(Sockets::None),
            "host" => Some(Sockets::Host),
            _ => None,
        }
    }
}

/// Denied with `EPERM` whatever their arguments.
const DENIED: &[i64] = &[
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_keyctl,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_open_by_handle_at,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
];

/// Calls that change a file's metadata — mode, owner, times, extended attributes — which
/// Landlock does not govern: denied in a read-only sandbox under Landlock (bubblewrap's
/// read-only mounts refuse them already).
const METADATA: &[i64] = &[
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    452, // fchmodat2
    libc::SYS_fchown,
    libc::SYS_fchownat,
    libc::SYS_utimensat,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    463, // setxattrat
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    466, // removexattrat
    #[cfg(target_arch = "x86_64")]
    libc::SYS_chmod,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_chown,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_lchown,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_utime,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_utimes,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_futimesat,
];

/// The part a read-only sandbox under Landlock adds: [`METADATA`] fails with `EROFS`, as on
/// a read-only mount.
fn read_only_part() -> Result<BpfProgram, String> {
    let rules: BTreeMap<i64, Vec<SeccompRule>> =
        METADATA.iter().map(|nr| (*nr, Vec::new())).collect();
    compile(rules, SeccompAction::Errno(libc::EROFS as u32))
}

/// `clone` flags that create a namespace.
const NAMESPACE_FLAGS: &[i32] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWCGROUP,
    0x80, // CLONE_NEWTIME
];

/// Socket families an own network namespace keeps.
const PRIVATE_FAMILIES: &[i32] = &[libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK];

/// x32 system calls carry this bit in their number.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

fn arch() -> Result<seccompiler::TargetArch, String> {
    std::env::consts::ARCH
        .try_into()
        .map_err(|e| format!("unsupported architecture: {e:?}"))
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| e.to_string())
}

fn arg0(op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(0, SeccompCmpArgLen::Dword, op, value).map_err(|e| e.to_string())
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    on_match: SeccompAction,
) -> Result<BpfProgram, String> {
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, on_match, arch()?)
        .map_err(|e| e.to_string())?;
    BpfProgram::try_from(filter).map_err(|e| e.to_string())
}

/// The part that returns `ENOSYS`: `clone3` and x32 calls.
fn enosys_part() -> Result<BpfProgram, String> {
    let mut rules = BTreeMap::new();
    rules.insert(libc::SYS_clone3, Vec::new());
    let compiled = compile(rules, SeccompAction::Errno(libc::ENOSYS as u32))?;
    // Before it: load the call number; an x32 call returns ENOSYS.
    let mut out = vec![
        sock_filter {
            code: BPF_LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        },
        sock_filter {
            code: BPF_JMP_JSET_K,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        sock_filter {
            code: BPF_RET_K,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        },
    ];
    out.extend(compiled);
    Ok(out)
}

/// The part that returns `EPERM`.
fn eperm_part(sockets: Sockets) -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in DENIED {
        rules.insert(*nr, Vec::new());
    }
    let mut clone_rules = Vec::new();
    for flag in NAMESPACE_FLAGS {
        let flag = *flag as u32 as u64;
        clone_rules.push(rule(vec![arg0(SeccompCmpOp::MaskedEq(flag), flag)?])?);
    }
    rules.insert(libc::SYS_clone, clone_rules);
    let socket_rule = match sockets {
        Sockets::Private => {
            let mut conditions = Vec::new();
            for family in PRIVATE_FAMILIES {
                conditions.push(arg0(SeccompCmpOp::Ne, *family as u64)?);
            }
            vec![rule(conditions)?]
        }
        Sockets::None => Vec::new(),
        Sockets::Host => vec![rule(vec![arg0(SeccompCmpOp::Eq, libc::AF_VSOCK as u64)?])?],
    };
    rules.insert(libc::SYS_socket, socket_rule);
    rules.insert(
        libc::SYS_socketpair,
        vec![rule(vec![arg0(SeccompCmpOp::Ne, libc::AF_UNIX as u64)?])?],
    );
    compile(rules, SeccompAction::Errno(libc::EPERM as u32))
}

/// `BPF_LD | BPF_W | BPF_ABS`: load a word of the system call's data.
const BPF_LD_W_ABS: u16 = 0x20;
/// `BPF_JMP | BPF_JA`: jump forward by `k`.
const BPF_JMP_JA: u16 = 0x05;
/// `BPF_JMP | BPF_JSET | BPF_K`: jump if the accumulator has a bit of `k`.
const BPF_JMP_JSET_K: u16 = 0x05 | 0x40;
/// `BPF_RET | BPF_K`: return `k`.
const BPF_RET_K: u16 = 0x06;

/// Runs `first`, then `second` where `first` allows: each "return allow" of `first`
/// becomes a jump to the start of `second`.
fn chain(first: BpfProgram, second: BpfProgram) -> BpfProgram {
    let len = first.len();
    let mut out: BpfProgram = first
        .into_iter()
        .enumerate()
        .map(|(i, ins)| {
            if ins.code == BPF_RET_K && ins.k == libc::SECCOMP_RET_ALLOW {
                sock_filter {
                    code: BPF_JMP_JA,
                    jt: 0,
                    jf: 0,
                    k: (len - i - 1) as u32,
                }
            } else {
                ins
            }
        })
        .collect();
    out.extend(second);
    out
}

/// The whole program for `sockets`, built once per variant.
pub fn program(sockets: Sockets) -> Result<&'static BpfProgram, ToolError> {
    type Built = OnceLock<Result<BpfProgram, String>>;
    static PRIVATE: Built = OnceLock::new();
    static NONE: Built = OnceLock::new();
    static HOST: Built = OnceLock::new();
    let cell = match sockets {
        Sockets::Private => &PRIVATE,
        Sockets::None => &NONE,
        Sockets::Host => &HOST,
    };
    cell.get_or_init(|| Ok(chain(enosys_part()?, eperm_part(sockets)?)))
        .as_ref()
        .map_err(|e| ToolError::fatal(format!("cannot build the sandbox's seccomp filter: {e}")))
}

/// The program as bytes, for bubblewrap's `--seccomp`.
pub fn program_bytes(sockets: Sockets) -> Result<Vec<u8>, ToolError> {
    let mut out = Vec::new();
    for ins in program(sockets)? {
        out.extend_from_slice(&ins.code.to_ne_bytes());
        out.push(ins.jt);
        out.push(ins.jf);
        out.extend_from_slice(&ins.k.to_ne_bytes());
    }
    Ok(out)
}

/// Applies the filter to the calling thread (and so to everything it starts afterwards);
/// sets `no_new_privs` first.
pub fn apply(sockets: Sockets) -> Result<(), ToolError> {
    seccompiler::apply_filter(program(sockets)?)
        .map_err(|e| ToolError::fatal(format!("cannot apply the sandbox's seccomp filter: {e}")))
}

/// [`apply`], and for a read-only sandbox under Landlock the metadata calls refused too
/// (filters stack: the stricter answer wins).
pub fn apply_landlock(sockets: Sockets, read_only: bool) -> Result<(), ToolError> {
    apply(sockets)?;
    if !read_only {
        return Ok(());
    }
    static READ_ONLY: OnceLock<Result<BpfProgram, String>> = OnceLock::new();
    let program = READ_ONLY
        .get_or_init(read_only_part)
        .as_ref()
        .map_err(|e| ToolError::fatal(format!("cannot build the sandbox's seccomp filter: {e}")))?;
    seccompiler::apply_filter(program)
        .map_err(|e| ToolError::fatal(format!("cannot apply the sandbox's seccomp filter: {e}")))
}

/// Whether the kernel takes the filter (checked once, on a throw-away thread).
pub fn available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        std::thread::spawn(|| apply(Sockets::Host).is_ok())
            .join()
            .unwrap_or(false)
    })
}

/// Drops every capability of the calling thread, for good: the bounding set (so that
/// executing a program as root does not grant them again), the ambient, inheritable,
/// permitted and effective sets. Without the privilege to change the bounding set (an
/// unprivileged user) there is nothing to drop there, and `no_new_privs` keeps file
/// capabilities from being granted.
pub fn drop_capabilities() -> Result<(), ToolError> {
    use rustix::thread::{
        CapabilitySet, CapabilitySets, clear_ambient_capability_set,
        remove_capability_from_bounding_set, set_capabilities,
    };
    let fail = |e: rustix::io::Errno| {
        ToolError::fatal(format!("cannot drop the sandbox's capabilities: {e}"))
    };
    for bit in 0..64_u32 {
        let cap = CapabilitySet::from_bits_retain(1_u64 << bit);
        match remove_capability_from_bounding_set(cap) {
            Ok(()) | Err(rustix::io::Errno::INVAL | rustix::io::Errno::PERM) => {}
            Err(e) => return Err(fail(e)),
        }
    }
    match clear_ambient_capability_set() {
        Ok(()) | Err(rustix::io::Errno::INVAL) => {}
        Err(e) => return Err(fail(e)),
    }
    set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )
    .map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_arguments_round_trip() {
        for s in [Sockets::Private, Sockets::None, Sockets::Host] {
            assert_eq!(Sockets::from_arg(s.as_arg()), Some(s));
        }
        assert_eq!(Sockets::from_arg("all"), None);
    }

    #[test]
    fn programs_build_and_chain() {
        for s in [Sockets::Private, Sockets::None, Sockets::Host] {
            let p = program(s).map(Vec::len).unwrap_or(0);
            assert!(p > DENIED.len(), "{s:?}: {p}");
            assert!(p < 4096, "{s:?}: {p}");
            assert_eq!(program_bytes(s).map(|b| b.len()).unwrap_or(0), p * 8);
        }
        // Chaining: only the first part's "allow" returns become jumps to the second part.
        let ret = |k| sock_filter {
            code: BPF_RET_K,
            jt: 0,
            jf: 0,
            k,
        };
        let chained = chain(
            vec![
                ret(libc::SECCOMP_RET_ALLOW),
                ret(libc::SECCOMP_RET_KILL_PROCESS),
            ],
            vec![ret(libc::SECCOMP_RET_ALLOW)],
        );
        assert_eq!(chained[0].code, BPF_JMP_JA);
        assert_eq!(chained[0].k, 1);
        assert_eq!(chained[1], ret(libc::SECCOMP_RET_KILL_PROCESS));
        assert_eq!(chained[2], ret(libc::SECCOMP_RET_ALLOW));
    }

    /// What a thread that applied the filter for `sockets` gets: the errno of each probe
    /// (0 for success).
    fn probes(sockets: Sockets) -> Vec<(&'static str, i32)> {
        std::thread::spawn(move || {
            if apply(sockets).is_err() {
                return Vec::new();
            }
            let dir = std::env::temp_dir();
            let sock = dir.join(format!(
                "agent-tools-filter-{}-{:?}",
                std::process::id(),
                sockets
            ));
            let errno =
                |r: std::io::Result<()>| r.err().and_then(|e| e.raw_os_error()).unwrap_or(0);
            let unshare = std::process::Command::new("unshare")
                .args(["--user", "true"])
                .stderr(std::process::Stdio::null())
                .status()
                .map(|s| if s.success() { 0 } else { libc::EPERM });
            let out = vec![
                (
                    "unix socket",
                    errno(std::os::unix::net::UnixListener::bind(&sock).map(drop)),
                ),
                (
                    "socket pair",
                    errno(std::os::unix::net::UnixStream::pair().map(drop)),
                ),
                (
                    "tcp socket",
                    errno(std::net::TcpListener::bind("127.0.0.1:0").map(drop)),
                ),
                ("unshare", unshare.unwrap_or(-1)),
            ];
            let _ = std::fs::remove_file(&sock);
            out
        })
        .join()
        .unwrap_or_default()
    }

    fn check(sockets: Sockets, expected: &[(&str, i32)]) {
        let got = probes(sockets);
        assert_eq!(got.len(), expected.len(), "{sockets:?}: {got:?}");
        for ((name, errno), (want_name, want)) in got.iter().zip(expected) {
            assert_eq!((name, errno), (want_name, want), "{sockets:?}");
        }
    }

    #[test]
    fn filtered_threads_lose_sockets_and_namespaces() {
        let eperm = libc::EPERM;
        check(
            Sockets::Private,
            &[
                ("unix socket", eperm),
                ("socket pair", 0),
                ("tcp socket", 0),
                ("unshare", eperm),
            ],
        );
        check(
            Sockets::None,
            &[
                ("unix socket", eperm),
                ("socket pair", 0),
                ("tcp socket", eperm),
                ("unshare", eperm),
            ],
        );
        check(
            Sockets::Host,
            &[
                ("unix socket", 0),
                ("socket pair", 0),
                ("tcp socket", 0),
                ("unshare", eperm),
            ],
        );
    }
}
