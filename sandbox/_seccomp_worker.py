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
could gain anything anyway) and loads the filter with ``seccomp(SECCOMP_FILTER_FLAG_TSYNC)``: every
thread of the process at once, or none (then it fails).

A fork server (``fork_server=True``: a worker that forks one process per page and reads no page
itself) may also ``fork`` (``clone`` with exactly fork's flags: no thread, no namespace), wait
for its child, and call the three ``prctl`` options a child needs to confine itself
(`FORK_SERVER_PRCTL`) and ``seccomp`` itself: the child dies with its parent
(`die_with_parent`) and stacks the plain filter before it reads anything. Filters stack: the
child's calls pass both. (``set_robust_list``: glibc's fork calls it in the child.)
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
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
    _arg_low,
    _Insn,
    _load,
    _resolve,
    _ret,
    _search,
    _Segment,
    _Sym,
)

__all__ = [
    "ALLOWED",
    "FORK_FLAGS",
    "FORK_SERVER",
    "FORK_SERVER_PRCTL",
    "MADVISE_ADVICE",
    "ConfineError",
    "confine",
    "die_with_parent",
    "filter_bytes",
]

#: name -> (x86_64 number, aarch64 number): reading and writing the fds it holds (its pipes),
#: its own memory (``mprotect``, and ``madvise`` with `MADVISE_ADVICE` only), time (``clock_gettime`` for
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
    "getrandom": (318, 278),
}

#: name -> (x86_64 number, aarch64 number): what a fork server adds, with ``clone`` and ``prctl``
#: narrowed by their first argument (`FORK_FLAGS`, `FORK_SERVER_PRCTL`).
FORK_SERVER: dict[str, tuple[int, int]] = {
    "clone": (56, 220),
    "wait4": (61, 260),
    "getppid": (110, 173),
    "prctl": (157, 167),
    "set_robust_list": (273, 99),
    "seccomp": (317, 277),
}
#: glibc's ``fork``: CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD.
FORK_FLAGS = 0x01200011
_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1
_EPERM = _RET_ERRNO | errno.EPERM
_PASS: tuple[str, int] = ("ret", _RET_ALLOW)
_DENY: tuple[str, int] = ("ret", _EPERM)
#: ``madvise``'s advice (third argument) allowed: what malloc and the kernel's own hints use on
#: a process's own memory. Not MADV_HWPOISON or MADV_SOFT_OFFLINE (100, 101: as root they take a
#: physical page out of service, a page of a shared library's page cache included, and every
#: process mapping it gets SIGBUS), nor MADV_MERGEABLE (12: KSM merges pages across processes, a
#: side channel), nor the rest.
MADVISE_ADVICE = (0, 1, 2, 3, 4, 8, 10, 11, 14, 15, 16, 17)
#: PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS: each only takes something away.
FORK_SERVER_PRCTL = (1, 38)


class ConfineError(OSError):
    """The filter could not be loaded (no seccomp in this kernel, or an unknown architecture)."""


def _arg_in(index: int, values: tuple[int, ...]) -> list[_Sym]:
    """Allow the call if argument ``index`` (all 64 bits) is one of ``values``, else EPERM."""
    block: list[_Sym] = [_load(_arg_low(index) + 4), (_JEQ_K, 0, _DENY, 0), _load(_arg_low(index))]
    block += [(_JEQ_K, _PASS, 0, value) for value in values[:-1]]
    return [*block, (_JEQ_K, _PASS, _DENY, values[-1])]


def program(machine: str, *, fork_server: bool = False) -> list[_Insn]:
    """The filter for ``machine`` (a key of `MACHINES`): the architecture check, then a binary
    search over the syscall number whose ranges are `ALLOWED` calls (and `FORK_SERVER`'s when
    ``fork_server``) or EPERM."""
    arch = MACHINES[machine]
    rules: dict[int, int | list[_Sym]] = {numbers[arch]: _RET_ALLOW for numbers in ALLOWED.values()}
    rules[ALLOWED["madvise"][arch]] = _arg_in(2, MADVISE_ADVICE)
    if fork_server:
        rules.update({numbers[arch]: _RET_ALLOW for numbers in FORK_SERVER.values()})
        rules[FORK_SERVER["clone"][arch]] = _arg_in(0, (FORK_FLAGS,))
        rules[FORK_SERVER["prctl"][arch]] = _arg_in(0, FORK_SERVER_PRCTL)
    segments: list[_Segment] = []

    def push(first: int, action: int | list[_Sym]) -> None:
        if not (segments and isinstance(action, int) and segments[-1][1] == action):
            segments.append((first, action))

    following = 0
    for nr, action in sorted(rules.items()):
        if nr > following:
            push(following, _EPERM)
        push(nr, action)
        following = nr + 1
    push(following, _EPERM)
    if arch == 0:
        push(_X32_SYSCALL_BIT, _RET_KILL_PROCESS)
    table = _resolve(_search(segments))
    head = [_load(_OFF_ARCH), (_JEQ_K, 1, 0, _AUDIT_ARCHES[arch]), _ret(_RET_KILL_PROCESS)]
    return [*head, _load(_OFF_NR), *table]


def filter_bytes(machine: str | None = None, *, fork_server: bool = False) -> bytes:
    """``struct sock_filter[]`` of `program` for ``machine`` (this one's by default)."""
    name = machine or os.uname().machine
    if name not in MACHINES:
        raise ConfineError(errno.ENOSYS, f"no syscall table for {name!r} (known: {', '.join(MACHINES)})")
    return b"".join(struct.pack("=HBBI", *insn) for insn in program(name, fork_server=fork_server))


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when ``parent`` (its parent's only thread) ends: a fork server's
    child is killed with the server at the host's deadline. Raises `ConfineError` if the
    parent is already gone."""
    if _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise ConfineError(err, f"prctl(PR_SET_PDEATHSIG): {os.strerror(err)}")
    if os.getppid() != parent:
        raise ConfineError(errno.ESRCH, "the parent ended before its child could follow it")


def confine(*, fork_server: bool = False) -> None:
    """Load the filter into every thread of this process (later ones inherit it); raises
    `ConfineError` if it cannot be (the caller must then not go on: fail closed). Makes no call
    the filters here refuse: a fork server's child calls it under the server's filter."""
    if _MACHINE not in MACHINES:
        raise ConfineError(errno.ENOSYS, f"no syscall table for {_MACHINE!r} (known: {', '.join(MACHINES)})")
    code = filter_bytes(_MACHINE, fork_server=fork_server)
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise ConfineError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")
    prog = _Fprog(len(code) // 8, code)
    nr = FORK_SERVER["seccomp"][MACHINES[_MACHINE]]
    done = _libc.syscall(nr, _SECCOMP_SET_MODE_FILTER, _SECCOMP_FILTER_FLAG_TSYNC, ctypes.byref(prog))
    if done != 0:  # a thread id: that thread could not be synchronised
        err = ctypes.get_errno() if done < 0 else errno.EBUSY
        raise ConfineError(err, f"seccomp(SET_MODE_FILTER, TSYNC): {os.strerror(err)}")


#: Looked up once, at import: a child of a fork server may no longer call ``uname`` or ``open``.
_MACHINE = os.uname().machine
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
