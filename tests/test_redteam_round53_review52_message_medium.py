"""Round 53 red team, review52: a message of many medium results stays within its message budget.

Round 52 (runtime4) made a message of many calls fit ``message_budget_chars``: the exempt tools'
results are persisted too, then persisted results lose their preview. Both passes only ever touch
a result that the first pass would persist, and that pass leaves alone every result no longer than
a preview (~3,000 characters: persisting it would not make it smaller *with* a preview). A hostile
model sending many calls whose results are each just under that size therefore still got a
message far above the budget: 20 Reads (or `cat`s) of 2,900-character files answered ~60,000
characters against 20,000, and the same with a thousand calls against the default 200,000.
Real Runtime, real local sandbox, real files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.protocol.results import PREVIEW_HEAD_CHARS, PREVIEW_TAIL_CHARS, model_chars
from tests._governance import envelope_text, isolated_workspace
from tests._message_budget import budget_runtime, read_or_cat

pytestmark = pytest.mark.anyio

BUDGET = 20_000
CALLS = 20
#: Each result just under the size the first pass would persist.
LINES = 40


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = isolated_workspace(tmp_path, monkeypatch)
    for i in range(CALLS):
        (ws / f"m{i}.txt").write_text("".join(f"{i:03d} row {n:03d} {'z' * 50}\n" for n in range(LINES)))
    return ws


def _runtime(ws: Path, budget: int = BUDGET) -> shellrt.Runtime:
    return budget_runtime(ws, budget)


def _block(ws: Path, tool: str, i: int) -> ToolUseBlock:
    return read_or_cat(ws, tool, f"m{i}.txt")


@pytest.mark.parametrize("tool", ["Read", "Bash"])
async def test_many_medium_results_fit_the_budget(ws: Path, tool: str) -> None:
    """Failed before: 20 results of ~2,400-2,900 characters each, none persisted (each no longer
    than a preview), ~50,000-58,000 characters against a budget of 20,000."""
    blocks = [_block(ws, tool, i) for i in range(CALLS)]
    async with _runtime(ws) as rt:
        envelopes = await rt.run_envelopes(blocks)
    assert [e.tool_use_id for e in envelopes] == [b.id for b in blocks]
    sizes = [model_chars(e) for e in envelopes]
    assert max(sizes) <= PREVIEW_HEAD_CHARS + PREVIEW_TAIL_CHARS + 100  # the shape this test is about
    assert sum(sizes) <= BUDGET, (tool, sum(sizes))
    saved = 0
    for i, envelope in enumerate(envelopes):
        assert not envelope.is_error, envelope_text(envelope)[:300]
        text = envelope_text(envelope)
        if envelope.persisted_path is None:
            assert f"{i:03d} row {LINES - 1:03d}" in text, (tool, i)  # kept whole in the message
            continue
        saved += 1
        assert envelope.persisted_path in text  # nothing lost: the whole output is where it says
        assert f"{i:03d} row {LINES - 1:03d}" in Path(envelope.persisted_path).read_text(), (tool, i)
    assert saved > 0


async def test_a_message_within_its_budget_is_unchanged(ws: Path) -> None:
    """The guard: medium results within the budget stay whole in the message, none saved."""
    blocks = [_block(ws, "Bash", i) for i in range(3)]
    async with _runtime(ws) as rt:
        envelopes = await rt.run_envelopes(blocks)
    for i, envelope in enumerate(envelopes):
        assert envelope.persisted_path is None
        assert f"{i:03d} row {LINES - 1:03d}" in envelope_text(envelope)
