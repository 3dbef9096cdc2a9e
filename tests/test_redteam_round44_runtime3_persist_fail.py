"""Round 44 red team, runtime3: a call that ran keeps its result when its large output cannot be
persisted. A tool's text holding a lone surrogate (an MCP server's JSON ``"\\ud800"``) or a results
directory that cannot be written made the per-call persistence raise after the call ran (the model
was told "failed unexpectedly", the output lost), and the message budget raise out of
`run_envelopes` (every result of the message lost, and a resend replayed into the same raise).
Real Runtime, real local sandbox, a tool registered here."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import shellrt
from shellrt.permissions import callback_approver
from shellrt.protocol import ToolContext, ToolUseBlock
from shellrt.protocol.messages import ImageBlock, ImageSource, TextBlock, ToolResultBlock
from shellrt.protocol.permission import PermissionResult
from shellrt.protocol.results import (
    DEFAULT_MESSAGE_BUDGET_CHARS,
    HOST_RESULTS_DIR,
    ResultEnvelope,
    apply_message_budget,
)
from shellrt.protocol.tool import Tool, ToolOutput
from shellrt.tools.bash import Bash
from tests._governance import envelope_text, isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()


class _In(BaseModel):
    size: int
    odd: bool = True


class Big(Tool[_In, str]):
    """Prints ``size`` characters, the last a lone surrogate when ``odd`` (as JSON may carry)."""

    name = "Big"
    input_model = _In
    max_result_chars: int | None = 50_000

    def prompt(self) -> str:
        return "prints a large text"

    async def check_permissions(self, tool_input: _In, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.passthrough()

    async def call(self, tool_input: _In, ctx: ToolContext) -> ToolOutput[str]:
        return ToolOutput("HEAD" + "x" * tool_input.size + ("\ud800" if tool_input.odd else "") + "TAIL")

    def to_model_content(self, output: str) -> str:
        return output


class Unbounded(Big):
    """Above the per-call limit only for the message budget."""

    name = "Unbounded"
    max_result_chars = 1_000_000


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


def _runtime(ws: Path, session_dir: Path) -> shellrt.Runtime:
    return shellrt.Runtime(
        ws,
        "local",
        session_dir=session_dir,
        tools=[Bash(), Big(), Unbounded()],
        mode="default",
        allow=["Bash(echo:*)"],
        approver=callback_approver(lambda _r: True),
    )


def _kept(envelope: Any, *, cut: bool = True) -> None:
    text = envelope_text(envelope)
    assert not envelope.is_error, text[:500]
    assert "HEAD" in text and "TAIL" in text, text[:500]
    if cut:
        assert len(text) < 10_000, len(text)


def _within_budget(envelopes: list[Any]) -> None:
    """The budget persists the largest results until the message fits: here the first one."""
    assert sum(len(envelope_text(e)) for e in envelopes) <= DEFAULT_MESSAGE_BUDGET_CHARS
    for envelope in envelopes:
        if envelope.tool_name != "Bash":
            _kept(envelope, cut=False)


async def test_a_lone_call_keeps_its_output_when_the_text_cannot_be_encoded(ws: Path) -> None:
    block = ToolUseBlock(id=f"r44p{next(_ids)}", name="Big", input={"size": 60_000})
    async with _runtime(ws, ws.parent / "s1") as rt:
        [envelope] = await rt.run_envelopes([block])
    _kept(envelope)
    assert envelope.persisted_path is not None
    saved = Path(envelope.persisted_path).read_bytes()
    assert saved.startswith(b"HEAD") and saved.endswith(b"TAIL") and len(saved) > 60_000


async def test_the_message_budget_keeps_every_result_when_a_text_cannot_be_encoded(ws: Path) -> None:
    blocks = [
        ToolUseBlock(id=f"r44a{next(_ids)}", name="Bash", input={"command": "echo before"}),
        ToolUseBlock(id=f"r44u{next(_ids)}", name="Unbounded", input={"size": 150_000}),
        ToolUseBlock(id=f"r44v{next(_ids)}", name="Unbounded", input={"size": 150_000}),
    ]
    async with _runtime(ws, ws.parent / "s2") as rt:
        envelopes = await rt.run_envelopes(blocks)
        again = await rt.run_envelopes(blocks)  # a resend is replayed, and fits too
    for batch in (envelopes, again):
        assert [e.tool_use_id for e in batch] == [b.id for b in blocks]
        assert "before" in envelope_text(batch[0])
        _within_budget(batch)


@pytest.mark.parametrize("name", ["Big", "Unbounded"])
async def test_an_unwritable_results_directory_keeps_the_preview(ws: Path, name: str) -> None:
    session_dir = ws.parent / f"s3{name}"
    blocks = [
        ToolUseBlock(id=f"r44w{next(_ids)}", name=name, input={"size": 150_000, "odd": False}),
        ToolUseBlock(id=f"r44x{next(_ids)}", name=name, input={"size": 150_000, "odd": False}),
    ]
    async with _runtime(ws, session_dir) as rt:
        (session_dir / HOST_RESULTS_DIR).write_text("a file where the directory goes")
        envelopes = await rt.run_envelopes(blocks)
    if name == "Unbounded":
        _within_budget(envelopes)
    cut = [e for e in envelopes if len(envelope_text(e)) < 10_000]
    assert cut and (name == "Unbounded" or len(cut) == 2), [len(envelope_text(e)) for e in envelopes]
    for envelope in cut:
        _kept(envelope)
        assert envelope.persisted_path is None
        assert "could not be saved" in envelope_text(envelope)


def _image_result(tool_use_id: str, caption: str) -> ResultEnvelope:
    image = ImageBlock(source=ImageSource(media_type="image/png", data="A" * 150_000))
    model = ToolResultBlock(tool_use_id=tool_use_id, content=[TextBlock(text=caption), image])
    return ResultEnvelope(tool_use_id=tool_use_id, tool_name="Mcp", model=model, ui=caption, audit=caption)


def test_the_budget_never_persists_an_image_results_caption(tmp_path: Path) -> None:
    """Only text is persisted: two image results over the budget were each "persisted" as their
    7-character caption ("Output too large (7 characters)"), and the message grew by the notes."""
    results = [_image_result("img1", "a chart"), _image_result("img2", "a chart")]
    kept = apply_message_budget(results, tmp_path)
    assert [e.persisted_path for e in kept] == [None, None]
    assert [e.model for e in kept] == [e.model for e in results]
    assert not (tmp_path / HOST_RESULTS_DIR).exists()


def test_the_budget_still_persists_the_text_beside_an_image(tmp_path: Path) -> None:
    results = [_image_result("img3", "HEAD" + "x" * 150_000 + "TAIL"), _image_result("img4", "a chart")]
    kept = apply_message_budget(results, tmp_path)
    assert kept[0].persisted_path is not None and kept[1].persisted_path is None
    first = kept[0].model.content
    assert isinstance(first, list) and isinstance(first[1], ImageBlock)
    assert isinstance(first[0], TextBlock) and "150,008 characters" in first[0].text
