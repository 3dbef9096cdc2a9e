"""The seccomp program decides every call as its tables say, in a few instructions per call.

The program is a binary search over syscall numbers (`sandbox._seccomp._dispatch`).
Here it is run by a small classic-BPF interpreter for every syscall number of
each architecture, with argument values that hit each rule, and compared with
the tables themselves; the escape tests load it into the kernel and probe each
entry inside the sandbox.
"""

from __future__ import annotations

import errno
import struct
from collections.abc import Iterator

import pytest

from sandbox import _seccomp
from sandbox._seccomp import (
    CLONE_NEWUSER,
    DENIED,
    ENOSYS_CALLS,
    FIRST_UNKNOWN,
    INET_PROTOCOLS,
    IOCTL_ALLOWED,
    IOCTL_TYPES,
    MACHINES,
    NETLINK_PROTOCOLS,
    PAGE_CACHE_ADVICE,
    RWF_NOWAIT,
    S_ISID,
    SAFE_PERSONALITIES,
    SETID_MODE_CHECKED,
    SOCKET_FAMILIES,
)

ALLOW = 0x7FFF0000
KILL = 0x80000000
EPERM = 0x00050000 | errno.EPERM
ENOSYS = 0x00050000 | errno.ENOSYS
ENOTTY = 0x00050000 | errno.ENOTTY
X86_64, AARCH64, I386 = 0xC000003E, 0xC00000B7, 0x40000003
AUDIT = {"x86_64": X86_64, "aarch64": AARCH64}
X32 = 0x40000000
O_CREAT = 0o100
NEWUSER_CHECKED = {"clone": (56, 220), "unshare": (272, 97)}
PERSONALITY = (135, 92)
SOCKET, FCNTL, F_SETLEASE = (41, 198), (72, 25), 1024
IOCTL, TTY_IOCTLS = (16, 29), (0x5412, 0x541C, 0x5423)  # TIOCSTI, TIOCLINUX, TIOCSETD
ATTR_IOCTLS = (0x40086602, 0x401C5820)  # FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR
#: FS_IOC_SETVERSION, FS_IOC_ENABLE_VERITY, fscrypt's SET_POLICY, ADD_KEY, REMOVE_KEY(_ALL_USERS): round 19
STATE_IOCTLS = (0x40087602, 0x40806685, 0x800C6613, 0xC0506617, 0xC0406618, 0xC0406619)
EAFNOSUPPORT = 0x00050000 | errno.EAFNOSUPPORT
EPROTONOSUPPORT = 0x00050000 | errno.EPROTONOSUPPORT
EOPNOTSUPP = 0x00050000 | errno.EOPNOTSUPP
SOCKETPAIR = (53, 199)
SETRLIMIT, PRLIMIT64, RLIMIT_CORE = (160, 164), (302, 261), 4
#: Round 35: classic BPF programs (the JIT budget) and huge pages (the hugetlb pool).
SETSOCKOPT, SECCOMP, PRCTL, MMAP, MEMFD_CREATE = (54, 208), (317, 277), (157, 167), (9, 222), (319, 279)
EINVAL = 0x00050000 | errno.EINVAL
ENOMEM = 0x00050000 | errno.ENOMEM
#: Argument vectors that take each rule's branches (the same value in all six arguments).
ARGS = [0, 0xFFFFFFFF, CLONE_NEWUSER, O_CREAT | 0o4000, O_CREAT | 0o2000, O_CREAT, 0o4000, 0x8, 0x0400000]
ARGS += [1, 2, 10, 16, 40, F_SETLEASE]  # socket families; fcntl's F_SETLEASE
ARGS += [*TTY_IOCTLS, 0x5413, 0x1_0000_5412]  # ioctl's terminal requests, TIOCGWINSZ, high bits set
ARGS += [4, 21, 0x1_0000_0004]  # round 38: POSIX_FADV_DONTNEED, MADV_PAGEOUT (high bits ignored)
NOOP = 0x00050000  # SECCOMP_RET_ERRNO with errno 0: the call returns 0 unrun
PREADV2 = (327, 286)


def run(prog: bytes, nr: int, arch: int, arg: int | tuple[int, ...]) -> tuple[int, int]:
    """(return value, instructions executed) of classic BPF ``prog`` on one seccomp_data
    (``arg``: the same value in all six arguments, or the first ones, the rest 0)."""
    args = (*arg, *[0] * (6 - len(arg))) if isinstance(arg, tuple) else (arg,) * 6
    data = struct.pack("<IIQ6Q", nr, arch, 0, *args)
    insns = [struct.unpack("=HBBI", prog[i : i + 8]) for i in range(0, len(prog), 8)]
    acc, pc, steps = 0, 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        steps += 1
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            acc = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif code in (0x15, 0x35, 0x45):  # JEQ, JGE, JSET (K)
            taken = acc == k if code == 0x15 else acc >= k if code == 0x35 else bool(acc & k)
            pc += 1 + (jt if taken else jf)
        elif code == 0x54:  # BPF_ALU | BPF_AND | BPF_K
            acc &= k
            pc += 1
        elif code == 0x06:  # BPF_RET | BPF_K
            return k, steps
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


