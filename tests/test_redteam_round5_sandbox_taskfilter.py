"""Red team round 5: TaskOutput's filter ran a backtracking regex on a command's output in the event loop.

The agent picks the filter, the command picks the lines: ``^(a+)+$`` over a line of 27 ``a`` and a
``!`` takes Python's ``re`` minutes (each ``a`` more doubles it), inside the host's event loop --
every session of the process stalled, and no timeout of any command fired meanwhile. The filter now
runs in a child process killed at a deadline, as Grep's Python search does.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt

pytestmark = pytest.mark.anyio


async def _call(rt: shellrt.Runtime, name: str, **raw: Any) -> dict[str, Any]:
    user = await rt.run([{"type": "tool_use", "id": f"tf-{os.urandom(4).hex()}", "name": name, "input": raw}])
    block: dict[str, Any] = user["content"][0]
    return block


def _task_id(started: str) -> str:
    match = re.search(r"\b(b[a-z0-9]{5})\b", started)
    assert match, started
    return match[1]


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


async def test_a_backtracking_filter_cannot_stall_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shellrt.tools.task_output as task_output

    monkeypatch.setattr(task_output, "FILTER_TIMEOUT_S", 3.0, raising=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", mode="bypassPermissions", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        started = _text(
            await _call(
                rt,
                "Bash",
                command="printf 'aaaaaaaaaaaaaaaaaaaaaaaaaaa!\\nok line\\n'; sleep 30",
                run_in_background=True,
            )
        )
        task_id = _task_id(started)
        await anyio.sleep(1)
        worst = 0.0

        async def ticker() -> None:
            nonlocal worst
            while True:
                before = time.monotonic()
                await anyio.sleep(0.05)
                worst = max(worst, time.monotonic() - before)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            block = await _call(rt, "TaskOutput", task_id=task_id, filter="^(a+)+$")
            await anyio.sleep(0.3)  # the ticker measures the stall once it runs again
            tg.cancel_scope.cancel()
        assert worst < 1.0, f"the event loop stalled {worst:.1f} s"
        assert block.get("is_error") and "too long" in _text(block), block
        ok = await _call(rt, "TaskOutput", task_id=task_id, filter="ok")
        assert not ok.get("is_error"), ok
        await _call(rt, "TaskStop", task_id=task_id)


async def test_an_ordinary_filter_keeps_its_lines(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", mode="bypassPermissions", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        started = _text(
            await _call(
                rt, "Bash", command="printf 'one ERROR\\ntwo\\nthree ERROR\\n'", run_in_background=True
            )
        )
        task_id = _task_id(started)
        block = await _call(rt, "TaskOutput", task_id=task_id, filter="ERROR$", wait_ms=5000)
        text = _text(block)
        assert "one ERROR\nthree ERROR" in text and "two" not in text.replace("two", "", 0).split("\n")[2:], (
            text
        )
        assert "2 of 3 new lines matched" in text, text
