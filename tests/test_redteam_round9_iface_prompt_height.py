"""Red team round 9 (interfaces): an approval prompt taller than the screen showed only its tail.

Round 7 made the prompt show every control character, so ``rm -rf victim`` can no longer be erased
from the line. But the model still chose how *long* the shown text is: ``rm -rf victim #`` then
10,000 spaces then ``ls -la`` (bash ignores the comment) printed 125 rows of a terminal's 80
columns, and a person reading the screen above the menu saw ``ls -la`` alone; 300 blank lines did
the same. The shown text now names long runs of blanks and empty lines instead of printing them,
and a prompt taller than a screen repeats how the call begins right above the menu. The same holds
for the MCP elicitation message. Real processes: the CLI's terminal approver on a Runtime.
"""

from __future__ import annotations

import io
import itertools
import math
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions import ApprovalRequest, TerminalApprover
from shellrt.permissions.shown import for_person
from shellrt.protocol import ToolUseBlock
from tests._governance import isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()
#: A small terminal: what a person sees of the prompt while deciding.
COLUMNS, ROWS = 80, 24

PADDED = {
    "spaces": "rm -rf victim #" + " " * 10_000 + "ls -la",
    "tabs": "rm -rf victim #" + "\t" * 4_000 + "ls -la",
    "no-break spaces": "rm -rf victim #" + "\u00a0" * 10_000 + "ls -la",
    "empty lines": "rm -rf victim\n" + "\n" * 300 + "ls -la",
    "comment lines": "rm -rf victim\n" + "#\n" * 300 + "ls -la",
}


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "victim").mkdir()
    return ws


async def _prompt(ws: Path, tool_input: dict[str, Any]) -> str:
    shown = io.StringIO()
    approver = TerminalApprover(stdin=io.StringIO("n\n\n"), stdout=shown)
    async with shellrt.Runtime(
        ws, "local", session_dir=ws.parent / f"s{next(_ids)}", approver=approver
    ) as rt:
        (envelope,) = await rt.run_envelopes(
            [ToolUseBlock(id=f"r9h{next(_ids)}", name="Bash", input=tool_input)]
        )
    assert envelope.is_error  # denied
    return shown.getvalue()


def _screen(text: str) -> str:
    """The last `ROWS` rows a terminal of `COLUMNS` shows once the menu's question is printed."""
    upto = text[: text.index("choice [y/s/p/e/n]: ") + len("choice [y/s/p/e/n]: ")]
    rows: list[str] = []
    for line in upto.split("\n"):
        width = len(line.expandtabs(8))
        count = max(1, math.ceil(width / COLUMNS))
        expanded = line.expandtabs(8)
        rows += [expanded[i * COLUMNS : (i + 1) * COLUMNS] for i in range(count)]
    return "\n".join(rows[-ROWS:])


@pytest.mark.parametrize("padding", sorted(PADDED))
async def test_the_start_of_a_padded_command_stays_on_the_screen(ws: Path, padding: str) -> None:
    text = await _prompt(ws, {"command": PADDED[padding], "description": "list files"})
    screen = _screen(text)
    assert "rm -rf victim" in screen, f"{padding}: the screen shows only\n{screen}"
    assert (ws / "victim").is_dir()


async def test_held_a_short_command_is_shown_as_it_is(ws: Path) -> None:
    text = await _prompt(ws, {"command": "rm -rf victim", "description": "clean up"})
    assert "shellrt wants to run: Bash: rm -rf victim  [the model's description, not checked: clean up]\n" in text
    assert "begins" not in text


def test_blank_runs_are_named_and_short_ones_kept() -> None:
    assert for_person("a" + " " * 40 + "b") == "a[40 blanks]b"
    assert for_person("if x:\n        y") == "if x:\n    |         y"  # indentation stays
    assert for_person("a\n\n\n\n\n\nb") == "a\n    | [5 empty lines]\n    | b"
    assert for_person("a\n\nb") == "a\n    | \n    | b"


async def test_the_mcp_elicitation_message_is_shaped_the_same_way() -> None:
    from shellrt.server.mcp_approval import approval_text

    request = ApprovalRequest(
        tool_name="Bash",
        tool_input={"command": PADDED["comment lines"]},
        description="Bash: " + PADDED["comment lines"],
        reason="not read-only",
        suggested_rules=[],
    )
    text = approval_text(request)
    assert "rm -rf victim" in "\n".join(text.splitlines()[-6:]), text
