//! The isolated sandbox's seccomp filter: Docker's default profile (moby's
//! `profiles/seccomp/default.json`, for x86-64 and a process without capabilities), a
//! little stricter ([`ALLOWED`]). It is an allow-list: any other system call (`keyctl`,
//! `add_key`, `bpf`, `mount`, `unshare`, `setns`, `perf_event_open`, `userfaultfd`, one
//! added to the kernel later, an x32 one) fails with `EPERM`, as under Docker; a 32-bit
//! one (`int 0x80`) kills the process (the compiler's check of the architecture).
//!
//! Two programs, which bubblewrap loads from two descriptors (`--add-seccomp-fd`): the
//! allow-list, and one that makes `clone3` fail with `ENOSYS`, as Docker's does, so that
//! the C library falls back to `clone`, whose namespace flags a filter can see (`clone3`
//! takes its flags in memory). A filter has one action on a match; of two filters'
//! errors the kernel returns the one of the filter installed last, the `clone3` one.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seccompiler::{
    BackendError, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The system calls Docker's default profile allows whatever the arguments (since
/// Docker 25 without the `io_uring_*` calls), less `ptrace`, `process_vm_readv` and
/// `process_vm_writev`, which Docker allows on kernels from 4.8 (a bot has no business
/// with another process's memory), and `io_pgetevents` (not in `libc`'s list).
const ALLOWED: &[libc::c_long] = &[
    libc::SYS_accept,
    libc::SYS_accept4,
    libc::SYS_access,
    libc::SYS_adjtimex,
    libc::SYS_alarm,
    libc::SYS_arch_prctl,
    libc::SYS_bind,
    libc::SYS_brk,
    libc::SYS_capget,
    libc::SYS_capset,
    libc::SYS_chdir,
    libc::SYS_chmod,
    libc::SYS_chown,
    libc::SYS_clock_adjtime,
    libc::SYS_clock_getres,
    libc::SYS_clock_gettime,
    libc::SYS_clock_nanosleep,
    libc::SYS_close,
    libc::SYS_close_range,
    libc::SYS_connect,
    libc::SYS_copy_file_range,
    libc::SYS_creat,
    libc::SYS_dup,
    libc::SYS_dup2,
    libc::SYS_dup3,
    libc::SYS_epoll_create,
    libc::SYS_epoll_create1,
    libc::SYS_epoll_ctl,
    libc::SYS_epoll_ctl_old,
    libc::SYS_epoll_pwait,
    libc::SYS_epoll_pwait2,
    libc::SYS_epoll_wait,
    libc::SYS_epoll_wait_old,
    libc::SYS_eventfd,
    libc::SYS_eventfd2,
    libc::SYS_execve,
    libc::SYS_execveat,
    libc::SYS_exit,
    libc::SYS_exit_group,
    libc::SYS_faccessat,
    libc::SYS_faccessat2,
    libc::SYS_fadvise64,
    libc::SYS_fallocate,
    libc::SYS_fanotify_mark,
    libc::SYS_fchdir,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    libc::SYS_fchown,
    libc::SYS_fchownat,
    libc::SYS_fcntl,
    libc::SYS_fdatasync,
    libc::SYS_fgetxattr,
    libc::SYS_flistxattr,
    libc::SYS_flock,
    libc::SYS_fork,
    libc::SYS_fremovexattr,
    libc::SYS_fsetxattr,
    libc::SYS_fstat,
    libc::SYS_fstatfs,
    libc::SYS_fsync,
    libc::SYS_ftruncate,
    libc::SYS_futex,
    libc::SYS_futex_waitv,
    libc::SYS_futimesat,
    libc::SYS_getcpu,
    libc::SYS_getcwd,
    libc::SYS_getdents,
    libc::SYS_getdents64,
    libc::SYS_getegid,
    libc::SYS_geteuid,
    libc::SYS_getgid,
    libc::SYS_getgroups,
    libc::SYS_getitimer,
    libc::SYS_getpeername,
    libc::SYS_getpgid,
    libc::SYS_getpgrp,
    libc::SYS_getpid,
    libc::SYS_getppid,
    libc::SYS_getpriority,
    libc::SYS_getrandom,
    libc::SYS_getresgid,
    libc::SYS_getresuid,
    libc::SYS_getrlimit,
    libc::SYS_get_robust_list,
    libc::SYS_getrusage,
    libc::SYS_getsid,
    libc::SYS_getsockname,
    libc::SYS_getsockopt,
    libc::SYS_get_thread_area,
    libc::SYS_gettid,
    libc::SYS_gettimeofday,
    libc::SYS_getuid,
    libc::SYS_getxattr,
    libc::SYS_inotify_add_watch,
    libc::SYS_inotify_init,
    libc::SYS_inotify_init1,
    libc::SYS_inotify_rm_watch,
    libc::SYS_io_cancel,
    libc::SYS_ioctl,
    libc::SYS_io_destroy,
    libc::SYS_io_getevents,
    libc::SYS_ioprio_get,
    libc::SYS_ioprio_set,
    libc::SYS_io_setup,
    libc::SYS_io_submit,
    libc::SYS_kill,
    libc::SYS_landlock_add_rule,
    libc::SYS_landlock_create_ruleset,
    libc::SYS_landlock_restrict_self,
    libc::SYS_lchown,
    libc::SYS_lgetxattr,
    libc::SYS_link,
    libc::SYS_linkat,
    libc::SYS_listen,
    libc::SYS_listxattr,
    libc::SYS_llistxattr,
    libc::SYS_lremovexattr,
    libc::SYS_lseek,
    libc::SYS_lsetxattr,
    libc::SYS_lstat,
    libc::SYS_madvise,
    libc::SYS_membarrier,
    libc::SYS_memfd_create,
    libc::SYS_memfd_secret,
    libc::SYS_mincore,
    libc::SYS_mkdir,
    libc::SYS_mkdirat,
    libc::SYS_mknod,
    libc::SYS_mknodat,
    libc::SYS_mlock,
    libc::SYS_mlock2,
    libc::SYS_mlockall,
    libc::SYS_mmap,
    libc::SYS_modify_ldt,
    libc::SYS_mprotect,
    libc::SYS_mq_getsetattr,
    libc::SYS_mq_notify,
    libc::SYS_mq_open,
    libc::SYS_mq_timedreceive,
    libc::SYS_mq_timedsend,
    libc::SYS_mq_unlink,
    libc::SYS_mremap,
    libc::SYS_msgctl,
    libc::SYS_msgget,
    libc::SYS_msgrcv,
    libc::SYS_msgsnd,
    libc::SYS_msync,
    libc::SYS_munlock,
    libc::SYS_munlockall,
    libc::SYS_munmap,
    libc::SYS_name_to_handle_at,
    libc::SYS_nanosleep,
    libc::SYS_newfstatat,
    libc::SYS_open,
    libc::SYS_openat,
    libc::SYS_openat2,
    libc::SYS_pause,
    libc::SYS_pidfd_open,
    libc::SYS_pidfd_send_signal,
    libc::SYS_pipe,
    libc::SYS_pipe2,
    libc::SYS_pkey_alloc,
    libc::SYS_pkey_free,
    libc::SYS_pkey_mprotect,
    libc::SYS_poll,
    libc::SYS_ppoll,
    libc::SYS_prctl,
    libc::SYS_pread64,
    libc::SYS_preadv,
    libc::SYS_preadv2,
    libc::SYS_prlimit64,
    libc::SYS_process_mrelease,
    libc::SYS_pselect6,
    libc::SYS_pwrite64,
    libc::SYS_pwritev,
    libc::SYS_pwritev2,
    libc::SYS_read,
    libc::SYS_readahead,
    libc::SYS_readlink,
    libc::SYS_readlinkat,
    libc::SYS_readv,
    libc::SYS_recvfrom,
    libc::SYS_recvmmsg,
    libc::SYS_recvmsg,
    libc::SYS_remap_file_pages,
    libc::SYS_removexattr,
    libc::SYS_rename,
    libc::SYS_renameat,
    libc::SYS_renameat2,
    libc::SYS_restart_syscall,
    libc::SYS_rmdir,
    libc::SYS_rseq,
    libc::SYS_rt_sigaction,
    libc::SYS_rt_sigpending,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigqueueinfo,
    libc::SYS_rt_sigreturn,
    libc::SYS_rt_sigsuspend,
    libc::SYS_rt_sigtimedwait,
    libc::SYS_rt_tgsigqueueinfo,
    libc::SYS_sched_getaffinity,
    libc::SYS_sched_getattr,
    libc::SYS_sched_getparam,
    libc::SYS_sched_get_priority_max,
    libc::SYS_sched_get_priority_min,
    libc::SYS_sched_getscheduler,
    libc::SYS_sched_rr_get_interval,
    libc::SYS_sched_setaffinity,
    libc::SYS_sched_setattr,
    libc::SYS_sched_setparam,
    libc::SYS_sched_setscheduler,
    libc::SYS_sched_yield,
    libc::SYS_seccomp,
    libc::SYS_select,
    libc::SYS_semctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semtimedop,
    libc::SYS_sendfile,
    libc::SYS_sendmmsg,
    libc::SYS_sendmsg,
    libc::SYS_sendto,
    libc::SYS_setfsgid,
    libc::SYS_setfsuid,
    libc::SYS_setgid,
    libc::SYS_setgroups,
    libc::SYS_setitimer,
    libc::SYS_setpgid,
    libc::SYS_setpriority,
    libc::SYS_setregid,
    libc::SYS_setresgid,
    libc::SYS_setresuid,
    libc::SYS_setreuid,
    libc::SYS_setrlimit,
    libc::SYS_set_robust_list,
    libc::SYS_setsid,
    libc::SYS_setsockopt,
    libc::SYS_set_thread_area,
    libc::SYS_set_tid_address,
    libc::SYS_setuid,
    libc::SYS_setxattr,
    libc::SYS_shmat,
    libc::SYS_shmctl,
    libc::SYS_shmdt,
    libc::SYS_shmget,
    libc::SYS_shutdown,
    libc::SYS_sigaltstack,
    libc::SYS_signalfd,
    libc::SYS_signalfd4,
    libc::SYS_socketpair,
    libc::SYS_splice,
    libc::SYS_stat,
    libc::SYS_statfs,
    libc::SYS_statx,
    libc::SYS_symlink,
    libc::SYS_symlinkat,
    libc::SYS_sync,
    libc::SYS_sync_file_range,
    libc::SYS_syncfs,
    libc::SYS_sysinfo,
    libc::SYS_tee,
    libc::SYS_tgkill,
    libc::SYS_time,
    libc::SYS_timer_create,
    libc::SYS_timer_delete,
    libc::SYS_timer_getoverrun,
    libc::SYS_timer_gettime,
    libc::SYS_timer_settime,
    libc::SYS_timerfd_create,
    libc::SYS_timerfd_gettime,
    libc::SYS_timerfd_settime,
    libc::SYS_times,
    libc::SYS_tkill,
    libc::SYS_truncate,
    libc::SYS_umask,
    libc::SYS_uname,
    libc::SYS_unlink,
    libc::SYS_unlinkat,
    libc::SYS_utime,
    libc::SYS_utimensat,
    libc::SYS_utimes,
    libc::SYS_vfork,
    libc::SYS_vmsplice,
    libc::SYS_wait4,
    libc::SYS_waitid,
    libc::SYS_write,
    libc::SYS_writev,
];

