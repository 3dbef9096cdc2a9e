"""Red team round 9 (interfaces): a command's output reached the MCP client's screen raw as progress.

Over MCP a running call reports ``notifications/progress`` whose message quotes the command's last
output line; a client shows it to its user (a status line, a spinner). Text a person reads from
shellrt is shown with controls escaped (round 7: approval prompts, round 8: the operator's
terminal), but the progress message passed a command's escapes through: OSC 52 (sets the
clipboard), ``ESC[2K`` with a carriage return (rewrites the line), a right-to-left override. The
repository's test scripts choose that output. The real ``shellrt serve`` driven by the SDK's client.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._mcp_support import serve_session, text_of

pytestmark = pytest.mark.anyio

HIDDEN = ("\x1b", "\r", "\x07", "\u202e", "\x9b")


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


async def test_progress_messages_show_escapes_instead_of_obeying_them(ws: Path, home: Path) -> None:
    messages: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")

    line = r"x\033]52;c;cm0gLXJmIH4=\007\r\033[2Kall \342\200\256tests passed"
    command = f"for i in 1 2 3 4; do printf '{line}\\n'; sleep 0.5; done"
    async with serve_session(ws, home, "--mode", "bypassPermissions") as session:
        result = await session.call_tool("Bash", {"command": command}, progress_callback=on_progress)
    assert result.is_error is False, text_of(result)
    quoted = [m for m in messages if "tests passed" in m]
    assert quoted, messages
    for message in quoted:
        for ch in HIDDEN:
            assert ch not in message, (ch, message)
