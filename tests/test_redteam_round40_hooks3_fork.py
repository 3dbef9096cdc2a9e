"""Red team, round 40 (hooks3): shellrt forks without exec while a thread hands the watcher a process.

The watcher (`_host_pause_watch`) kills what a pause stopped when its socket ends (shellrt died).
A forked child forgot the socket (`register_at_fork`) but kept its descriptor while anything still
referred to it: a thread of the parent inside `hold` when it forked (a slow watcher under load)
left its frame, and the socket, in the child, so the watcher saw shellrt's death only when the
child exited, and the held process ran on meanwhile (round 39's Left). The child now closes it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests import _nonroot

ROOT = Path(__file__).resolve().parents[1]

#: shellrt holding a sleeping process, a thread inside `hold` (the watcher stopped a moment) when
#: it forks a child that lives 8 s; then shellrt dies by SIGKILL.
_OWNER = textwrap.dedent(
    """
    import os, signal, subprocess, threading, time
    from shellrt.supervisor import _host_pause_watch as w
    kid = subprocess.Popen(["sleep", "60"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fd = os.pidfd_open(kid.pid)
    w.hold(w.key_for(1), fd)
    os.kill(w.watcher_pid(), signal.SIGSTOP)
    t = threading.Thread(target=w.hold, args=(w.key_for(2), fd))
    t.start()
    time.sleep(0.3)
    child = os.fork()
    if child == 0:
        os.closerange(0, 3)
        time.sleep(8)
        os._exit(0)
    print(kid.pid, child, flush=True)
    os.kill(w.watcher_pid(), signal.SIGCONT)
    t.join()
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_a_fork_without_exec_does_not_keep_the_watcher_waiting() -> None:
    """Failed before: the held process lived on until the forked child exited (8 s)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *(p for p in sys.path if p)])}
    done = subprocess.run(
        [sys.executable, "-c", _OWNER], capture_output=True, text=True, env=env, cwd="/", timeout=60
    )
    words = done.stdout.split()
    assert len(words) == 2 and all(w.isdigit() for w in words), (done.stdout, done.stderr[-2000:])
    pid, child = int(words[0]), int(words[1])
    deadline = time.monotonic() + 3
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(pid)
    for left in (pid, child):
        if _alive(left):
            os.kill(left, 9)
    assert not alive, "the held process outlived shellrt's death while its forked child lived"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_fork_without_exec_does_not_keep_the_watcher_waiting")
