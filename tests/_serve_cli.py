"""`shellrt serve` as a child process on the local backend, its state kept under a test's tmp dir."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests._mcp_support import isolated_env

ROOT = Path(__file__).resolve().parent.parent


def serve_command(tmp_path: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of ``shellrt serve`` for a workspace ``tmp_path/ws`` (made here)."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "SHELLRT_HOME": str(tmp_path / "state"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    argv = [sys.executable, "-m", "shellrt", "serve", "--workspace", str(ws), "--sandbox", "local", *args]
    return argv, env


def bypass_serve_argv(workspace: Path, *extra: str, transport: tuple[str, ...] = ()) -> list[str]:
    """``shellrt serve`` on the local backend in bypassPermissions mode (what most serve tests run).

    ``transport`` (e.g. ``("--jsonl",)``) goes before ``--workspace``; ``extra`` goes last.
    """
    return [
        sys.executable,
        "-m",
        "shellrt",
        "serve",
        *transport,
        "--workspace",
        str(workspace),
        "--sandbox",
        "local",
        "--mode",
        "bypassPermissions",
        *extra,
    ]


def http_serve_argv(port: int, workspace: Path, *extra: str) -> list[str]:
    """``bypass_serve_argv`` over streamable HTTP on ``127.0.0.1:port``."""
    return bypass_serve_argv(workspace, *extra, transport=("--http", f"127.0.0.1:{port}"))


def start_http_serve(tmp_path: Path, port: int, token: str) -> subprocess.Popen[bytes]:
    """`http_serve_argv` started over ``tmp_path/ws`` (made here) with its own HOME under
    ``tmp_path`` and bearer token ``token``; its stderr dropped. The caller stops it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return subprocess.Popen(
        http_serve_argv(port, workspace),
        stderr=subprocess.DEVNULL,
        env={**os.environ, **isolated_env(tmp_path), "SHELLRT_SERVE_TOKEN": token},
        cwd=str(ROOT),
    )