/// `clone`'s flags that make namespaces (`CLONE_NEWNS`, `NEWCGROUP`, `NEWUTS`, `NEWIPC`,
/// `NEWUSER`, `NEWPID`, `NEWNET`): a `clone` with any of them fails, as under Docker.
const CLONE_NAMESPACE_FLAGS: u64 = 0x7E02_0000;
/// `AF_VSOCK`: sockets to the hypervisor, which no network namespace holds back.
const AF_VSOCK: u64 = 40;
/// The `personality` values Docker allows: the default, `PER_LINUX32`, `UNAME26`, both,
/// and the query (`0xffffffff`).
const PERSONALITIES: [u64; 5] = [0, 0x8, 0x2_0000, 0x2_0008, 0xffff_ffff];

/// The two programs as bubblewrap reads them (`struct sock_filter`s, native byte
/// order), in the order they are to be installed; compiled once.
pub(super) fn programs() -> Result<&'static [Vec<u8>; 2], String> {
    static PROGRAMS: OnceLock<Result<[Vec<u8>; 2], String>> = OnceLock::new();
    PROGRAMS
        .get_or_init(|| {
            let compiled = compile_allowed().and_then(|allowed| Ok([allowed, compile_clone3()?]));
            compiled.map(|programs| programs.map(|program| bytes(&program))).map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn arch() -> Result<TargetArch, BackendError> {
    TargetArch::try_from(std::env::consts::ARCH)
}

/// The allow-list: everything else fails with `EPERM`.
fn compile_allowed() -> Result<BpfProgram, BackendError> {
    let argument = |op, value| SeccompCondition::new(0, SeccompCmpArgLen::Qword, op, value);
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = ALLOWED.iter().map(|&call| (call, Vec::new())).collect();
    rules.insert(
        libc::SYS_clone,
        vec![SeccompRule::new(vec![argument(SeccompCmpOp::MaskedEq(CLONE_NAMESPACE_FLAGS), 0)?])?],
    );
    rules.insert(libc::SYS_socket, vec![SeccompRule::new(vec![argument(SeccompCmpOp::Ne, AF_VSOCK)?])?]);
    // The kernel takes `personality`'s argument as 32 bits.
    let personalities = PERSONALITIES
        .iter()
        .map(|&value| {
            SeccompRule::new(vec![SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)?])
        })
        .collect::<Result<_, _>>()?;
    rules.insert(libc::SYS_personality, personalities);
    let filter = SeccompFilter::new(rules, SeccompAction::Errno(libc::EPERM as u32), SeccompAction::Allow, arch()?)?;
    filter.try_into()
}

/// `clone3` fails with `ENOSYS`; everything else is left to the allow-list.
fn compile_clone3() -> Result<BpfProgram, BackendError> {
    let rules = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::ENOSYS as u32), arch()?)?;
    filter.try_into()
}

