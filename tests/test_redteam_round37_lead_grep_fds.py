"""Round 37 (lead, from the docker helper's report): every sandboxed Grep/Glob left its ripgrep's
output pipes open in the host process.

The tools run ripgrep inside bwrap through `shellrt.tools._paths.sandbox_runner`, which read the
process's stdout and stderr to their ends and never closed them (`sandbox._fdstream` closes a read
end only on ``aclose``). Two descriptors stayed open per call for the life of the process: a
long-running ``serve`` or batch worker reaches its open-file limit after enough searches (a hostile
repository need only make the model search), and then can start no command at all.
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import shellrt
from tests.conftest import require

pytestmark = pytest.mark.anyio

_IDS = itertools.count()


async def _call(rt: shellrt.Runtime, name: str, **raw: Any) -> None:
    user = await rt.run([{"type": "tool_use", "id": f"t{next(_IDS)}", "name": name, "input": raw}])
    block: dict[str, Any] = user["content"][0]
    assert not block["is_error"], block


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_sandboxed_searches_leave_no_descriptor_open(tmp_path: Path) -> None:
    """Failed before: +2 descriptors per Grep (40 for 20 calls)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("needle\n")
    async with shellrt.Runtime(
        workspace=ws, sandbox="bwrap", mode="default", session_dir=tmp_path / "session", settings_files=()
    ) as rt:
        for _ in range(3):  # the session's own descriptors (zygote, pools) are made by now
            await _call(rt, "Grep", pattern="needle", output_mode="content")
        before = _open_fds()
        for _ in range(20):
            await _call(rt, "Grep", pattern="needle", output_mode="content")
            await _call(rt, "Grep", pattern="needle", output_mode="files_with_matches", head_limit=1)
        after = _open_fds()
    assert after - before < 8, f"{after - before} descriptors left open by 40 searches"
