"""Red team, round 17 (bwrap): the owner watchdog imported a module a sandboxed command had planted.

``shellrt run`` starts an owner watchdog (`sandbox._ownerguard`) as ``python -S -c ...``: for
``-c`` Python puts the current directory first on ``sys.path``, and ``shellrt run``'s default
workspace is that directory. A command of an earlier (bwrap) session wrote ``time.py`` into the
workspace, its to write; the next ``shellrt run --sandbox local`` from there -- even for ``true``
-- ran it on the host, as the caller, before any command (round 16 dropped that entry for the
main process only). The watchdog now runs isolated (``-I``). Real CLI runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_watchdog_does_not_import_from_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = tmp_path / "RAN-ON-HOST"
    plant = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('x'); raise ImportError('planted')\n"
    for name in ("time.py", "signal.py"):  # what a command of an earlier session left there
        (ws / name).write_text(plant)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("PYTHONSAFEPATH", None)
    done = subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "local", "--", "echo ran"],
        cwd=ws, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and "ran" in done.stdout, done.stderr[-2000:]
    assert not marker.exists(), "a host-side helper imported the workspace's time.py/signal.py"
