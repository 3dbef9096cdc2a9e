"""Run one `benchmarks._child` measurement under a wall-clock cap."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["REPO_ROOT", "run_child"]

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Time a child may take to import and start its system before the measured call begins.
STARTUP_S = 120.0


def run_child(
    kind: str,
    system_id: str,
    arg: str,
    timeout_s: float,
    cap_s: float,
    on_cap: Callable[[], None] | None = None,
) -> dict[str, Any] | None:
    """The child's JSON result, or None when the measured call did not finish within ``cap_s``.

    ``cap_s`` counts from the moment the child starts the measured call (it
    touches ``<out>.ready``), not from process start: imports and system
    start-up are not part of the figure.

    The child runs in its own session and a scratch cwd (``nohup`` may drop a
    ``nohup.out`` there); on the cap, ``on_cap`` runs first, then the child's
    whole process group is killed.
    """
    with tempfile.TemporaryDirectory(prefix="shellrt-bench-child-") as scratch:
        out = Path(scratch) / "result.json"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
        proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks._child", kind, system_id, arg, str(timeout_s), str(out)],
            cwd=scratch,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        ready = Path(str(out) + ".ready")
        started = time.monotonic()
        while not ready.exists() and proc.poll() is None and time.monotonic() - started < STARTUP_S:
            time.sleep(0.02)
        try:
            proc.wait(timeout=cap_s)
        except subprocess.TimeoutExpired:
            if on_cap is not None:
                on_cap()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            return None
        if not out.exists():
            return {"error": f"child exited {proc.returncode} without a result"}
        result: dict[str, Any] = json.loads(out.read_text())
        return result
