"""Red team round 39 (review6): `Tool.render_use`, how a call is shown to a person, was raw.

`render_use` is the people face of the call itself (a host shows it above the result); it was the
permission line (`describe`) as written, and Bash's was ``$ <command>``: the model's command,
URL or path with OSC 52, ``ESC[2K`` or tag characters reached the person's terminal raw (the
prompt escapes these since round 7, `for_person`; round 38 escaped the result faces). Now it
shows each control, format or separator character as its escape; line breaks stay.
"""

from __future__ import annotations

from typing import Any

import pytest

from shellrt.protocol import Tool
from shellrt.tools.bash import Bash
from shellrt.tools.read import ReadTool
from shellrt.tools.todo_write import TodoWriteTool
from shellrt.tools.web_fetch import WebFetchTool

HOSTILE = "\x1b]52;c;eA==\x07\x1b[2K\x9b1A\u200b\U000e0068"
CASES: list[tuple[Tool[Any, Any], dict[str, Any]]] = [
    (Bash(), {"command": f"rm -rf ~ #{HOSTILE}\necho ok"}),
    (WebFetchTool(), {"url": f"https://example.com/{HOSTILE}", "prompt": "p"}),
    (ReadTool(), {"file_path": f"/tmp/x{HOSTILE}"}),
    (TodoWriteTool(), {"todos": [{"content": f"a{HOSTILE}", "status": "pending", "activeForm": "b"}]}),
]


@pytest.mark.parametrize(("tool", "raw"), CASES, ids=[t.name for t, _ in CASES])
def test_a_call_is_shown_inert(tool: Tool[Any, Any], raw: dict[str, Any]) -> None:
    shown = tool.render_use(tool.parse_input(raw))
    unseen = [c for c in shown if not (c.isprintable() or c in "\n\t")]
    assert not unseen, f"raw in how the call is shown: {shown!r}"
    assert "\\x1b]52" in shown or "\\u001b]52" in shown  # shown, visibly
