"""Red team, round 17: a foreground command moved to the background on timeout obeys the task cap.

With the operator's ``bash_background_on_timeout`` setting, a foreground Bash call that outlives
its timeout keeps running as a background task. Round 12 capped background tasks per session
(``SHELLRT_MAX_BACKGROUND_TASKS``, default 64: each holds descriptors and processes of the server),
but only for ``run_in_background`` calls; a timed-out call became one more task whatever the
count, so the model could hold any number of running tasks (one short-timeout ``sleep`` per call)
until the server ran out of descriptors. At the cap such a call is now killed as any timed-out
call is, and its result says why.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import shellrt
from shellrt.supervisor import TaskStatus
from tests.test_server_jsonl import bash, marker_pids, text_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_timed_out_calls_do_not_move_past_the_background_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHELLRT_MAX_BACKGROUND_TASKS", "2")
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = "rt17bgcap"
    settings = {"bash_background_on_timeout": True}
    async with shellrt.Runtime(
        ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions", settings=settings
    ) as rt:
        assert rt.supervisor is not None
        texts = []
        for i in range(4):
            block = bash(f"t{i}", f"sleep 300 # {marker}")
            block["input"]["timeout"] = 300
            texts.append(text_of((await rt.run([block]))["content"][0]))
        running = [t for t in rt.supervisor.tasks.list() if t.status is TaskStatus.RUNNING]
        assert len(running) == 2, f"{len(running)} running tasks past a cap of 2: {texts}"
        assert all(re.search(r"task id \w+|background", t) for t in texts[:2]), texts[:2]
        for text in texts[2:]:
            assert "SHELLRT_MAX_BACKGROUND_TASKS" in text, text
    assert not marker_pids(marker), "tasks outlived the session"
