"""Red team, round 18: a command changes the machine's view of time, or leaves a timer the host runs.

What was tried, as a root caller (the leased sandbox uid on bwrap; ``--user root`` and the default
user on docker): setting the clock (``date -s``, ``clock_settime``, ``settimeofday``, an
``adjtimex`` that changes the offset) -- all need CAP_SYS_TIME, which no command has; a time
namespace of its own (``unshare(CLONE_NEWTIME)``); and a job a scheduler outside the sandbox would
run later (``systemd-run --user``, the cron and at spools, the buses they are reached through).
Everything held (no fix in this file): these tests keep it so. The probes set the clock to the
time it already has and change the offset by zero, so a broken sandbox would fail the test
without moving the host's clock. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import base64
import time
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from sandbox.docker import DockerBackend
from tests._bwrap_session import require_bwrap, supervised
from tests._docker_support import DEBIAN, config, policy, require_docker, run_sh

_PROBE = r"""
import ctypes, errno, time
libc = ctypes.CDLL(None, use_errno=True)
def res(name, r):
    print(name, "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?"))
class Pair(ctypes.Structure):
    _fields_ = [("a", ctypes.c_long), ("b", ctypes.c_long)]
now = int(time.time())
res("clock_settime", libc.clock_settime(0, ctypes.byref(Pair(now, 0))))
res("settimeofday", libc.settimeofday(ctypes.byref(Pair(now, 0)), None))
buf = ctypes.create_string_buffer(512)
ctypes.c_uint.from_buffer(buf).value = 0x0001  # ADJ_OFFSET, offset 0
res("adjtimex", libc.adjtimex(buf))
res("unshare_time", libc.unshare(0x80))  # CLONE_NEWTIME
"""

_SCHEDULERS = r"""
date -s "@$(date +%s)" >/dev/null 2>&1 && echo "DATE-SET" || echo date-refused
systemd-run --user --on-active=600 /bin/true >/dev/null 2>&1 && echo "SYSTEMD-RUN" || echo systemd-run-refused
for d in /var/spool/cron /var/spool/cron/crontabs /var/spool/at /var/spool/atjobs /etc/cron.d /var/spool/anacron; do
  [ -d "$d" ] && [ -w "$d" ] && echo "WRITABLE $d"
done
for s in /run/dbus/system_bus_socket /run/systemd/private /run/systemd/notify /run/user/*/bus \
         /run/user/*/systemd/private /var/run/dbus/system_bus_socket; do
  [ -S "$s" ] && echo "SOCKET $s"
done
echo done
"""


def _wrapped(code: str) -> str:
    return f"echo {base64.b64encode(code.encode()).decode()} | base64 -d | python3 -"


def _refused(out: str) -> None:
    seen = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    for name in ("clock_settime", "settimeofday", "adjtimex", "unshare_time"):
        assert seen.get(name) == "EPERM", (name, out)


def _no_scheduler(out: str, *, host_fs: bool) -> None:
    assert out.rstrip().endswith("done"), out
    assert "DATE-SET" not in out and "date-refused" in out, out
    assert "SYSTEMD-RUN" not in out, out
    assert "SOCKET" not in out, out
    if host_fs:  # bwrap shows the host's own spools (read-only); a container's are its own
        assert "WRITABLE" not in out, out


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "oneshot"])
def test_bwrap_commands_cannot_set_the_clock_or_reach_a_scheduler(tmp_path: Path, persistent: bool) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    before = time.time()

    async def main() -> tuple[str, str]:
        backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "session") as sup:
            probe = await sup.run(_wrapped(_PROBE), timeout_s=60)
            sched = await sup.run(_SCHEDULERS, timeout_s=60)
            return probe.preview, sched.preview

    probe, sched = anyio.run(main)
    _refused(probe)
    _no_scheduler(sched, host_fs=True)
    assert abs(time.time() - before) < 600, "the host's clock moved"


# The test image has no Python: the clock and the time namespace through coreutils and util-linux.
_DOCKER_PROBE = r"""
date -s "@$(date +%s)" 2>&1 >/dev/null | grep -q "not permitted" && echo "clock_settime EPERM"
unshare -T true 2>&1 | grep -q "not permitted" && echo "unshare_time EPERM"
echo probed
"""


@pytest.mark.docker
@pytest.mark.parametrize("user", [None, "root"], ids=["default-user", "root"])
def test_docker_commands_cannot_set_the_clock(tmp_path: Path, user: str | None) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> tuple[str, str]:
        async with DockerBackend(config(DEBIAN), policy(ws)) as backend:
            _, probe = await run_sh(backend, _DOCKER_PROBE, user=user)
            _, sched = await run_sh(backend, _SCHEDULERS, user=user)
            return probe, sched

    probe, sched = anyio.run(main)
    assert "clock_settime EPERM" in probe and "unshare_time EPERM" in probe, probe
    _no_scheduler(sched, host_fs=False)
