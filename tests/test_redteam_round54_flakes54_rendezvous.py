"""A start while the serving budget holder hands over to a slow survivor joins the survivor (round 54).

Round 26 made a holder that is not serving wait on the rendezvous' lock, so the kernel wakes it the
moment the serving holder dies and it serves from then on; a start in between asked again while the
lock was taken, for 1 s at most, and made a namespace of its own (a third half) once the lock was
free. Both are races with the scheduler on a loaded host (CI148, CI51: "a start as the server ended
made its own namespace"): an flock is not handed over, the woken survivor takes it again when it
runs, so right after the server's exit the lock is free and nobody serves; and a survivor that does
not run for a second let the 1 s run out. Now every holder that shares a namespace holds a shared
flock on ``<name>.live`` as long as it lives, and a start makes its own namespace only when nobody
does (an exclusive probe takes it); while one does, it waits for a server (10 s at most).

The survivor's scheduling delay is made certain here with SIGSTOP: the survivor's holder stopped
while the serving holder ends, continued 1.5 s after the late start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from tests import _nonroot
from tests.test_redteam_round26_supervisor_rendezvous import (  # noqa: F401 (fixtures)
    _end,
    _name,
    _start,
    nobody,
    shared_tmp,
)


def _holder_of(owner: subprocess.Popen[str]) -> int:
    """The budget holder (`sandbox._ucounts._MAKE`) the test process ``owner`` started: its only child."""
    children = Path(f"/proc/{owner.pid}/task/{owner.pid}/children").read_text().split()
    assert len(children) == 1, f"expected the holder alone below the process: {children}"
    return int(children[0])


def test_a_start_while_the_survivor_is_slow_to_take_over_joins_it(
    nobody: _nonroot.NonRootRun,  # noqa: F811 (the imported fixture)
    shared_tmp: Path,  # noqa: F811 (the imported fixture)
) -> None:
    """Failed before: 1 of 1 (the late start made its own namespace after 1 s)."""
    name = _name()
    current, ns = _start(nobody, name, shared_tmp)
    survivor, ns_survivor = _start(nobody, name, shared_tmp)
    assert ns_survivor == ns
    holder = _holder_of(survivor)
    os.kill(holder, signal.SIGSTOP)  # not scheduled while the server ends and the late one starts
    resumed = threading.Timer(1.5, os.kill, (holder, signal.SIGCONT))
    late: subprocess.Popen[str] | None = None
    try:
        _end(current)  # the serving holder ends with its owner
        resumed.start()
        began = time.monotonic()
        late, ns_late = _start(nobody, name, shared_tmp)
        took = time.monotonic() - began
    finally:
        resumed.join(timeout=5)
        os.kill(holder, signal.SIGCONT)
        if late is not None:
            _end(late)
        _end(survivor)
    assert ns_late == ns, f"a start while the survivor was slow made its own namespace ({took:.1f} s)"
