"""Red team, round 40 (hooks3): a pause of more processes than the watcher may hold descriptors.

The watcher (`_host_pause_watch`) kills what a pause stopped should shellrt die mid-hook; it is
given a pidfd of each process. Past its ``RLIMIT_NOFILE`` (inherited when it started) the kernel
dropped the descriptor (``MSG_CTRUNC``) and `hold` still succeeded, so those processes were left
stopped, not killed, when shellrt died (round 39 review8's Left). Now the watcher raises its limit
to the hard one and answers each hold; one it cannot take raises `WatchError` (the pause refuses).
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

#: shellrt with a descriptor limit of 64 (hard 256) when its watcher starts, raised to 256 after:
#: 100 processes held, then one pidfd again and again until the watcher refuses (or 400 holds);
#: prints the refusal count and the pids, then dies by SIGKILL mid-"pause".
_OWNER = textwrap.dedent(
    """
    import os, resource, signal, subprocess
    from shellrt.supervisor import _host_pause_watch as w
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 256))
    kids = [subprocess.Popen(["sleep", "120"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    fd = os.pidfd_open(kids[0].pid); w.hold(w.key_for(1), fd); os.close(fd)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    unheld = []
    for _ in range(99):
        kid = subprocess.Popen(["sleep", "120"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        fd = os.pidfd_open(kid.pid)
        try:
            w.hold(w.key_for(1), fd)
            kids.append(kid)
        except w.WatchError:  # refused: the pause would continue it, not leave it to the watcher
            unheld.append(kid)
        finally:
            os.close(fd)
    holds = 100 + len(unheld)
    refused_at = 0
    fd = os.pidfd_open(kids[0].pid)
    while holds < 400 and not refused_at:
        holds += 1
        try:
            w.hold(w.key_for(2), fd)
        except w.WatchError:
            refused_at = holds
    for kid in unheld:
        kid.kill()
    print(len(unheld), refused_at, *[k.pid for k in kids], flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_a_pause_past_the_watchers_descriptor_limit_is_all_killed_or_refused() -> None:
    """Failed before: about 40 of the 100 held processes outlived shellrt's death (the watcher, at
    64 descriptors, had dropped them), and no hold was ever refused."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *(p for p in sys.path if p)])}
    done = subprocess.run(
        [sys.executable, "-c", _OWNER], capture_output=True, text=True, env=env, cwd="/", timeout=120
    )
    words = done.stdout.split()
    assert len(words) > 2, (done.stdout, done.stderr[-2000:])
    unheld, refused_at, pids = int(words[0]), int(words[1]), [int(w) for w in words[2:]]
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if _alive(p)]
    for pid in left:
        os.kill(pid, 9)
    assert not left, f"{len(left)} of {len(pids)} held processes outlived shellrt's death"
    assert unheld == 0, f"{unheld} of 100 processes refused under a hard limit of 256"
    assert 0 < refused_at <= 260, f"the watcher never refused a hold past its limit ({refused_at})"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_pause_past_the_watchers_descriptor_limit_is_all_killed_or_refused")
