"""An allow-list seccomp filter for a host worker that only computes over the pipes it holds.

Why: shellrt parses attacker-chosen data on the host, outside every sandbox (the HTML
converter worker, `shellrt.tools._convert_child`). A bug in the parser's native code (CPython's
string and parser code has had them) would run the attacker's code as the caller, root in CI:
before round 22 it connected to 127.0.0.1, created and truncated files, read them, forked,
spawned programs, signalled, ptraced and read the memory of its parent. Such a worker needs
only to read its stdin, write its stdout and stderr, manage its own memory and tell the time,
so this filter allows exactly that (`ALLOWED`) and fails every other call with EPERM: no new
file descriptor of any kind (``open``, ``socket``, ``pipe``, ``memfd``, ``dup``), no process
(``clone``, ``fork``, ``execve``), no signal or ptrace of another process, no namespace or
mount call, nothing new a later kernel adds. A deny list like `sandbox._seccomp`'s would have
to name every one of those; an allow list names what is left.

A call of another architecture's table (and x32 on x86_64) kills the process, as in
`sandbox._seccomp`, whose binary search over syscall numbers this reuses. `confine` sets
``PR_SET_NO_NEW_PRIVS`` (needed to load a filter without CAP_SYS_ADMIN, and no set-id program
could gain anything anyway) and loads the filter for this thread and every later one.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

from sandbox._seccomp import (
    _AUDIT_ARCHES,
    _JEQ_K,
    _OFF_ARCH,
    _OFF_NR,
    _RET_ALLOW,
    _RET_ERRNO,
    _RET_KILL_PROCESS,
    _X32_SYSCALL_BIT,
    MACHINES,
    _Insn,
    _load,
    _resolve,
    _ret,
    _search,
    _Segment,
)

__all__ = ["ALLOWED", "ConfineError", "confine", "filter_bytes"]

#: name -> (x86_64 number, aarch64 number): reading and writing the fds it holds (its pipes),
#: its own memory (``mprotect`` and ``madvise`` as malloc uses them), time (``clock_gettime`` for
#: a thread's CPU time: the vDSO covers only the wall clocks), signal returns, futexes (glibc's
#: own locks), and ending. ``close`` and ``fstat`` are Python's at exit, on its own fds.
ALLOWED: dict[str, tuple[int, int]] = {
    "read": (0, 63),
    "write": (1, 64),
    "close": (3, 57),
    "fstat": (5, 80),
    "lseek": (8, 62),
    "mmap": (9, 222),
    "mprotect": (10, 226),
    "munmap": (11, 215),
    "brk": (12, 214),
    "rt_sigaction": (13, 134),
    "rt_sigprocmask": (14, 135),
    "rt_sigreturn": (15, 139),
    "sched_yield": (24, 124),
    "mremap": (25, 216),
    "madvise": (28, 233),
    "getpid": (39, 172),
    "exit": (60, 93),
    "gettimeofday": (96, 169),
    "sigaltstack": (131, 132),
    "gettid": (186, 178),
    "futex": (202, 98),
    "restart_syscall": (219, 128),
    "clock_gettime": (228, 113),
    "clock_getres": (229, 114),
    "exit_group": (231, 94),
}

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_EPERM = _RET_ERRNO | errno.EPERM


class ConfineError(OSError):
    """The filter could not be loaded (no seccomp in this kernel, or an unknown architecture)."""


def program(machine: str) -> list[_Insn]:
    """The filter for ``machine`` (a key of `MACHINES`): the architecture check, then a binary
    search over the syscall number whose ranges are `ALLOWED` calls or EPERM."""
    arch = MACHINES[machine]
    allowed = sorted(numbers[arch] for numbers in ALLOWED.values())
    segments: list[_Segment] = []

    def push(first: int, action: int) -> None:
        if not (segments and segments[-1][1] == action):
            segments.append((first, action))

    following = 0
    for nr in allowed:
        if nr > following:
            push(following, _EPERM)
        push(nr, _RET_ALLOW)
        following = nr + 1
    push(following, _EPERM)
    if arch == 0:
        push(_X32_SYSCALL_BIT, _RET_KILL_PROCESS)
    table = _resolve(_search(segments))
    head = [_load(_OFF_ARCH), (_JEQ_K, 1, 0, _AUDIT_ARCHES[arch]), _ret(_RET_KILL_PROCESS)]
    return [*head, _load(_OFF_NR), *table]


def filter_bytes(machine: str | None = None) -> bytes:
    """``struct sock_filter[]`` of `program` for ``machine`` (this one's by default)."""
    name = machine or os.uname().machine
    if name not in MACHINES:
        raise ConfineError(errno.ENOSYS, f"no syscall table for {name!r} (known: {', '.join(MACHINES)})")
    return b"".join(struct.pack("=HBBI", *insn) for insn in program(name))


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def confine() -> None:
    """Load the filter into this process (every thread started later inherits it); raises
    `ConfineError` if it cannot be (the caller must then not go on: fail closed)."""
    code = filter_bytes()
    threads = os.listdir("/proc/self/task")
    if len(threads) != 1:  # prctl filters only the calling thread: another would stay free
        raise ConfineError(errno.EBUSY, f"{len(threads)} threads run; confine before starting any")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise ConfineError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")
    prog = _Fprog(len(code) // 8, code)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise ConfineError(err, f"prctl(PR_SET_SECCOMP): {os.strerror(err)}")
