//! The seccomp filter a sandboxed command runs under: a deny list on top of the namespaces.
//! Each denied call fails with `EPERM` (the program sees an ordinary permission error); the
//! filter is inherited by everything the command starts and cannot be lifted.
//!
//! | denied | why |
//! | --- | --- |
//! | `ioctl(TIOCSTI)`, `ioctl(TIOCLINUX)` | typing into a terminal (the caller's shell) |
//! | `ptrace`, `process_vm_readv/writev` | reaching into other processes |
//! | `mount`, `umount2`, `pivot_root`, `move_mount`, `open_tree`, `fsopen`, `fsconfig`, `fsmount`, `fspick`, `mount_setattr` | undoing the sandbox's mounts |
//! | `unshare`, `setns`, `clone` with new namespaces, `clone3` (`ENOSYS`, so C libraries use `clone`) | nested namespaces: new privileges over the sandbox's mounts |
//! | `keyctl`, `add_key`, `request_key` | the kernel keyrings are not namespaced |
//! | `bpf`, `perf_event_open`, `userfaultfd` | kernel attack surface |
//! | `init_module`, `finit_module`, `delete_module`, `kexec_load`, `kexec_file_load`, `reboot`, `swapon`, `swapoff`, `acct` | the host's kernel and devices |
//! | `sethostname`, `setdomainname` | the host name (private in its own UTS namespace anyway) |
//! | `personality` other than the default and 32-bit Linux | turning off address randomisation |

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// System calls denied whatever their arguments.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_setns,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
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
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
];

/// `personality(PER_LINUX32)`, which 32-bit programs use.
const PER_LINUX32: u64 = 0x0008;

/// The namespace flags of `clone` and `unshare` that the command may not use.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWCGROUP,
];

/// An ioctl request number as the filter compares it: glibc declares them unsigned long, musl
/// int (all of them positive).
#[allow(clippy::unnecessary_cast)]
fn request(number: libc::Ioctl) -> u64 {
    number as u64
}

fn condition(arg: u8, op: SeccompCmpOp, value: u64) -> seccompiler::Result<SeccompCondition> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(Into::into)
}

fn rule(conditions: Vec<SeccompCondition>) -> seccompiler::Result<SeccompRule> {
    SeccompRule::new(conditions).map_err(Into::into)
}

/// One rule per namespace flag: the call is denied when its flags argument holds any of them.
fn any_namespace_flag() -> seccompiler::Result<Vec<SeccompRule>> {
    NAMESPACE_FLAGS
        .iter()
        .map(|flag| {
            let flag = *flag as u64;
            rule(vec![condition(0, SeccompCmpOp::MaskedEq(flag), flag)?])
        })
        .collect()
}

/// The deny rules, by system call number (an empty list denies the call outright).
fn deny_rules() -> seccompiler::Result<BTreeMap<i64, Vec<SeccompRule>>> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|call| (*call, Vec::new())).collect();
    rules.insert(
        libc::SYS_ioctl,
        vec![
            rule(vec![condition(
                1,
                SeccompCmpOp::Eq,
                request(libc::TIOCSTI),
            )?])?,
            rule(vec![condition(
                1,
                SeccompCmpOp::Eq,
                request(libc::TIOCLINUX),
            )?])?,
        ],
    );
    rules.insert(libc::SYS_unshare, any_namespace_flag()?);
    rules.insert(libc::SYS_clone, any_namespace_flag()?);
    rules.insert(
        libc::SYS_personality,
        vec![rule(vec![
            condition(0, SeccompCmpOp::Ne, 0)?,
            condition(0, SeccompCmpOp::Ne, PER_LINUX32)?,
            condition(0, SeccompCmpOp::Ne, 0xffff_ffff)?,
        ])?],
    );
    Ok(rules)
}

/// Compiles the filter for this machine's architecture.
pub(super) fn compile() -> seccompiler::Result<BpfProgram> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let filter = SeccompFilter::new(
        deny_rules()?,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    filter.try_into().map_err(Into::into)
}

/// `clone3` passes its flags in memory the filter cannot read: it fails with `ENOSYS`, so C
/// libraries fall back to `clone`, whose flags the filter checks.
pub(super) fn compile_clone3() -> seccompiler::Result<BpfProgram> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let rules = [(libc::SYS_clone3, Vec::new())].into_iter().collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?;
    filter.try_into().map_err(Into::into)
}

/// Installs both filters on this thread (and so on everything it executes).
pub(super) fn install() -> std::result::Result<(), String> {
    for program in [compile(), compile_clone3()] {
        let program = program.map_err(|e| format!("cannot build the seccomp filter: {e}"))?;
        seccompiler::apply_filter(&program)
            .map_err(|e| format!("cannot install the seccomp filter: {e}"))?;
    }
    Ok(())
}