def expected(arch: int, nr: int, arg: int, *, machine: str | None, setid_only: bool, final: bool = False) -> int:
    """What the tables say about one call."""
    arches = [AUDIT[machine]] if machine else [X86_64, AARCH64]
    if arch not in arches:
        return KILL
    index = 0 if arch == X86_64 else 1
    if index == 0 and nr >= X32:
        return KILL
    if nr == 437:  # openat2
        return ENOSYS
    for _name, (nr_x86, nr_arm, flags_arg, _mode_arg) in SETID_MODE_CHECKED.items():
        if nr == (nr_x86, nr_arm)[index]:
            if flags_arg is not None and not arg & (O_CREAT | 0o20000000):
                return ALLOW
            return EPERM if arg & S_ISID else ALLOW
    for nr_x86, nr_arm, _advice_arg, advice in PAGE_CACHE_ADVICE.values():  # round 38 (both filters)
        if nr == (nr_x86, nr_arm)[index]:
            return NOOP if arg & 0xFFFFFFFF == advice else ALLOW
    if nr == PREADV2[index]:
        return EOPNOTSUPP if arg & RWF_NOWAIT else ALLOW
    if nr == 451:  # cachestat
        return ENOSYS
    if setid_only:
        return ALLOW
    if any(nr == numbers[index] for numbers in DENIED.values()):
        return EPERM
    if any(nr == numbers[index] for numbers in ENOSYS_CALLS.values()):
        return ENOSYS
    if any(nr == numbers[index] for numbers in NEWUSER_CHECKED.values()):
        return EPERM if arg & CLONE_NEWUSER else ALLOW
    if nr == PERSONALITY[index]:
        return ALLOW if arg in SAFE_PERSONALITIES else EPERM
    if nr == SOCKET[index]:
        return expected_socket(arg, arg)
    if nr == SOCKETPAIR[index]:
        return expected_socketpair(arg)
    if nr == SETRLIMIT[index]:
        return EPERM if arg & 0xFFFFFFFF == RLIMIT_CORE else ALLOW
    if nr == PRLIMIT64[index]:  # resource in the second argument, the new value's pointer the third
        return EPERM if arg & 0xFFFFFFFF == RLIMIT_CORE and arg else ALLOW
    if nr == FCNTL[index]:
        return EPERM if arg == F_SETLEASE else ALLOW
    pooled = expected_pooled(index, nr, (arg,) * 6, final=final)
    if pooled is not None:
        return pooled
    if nr == IOCTL[index]:  # the kernel reads the request as an unsigned int: its low 32 bits
        return expected_ioctl(arg)
    if nr >= FIRST_UNKNOWN:
        return ENOSYS
    return ALLOW


def expected_pooled(index: int, nr: int, args: tuple[int, ...], *, final: bool) -> int | None:
    """Round 35's calls (None: not one of them): socket filters EPERM, a nested seccomp filter
    EINVAL (``final`` programs only: docker's helper loads filters after its copy), huge pages
    ENOMEM; everything else they do, allowed."""
    low = [a & 0xFFFFFFFF for a in (*args, *[0] * (6 - len(args)))]
    if nr == SETSOCKOPT[index]:
        return EPERM if low[1] == 1 and low[2] in (26, 51) else ALLOW
    if nr == SECCOMP[index]:
        return EINVAL if final and low[0] == 1 else ALLOW
    if nr == PRCTL[index]:
        return EINVAL if final and low[0] == 22 and low[1] == 2 else ALLOW
    if nr == MMAP[index]:
        return ENOMEM if low[3] & 0x40000 else ALLOW
    if nr == MEMFD_CREATE[index]:
        return ENOMEM if low[1] & 4 else ALLOW
    return None


