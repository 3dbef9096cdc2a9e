"""Round 17, interfaces: the session output quota held only within one process's life.

Round 16 left it open: `OutputQuota` counted a session's saved output in memory, so reopening the
session (``Runtime(session_id=…)``, ``shellrt serve`` restarted, the MCP client reconnecting)
started the count at zero while the earlier spools were still on disk, and two processes serving
one session id at once had the whole quota each. A hostile command that prints until the quota
stops it only needed the session reopened to print as much again. The total is now kept in the
session directory (`shellrt.supervisor._output_account`), under ``flock``.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from shellrt.supervisor.spool import OutputQuota

_LIMIT = 1 << 20  # the session quota of these tests: 1 MiB
_FLOOD = "head -c 900000 /dev/zero"  # 0.9 MB: under the quota once, over it twice


def _saved(session_dir: Path) -> int:
    return sum(p.stat().st_size for p in session_dir.rglob("cmd-*") if p.is_file())


def _quota() -> OutputQuota:
    return OutputQuota(command_bytes=None, session_bytes=_LIMIT, disk_reserve_bytes=0)


async def _flood(ws: Path, session_dir: Path) -> object:
    backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
    await backend.start()
    try:
        async with Supervisor(backend, session_dir=session_dir, quota=_quota(), protect=False) as sup:
            return await sup.run(_FLOOD, timeout_s=30)
    finally:
        await backend.close()


def test_a_reopened_session_keeps_counting_its_output_quota(tmp_path: Path) -> None:
    ws, session_dir = tmp_path / "ws", tmp_path / "s"
    ws.mkdir()
    first = anyio.run(_flood, ws, session_dir)
    assert first.output_lost is None, first.output_lost  # type: ignore[attr-defined]
    second = anyio.run(_flood, ws, session_dir)  # the same session, reopened
    assert _saved(session_dir) <= _LIMIT, f"{_saved(session_dir):,} bytes saved under a 1 MiB session quota"
    lost = second.output_lost  # type: ignore[attr-defined]
    assert lost is not None and "session output limit" in lost, lost


def test_two_processes_of_one_session_share_its_quota(tmp_path: Path) -> None:
    ws, session_dir = tmp_path / "ws", tmp_path / "s"
    ws.mkdir()

    async def both() -> None:
        async with anyio.create_task_group() as tg:  # two supervisors at once, as two processes would
            tg.start_soon(_flood, ws, session_dir)
            tg.start_soon(_flood, ws, session_dir)

    anyio.run(both)
    assert _saved(session_dir) <= _LIMIT, f"{_saved(session_dir):,} bytes saved under a 1 MiB session quota"


def test_a_session_from_before_the_account_counts_its_spools_on_disk(tmp_path: Path) -> None:
    ws, session_dir = tmp_path / "ws", tmp_path / "s"
    ws.mkdir()
    (session_dir / "shell").mkdir(parents=True)
    (session_dir / "shell" / "cmd-old-0001.out").write_bytes(b"x" * 900_000)  # an older run's spool
    anyio.run(_flood, ws, session_dir)
    assert _saved(session_dir) <= _LIMIT, f"{_saved(session_dir):,} bytes saved under a 1 MiB session quota"
