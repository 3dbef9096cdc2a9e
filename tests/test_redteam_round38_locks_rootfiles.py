"""Red team, round 38 (locks): the lock view's second reader -- what its overlays left uncovered.

Round 37's lock view put an overlay of its own over each read-only host directory below ``/``, so
a command's locks land on overlay inodes. The regular files directly in ``/`` are in no such
directory (``/container_info.json`` here): a command could open one read-only and ``flock`` it
or take an open-file-description read lock, on the host's own inode, and a host program locking
the same file waited or failed. Now (a root caller: its ``/`` can carry one overlay) each such
file is bound from the overlay over itself, as the directories are (`_zygote_main._shared_view_calls`).

The same place holds the round 38 change's guards: the one overlay of the whole host root that
each init assembles at ``/dev/.shellrt-lockview/h`` must be gone before the command runs (it shows
every host file, masks and all, from underneath them), and the masks below a covered directory
stay on top.
"""

from __future__ import annotations

import fcntl
import os
import struct
import time
import uuid
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests._bwrap_session import require_bwrap, supervised
from tests.conftest import require

pytestmark = pytest.mark.bwrap

_F_OFD_SETLK = 37

#: In the sandbox: lock the file (read-only fd: flock LOCK_EX and an OFD read lock), say so in
#: the workspace, hold until the host says done.
_HOLD = r"""
import fcntl, os, struct, sys, time
path, ws = sys.argv[1], sys.argv[2]
said = []
fds = [os.open(path, os.O_RDONLY) for _ in range(2)]
try:
    fcntl.flock(fds[0], fcntl.LOCK_EX | fcntl.LOCK_NB); said.append("FLOCK ok")
except OSError as exc:
    said.append("FLOCK " + str(exc))
try:
    fcntl.fcntl(fds[1], 37, struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 0, 0)); said.append("OFD ok")
except OSError as exc:
    said.append("OFD " + str(exc))
with open(os.path.join(ws, "ready.tmp"), "w") as f:
    f.write("\n".join(said) + "\n")
os.rename(os.path.join(ws, "ready.tmp"), os.path.join(ws, "ready"))
for _ in range(300):
    if os.path.exists(os.path.join(ws, "done")):
        break
    time.sleep(0.1)
print("HELD", *said, sep="\n")
"""


def _host_tries(path: Path) -> dict[str, str]:
    got: dict[str, str] = {}
    fds = [os.open(path, os.O_RDWR) for _ in range(2)]
    try:
        try:
            fcntl.flock(fds[0], fcntl.LOCK_EX | fcntl.LOCK_NB)
            got["flock"] = "ok"
        except OSError as exc:
            got["flock"] = f"blocked: {exc}"
        try:
            fcntl.fcntl(fds[1], _F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))
            got["ofd"] = "ok"
        except OSError as exc:
            got["ofd"] = f"blocked: {exc}"
    finally:
        for fd in fds:
            os.close(fd)
    return got


def test_a_lock_on_a_file_directly_in_slash_does_not_hold_the_host(tmp_path: Path) -> None:
    """A root caller's session command locks a 0644 host file directly in ``/`` (read-only fd);
    the host's non-blocking flock and OFD write lock on it must succeed meanwhile.
    Failed before: 1 of 1 (both blocked: "Resource temporarily unavailable")."""
    require_bwrap()
    require(os.geteuid() == 0, "a file directly in / is made by root (and only a root caller's / carries one overlay)")
    ws = tmp_path / "ws"
    ws.mkdir()
    ws.chmod(0o755)
    (ws / "hold.py").write_text(_HOLD)
    target = Path("/") / f"shellrt-r38-locks-{uuid.uuid4().hex[:12]}"
    target.write_text("x\n")
    target.chmod(0o644)
    got: dict[str, str] = {}
    out: list[str] = []
    try:

        async def main() -> None:
            backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
            async with supervised(backend, tmp_path / "s") as sup:

                async def command() -> None:
                    result = await sup.run(f"python3 {ws}/hold.py {target} {ws}", timeout_s=60)
                    out.append(result.preview)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(command)
                    deadline = time.monotonic() + 40
                    while not (ws / "ready").exists() and not out and time.monotonic() < deadline:
                        await anyio.sleep(0.05)
                    if (ws / "ready").exists():
                        got.update(_host_tries(target))
                    (ws / "done").write_text("")

        anyio.run(main)
    finally:
        target.unlink()
    text = "\n".join(out)
    assert "FLOCK ok" in text and "OFD ok" in text, f"the command must have locked its view: {text}"
    assert got == {"flock": "ok", "ofd": "ok"}, (got, text)


_LOOK = (
    "echo ENTRIES $(ls -A /dev/.shellrt-lockview/h /dev/.shellrt-lockview/s | grep -vc ':$\\|^$'); "
    "echo MOUNTS $(grep -c ' /dev/.shellrt-lockview/[hs] ' /proc/self/mountinfo); "
    "stat -c 'PASSWD %d' /etc/passwd; "
    "stat -c 'ETC %d' /etc; stat -c 'USR %d' /usr; "
    "ls /root >/dev/null 2>&1 && echo ROOT-OPEN || echo ROOT-CLOSED"
)


def test_the_shared_overlay_is_gone_and_the_masks_stay_on_top(tmp_path: Path) -> None:
    """Guards of round 38's one overlay of the host root for a root caller's covered directories:
    nothing is left mounted at the assembly points (the overlay there shows the whole host root
    from underneath every mask), the sandbox's own ``/etc/passwd`` (a bind below covered ``/etc``)
    is still on top, ``/root`` (0700) stays closed to the sandbox uid, and ``/etc`` and ``/usr`` are
    one overlay (the same device: the change is in effect)."""
    require_bwrap()
    require(os.geteuid() == 0, "a root caller's view")
    ws = tmp_path / "ws"
    ws.mkdir()
    outs: list[str] = []

    async def main() -> None:
        backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            for _ in range(4):  # pooled and spawned inits alike
                outs.append((await sup.run(_LOOK, timeout_s=60)).preview)

    anyio.run(main)
    for out in outs:
        assert "ENTRIES 0" in out and "MOUNTS 0" in out, out
        assert "ROOT-CLOSED" in out, out
        etc = out.split("ETC ")[1].split()[0]
        usr = out.split("USR ")[1].split()[0]
        passwd = out.split("PASSWD ")[1].split()[0]
        assert etc == usr and passwd != etc, out  # the sandbox's own /etc/passwd still on top
        assert str(os.stat("/etc").st_dev) != etc, out  # not the host's device: an overlay
