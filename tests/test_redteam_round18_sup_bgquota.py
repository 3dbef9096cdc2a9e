"""Red team, round 18: background tasks count against the session's output quota across reopen.

Round 17 kept the session output total on disk (``output-account``) and tested it with foreground
commands. A background task's output goes to ``tasks/`` through the same quota; this keeps it so:
a session reopened after a task printed near the quota cannot print as much again in a new task.
Held (no fix).
"""

from __future__ import annotations

from pathlib import Path

import anyio

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import BackgroundTask, Supervisor
from shellrt.supervisor.spool import OutputQuota

_LIMIT = 1 << 20


async def _task_flood(ws: Path, session_dir: Path) -> BackgroundTask:
    backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
    await backend.start()
    try:
        quota = OutputQuota(command_bytes=None, session_bytes=_LIMIT, disk_reserve_bytes=0)
        async with Supervisor(backend, session_dir=session_dir, quota=quota, protect=False) as sup:
            task = await sup.start_background("head -c 900000 /dev/zero")
            with anyio.fail_after(30):
                return await sup.tasks.wait(task.id)
    finally:
        await backend.close()


def test_background_output_counts_against_the_quota_across_reopen(tmp_path: Path) -> None:
    ws, session_dir = tmp_path / "ws", tmp_path / "s"
    ws.mkdir()
    first = anyio.run(_task_flood, ws, session_dir)
    assert "session output limit" not in (first.note or ""), first
    second = anyio.run(_task_flood, ws, session_dir)
    saved = sum(p.stat().st_size for p in (session_dir / "tasks").iterdir() if p.is_file())
    assert saved <= _LIMIT, f"{saved:,} bytes of task output saved under a 1 MiB session quota"
    assert "session output limit" in (second.note or ""), second
