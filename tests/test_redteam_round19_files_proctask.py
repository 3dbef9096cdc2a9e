"""Red team, round 19 (files): a thread's /proc directory is refused as the process's is.

On the local view (the host's ``/``) Read refused ``/proc/P/mem``, ``/proc/P/pagemap`` and
``/proc/P/fd/N`` by their canonical path, but each thread has the same files under
``/proc/P/task/T/`` (and ``/proc/thread-self``): a workspace symlink to shellrt's own
``/proc/self/task/T/mem`` was opened, and the read failed as an unexpected EIO instead of the
refusal. (bwrap and docker serve no /proc at all: the sandbox's own, `View.private`.)
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

import shellrt

pytestmark = pytest.mark.anyio


async def test_a_threads_proc_files_are_refused_like_the_process(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    task = f"/proc/{os.getpid()}/task/{threading.get_native_id()}"
    (ws / "mem").symlink_to(f"{task}/mem")
    (ws / "pagemap").symlink_to("/proc/thread-self/pagemap")
    (ws / "fd").symlink_to(f"{task}/fd/0")
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", mode="bypassPermissions", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        shown: dict[str, Any] = {}
        for name in ("mem", "pagemap", "fd"):
            user = await rt.run(
                [{"type": "tool_use", "id": name, "name": "Read", "input": {"file_path": str(ws / name)}}]
            )
            shown[name] = user["content"][0]
        direct = await rt.run(
            [{"type": "tool_use", "id": "d", "name": "Read", "input": {"file_path": f"{task}/mem"}}]
        )
    for block in shown.values():
        assert block["is_error"], block
    assert "kernel memory file" in shown["mem"]["content"], shown["mem"]
    assert "kernel memory file" in shown["pagemap"]["content"], shown["pagemap"]
    assert (
        "process file descriptor" in shown["fd"]["content"] or "not a regular file" in shown["fd"]["content"]
    )
    assert "kernel memory file" in direct["content"][0]["content"], direct