def test_host_pool_calls_are_refused() -> None:
    """Round 35: classic BPF a command loads (socket filters, nested seccomp filters) and
    hugetlb pages; the same calls with other arguments are allowed."""
    cases = [(1, 1, 26, 0, 16), (1, 1, 51, 0, 16), (1, 0x1_0000_0001, 26), (1, 1, 50), (1, 6, 26), (1, 1, 2)]
    cases += [(1, 0, 0), (0, 0, 0), (2, 0, 0), (22, 2, 1), (22, 1), (21, 0), (0x1_0000_0016, 2)]
    cases += [(0, 2 << 20, 3, 0x22 | 0x40000, -1 & 0xFFFFFFFF), (0, 4096, 3, 0x22, 0), (0, 4096, 3, 0x1_0000_0022)]
    cases += [(0, 4), (0, 1), (0, 0x5 | 26 << 26)]
    for machine, final in ((m, f) for m in MACHINES for f in (False, True)):
        prog, index, arch = _seccomp.filter_bytes(machine=machine, final=final), MACHINES[machine], AUDIT[machine]
        for nr in (SETSOCKOPT[index], SECCOMP[index], PRCTL[index], MMAP[index], MEMFD_CREATE[index]):
            for args in cases:
                got = run(prog, nr, arch, args)[0]
                assert got == expected_pooled(index, nr, args, final=final), (machine, nr, args, hex(got))
        assert run(prog, SETSOCKOPT[index], arch, (3, 1, 26))[0] == EPERM
        assert run(prog, PRCTL[index], arch, (22, 2))[0] == (EINVAL if final else ALLOW)
        assert run(prog, MEMFD_CREATE[index], arch, (0, 5))[0] == ENOMEM


def expected_ioctl(request: int) -> int:
    """``ioctl(fd, request)``: the refused ones EPERM; an allowed type or request ALLOW; else ENOTTY."""
    request &= 0xFFFFFFFF
    if request in (*TTY_IOCTLS, *ATTR_IOCTLS, *STATE_IOCTLS):
        return EPERM
    return ALLOW if (request >> 8) & 0xFF in IOCTL_TYPES or request in IOCTL_ALLOWED else ENOTTY


def expected_socket(family: int, protocol: int) -> int:
    """What the tables say about ``socket(family, type, protocol)`` (low 32 bits: ints)."""
    family, protocol = family & 0xFFFFFFFF, protocol & 0xFFFFFFFF
    if family not in SOCKET_FAMILIES:
        return EAFNOSUPPORT
    protocols = {2: INET_PROTOCOLS, 10: INET_PROTOCOLS, 16: NETLINK_PROTOCOLS}.get(family)
    return ALLOW if protocols is None or protocol in protocols else EPROTONOSUPPORT


def expected_socketpair(family: int) -> int:
    """``socketpair(family, ...)``: unix only; the kernel's own EOPNOTSUPP for the other allowed families."""
    family &= 0xFFFFFFFF
    return ALLOW if family == 1 else EOPNOTSUPP if family in SOCKET_FAMILIES else EAFNOSUPPORT


def test_socket_protocols_are_decided_per_family() -> None:
    """Round 14: inet and netlink sockets of the listed protocols only; unix ones of any;
    pairs of unix sockets only."""
    protocols = [0, 1, 2, 4, 6, 7, 9, 12, 15, 16, 17, 33, 58, 132, 136, 255, 256, 262, 0x1_0000_0006]
    for machine in MACHINES:
        prog = _seccomp.filter_bytes(machine=machine)
        nr, pair = SOCKET[MACHINES[machine]], SOCKETPAIR[MACHINES[machine]]
        for family in (0, 1, 2, 10, 16, 17, 40, 0x1_0000_0002):
            for protocol in protocols:
                got = run(prog, nr, AUDIT[machine], (family, 1, protocol))[0]
                assert got == expected_socket(family, protocol), (machine, family, protocol, hex(got))
                got = run(prog, pair, AUDIT[machine], (family, 1, protocol))[0]
                assert got == expected_socketpair(family), (machine, family, protocol, hex(got))
    assert expected_socket(2, 132) == EPROTONOSUPPORT and expected_socket(16, 0) == ALLOW


def test_the_core_limit_cannot_be_changed() -> None:
    """Round 14: setrlimit(RLIMIT_CORE) fails; prlimit64 fails for it when given a new value (a
    pointer with either half non-zero), and reads it (NULL new value) or other resources freely."""
    for machine in MACHINES:
        prog, index, arch = _seccomp.filter_bytes(machine=machine), MACHINES[machine], AUDIT[machine]
        assert run(prog, SETRLIMIT[index], arch, (RLIMIT_CORE, 0x7FFC0000))[0] == EPERM
        assert run(prog, SETRLIMIT[index], arch, (3, 0x7FFC0000))[0] == ALLOW
        cases = {(0, 4, 0, 0x7FFC0000): ALLOW, (0, 4, 0x7FFC0010): EPERM, (0, 4, 1 << 32): EPERM}
        cases |= {(0, 0x1_0000_0004, 8): EPERM, (0, 3, 0x7FFC0010): ALLOW, (77, 4, 0, 0): ALLOW}
        for args, want in cases.items():
            got = run(prog, PRLIMIT64[index], arch, args)[0]
            assert got == want, (machine, args, hex(got))


