"""Red team, round 38 (locks): the lock view's second reader -- what its overlays left uncovered.

Round 37's lock view put an overlay of its own over each read-only host directory below ``/``, so
a command's locks land on overlay inodes. The regular files directly in ``/`` are in no such
directory (``/container_info.json`` here), and a top-level directory the host makes after the
session planned its view got none: a command could open such a file read-only and ``flock`` it or
take an open-file-description read lock, on the host's own inode, and a host program locking the
same file waited or failed. Now (a root caller: its ``/`` can carry one overlay) each init binds
each such file and new directory from the overlay over itself (`_zygote_main._cover_rest`, `zinit.c`
`cover_rest`).

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


def _locked_from_a_session(tmp_path: Path, made_later: bool) -> tuple[dict[str, str], str]:
    """A root caller's session command locks a 0644 host file (read-only fd) directly in ``/``,
    or (``made_later``) in a top-level directory the host made after the session's first command;
    what the host's own non-blocking locks on it got meanwhile, and what the command said."""
    require_bwrap()
    require(os.geteuid() == 0, "a file directly in / is made by root (and only a root caller's / carries one overlay)")
    ws = tmp_path / "ws"
    ws.mkdir()
    ws.chmod(0o755)
    (ws / "hold.py").write_text(_HOLD)
    made = Path("/") / f"shellrt-r38-locks-{uuid.uuid4().hex[:12]}"
    target = made / "f" if made_later else made
    if not made_later:
        target.write_text("x\n")
        target.chmod(0o644)
    got: dict[str, str] = {}
    out: list[str] = []
    try:

        async def main() -> None:
            backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
            async with supervised(backend, tmp_path / "s") as sup:
                assert (await sup.run("true", timeout_s=60)).exit_code == 0  # the view is planned
                if made_later:
                    made.mkdir(mode=0o755)
                    target.write_text("x\n")
                    target.chmod(0o644)
                    for _ in range(4):  # past the inits the warm pool set up before it existed
                        assert (await sup.run("true", timeout_s=60)).exit_code == 0

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
        if target.exists():
            target.unlink()
        if made.is_dir():
            made.rmdir()
    text = "\n".join(out)
    assert "FLOCK ok" in text and "OFD ok" in text, f"the command must have locked its view: {text}"
    return got, text


def test_a_lock_on_a_file_directly_in_slash_does_not_hold_the_host(tmp_path: Path) -> None:
    """The host's non-blocking flock and OFD write lock on a file directly in ``/`` that a command
    locked must succeed. Failed before: 1 of 1 (both blocked: "Resource temporarily unavailable")."""
    got, text = _locked_from_a_session(tmp_path, made_later=False)
    assert got == {"flock": "ok", "ofd": "ok"}, (got, text)


def test_a_lock_in_a_top_level_directory_made_later_does_not_hold_the_host(tmp_path: Path) -> None:
    """The same in a top-level directory the host made after the session planned its view (the
    plan is the zygote's, once; each init now covers what appeared before it was set up: the
    warm pool's inits, set up ahead, not what appeared after -- docs/security.md "Left").
    Failed before: 1 of 1 (both blocked)."""
    got, text = _locked_from_a_session(tmp_path, made_later=True)
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
