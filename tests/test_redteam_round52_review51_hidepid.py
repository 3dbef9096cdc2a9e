"""Red team, round 52 (review51): an owner the reader cannot see in /proc was judged gone.

Every docker backend start reaps the containers of dead owners, every shellrt container on the
daemon (any user's), judging the owner by its ``/proc/<pid>/stat`` (round 51: start ticks; older
labels: psutil's start time). A ``/proc`` mounted ``hidepid=2`` (hardened hosts; systemd's
``ProtectProc=invisible``, a common unit setting for a server) shows a caller without root no
process of another user's: the missing entry read as "gone", and such a caller's next start removed
every other user's live session's container (their commands' waits end, "the executor is gone").
A process is now gone only when the kernel says so (``kill(pid, 0)``: ESRCH); one it hides is
"cannot tell" and kept. So is a zombie's owner no longer kept alive (it has ended).
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sandbox.docker._labels import LABEL_OWNER_PID, LABEL_OWNER_TICKS, judge, session_labels

#: Flags of unshare(2) and mount(2) used below.
_CLONE_NEWNS, _MS_REC, _MS_PRIVATE = 0x00020000, 0x4000, 0x40000


def _judged_as_nobody_under_hidepid(labels: list[dict[str, str]]) -> list[Any]:
    """[whether this process is hidden, then (reap, reason) per label set], judged by a fork of this
    process (the modules are loaded already) that sees /proc as a hardened host shows it to uid
    65534: a private mount namespace, proc remounted ``hidepid=2``, then that uid."""
    me = os.getpid()
    rfd, wfd = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(rfd)
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.unshare(_CLONE_NEWNS) != 0:
                raise OSError(ctypes.get_errno(), "unshare")
            if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
                raise OSError(ctypes.get_errno(), "mount --make-rprivate /")
            if libc.mount(b"proc", b"/proc", b"proc", 0, b"hidepid=2") != 0:
                raise OSError(ctypes.get_errno(), "mount proc hidepid=2")
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            said: list[Any] = [not os.path.exists(f"/proc/{me}")]
            said += [[v.reap, v.reason] for v in map(judge, labels)]
            os.write(wfd, json.dumps(said).encode())
            code = 0
        except BaseException as exc:
            os.write(wfd, json.dumps({"error": repr(exc)}).encode())
        finally:
            os._exit(code)
    os.close(wfd)
    chunks = []
    while chunk := os.read(rfd, 65536):
        chunks.append(chunk)
    os.close(rfd)
    _, status = os.waitpid(child, 0)
    found = json.loads(b"".join(chunks) or b"null")
    assert os.waitstatus_to_exitcode(status) == 0 and isinstance(found, list), found
    return found


@pytest.mark.skipif(
    os.geteuid() != 0, reason="mounting a proc with hidepid needs root (the reader then drops it)"
)
def test_an_owner_hidden_by_hidepid_is_not_judged_gone() -> None:
    """Failed before (1 of 1): both the live owner's labels (ticks) and an older shellrt's (no
    ticks) were reaped, "owner pid … is gone"."""
    live = session_labels("0123456789ab", "/nonexistent/io", "/nonexistent/host")  # this process: alive
    older = {k: v for k, v in live.items() if k != LABEL_OWNER_TICKS}
    gone_child = subprocess.Popen(["true"])
    gone_child.wait()
    gone = {**live, LABEL_OWNER_PID: str(gone_child.pid)}  # ended and reaped: gone for the kernel too
    assert not judge(live).reap and not judge(older).reap, "control: seen as root, the owner is alive"
    labels = [live, older, gone]
    hidden, *verdicts = _judged_as_nobody_under_hidepid(labels)
    assert hidden, "hidepid=2 did not hide root's process from uid 65534: the premise does not hold"
    (live_reap, live_why), (older_reap, older_why), (gone_reap, gone_why) = verdicts
    assert not live_reap, f"a live owner hidden by hidepid was judged gone: {live_why}"
    assert not older_reap, f"an older shellrt's live owner hidden by hidepid was judged gone: {older_why}"
    assert gone_reap, f"an owner that has ended must still be reaped: {gone_why}"


def test_a_zombie_owner_is_gone() -> None:
    """Failed before (1 of 1): a zombie owner (it has ended; only its parent has not waited for it)
    kept its container, "owner is alive"."""
    live = session_labels("0123456789ab", "/nonexistent/io", "/nonexistent/host")
    zombie = subprocess.Popen(["true"])
    try:
        # Its exit is the real condition: a zombie until waited for (state Z in its stat).
        while Path(f"/proc/{zombie.pid}/stat").read_bytes().rsplit(b") ", 1)[1][:1] != b"Z":
            os.sched_yield()
        ticks = Path(f"/proc/{zombie.pid}/stat").read_bytes().rsplit(b") ", 1)[1].split()[19].decode()
        dead = {**live, LABEL_OWNER_PID: str(zombie.pid), LABEL_OWNER_TICKS: ticks}
        verdict = judge(dead)
        assert verdict.reap, f"a zombie owner (it has ended) kept its container: {verdict}"
    finally:
        zombie.wait()
