"""Red team round 22, docker: a command that shares its host uid cannot take that uid's inotify budget.

Containers here share the host's user namespace, so the kernel charges a command's inotify instances
and watches (``/proc/sys/fs/inotify/max_user_*``, 128 instances) to the command's host uid, with no
exemption for capabilities. A per-call ``user="root"`` command is host uid 0: holding every instance
it could, it left host root's own programs (systemd, dockerd, the host's shellrt) with ``EMFILE``
(round 21's "Left"). A container has no ceiling of its own to write (no user namespace; ``/proc/sys``
is read-only), so a command whose uid is not the session's own leased one (a per-call user, a
configured ``DockerConfig.user``, a non-root host's own uid, every ``root_can_administer`` root)
now gets ``ENOSYS`` from ``inotify_init``/``inotify_init1``/``fanotify_init`` (priv's second filter);
a command as the session's leased uid (nothing else on the host has it) keeps inotify.

The host side is this test process (root in CI; as another user it is not charged and passes): it makes one inotify instance while the root
command holds all it could. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path

import anyio
import pytest

from sandbox.base import ExecRequest
from sandbox.docker import DockerBackend
from tests._docker_support import DEBIAN, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_NR = {
    "x86_64": {"inotify_init1": 294, "fanotify_init": 300},
    "aarch64": {"inotify_init1": 26, "fanotify_init": 262},
}
_SYS = _NR.get(platform.machine(), _NR["x86_64"])
# Holds every inotify instance it can (at most 300), says how many and why it stopped, then waits.
_HOLD = (
    "perl -e '$|=1; $n=0; while ($n < 300) { last if syscall(INIT, 0) < 0; $n++ } "
    'print "held $n ", $!+0, "\\n"; sleep 60\''
).replace("INIT", str(_SYS["inotify_init1"]))
_PROBE = (
    (
        'perl -e \'$i = syscall(INIT, 0); print "inotify ", ($i < 0 ? $!+0 : "ok"), "\\n"; '
        '$f = syscall(FAN, 0x200, 0); print "fanotify ", ($f < 0 ? $!+0 : "ok"), "\\n"\''
    )
    .replace("INIT", str(_SYS["inotify_init1"]))
    .replace("FAN", str(_SYS["fanotify_init"]))
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _host_inotify() -> int:
    """0 if this (host) process could make an inotify instance (closed again), else the errno."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(0)
    if fd < 0:
        return ctypes.get_errno()
    os.close(fd)
    return 0


async def _host_while_held(b: DockerBackend, user: str) -> tuple[str, int]:
    """Start the holding command as ``user``; once it reports, try inotify on the host; then end it."""
    proc = await b.exec(
        ExecRequest(
            argv=("sh", "-c", _HOLD),
            cwd="/workspace",
            env={"PATH": "/usr/bin:/bin"},
            merge_stderr=True,
            user=user,
        )
    )
    out = b""
    try:
        with anyio.fail_after(60):
            while b"\n" not in out:
                out += await proc.stdout.receive()
        return out.decode(errors="replace").strip(), _host_inotify()
    finally:
        await proc.kill()
        with anyio.fail_after(60):
            await proc.wait()


async def test_a_root_command_leaves_host_root_its_inotify_instances(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as b:
        held, host = await _host_while_held(b, "root")
        assert host == 0, f"host root got errno {host} while the root command {held!r}"
        assert held.startswith("held 0 "), held  # refused outright (ENOSYS), not after taking some
        # Every other shared uid too (a per-call user), and fanotify; the session's leased uid keeps inotify.
        with anyio.fail_after(60):
            _, nobody = await run_sh(b, _PROBE, user="nobody")
            _, leased = await run_sh(b, _PROBE)
            # The operator's shell (`inspect sandbox connect`) is started the same way.
            as_leased, as_root = await b.connection_argv(), await b.connection_argv("root")
    mode = {"leased": as_leased[as_leased.index("--") + 2], "root": as_root[as_root.index("--") + 2]}
    assert mode == {"leased": "own", "root": "drop"}, (as_leased, as_root)
    enosys = str(38)
    assert (
        nobody.split() == ["inotify", enosys, "fanotify", nobody.split()[3]] and nobody.split()[3] != "ok"
    ), nobody
    assert leased.splitlines()[0] == "inotify ok", leased
