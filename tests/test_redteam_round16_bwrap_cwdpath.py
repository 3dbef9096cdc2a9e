"""Red team, round 16 (bwrap): ``python -m shellrt`` run in the workspace imported a command's module on the host.

``python -m`` puts the current directory first on ``sys.path``, and ``shellrt run``'s default
workspace is that directory. A sandboxed command wrote ``anyio.py`` into the workspace (its
to write), and the next ``python -m shellrt`` from there imported it on the host at start-up,
unsandboxed, as the caller. `shellrt.__main__` now drops that entry before importing anything
else (unless shellrt itself lives there). Real bwrap, two real CLI runs.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import require

REPO = Path(__file__).resolve().parents[1]


def test_python_m_shellrt_does_not_import_from_the_workspace(tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    tmp_path.chmod(0o755)  # a root caller's commands run as another uid
    marker = tmp_path / "RAN-ON-HOST"
    plant = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('x'); raise ImportError('planted')"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    env.pop("PYTHONSAFEPATH", None)
    cli = [sys.executable, "-m", "shellrt", "run", "--sandbox", "bwrap", "--"]
    first = subprocess.run(
        [*cli, f"echo {base64.b64encode(plant.encode()).decode()} | base64 -d > anyio.py && echo planted"],
        cwd=ws, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert first.returncode == 0 and "planted" in first.stdout, first.stderr[-2000:]
    assert (ws / "anyio.py").exists()  # the workspace stays the command's to write
    second = subprocess.run([*cli, "true"], cwd=ws, env=env, capture_output=True, text=True, timeout=60)
    assert not marker.exists(), "the host imported the command's anyio.py"
    assert second.returncode == 0, second.stderr[-2000:]
