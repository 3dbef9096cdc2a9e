"""Red team, round 10 (part 2): the kernel surface a bwrap command reaches (docs/security.md).

Each probe runs as the escape suite's do (`tests.test_sandbox_escape_bwrap`): the
session sandbox, one sandbox per command, and the real CLI; as root and, through
`tests.test_sandbox_escape_nonroot`, as uid 65534. Every probe would succeed on this
kernel without the filter: the failure seen is the filter's.
"""

from __future__ import annotations

import json
import os
import platform
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import test_sandbox_escape_bwrap as escape
from tests._bwrap_session import require_bwrap
from tests.conftest import require
from tests.test_sandbox_escape_bwrap import Run, _with_repo

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]
#: The escape suite's fixtures: each probe in the session sandbox, per command and through the CLI.
run, ws, host_sockets = escape.run, escape.ws, escape.host_sockets

#: Calls on the probe's own process (so nothing but the filter refuses them) that reach another
#: process's files, memory or kernel objects, plus the newest mount call and terminal injection.
PROBE = r"""
import ctypes, errno, fcntl, json, os, termios
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return "ok" if r != -1 else errno.errorcode.get(ctypes.get_errno(), "?")
arm = os.uname().machine == "aarch64"
me = os.getpid()
pidfd = libc.syscall(ctypes.c_long(434), ctypes.c_long(me), ctypes.c_long(0))  # pidfd_open
out = {
    "kcmp": call(272 if arm else 312, me, me, 0, 0, 0),  # KCMP_FILE, fd 0 with itself
    "pidfd_getfd": call(438, pidfd, 0, 0),
    "process_madvise": call(440, pidfd, 0, 0, 20, 0),  # MADV_COLD over no ranges
    "open_tree_attr": call(467, -100, ctypes.c_char_p(b"/"), 0, 0, 0),  # an O_PATH fd, no clone
}
# A terminal of its own (the sandbox's devpts), made the controlling one of a new session.
master, slave = os.openpty()
name = os.ttyname(slave)
for label, request, arg in (("TIOCSTI", termios.TIOCSTI, b"x"), ("TIOCLINUX", 0x541C, b"\x0b")):
    child = os.fork()
    if child == 0:
        os.setsid()
        tty = os.open(name, os.O_RDWR)
        try:
            fcntl.ioctl(tty, request, arg)
            os._exit(0)
        except OSError as exc:
            os._exit(exc.errno)
    code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    out[label] = "ok" if code == 0 else errno.errorcode.get(code, str(code))
print(json.dumps(out))
"""


async def test_ptrace_like_calls_new_mount_calls_and_terminal_injection_are_refused(
    run: Run, ws: Path
) -> None:
    """Failed on the old filter: every probe said "ok" (kcmp, pidfd_getfd, process_madvise,
    open_tree_attr and TIOCSTI were let through; TIOCLINUX got the kernel's ENOTTY/EINVAL)."""
    probe = ws / "kernel_probe.py"
    probe.write_text(PROBE)
    probe.chmod(0o644)
    code, out = await run(f"python3 {probe}")
    assert code == 0, out
    results = json.loads(out.strip().splitlines()[-1])
    assert results == dict.fromkeys(
        ("kcmp", "pidfd_getfd", "process_madvise", "open_tree_attr", "TIOCSTI", "TIOCLINUX"), "EPERM"
    ), results


def test_no_terminal_reaches_a_command_of_shellrt_run_in_a_terminal(ws: Path) -> None:
    """Held: ``shellrt run`` with a terminal on all three stdio fds gives the command /dev/null and
    pipes, and no controlling terminal (``tty_nr`` 0): nothing to type into the operator's shell."""
    require_bwrap()
    master, slave = pty.openpty()
    try:
        shell = "for fd in 0 1 2; do [ -t $fd ] && echo TTY$fd; done; echo tty_nr=$(cut -d' ' -f7 /proc/self/stat) >&2"
        cli = [sys.executable, "-m", "shellrt", "run"]
        argv = [*cli, "--sandbox", "bwrap", "--workspace", str(ws), "--", shell]
        proc = subprocess.run(
            argv,
            cwd=ws,
            stdin=slave,
            stdout=slave,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": _with_repo(os.environ.get("PYTHONPATH", ""))},
            timeout=60,
            check=False,
        )
        os.set_blocking(master, False)
        try:
            shown = os.read(master, 65536).decode(errors="replace")
        except BlockingIOError:
            shown = ""
    finally:
        os.close(master)
        os.close(slave)
    stderr = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, stderr
    assert "TTY" not in shown, shown
    assert "tty_nr=0" in stderr, stderr


#: getpid through the two other ABIs an x86_64 kernel may offer (this one: i386 on, x32 off).
OTHER_ABI = r"""
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    long ret, nr = strcmp(argv[1], "i386") == 0 ? 20 : (0x40000000L | 39);
    if (nr == 20) __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr) : "memory");
    else __asm__ volatile("syscall" : "=a"(ret) : "a"(nr) : "rcx", "r11", "memory");
    printf("returned %ld\n", ret);
    return 0;
}
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the i386 and x32 ABIs are x86_64's")
async def test_the_i386_and_x32_abis_kill_the_process(run: Run, ws: Path) -> None:
    """Held: a call through ``int 0x80`` (which works on this host: IA32 emulation is on) or with
    the x32 bit is killed by the architecture check (SIGSYS: 128+31), not run past a table
    written for x86_64 numbers."""
    require(shutil.which("cc") is not None, "a C compiler (apt-get install gcc)")
    source = ws / "abi.c"
    source.write_text(OTHER_ABI)
    binary = ws / "abi"
    subprocess.run(["cc", "-O1", "-o", str(binary), str(source)], check=True, capture_output=True)
    host = subprocess.run([str(binary), "i386"], capture_output=True, text=True, check=True).stdout
    assert host.strip() not in ("", "returned -38"), host  # it ran unfiltered: the probe means something
    code, out = await run(f"{binary} i386; echo i386=$?; {binary} x32; echo x32=$?")
    assert "i386=159" in out and "x32=159" in out and "returned" not in out, out
