"""Red team round 39 (trust2): one hostile Bash call planting files, on a chosen backend, with the
system's own ``/usr/bin/python3`` (the operator's ``PYTHONPATH`` plants must not steer the planter)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests._plants import Backend, run_bash
from tests._plants import plant_and_check as _plant_and_check
from tests.conftest import require

__all__ = ["plant_and_check", "run_bash", "workspace"]


def plant_and_check(
    ws: Path, session_dir: Path, plants: list[str], kept: list[str], text: str, *, backend: Backend = "local"
) -> str:
    """`tests._plants.plant_and_check` with ``/usr/bin/python3`` on ``backend``."""
    return _plant_and_check(ws, session_dir, plants, kept, text, python="/usr/bin/python3", backend=backend)


def workspace(backend: Backend, tmp_path: Path, below: str) -> Path:
    """``tmp_path/ws`` with the directory ``below`` it made, ``tmp_path`` crossable by other users
    (a non-root caller's sandbox); bubblewrap required on the bwrap backend (fails in CI)."""
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    tmp_path.chmod(0o755)
    ws = tmp_path / "ws"
    (ws / below).mkdir(parents=True)
    return ws