def test_inode_flag_ioctls_are_refused() -> None:
    """Round 14: setting inode flags fails (``chattr``), reading them does not (``lsattr``); round 19:
    nor setting an inode's generation, fs-verity or fscrypt state (reading them works)."""
    requests = [*ATTR_IOCTLS, 0x80086601, 0x801C581F, 0x40046602, 0x1_0000_0000 | ATTR_IOCTLS[0]]
    requests += [
        *STATE_IOCTLS,
        0x80087601,
        0xC0096616,
        0x1_0000_0000 | STATE_IOCTLS[0],
    ]  # + GETVERSION, policy
    for machine in MACHINES:
        prog = _seccomp.filter_bytes(machine=machine)
        for request in requests:
            got = run(prog, IOCTL[MACHINES[machine]], AUDIT[machine], (3, request))[0]
            assert got == expected(
                AUDIT[machine], IOCTL[MACHINES[machine]], request, machine=machine, setid_only=False
            )
            refused = request & 0xFFFFFFFF in (*ATTR_IOCTLS, *STATE_IOCTLS)
            assert (got == EPERM) == refused, (machine, hex(request), hex(got))


def variants() -> Iterator[tuple[str | None, bool, bool]]:
    """What is loaded: docker's helper both architectures' tables (its command filter not
    ``final``), bwrap its machine's ``final`` one; and the set-id rules alone for each."""
    for machine in (None, *MACHINES):
        yield machine, False, machine is not None
        yield machine, True, False


@pytest.mark.parametrize(("machine", "setid_only", "final"), list(variants()))
def test_every_call_is_decided_as_the_tables_say(machine: str | None, setid_only: bool, final: bool) -> None:
    prog = _seccomp.filter_bytes(setid_only, machine=machine, final=final)
    numbers = [*range(0, FIRST_UNKNOWN + 30), 1000, X32 - 1, X32, X32 + 2, X32 + 59, 0xFFFFFFFF]
    wrong = [
        (hex(arch), nr, hex(arg), hex(got))
        for arch in (X86_64, AARCH64, I386)
        for nr in numbers
        for arg in ARGS
        if (got := run(prog, nr, arch, arg)[0])
        != expected(arch, nr, arg, machine=machine, setid_only=setid_only, final=final)
    ]
    assert not wrong, wrong[:10]


def test_a_call_is_decided_in_a_few_instructions() -> None:
    """The kernel runs the filter on every call, and once per syscall number when it is loaded."""
    prog = _seccomp.filter_bytes(machine="x86_64")
    longest = max(run(prog, nr, X86_64, arg)[1] for nr in range(470) if nr != IOCTL[0] for arg in ARGS)
    assert longest <= 24, longest
    # ioctl's allow-list (round 20): its types first (terminals: 17), then a search by request
    requests = [*ARGS, *IOCTL_ALLOWED, *ATTR_IOCTLS, *STATE_IOCTLS, 0x5401, 0x8912, 0x5000940E]
    steps = {request: run(prog, IOCTL[0], X86_64, (3, request))[1] for request in requests}
    assert steps[0x5401] <= 18 and max(steps.values()) <= 30, steps
    assert len(prog) // 8 < len(_seccomp.filter_bytes()) // 8  # one architecture's table only


def test_the_program_is_short() -> None:
    """The kernel checks, converts and JIT-compiles the program for every command (one bwrap per
    command): plain returns are shared and neighbouring numbers with the same one form one range
    (205 instructions for x86_64 before, 112 since; 124 with round 8's socket and fcntl rules; 133
    with round 10's terminal ioctls, ptrace-like calls and unknown numbers; 148 with round 14's
    socket protocols and TIOCSETD, 156 with its socketpair rule, 160 with its inode flags, 170
    with its core limit; 174 with round 19's inode and filesystem state ioctls, aarch64 156; 226
    with round 20's ioctl allow-list, aarch64 208; 252 with round 35's JIT and hugetlb rules,
    aarch64 235; 266 with round 38's page cache rules, aarch64 247; 267 with its review's mincore,
    aarch64 248; 268 with round 47's memfd_secret, aarch64 249)."""
    assert len(_seccomp.filter_bytes(machine="x86_64", final=True)) // 8 <= 268
    assert len(_seccomp.filter_bytes(machine="aarch64", final=True)) // 8 <= 249
