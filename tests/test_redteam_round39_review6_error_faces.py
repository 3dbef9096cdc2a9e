"""Red team round 39 (review6): the people face of an error result carried raw controls.

Round 38 (novel3) escaped each field of the success faces people read (`Tool.render_result`); an
error result's people face (`ResultEnvelope.ui`, the same text a host shows for a refused or failed
call) was still the message as written, and many messages quote what the model chose: TodoWrite's
"2 tasks are in_progress (<item>; <item>)", the runtime's "Unknown tool '<name>'", WebFetch's
"Refused to fetch <url>". OSC 52 (the clipboard), ``ESC[2K`` (erase the line), a C1 CSI and tag
characters in any of them reached the person's terminal raw. Now `error_envelope` shows the
person each control, format or separator character as its escape (newlines and tabs kept:
messages have lines); the model's face and the audit text keep the message as written.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions import callback_approver
from shellrt.protocol import ToolUseBlock
from tests._governance import isolated_workspace

pytestmark = pytest.mark.anyio
_ids = itertools.count()
#: Clipboard write, erase the line, a C1 CSI, a zero width space, "hi" as tag characters.
HOSTILE = "\x1b]52;c;eA==\x07\x1b[2K\x9b1A\u200b\U000e0068\U000e0069"

CALLS: list[tuple[str, dict[str, Any]]] = [
    (
        "TodoWrite",
        {
            "todos": [
                {"content": f"a{HOSTILE}", "status": "in_progress", "activeForm": "x"},
                {"content": f"b{HOSTILE}", "status": "in_progress", "activeForm": "y"},
            ]
        },
    ),
    (f"Nope{HOSTILE}", {"a": 1}),
    ("WebFetch", {"url": f"http://127.0.0.1:1/{HOSTILE}", "prompt": "p"}),
]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


@pytest.mark.parametrize(("name", "tool_input"), CALLS, ids=["todo", "unknown", "webfetch"])
async def test_an_error_shows_people_no_raw_control(ws: Path, name: str, tool_input: dict[str, Any]) -> None:
    async with shellrt.Runtime(
        ws, "local", session_dir=ws.parent / "s", approver=callback_approver(lambda _r: True)
    ) as rt:
        [envelope] = await rt.run_envelopes(
            [ToolUseBlock(id=f"r39e{next(_ids)}", name=name, input=tool_input)]
        )
    assert envelope.is_error
    unseen = [c for c in envelope.ui if not (c.isprintable() or c in "\n\t")]
    assert not unseen, f"raw in the error's people face: {envelope.ui!r}"
    assert "\\x1b]52" in envelope.ui  # shown, visibly
    assert HOSTILE in envelope.model.text()  # the model reads what it sent
