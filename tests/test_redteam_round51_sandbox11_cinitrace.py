"""Red team, round 51 (sandbox11): the C init's ``cover_rest`` race made certain, not only argued.

Round 50 anchored the shared overlay's cover of what no group covers (each directory made since the
plan, bound from the overlay over itself): the entry is opened through no link, checked by that fd
and bound fd to fd, so a name swapped for a link to this session's writable root between the check
and the bind binds nothing over the root. The Python init's window was tested (its libc's ``mount``
wrapped); the C init's was closed "by construction" only (round 50's Left: no hook to run the swap
in its window). Here the test traces the C init (``ptrace``, syscall stops) and makes the swap at
the entry of its ``mount`` call -- after every check, before the bind -- as another session's
command would: ``mv m/new m/new.old && ln -s x m/new``.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox import _seccomp, _zinit
from sandbox import _zygote_main as zm
from tests.conftest import require
from tests.test_redteam_round49_sandbox9_lockviewlink import _group
from tests.test_redteam_round50_sandbox10_renamedmask import _lay_out
from tests.test_zinit import _config, _private_scratch

pytestmark = pytest.mark.bwrap

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.restype = ctypes.c_long
_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
_PTRACE_SYSCALL, _PTRACE_GETREGS, _PTRACE_DETACH = 24, 12, 17
_PTRACE_CONT, _PTRACE_SEIZE, _PTRACE_GETEVENTMSG = 7, 0x4206, 0x4201
#: Syscall stops told apart; the fork server's fork, vfork and clone children traced from birth.
_PTRACE_O_TRACESYSGOOD, _PTRACE_O_TRACECLONES = 1, 2 | 4 | 8
_SYS_MOUNT = 165  # x86_64
_WALL = 0x40000000
#: x86_64 ``struct user_regs_struct``: 27 words; r10 (the 4th argument) is word 7, rax 10, orig_rax 15.
_R10, _RAX, _ORIG_RAX = 7, 10, 15
_MS_BIND = 4096


def _children() -> set[int]:
    """This process's children now."""
    return {
        int(pid)
        for task in os.listdir("/proc/self/task")
        for pid in Path(f"/proc/self/task/{task}/children").read_text().split()
    }


def _traced_run(
    tmp_path: Path, config: bytes, script: str, swap: Callable[[], None], binds_only: bool = True
) -> tuple[str, str, int]:
    """`tests.test_zinit._run_directly`, the init traced: ``swap()`` runs at the entry of its first
    ``mount`` with ``MS_BIND`` (``binds_only``; else its first ``mount``), then the init goes on
    untraced. (its command's output, its status line, how many swaps ran)."""
    program = _zinit.init_program_fd()
    require(program is not None, "no C compiler here (install gcc and libc6-dev)")
    assert program is not None
    high = fcntl.fcntl(program, fcntl.F_DUPFD_CLOEXEC, 64)
    os.close(program)
    config_fd = os.memfd_create("config", os.MFD_CLOEXEC)
    os.write(config_fd, config)
    before = _children()
    server = zm._start_c_server(high, config_fd)
    (spawned,) = _children() - before  # the fork server
    os.close(high)
    os.close(config_fd)
    ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    report_r, report_w = os.pipe2(os.O_CLOEXEC)
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    # The fork server traced until it has cloned the init: the init is traced from its birth (it
    # sets up at once, before any request: a pool makes inits ahead).
    opts = _PTRACE_O_TRACESYSGOOD | _PTRACE_O_TRACECLONES
    assert _libc.ptrace(_PTRACE_SEIZE, spawned, None, ctypes.c_void_p(opts)) == 0, ctypes.get_errno()
    zm._send_raw(server, b"p", [theirs.fileno(), report_w, status_w])
    while True:
        _pid, status = os.waitpid(spawned, _WALL)
        if status >> 16:  # a clone event: the init is born traced
            child = ctypes.c_ulong()
            _libc.ptrace(
                _PTRACE_GETEVENTMSG, spawned, None, ctypes.cast(ctypes.byref(child), ctypes.c_void_p)
            )
            _libc.ptrace(_PTRACE_DETACH, spawned, None, None)
            break
        _libc.ptrace(_PTRACE_CONT, spawned, None, None)  # any other stop: passed over
    said = server.recv(4)
    init = int.from_bytes(said, sys.byteorder, signed=True)
    assert init == child.value, (init, child.value)
    theirs.close()
    for fd in (report_w, status_w):
        os.close(fd)
    server.close()
    swaps, reaped = 0, False
    regs = (ctypes.c_ulonglong * 27)()
    try:
        os.waitpid(init, _WALL)  # its first stop, at its birth
        assert _libc.ptrace(_PTRACE_SYSCALL, init, None, None) == 0
        request = _zinit.encode_request(["/bin/sh", "-c", script], str(tmp_path), {"PATH": "/usr/bin:/bin"})
        with open(os.devnull, "rb") as devnull:
            socket.send_fds(ctl, [request], [devnull.fileno(), out_w, out_w])
        os.close(out_w)
        while True:
            _pid, status = os.waitpid(init, _WALL)
            if os.WIFEXITED(status) or os.WIFSIGNALED(status):
                reaped = True
                break
            sig = os.WSTOPSIG(status)
            if sig == (0x80 | 5):  # a syscall stop
                assert _libc.ptrace(_PTRACE_GETREGS, init, None, ctypes.cast(regs, ctypes.c_void_p)) == 0
                entry = ctypes.c_longlong(regs[_RAX]).value == -38  # -ENOSYS at the entry
                if entry and regs[_ORIG_RAX] == _SYS_MOUNT and (regs[_R10] & _MS_BIND or not binds_only):
                    swap()
                    swaps += 1
                    _libc.ptrace(_PTRACE_DETACH, init, None, None)
                    break
                _libc.ptrace(_PTRACE_SYSCALL, init, None, None)
            else:  # a signal or a group stop: passed on
                _libc.ptrace(_PTRACE_SYSCALL, init, None, ctypes.c_void_p(0 if sig == 5 else sig))
    finally:
        ctl.close()
    output = b""
    while chunk := os.read(out_r, 65536):
        output += chunk
    status_line = os.read(status_r, 64).decode()
    if not reaped:
        os.waitpid(init, 0)
    os.waitpid(-1, 0)  # the server
    for fd in (out_r, status_r, report_r):
        os.close(fd)
    return output.decode(), status_line, swaps


