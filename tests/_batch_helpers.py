"""Helpers for the batch tests: find processes by marker, run the CLI as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def run_tasks(
    tmp_path: Path, tasks: list[dict[str, Any]], *flags: str, jobs: int = 1, timeout: float = 180
) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, Any]]]:
    """``shellrt batch run`` of ``tasks`` (written to ``tmp_path/tasks.jsonl``), ``jobs`` at a time,
    nothing prestarted, quiet, plus ``flags``: the finished process and each task's result by id."""
    path, out = tmp_path / "tasks.jsonl", tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    proc = run_cli("run", str(path), "--out", str(out), "-j", str(jobs), "--prestart", "0", "-q", *flags,
                   timeout=timeout)
    lines = out.read_text().splitlines() if out.exists() else []
    return proc, {r["id"]: r for r in map(json.loads, lines)}
