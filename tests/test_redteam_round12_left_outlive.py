"""Red team round 12 (left-over): can a command's process outlive its kill, bwrap per command?

In per-command mode bwrap's own init (pid 1 of the command's pid namespace) is dumpable and runs
as the command's uid, so the command may open ``/proc/1/mem`` (seccomp stops ``ptrace``, not that
file). The attacks tried here: a child that double-forks, calls ``setsid``, scrubs its
environment and renames itself (no run marker left), and keeps a token file open; the same
after writing into pid 1's memory (what reaches it: ``/proc/1/mem`` opened for writing); and a
child ignoring every catchable signal. Each command gets a short timeout through the
Supervisor; afterwards no host process may hold the token file open. A process in a pid
namespace dies with the namespace's init, whatever it does to its name, session or signals;
the init itself is now killed from the host by the pid bwrap reports (`sandbox._bwrap_init`).
Failed before: ``proc1-mem-no-pdeathsig`` (the token holder and the patched init lived on after
the timeout's kill); ``setsid-renamed`` held already (kept as a regression test). Since round 41
(bwrap4) the C starter's Landlock domain refuses ``/proc/1/mem``: the pid 1 case runs without it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import BwrapConfig, SandboxPolicy, _bwrap_starter
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests.conftest import require

pytestmark = pytest.mark.anyio

#: Double fork, setsid, scrubbed environment, a kernel-thread-like name, the token file held open.
_ESCAPE = (
    '( setsid env -i /bin/bash -c \'exec 9>>"$0"; echo $$ > "$0.pid"; '
    'trap "" HUP TERM INT QUIT USR1 USR2; exec -a "[kworker/0:2]" sleep 300 <&- 9>>"$0"\' {token} & ); '
)
#: What a command can do to pid 1 (bwrap's init) through ``/proc/1/mem``: overwrite the code it
#: returns to from ``wait4`` with ``prctl(PR_SET_PDEATHSIG, 0)`` and a ``pause()`` loop, then wake
#: it with an orphan that exits: the init no longer dies with the outer bwrap, and the namespace
#: with every process in it would live on.
_MEM = (
    "python3 - <<'PY' > {ws}/mem.txt 2>&1\n"
    "import os\n"
    "try:\n"
    "    pc = int(open('/proc/1/syscall').read().split()[-1], 16)\n"
    "    code = bytes.fromhex('b89d000000bf0100000031f60f05b8220000000f05ebf7')\n"
    "    fd = os.open('/proc/1/mem', os.O_RDWR)\n"
    "    os.pwrite(fd, code, pc)\n"
    "    print('INJECTED', os.pread(fd, len(code), pc) == code)\n"
    "    rest = open('/proc/1/stat').read().rsplit(')', 1)[1].split()\n"
    "    start, end = int(rest[47]), int(rest[48])\n"
    "    os.pwrite(fd, b'X' * (end - start - 1), start)\n"
    "    print('SCRUBBED', open('/proc/1/environ', 'rb').read()[:20])\n"
    "except OSError as exc:\n"
    "    print('REFUSED', exc)\n"
    "PY\n"
    "( sleep 0.2 & ); sleep 0.5; "
)
#: With the init patched, the command's own shell ends: the init's ``wait4`` returns into the patch.


@pytest.fixture
def ws() -> Iterator[Path]:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = Path(tempfile.mkdtemp(prefix="rt12-outlive-", dir="/var/tmp"))
    base.chmod(0o755)
    (base / "ws").mkdir(mode=0o777)
    (base / "s").mkdir()
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _holders(token: Path) -> list[int]:
    """Host pids with ``token`` open (any fd), however they renamed themselves."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{fd}") == str(token):
                    found.append(int(entry))
                    break
            except OSError:
                continue
    return found


def _kill_namespace(pid: int) -> None:
    """SIGKILL every process in ``pid``'s pid namespace (the patched init included)."""
    try:
        ns = os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return
    if ns == os.readlink("/proc/self/ns/pid"):
        os.kill(pid, 9)
        return
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/ns/pid") == ns:
                    os.kill(int(entry), 9)
            except OSError:
                continue


async def _run(base: Path, command: str) -> str:
    backend = create_backend(BwrapConfig(persistent=False), SandboxPolicy(workspace=base / "ws"))
    await backend.start()
    try:
        async with Supervisor(backend, session_dir=base / "s") as sup:
            result = await sup.run(command, timeout_s=3)
            return f"{result.exit_code} timed_out={result.timed_out} {result.preview}"
    finally:
        await backend.close()


@pytest.mark.parametrize("mem", [False, True], ids=["setsid-renamed", "proc1-mem-no-pdeathsig"])
async def test_no_process_of_a_timed_out_command_survives(ws: Path, mem: bool) -> None:
    token = ws / "ws" / f"token-{secrets.token_hex(8)}"
    command = (
        _ESCAPE.format(token=token) + "sleep 1; exit 0" if mem else _ESCAPE.format(token=token) + "sleep 60"
    )
    command = (_MEM.format(ws=ws / "ws") + command) if mem else command
    with pytest.MonkeyPatch.context() as patch:
        if mem:  # since round 41 the C starter's Landlock domain refuses /proc/1/mem: test without it
            patch.setattr(_bwrap_starter, "starter_program_fd", lambda: "no C compiler (the test says so)")
        output = await _run(ws, command)
    assert token.exists() and Path(f"{token}.pid").exists(), output  # the escape did start
    deadline = time.monotonic() + 5
    while _holders(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = _holders(token)
    for pid in survivors:  # do not leave it (nor its namespace's init) behind
        _kill_namespace(pid)
    assert not survivors, f"processes of a killed command live on: {survivors} ({output})"
    if mem:
        assert "INJECTED True" in (ws / "ws" / "mem.txt").read_text(), output  # the attack did reach pid 1
