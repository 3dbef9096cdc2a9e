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

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.docker._labels import LABEL_OWNER_PID, LABEL_OWNER_TICKS, judge, session_labels

ROOT = Path(__file__).resolve().parents[1]

#: Run as root: load the module, then see /proc as a hardened host shows it to uid 65534 (a
#: private mount namespace, proc remounted hidepid=2), drop to that uid and judge each label set.
_JUDGE = r"""
import ctypes, json, os, sys
from sandbox.docker._labels import judge
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
    sys.exit("unshare: %d" % ctypes.get_errno())
if libc.mount(b"none", b"/", None, 0x40000 | 0x4000, None) != 0:  # MS_PRIVATE | MS_REC
    sys.exit("private: %d" % ctypes.get_errno())
if libc.mount(b"proc", b"/proc", b"proc", 0, b"hidepid=2") != 0:
    sys.exit("mount: %d" % ctypes.get_errno())
os.setgroups([])
os.setresgid(65534, 65534, 65534)
os.setresuid(65534, 65534, 65534)
hidden = not os.path.exists("/proc/%d" % int(sys.argv[2]))
out = [hidden] + [[v.reap, v.reason] for v in (judge(labels) for labels in json.loads(sys.argv[1]))]
print(json.dumps(out))
"""


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
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(ROOT)!r})\n{_JUDGE}",
            json.dumps(labels),
            str(os.getpid()),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    hidden, *verdicts = json.loads(proc.stdout.strip().splitlines()[-1])
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
