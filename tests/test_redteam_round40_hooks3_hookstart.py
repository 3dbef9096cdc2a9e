"""Red team, round 40 (hooks3): shellrt killed between a hook's start and its watcher's hold.

The watcher (`_host_pause_watch`) kills a running hook's group should shellrt die; it is handed the
hook's pidfd one thread hop after the hook started (`hookproc._watched`). shellrt killed in between
(SIGKILL, the OOM killer) left the hook running on the host with no deadline (round 39's Left). The
hook's shell now reads one line shellrt writes only after the hold: at its stdin's end (shellrt
died first) it exits before the operator's command runs.
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

#: shellrt dying (SIGKILL) at the hand-off of a hook that, if it runs, writes argv[1] after 0.5 s.
_OWNER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import anyio
    from shellrt.permissions import hookproc

    def die(key, pid):
        os.kill(os.getpid(), signal.SIGKILL)

    hookproc._watched = die
    anyio.run(lambda: hookproc.run_hook_process(
        f"sleep 0.5; echo ran > {sys.argv[1]}", b"{}", cwd=Path("/"), env={"PATH": "/usr/bin:/bin"}, timeout=30
    ))
    """
)


def test_a_hook_does_not_run_on_when_shellrt_dies_before_its_hold(tmp_path: Path) -> None:
    """Failed before: the hook ran on after shellrt's death and wrote its file."""
    marker = tmp_path / "hook-ran"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *(p for p in sys.path if p)])}
    done = subprocess.run(
        [sys.executable, "-c", _OWNER, str(marker)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd="/",
        timeout=60,
    )
    assert done.returncode == -9, done.stderr[-2000:]
    time.sleep(2.0)
    assert not marker.exists(), "the hook ran on the host after shellrt died before handing it to the watcher"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_hook_does_not_run_on_when_shellrt_dies_before_its_hold")