def test_a_name_swapped_in_the_c_inits_window_binds_nothing_over_the_link_target(tmp_path: Path) -> None:
    """Held (the construction round 50 gave it): the masked file stays masked. The same trace on
    round 49's ``zinit.c`` (check by name, bind by path) read ``TOPSECRET``: 1 of 1."""
    require(os.geteuid() == 0, "mounting a private tmpfs and an overlay, and tracing, need root")
    require(platform.machine() == "x86_64", "the trace reads x86_64 registers")
    scratch = _private_scratch(tmp_path)
    try:
        for name in ("m/x", "m/new"):
            (scratch / name).mkdir(parents=True)
        (scratch / "m" / "x" / "secret").write_text("TOPSECRET\n")
        (scratch / "empty").write_text("")
        subprocess.run(
            ["mount", "--bind", str(scratch / "empty"), str(scratch / "m" / "x" / "secret")], check=True
        )
        subprocess.run(
            ["mount", "-t", "overlay", "overlay", "-o", f"lowerdir={scratch}/m:{scratch}/e", f"{scratch}/h"],
            check=True,
        )

        def swap() -> None:  # the other session's command, between the check and the bind
            (scratch / "m" / "new").rename(scratch / "m" / "new.old")
            (scratch / "m" / "new").symlink_to(scratch / "m" / "x")

        rest = zm._mount_call(f"{scratch}/h", f"{scratch}/m", None, zm._CALL_REST, "x")
        check = f"cat {scratch}/m/x/secret; echo; true"
        said, status, swaps = _traced_run(tmp_path, _config(_seccomp.filter_bytes(), (rest,)), check, swap)
        assert swaps == 1, (swaps, said)
        assert status == "s 0\n", (status, said)
        assert said.split() == [], said  # masked (empty)
    finally:
        subprocess.run(["umount", "-R", "-l", str(scratch)], check=False)


@pytest.mark.parametrize("shape", ["own", "shared"])
def test_a_mask_renamed_inside_the_c_inits_group_fails_the_init_closed(tmp_path: Path, shape: str) -> None:
    """Round 50's group-end check in the C init, its race made certain (the Python init's is
    `tests.test_redteam_round50_sandbox10_renamedmask`): ``docs/x``, holding a mask, renamed to
    ``docs/y`` after the group's head check -- at the group's first mount after it (its own overlay;
    a shared overlay's part bound) -- so the planned move finds nothing. Held: the init fails
    ("moved since the plan"), the command does not run. On ``zinit.c`` before round 50's check
    (``06278f50~1``) ``TOPSECRET`` read: 2 of 2."""
    require(os.geteuid() == 0, "mounting a private tmpfs and an overlay, and tracing, need root")
    require(platform.machine() == "x86_64", "the trace reads x86_64 registers")
    scratch = _private_scratch(tmp_path)
    try:
        _lay_out(scratch, renamed=False)

        def swap() -> None:
            (scratch / "docs" / "x").rename(scratch / "docs" / "y")

        check = f"cat {scratch}/docs/y/secret; echo; true"
        config = _config(_seccomp.filter_bytes(), _group(scratch, "path", shape))
        said, status, swaps = _traced_run(tmp_path, config, check, swap, binds_only=shape == "shared")
        assert swaps == 1, (swaps, said)
        assert "TOPSECRET" not in said, said
        assert status != "s 0\n" and "moved since the plan" in said, (status, said)
    finally:
        subprocess.run(["umount", "-R", "-l", str(scratch)], check=False)
