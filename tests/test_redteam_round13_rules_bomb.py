"""Red team round 13: the default pids cap, for whichever caller runs this (root, or uid 65534 through
`tests/test_redteam_round13_rules_nonroot.py`).

Root: commands run as the session's leased uid, capped by the session cgroup. Non-root: no cgroup of
its own here, so RLIMIT_NPROC, which counts every process of the caller's uid on the host -- the cap
is `BwrapConfig.default_pids` on top of what the uid runs at the start. Either way a fork bomb stays
within the cap and leaves nothing behind. Failed before: no cap (300+ processes with no bound).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests.conftest import require

CAP = 96
BOMB = "b() { b | b & }; b; for i in $(seq 400); do sleep 30 & done 2>/dev/null; wait"


@pytest.fixture
def ws() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rt13-bomb-"))
    ws = base / "ws"
    ws.mkdir()
    ws.chmod(0o777)
    try:
        yield ws
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _live(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                state = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[0]
                count += state != "Z"
        except OSError:
            continue
    return count


@pytest.mark.parametrize(
    "persistent", [pytest.param(False, id="per-command"), pytest.param(True, id="session")]
)
def test_a_fork_bomb_stays_within_the_default_cap(ws: Path, tmp_path: Path, persistent: bool) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")

    async def main() -> tuple[int, int, int, float]:
        backend = create_backend(
            BwrapConfig(persistent=persistent, default_pids=CAP), SandboxPolicy(workspace=ws)
        )
        await backend.start()
        ids = getattr(backend, "sandbox_ids", None)
        uid = ids[0] if ids is not None else os.getuid()
        base = _live(uid)
        peak = base
        try:
            async with Supervisor(backend, session_dir=tmp_path / "s") as sup:

                async def watch() -> None:
                    nonlocal peak
                    while True:
                        peak = max(peak, _live(uid))
                        await anyio.sleep(0.05)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(watch)
                    began = time.monotonic()
                    await sup.run(BOMB, timeout_s=4)
                    took = time.monotonic() - began
                    await anyio.sleep(0.5)
                    tg.cancel_scope.cancel()
        finally:
            await backend.close()
        await anyio.sleep(0.5)
        return base, peak, _live(uid), took

    base, peak, after, took = anyio.run(main)
    assert peak - base <= CAP + 8, (base, peak)
    assert took < 30, took
    assert after <= base if os.geteuid() != 0 else after == 0, (base, after)
