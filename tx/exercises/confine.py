"""What a sandbox (:mod:`tx.exercises.sandbox`) may ask of the kernel: a seccomp filter.

The sandbox can open no file (its limit on open files is reached), but some system calls need
no open file: ``unlink`` and ``rename`` take a path (through ``/proc/<grader>/cwd``, the
gradebook's), ``kill`` takes a process id (``kill(-1, 9)`` stops every process of the grading
user), ``fork`` makes processes the limits do not count. Python reaches all of them through
``os``, which ``torch.os`` and many another module hold. After its limits, the sandbox
installs a filter (Linux on x86-64) under which these calls fail with "Operation not
permitted": a signal to anything but itself, a new process (a new thread is still allowed),
running a program, and every call that changes a file's name, links, mode, owner, times or
length. Everything else, its memory and its connection to the grader included, is as before.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys

__all__ = ["confine", "DENIED"]

DENIED = {
    # new processes and programs
    "fork": 57, "vfork": 58, "execve": 59, "execveat": 322, "ptrace": 101,
    "process_vm_readv": 310, "process_vm_writev": 311, "setsid": 112, "setpgid": 109,
    # signals to another process
    "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "pidfd_open": 434, "pidfd_send_signal": 424,
    # a file's name, links, mode, owner, times, length
    "rename": 82, "renameat": 264, "renameat2": 316, "mkdir": 83, "mkdirat": 258, "rmdir": 84,
    "link": 86, "linkat": 265, "unlink": 87, "unlinkat": 263, "symlink": 88, "symlinkat": 266,
    "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "chown": 92, "fchown": 93,
    "lchown": 94, "fchownat": 260, "truncate": 76, "mknod": 133, "mknodat": 259, "utime": 132,
    "utimes": 235, "futimesat": 261, "utimensat": 280, "setxattr": 188, "lsetxattr": 189,
    "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199,
}
"""The x86-64 system calls the filter refuses outright, by name."""

_SIGNALS = {"kill": 62, "tkill": 200, "tgkill": 234}  # allowed only to the sandbox itself
_CLONE, _CLONE3, _CLONE_THREAD = 56, 435, 0x00010000
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32 = 0x40000000
# classic BPF: ld [k], jeq/jset #k, ret #k
_LD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL = 0x7FFF0000, 0x80000000
_ERRNO = 0x00050000


def _program(pid: int) -> list[tuple[int, int, int, int]]:
    """The filter for the process ``pid``: (code, jump if true, jump if false, k) for each instruction."""
    deny_eperm = ("ret", _ERRNO | errno.EPERM)
    body: list = [("ld", 4), ("jeq", _AUDIT_ARCH_X86_64, 1, 0), ("ret", _KILL), ("ld", 0),
                  ("jge", _X32, "eperm", 0)]
    body += [("jeq", nr, "eperm", 0) for nr in sorted(DENIED.values())]
    body += [("jeq", _CLONE3, "enosys", 0)]  # threads: glibc falls back to clone, checked next
    body += [("jeq", _CLONE, "clone", 0)]
    body += [("jeq", nr, "signal", 0) for nr in sorted(_SIGNALS.values())]
    body += [("ret", _ALLOW)]
    labels = {"clone": len(body)}
    body += [("ld", 16), ("jset", _CLONE_THREAD, "allow", "eperm")]
    labels["signal"] = len(body)
    body += [("ld", 16), ("jeq", pid & 0xFFFFFFFF, "allow", "eperm")]
    labels["allow"] = len(body)
    body += [("ret", _ALLOW)]
    labels["eperm"] = len(body)
    body += [deny_eperm]
    labels["enosys"] = len(body)
    body += [("ret", _ERRNO | errno.ENOSYS)]
    program = []
    for at, (op, k, *jumps) in enumerate(body):
        jt, jf = ((labels[j] - at - 1 if isinstance(j, str) else j) for j in (jumps or [0, 0]))
        code = {"ld": _LD, "jeq": _JEQ, "jge": _JGE, "jset": _JSET, "ret": _RET}[op]
        program.append((code, jt, jf, k))
    return program


def confine() -> bool:
    """Install the filter on this process (for good); False where it cannot be (not Linux on x86-64)."""
    if sys.platform != "linux" or platform.machine() != "x86_64":
        return False
    instructions = _program(os.getpid())
    filters = b"".join(struct.pack("HBBI", *i) for i in instructions)
    buffer = ctypes.create_string_buffer(filters, len(filters))

    class _Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    program = _Program(len(instructions), ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(program), 0, 0) == 0