/// A program as the kernel's `struct sock_filter` array, which bubblewrap reads whole.
fn bytes(program: &BpfProgram) -> Vec<u8> {
    program
        .iter()
        .flat_map(|instruction| {
            let mut bytes = [0u8; 8];
            bytes[..2].copy_from_slice(&instruction.code.to_ne_bytes());
            bytes[2] = instruction.jt;
            bytes[3] = instruction.jf;
            bytes[4..].copy_from_slice(&instruction.k.to_ne_bytes());
            bytes
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's limit on one classic BPF program (`BPF_MAXINSNS`).
    const MOST_INSTRUCTIONS: usize = 4096;

    #[test]
    fn both_programs_compile_within_the_kernels_limit_and_each_allowed_call_once() {
        let [allowed, clone3] = programs().expect("the filter compiles");
        for program in [allowed, clone3] {
            assert_eq!(program.len() % 8, 0, "whole instructions");
            assert!(program.len() / 8 <= MOST_INSTRUCTIONS, "{} instructions", program.len() / 8);
        }
        let distinct: std::collections::BTreeSet<_> = ALLOWED.iter().collect();
        assert_eq!(distinct.len(), ALLOWED.len(), "no call listed twice");
        for denied in [libc::SYS_keyctl, libc::SYS_add_key, libc::SYS_ptrace, libc::SYS_bpf, libc::SYS_mount] {
            assert!(!ALLOWED.contains(&denied), "{denied} is denied");
        }
    }
}
