"""Red team, round 19 (bwrap): the operator's terminal and the host's fds never reach a command.

The caller runs shellrt from an interactive shell: its stdin, stdout and stderr are a pty that is
its controlling terminal, and it holds more fds (the pty again, a host file) it did not mark
close-on-exec. A command that got any fd of that pty could ``ioctl(TIOCSTI)`` keystrokes into the
operator's shell (run after the command ends), read what the operator types, or take the terminal
with ``TIOCSCTTY``; one with the terminal as its controlling tty could do the same through
``/dev/tty``. The class is closed in two ways, both pinned here for the CLI (one bwrap per
command), a zygote session under a Supervisor and the MCP server:

* no host terminal or inherited fd reaches a sandboxed process: every process the command can see
  holds only /dev/null, pipes and what it opened itself, none has a controlling tty, and
  ``/dev/tty`` fails with ENXIO;
* the filter refuses ``TIOCSTI``, ``TIOCLINUX`` and ``TIOCSETD`` with EPERM even on a pty of the
  command's own -- also with bits set above the request's 32 bits (the kernel takes the request
  as an unsigned int, so a filter that compared all 64 bits would let ``0x1_00005412`` through).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import anyio

from tests._bwrap_session import require_bwrap, zygote_session
from tests._mcp_support import ROOT, isolated_env, serve_session
from tests._pty import read_terminal

_PROBE = r"""
import ctypes, errno, json, os, platform
libc = ctypes.CDLL(None, use_errno=True)
fds = {}
for f in os.listdir("/proc/self/fd"):
    try:
        fds[f] = os.readlink("/proc/self/fd/" + f)
    except OSError:
        pass
ttys = []
for p in (x for x in os.listdir("/proc") if x.isdigit()):
    try:
        nr = int(open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[4])
    except (OSError, IndexError, ValueError):
        continue
    if nr:
        ttys.append("pid %s tty_nr %d" % (p, nr))
    try:
        names = os.listdir("/proc/%s/fd" % p)
    except OSError:
        continue
    for f in names:
        try:
            target = os.readlink("/proc/%s/fd/%s" % (p, f))
        except OSError:
            continue
        if target.startswith(("/dev/pts", "/dev/tty", "/dev/console", "/dev/ptmx")) or "hostsecret" in target:
            ttys.append("pid %s fd %s %s" % (p, f, target))
try:
    os.close(os.open("/dev/tty", os.O_RDWR))
    dev_tty = "ok"
except OSError as e:
    dev_tty = errno.errorcode.get(e.errno, str(e.errno))
master, slave = os.openpty()
nr = 16 if platform.machine() == "x86_64" else 29
arg = ctypes.create_string_buffer(b"\x02" + bytes(63))
def ioctl(req):
    r = libc.syscall(ctypes.c_long(nr), ctypes.c_long(slave), ctypes.c_ulong(req), ctypes.c_void_p(ctypes.addressof(arg)))
    return "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
calls = {"TIOCSTI": ioctl(0x5412), "TIOCSTI_hi": ioctl(0x100005412), "TIOCLINUX": ioctl(0x541C),
         "TIOCSETD": ioctl(0x5423), "TIOCSETD_hi": ioctl(0xFFFFFFFF00005423)}
print("R19TTY " + json.dumps({"fds": fds, "ttys": ttys, "dev_tty": dev_tty, "ioctls": calls}))
"""
_COMMAND = f"echo {base64.b64encode(_PROBE.encode()).decode()} | base64 -d | python3 -"

#: The zygote session driven by a host child that has the pty as its controlling terminal.
_SESSION_HOST = r"""
import sys, anyio
from pathlib import Path
from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor

async def main():
    ws = Path(sys.argv[1])
    backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
    await backend.start()
    assert backend._zygote is not None, "no zygote"
    sup = Supervisor(backend, session_dir=ws.parent / "session")
    try:
        print((await sup.run(sys.argv[2], timeout_s=60)).preview, flush=True)
    finally:
        await sup.close()
        await backend.close()

anyio.run(main)
"""


def _seen(out: str) -> dict[str, Any]:
    lines = [line for line in out.replace("\r", "").splitlines() if line.startswith("R19TTY ")]
    assert lines, f"the probe did not report: {out[-3000:]}"
    found: dict[str, Any] = json.loads(lines[-1].split(" ", 1)[1])
    return found


def _assert_nothing_of_the_host(seen: dict[str, Any]) -> None:
    own = {fd for fd, target in seen["fds"].items() if target.startswith("/proc/")}  # its listing
    assert set(seen["fds"]) - own == {"0", "1", "2"}, seen["fds"]
    assert all(t == "/dev/null" or t.startswith("pipe:") for fd, t in seen["fds"].items() if fd not in own), seen
    assert seen["ttys"] == [], seen["ttys"]
    assert seen["dev_tty"] == "ENXIO", seen
    assert seen["ioctls"] == dict.fromkeys(seen["ioctls"], "EPERM") and len(seen["ioctls"]) == 5, seen["ioctls"]


def _under_a_terminal(argv: list[str], tmp_path: Path) -> str:
    """``argv`` run on the host with a pty as its controlling terminal and stdio, holding two more
    inheritable fds (the pty again and an open host file); what it wrote to the terminal."""
    master, slave = os.openpty()
    secret = tmp_path / "hostsecret"
    secret.write_text("host only\n")
    extra_tty = os.dup(slave)
    extra_file = os.open(secret, os.O_RDONLY)

    def take_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    try:
        proc = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            pass_fds=(extra_tty, extra_file),
            preexec_fn=take_terminal,
            cwd=ROOT,
            env={**os.environ, **isolated_env(home)},
        )
    finally:
        for fd in (slave, extra_tty, extra_file):
            os.close(fd)
    return read_terminal(master, proc).decode(errors="replace")


def test_a_cli_run_from_a_terminal_gets_none_of_it(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    argv = [sys.executable, "-m", "shellrt", "run", "--sandbox", "bwrap", "--workspace", str(ws), "--", _COMMAND]
    _assert_nothing_of_the_host(_seen(_under_a_terminal(argv, tmp_path)))


def test_a_session_started_from_a_terminal_gets_none_of_it(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    argv = [sys.executable, "-c", _SESSION_HOST, str(ws), _COMMAND]
    _assert_nothing_of_the_host(_seen(_under_a_terminal(argv, tmp_path)))


def test_a_session_sandbox_refuses_the_terminal_ioctls_on_its_own_pty(tmp_path: Path) -> None:
    """The same probe in-process (the test's own stdio, no pty): the filter's answer is EPERM."""

    async def main() -> str:
        async with zygote_session(tmp_path) as (_backend, sup):
            return (await sup.run(_COMMAND, timeout_s=60)).preview

    _assert_nothing_of_the_host(_seen(anyio.run(main)))


def test_an_mcp_server_command_gets_only_its_own_fds(tmp_path: Path) -> None:
    """The MCP server's stdin and stdout carry the protocol: a command holding either could answer
    for the server or read the client's next request."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()

    async def main() -> str:
        async with serve_session(ws, home, "--sandbox", "bwrap", "--mode", "bypassPermissions") as session:
            result = await session.call_tool("Bash", {"command": _COMMAND})
            return "\n".join(getattr(block, "text", "") for block in result.content)

    _assert_nothing_of_the_host(_seen(anyio.run(main)))
