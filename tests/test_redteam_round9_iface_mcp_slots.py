"""Red team round 9 (interfaces): over MCP, "runs alone" was judged on the client's input.

``shellrt serve`` runs calls that are not concurrency-safe one at a time and read-only calls
alongside, choosing by the arguments as the client sent them. A PreToolUse hook that rewrites a
read-only call into a write (the rewrite round 5 judged again, and that a message's own scheduler
now runs alone) ran beside another request's call over MCP. Calls now run in one set of slots
shared by every request, judged on the final input. The real ``shellrt serve`` driven by the
SDK's client; two real commands observe each other through a marker file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from tests._mcp_support import serve_session, text_of
from tests._timing import peak_running

pytestmark = pytest.mark.anyio

#: What the client asks for (read-only, concurrency-safe) and what the hook runs instead.
ASKED = "echo asked-for"
WRITER = "touch writer-running && sleep 1.5 && mv writer-running writer-done"
#: Read-only, concurrency-safe: reports whether the writer is running beside it.
OBSERVER = "sleep 0.6; if test -e writer-running; then echo BESIDE; else echo ALONE; fi"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def _operator_settings(tmp_path: Path) -> Path:
    hook = tmp_path / "rewrite.py"
    answer = json.dumps(
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": WRITER}}}
    )
    hook.write_text(
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        f"if data['tool_input'].get('command') == {ASKED!r}:\n"
        f"    print({answer!r})\n"
    )
    settings = tmp_path / "operator.json"
    command = f"{sys.executable} {hook}"
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}
    settings.write_text(json.dumps({"hooks": hooks}))
    return settings


async def test_a_call_a_hook_rewrote_into_a_write_runs_alone_over_mcp(
    ws: Path, home: Path, tmp_path: Path
) -> None:
    settings = _operator_settings(tmp_path)
    texts: dict[str, str] = {}
    async with serve_session(ws, home, "--mode", "bypassPermissions", "--settings", str(settings)) as session:

        async def call(name: str, command: str) -> None:
            result = await session.call_tool("Bash", {"command": command})
            assert result.is_error is False, text_of(result)
            texts[name] = text_of(result)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "writer", ASKED)
            await anyio.sleep(0.4)  # the hook has answered; the rewritten writer runs (or waits)
            tg.start_soon(call, "observer", OBSERVER)
    assert (ws / "writer-done").exists(), texts
    assert "ALONE" in texts["observer"], texts


async def test_held_read_only_calls_still_overlap_over_mcp(ws: Path, home: Path) -> None:
    async with serve_session(ws, home, "--mode", "bypassPermissions") as session:

        async def three() -> None:
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(session.call_tool, "Bash", {"command": "sleep 1.0491"})

        # How many ran at once, counted in /proc (in turn: 1), not a wall-clock total (< 2.5 s of 3 s,
        # which two at a time also met): a loaded machine stretches the total, not the overlap.
        _, peak = await peak_running(["sleep", "1.0491"], three)
    assert peak >= 2, f"at most {peak} of three read-only 1 s calls ran at once: they did not overlap"
