"""The step child's syscall filter: what a step never needs is refused by the kernel (seccomp).

Loaded by :func:`grader.engine.confine.drop_privileges` last, after the step
child became the grading account in namespaces of its own and dropped its
capabilities, so learner code (and everything it starts: the filter is
inherited and cannot be removed) gets ``EPERM`` for:

- the account-wide kernel stores: keyrings (``add_key``, ``keyctl``,
  ``request_key``), which a grading could leave its inputs in for a later one;
- reading or steering other processes: ``ptrace``, ``process_vm_readv``/``writev``,
  ``kcmp``, ``pidfd_getfd``, ``perf_event_open``;
- the kernel's attack surface a step has no use for: ``bpf``, ``userfaultfd``,
  ``io_uring_*``, ``kexec_*``, module loading, ``reboot``, ``swapon``, ``acct``...;
- leaving its namespaces or its file system: ``mount``, ``umount2``, ``pivot_root``,
  ``chroot``, ``unshare``, ``setns``, ``open_by_handle_at``, and ``clone`` with any
  namespace flag (``clone3``, whose flags the filter cannot read, answers ``ENOSYS``:
  the C library then falls back to ``clone``).

A syscall a library only tries (``io_uring``...) fails as it would on an old
kernel; nothing that importing LangGraph and running a graph needs is in the list.

Example::

    >>> "keyctl" in REFUSED and "ptrace" in REFUSED and "read" not in REFUSED
    True
    >>> problem() == ""  # where libseccomp is installed (Debian's libseccomp2)
    True
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Protocol

    class SyscallRules(Protocol):
        """What :func:`build` makes (a ``pyseccomp.SyscallFilter``, which ships no types)."""

        def load(self) -> None: ...


REFUSED = (
    # account-wide kernel stores
    "add_key",
    "keyctl",
    "request_key",
    # other processes
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "perf_event_open",
    # kernel surface no step needs
    "bpf",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "syslog",
    "lookup_dcookie",
    "fanotify_init",
    "name_to_handle_at",
    "open_by_handle_at",
    "iopl",
    "ioperm",
    "settimeofday",
    "clock_settime",
    "adjtimex",
    "clock_adjtime",
    "vhangup",
    # namespaces and the file system's shape
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
)
# clone flags that make a namespace: a clone with any of them is refused.
NAMESPACE_FLAGS = (
    0x00020000,
    0x02000000,
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
    0x00000080,
)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME


def problem() -> str:
    """Why the filter cannot be loaded here (``""``: it can): the bindings or the system's libseccomp are missing."""
    try:
        import pyseccomp

        pyseccomp.system_arch()
    except (ImportError, OSError, AttributeError, RuntimeError) as exc:
        return (
            f"the syscall filter cannot be loaded ({type(exc).__name__}: {exc}); install libseccomp "
            "(apt-get install libseccomp2) and the grader's dependencies (pip install agtool-lab)"
        )
    return ""


def build() -> SyscallRules:
    """The filter, made (not loaded) in the fork server so each step child only loads it.

    >>> build() is not None
    True
    """
    import pyseccomp as sc

    arch = sc.system_arch()
    rules = sc.SyscallFilter(sc.ALLOW)
    for name in REFUSED:
        try:
            sc.resolve_syscall(arch, name)
        except (ValueError, OSError):
            continue  # not a syscall on this architecture (iopl on arm64...)
        rules.add_rule(sc.ERRNO(errno.EPERM), name)
    for flag in NAMESPACE_FLAGS:
        rules.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    rules.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    made: SyscallRules = rules
    return made


def load(rules: SyscallRules) -> None:
    """(In the step child, for good.) Load ``rules``; raise :class:`OSError` if the kernel refuses.

    Not run as a doctest: a loaded filter cannot be removed.
    """
    rules.load()
