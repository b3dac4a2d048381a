"""Layer 5 (kernel backstop): a seccomp-BPF filter installed in the sandbox child.

The Python-level layers can in principle be bypassed by native code (a numpy memory-safety
bug, say). This filter makes the kernel itself refuse, with EPERM, the system calls that
untrusted numerical code never needs:

* process creation and program execution: fork, vfork, clone, clone3, execve, execveat;
* networking: socket, socketpair, connect, bind, listen, accept, accept4;
* opening files for writing: open/openat with O_WRONLY, O_RDWR, O_CREAT, O_TRUNC or
  O_APPEND, and openat2 (whose flags the filter cannot see);
* file-system changes: unlink, rename, mkdir, rmdir, link, symlink, chmod, chown, truncate,
  mknod, utime*, *xattr writes;
* signals to other processes: kill/tkill/tgkill are allowed only for the child's own pid;
* debugging, namespaces, kernel interfaces: ptrace, process_vm_*, pidfd_*, mount, unshare,
  setns, chroot, bpf, perf_event_open, userfaultfd, io_uring_*, keyctl, modules, reboot.

x86-64 only (system call numbers are per architecture); elsewhere ``install`` returns False
and the other layers stand alone. Needs no privileges (PR_SET_NO_NEW_PRIVS is set first).
"""
from __future__ import annotations

import ctypes
import os
import platform
import struct

_AUDIT_ARCH_X86_64 = 0xC000003E
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_EPERM = 0x00050000 | 1
_LD_ABS = 0x20
_JEQ = 0x15
_JGE = 0x35
_JSET = 0x45
_RET = 0x06
_X32_BIT = 0x40000000

# x86-64 system call numbers.
_DENY = {
    "fork": 57, "vfork": 58, "clone": 56, "clone3": 435, "execve": 59, "execveat": 322,
    "socket": 41, "socketpair": 53, "connect": 42, "bind": 49, "listen": 50, "accept": 43,
    "accept4": 288, "openat2": 437, "creat": 85,
    "unlink": 87, "unlinkat": 263, "rename": 82, "renameat": 264, "renameat2": 316,
    "mkdir": 83, "mkdirat": 258, "rmdir": 84, "link": 86, "linkat": 265, "symlink": 88,
    "symlinkat": 266, "chmod": 90, "fchmod": 91, "fchmodat": 268, "chown": 92, "fchown": 93,
    "lchown": 94, "fchownat": 260, "truncate": 76, "mknod": 133, "mknodat": 259,
    "utime": 132, "utimes": 235, "utimensat": 280, "futimesat": 261, "setxattr": 188,
    "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198,
    "fremovexattr": 199, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
    "pidfd_open": 434, "pidfd_send_signal": 424, "pidfd_getfd": 438, "mount": 165,
    "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272, "setns": 308,
    "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "keyctl": 250, "add_key": 248,
    "request_key": 249, "init_module": 175, "finit_module": 313, "delete_module": 176,
    "kexec_load": 246, "kexec_file_load": 320, "reboot": 169, "swapon": 167, "swapoff": 168,
    "acct": 163, "iopl": 172, "ioperm": 173, "settimeofday": 164, "clock_settime": 227,
    "adjtimex": 159, "sethostname": 170, "setdomainname": 171, "quotactl": 179,
    "name_to_handle_at": 303, "open_by_handle_at": 304, "fanotify_init": 300,
    "inotify_init": 253, "inotify_init1": 294, "memfd_create": 319,
}
# (syscall, index of the flags argument)
_OPEN_FLAG_ARG = {2: 1, 257: 2}  # open(path, flags), openat(dirfd, path, flags)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_SELF_ONLY = (62, 200, 234)  # kill(pid), tkill(tid), tgkill(tgid, ...): first argument


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def build_program(pid: int) -> bytes:
    """The BPF program (packed ``struct sock_filter`` array) for a child with this pid."""
    p = [
        _insn(_LD_ABS, 0, 0, 4),                      # arch
        _insn(_JEQ, 1, 0, _AUDIT_ARCH_X86_64),
        _insn(_RET, 0, 0, _RET_KILL_PROCESS),
        _insn(_LD_ABS, 0, 0, 0),                      # syscall number
        _insn(_JGE, 0, 1, _X32_BIT),
        _insn(_RET, 0, 0, _RET_EPERM),
    ]
    for nr in sorted(_DENY.values()):
        p += [_insn(_JEQ, 0, 1, nr), _insn(_RET, 0, 0, _RET_EPERM)]
    for nr, arg in _OPEN_FLAG_ARG.items():
        p += [_insn(_JEQ, 0, 4, nr), _insn(_LD_ABS, 0, 0, 16 + 8 * arg),
              _insn(_JSET, 0, 1, _WRITE_FLAGS), _insn(_RET, 0, 0, _RET_EPERM),
              _insn(_RET, 0, 0, _RET_ALLOW)]
    for nr in _SELF_ONLY:
        p += [_insn(_JEQ, 0, 4, nr), _insn(_LD_ABS, 0, 0, 16),
              _insn(_JEQ, 0, 1, pid), _insn(_RET, 0, 0, _RET_ALLOW),
              _insn(_RET, 0, 0, _RET_EPERM)]
    p.append(_insn(_RET, 0, 0, _RET_ALLOW))
    return b"".join(p)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install() -> bool:
    """Install the filter on the calling process (irreversible); False if unsupported."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        program = build_program(os.getpid())
        buf = ctypes.create_string_buffer(program, len(program))
        prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            return False
        # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        return libc.prctl(22, 2, ctypes.byref(prog), 0, 0) == 0
    except (OSError, AttributeError):
        return False
