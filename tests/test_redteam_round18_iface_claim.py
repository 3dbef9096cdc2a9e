"""Round 18, interfaces: Bash's model-written ``description`` was shown as if it were shellrt's.

A prompt read ``Bash: rm -rf victim — Read-only: lists files`` with the model's words after a
plain dash; a newline in them started a marked continuation line (``    | ls -la``) that reads as
the command's own second line, and 20,000 characters of them filled the screen. The description
is now shown after the command, on its line, labelled as the model's unchecked claim, escaped to
one line and cut (`shellrt.permissions.shown.model_claim`). Real `Runtime` sessions (local backend)
with the terminal approver.
"""

from __future__ import annotations

import io
import itertools
from pathlib import Path

import pytest

import shellrt
from shellrt.permissions import TerminalApprover
from shellrt.permissions.interfaces import ApprovalRequest, ApprovalResponse
from shellrt.protocol import ToolUseBlock
from tests._governance import isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()
LABEL = "[the model's description, not checked: "
MISLEADING = "Read-only: lists files, nothing is written\n    | ls -la\n" + "x" * 20_000


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "victim").mkdir()
    return ws


async def _asked(ws: Path, description: str) -> tuple[ApprovalRequest, str]:
    """The request an approver got for ``rm -rf victim`` with ``description``, and what the
    terminal approver printed for it (both answered: deny)."""
    seen: list[ApprovalRequest] = []
    printed = io.StringIO()
    terminal = TerminalApprover(stdin=io.StringIO("n\n\n"), stdout=printed)

    async def approver(request: ApprovalRequest) -> ApprovalResponse:
        seen.append(request)
        return await terminal(request)

    async with shellrt.Runtime(
        ws, "local", session_dir=ws.parent / f"s{next(_ids)}", approver=approver
    ) as rt:
        block = ToolUseBlock(
            id=f"r18c{next(_ids)}",
            name="Bash",
            input={"command": "rm -rf victim", "description": description},
        )
        (envelope,) = await rt.run_envelopes([block])
    assert envelope.is_error and (ws / "victim").is_dir()  # denied
    assert len(seen) == 1
    return seen[0], printed.getvalue()


async def test_the_description_is_the_models_claim_on_the_commands_line(ws: Path) -> None:
    request, printed = await _asked(ws, MISLEADING)
    shown = request.description
    assert "\n" not in shown, shown  # before: a continuation line of the model's choosing
    assert shown.startswith("Bash: rm -rf victim  " + LABEL + "Read-only: lists files"), shown[:200]
    assert len(shown) < 300, len(shown)  # before: 20,068 characters
    assert "more characters not shown" in shown
    line = next(x for x in printed.splitlines() if "rm -rf victim" in x)
    assert LABEL in line, printed[:500]
    assert not any(x.lstrip().startswith("| ls -la") for x in printed.splitlines()), printed[:500]


async def test_controls_in_the_description_are_escaped(ws: Path) -> None:
    request, printed = await _asked(ws, "list\x1b[8m hidden\r\u202eok")
    for ch in ("\x1b", "\r", "\u202e"):
        assert ch not in request.description and ch not in printed
    assert "list\\x1b[8m hidden\\x0d\\u202eok]" in request.description, request.description
