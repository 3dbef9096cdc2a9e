"""Red team round 39 (trust2): one hostile Bash call planting files, on a chosen backend, with the
system's own ``/usr/bin/python3`` (the operator's ``PYTHONPATH`` plants must not steer the planter)."""

from __future__ import annotations

from pathlib import Path

from tests._plants import Backend, run_bash
from tests._plants import plant_and_check as _plant_and_check

__all__ = ["plant_and_check", "run_bash"]


def plant_and_check(
    ws: Path, session_dir: Path, plants: list[str], kept: list[str], text: str, *, backend: Backend = "local"
) -> str:
    """`tests._plants.plant_and_check` with ``/usr/bin/python3`` on ``backend``."""
    return _plant_and_check(ws, session_dir, plants, kept, text, python="/usr/bin/python3", backend=backend)
