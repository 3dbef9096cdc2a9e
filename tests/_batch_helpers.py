"""Helpers for the batch tests: find processes by marker, run the CLI as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent


def processes_with_marker(marker: str) -> list[int]:
    """Pids (other than ours) whose command line or environment mentions ``marker``."""
    found = []
    needle = marker.encode()
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:
            with open(f"/proc/{proc.pid}/cmdline", "rb") as fh:
                cmdline = fh.read()
            with open(f"/proc/{proc.pid}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if needle in cmdline or needle in environ:
            found.append(proc.pid)
    return found


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("CI", None)
    return env


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m shellrt batch ...`` to completion, output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "shellrt", "batch", *args],
        cwd=ROOT,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_cli(*args: str) -> subprocess.Popen[bytes]:
    """``python -m shellrt batch run ...`` in its own session (so a test can signal it alone)."""
    return subprocess.Popen(
        [sys.executable, "-m", "shellrt", "batch", *args],
        cwd=ROOT,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
