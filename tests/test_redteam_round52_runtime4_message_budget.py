"""Round 52 red team, runtime4: a message of many calls stays within its message budget.

The budget (``message_budget_chars``) persisted the largest results until the message fitted, but
left two kinds alone: results of tools with no per-call limit (Read, whose saved file a Read would
read back), and the preview each persisted result keeps (about 3,000 characters). A hostile model
(or a prompt injected into what it reads) sending many calls in one message therefore got a
message far above the budget: 200 Reads of distinct 100 KB files answered 20 MB against 200,000
characters, 500 Bash calls 1.66 MB with every result persisted. Such a message may never fit the
model's context again, and stays in the conversation. Real Runtime, real local sandbox, real files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.protocol.results import model_chars
from tests._governance import envelope_text, isolated_workspace
from tests._message_budget import budget_runtime, read_or_cat

pytestmark = pytest.mark.anyio

#: Small enough that a dozen 5,000-character results overflow it, large enough for one of them.
BUDGET = 20_000
CALLS = 12


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = isolated_workspace(tmp_path, monkeypatch)
    for i in range(CALLS):
        (ws / f"f{i}.txt").write_text("".join(f"{i:03d} line {n:04d} {'y' * 40}\n" for n in range(100)))
    return ws


def _runtime(ws: Path, budget: int = BUDGET) -> shellrt.Runtime:
    return budget_runtime(ws, budget)


def _block(ws: Path, tool: str, i: int) -> ToolUseBlock:
    return read_or_cat(ws, tool, f"f{i}.txt")


@pytest.mark.parametrize("tool", ["Read", "Bash"])
async def test_many_results_of_one_message_fit_its_budget(ws: Path, tool: str) -> None:
    """Failed before: 12 Reads answered ~74,000 characters (none persisted: Read is exempt), 12 Bash
    calls ~39,000 (each persisted, each preview kept), against a budget of 20,000."""
    blocks = [_block(ws, tool, i) for i in range(CALLS)]
    async with _runtime(ws) as rt:
        envelopes = await rt.run_envelopes(blocks)
    assert [e.tool_use_id for e in envelopes] == [b.id for b in blocks]
    total = sum(model_chars(e) for e in envelopes)
    assert total <= BUDGET, (tool, total)
    for i, envelope in enumerate(envelopes):
        assert not envelope.is_error, envelope_text(envelope)[:300]
        # every call keeps its whole output, saved where its result says
        assert envelope.persisted_path is not None, (tool, i)
        assert envelope.persisted_path in envelope_text(envelope)
        saved = Path(envelope.persisted_path).read_text()
        assert f"{i:03d} line 0099" in saved, (tool, i)


async def test_a_lone_read_above_the_budget_stays_whole(ws: Path) -> None:
    """The guard: a Read alone in its message is never saved to a file a Read would read back
    (persisting it would loop Read -> file -> Read); it is bounded by Read's own limit."""
    async with _runtime(ws, budget=1_000) as rt:
        [envelope] = await rt.run_envelopes([_block(ws, "Read", 3)])
    assert envelope.persisted_path is None
    assert "003 line 0099" in envelope_text(envelope)
