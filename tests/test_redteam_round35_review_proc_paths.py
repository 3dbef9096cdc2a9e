"""Review of round 35 (hostenv): a path the consumer resolves differently from shellrt.

``hook_env`` judges an absolute path with ``realpath`` in shellrt's own process. ``/proc/self/cwd``,
``/proc/thread-self/cwd``, ``/dev/fd/..``, ``/dev/stdin`` are per-process links: shellrt resolved
them to ITS cwd (an MCP server started from the operator's home), the hook resolves them to its
own cwd, the workspace. ``BASH_ENV=/proc/self/cwd/.bashenv`` or ``PATH=/proc/self/cwd/bin:...``
was kept, and a hook's bash ran what a sandboxed command wrote.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from shellrt.permissions.hook_env import hook_env


def test_per_process_paths_are_not_kept_for_a_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    (ws / "bin").mkdir(parents=True)
    elsewhere.mkdir()
    planted = tmp_path / "PLANTED"
    # What a sandboxed command writes in the workspace.
    (ws / ".bashenv").write_text(f"echo bash_env >> {planted}\n")
    tool = ws / "bin" / "tool"
    tool.write_text(f"#!/bin/sh\necho path >> {planted}\n")
    tool.chmod(0o755)
    monkeypatch.chdir(elsewhere)  # shellrt's cwd is not the workspace
    link = tmp_path / "link"  # the operator's own link, outside every root, into /proc
    link.symlink_to("/proc/self/cwd")
    environ = {
        "PATH": f"/proc/self/cwd/bin:{link}/bin:/usr/bin:/bin",
        "ENV": f"{link}/.bashenv",
        "BASH_ENV": "/proc/self/cwd/.bashenv",
        "PYTHONPATH": "/dev/fd/../../proc/self/cwd",
        "NODE_OPTIONS": "--require /proc/thread-self/cwd/x.js",
        "SOME_TOOL_RC": "/proc/self/cwd/rc",
        "STDIN_RC": "/dev/stdin",
        "OK_FILE": "/etc/hostname",
    }
    env = hook_env(environ, [ws])
    kept = {name: env[name] for name in environ if name in env and name not in ("PATH", "OK_FILE")}
    # The hook as it runs: bash from the workspace root with the environment hook_env gave.
    subprocess.run(["/bin/bash", "-c", "tool; true"], cwd=ws, env=env, check=True, capture_output=True)
    ran = planted.read_text() if planted.exists() else ""
    assert env.get("OK_FILE") == "/etc/hostname"
    assert env["PATH"] == "/usr/bin:/bin" and not kept and not ran, f"kept {kept}, PATH {env['PATH']}; the hook ran workspace code: {ran!r}"
