"""The round 13 fork-bomb tests' shared part: their workspace, the bomb, and the peak of a uid's processes while it runs.

Used by `tests/test_redteam_round13_rules_bomb.py` (whichever caller runs it) and
`tests/test_redteam_round13_rules_limits.py` (root: the session's leased uid).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio

from shellrt.supervisor import CommandResult, Supervisor

#: Forks until something stops it, then tries 400 more sleepers; ended by its timeout.
BOMB = "b() { b | b & }; b; for i in $(seq 400); do sleep 30 & done 2>/dev/null; wait"


def open_ws(prefix: str) -> Iterator[Path]:
    """A 0777 ``ws`` in a fresh 0755 directory in /var/tmp (the sandbox uid writes there), removed
    after. A generator for a fixture."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    base.chmod(0o755)
    ws = base / "ws"
    ws.mkdir()
    ws.chmod(0o777)
    try:
        yield ws
    finally:
        shutil.rmtree(base, ignore_errors=True)


def uid_procs(uid: int, *, zombies: bool = True) -> int:
    """Processes of ``uid`` in /proc now (zombies counted unless told not to)."""
    count = 0
    for entry in os.scandir("/proc"):
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                state = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[0]
                count += zombies or state != "Z"
        except OSError:
            continue
    return count


async def bomb_peak(
    sup: Supervisor, uid: int, *, zombies: bool, settle: float, start: int = 0
) -> tuple[CommandResult, float, int]:
    """Run `BOMB` in ``sup`` (4 s timeout) while counting ``uid``'s processes every 50 ms, and for
    ``settle`` seconds after; (its result, seconds it took, the highest count, at least ``start``)."""
    peak = start

    async def watch() -> None:
        nonlocal peak
        while True:
            peak = max(peak, uid_procs(uid, zombies=zombies))
            await anyio.sleep(0.05)

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        began = time.monotonic()
        result = await sup.run(BOMB, timeout_s=4)
        took = time.monotonic() - began
        await anyio.sleep(settle)
        tg.cancel_scope.cancel()
    return result, took, peak
