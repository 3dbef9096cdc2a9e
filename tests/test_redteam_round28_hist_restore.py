"""Round 28, history: a client's huge ``history`` line stalled its own server.

Round 28's iface helper found it: 20,000 successful Read uses in one 3 MB JSONL ``history`` line
took 56 s to answer at load ~20, on the event loop (no interrupt read, no output pumped meanwhile).
In-process, 8,000 uses took 5 s of CPU: a `view_for` per read path (its cache check, ~45
``lstat``) and two quadratic list-membership tests (`repair_history`'s pending ids, `read_paths`'
seen paths). Now the work is linear in the history, the stale-read marks are bounded, and a
history past `MAX_HISTORY_ITEMS` is refused with an error that says what to send instead.
The real runtime (local backend: the resolution is the same code for every backend), in-process.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from shellrt.runtime import MessageFormatError, Runtime, messages
from shellrt.server.jsonl import handle_line
from shellrt.tools import _history

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with HOME beside it, in the test's own directory."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


def _reads(n: int) -> list[dict[str, Any]]:
    """One assistant message of ``n`` Reads of distinct (missing: the slow walk) files, all answered."""
    uses = [
        {"type": "tool_use", "id": f"r{i}", "name": "Read", "input": {"file_path": f"d{i % 50}/f{i}.txt"}}
        for i in range(n)
    ]
    results = [{"type": "tool_result", "tool_use_id": f"r{i}", "content": "     1\tx"} for i in range(n)]
    return [{"role": "user", "content": "go"}, {"role": "assistant", "content": uses}, {"role": "user", "content": results}]


async def test_a_huge_history_costs_time_linear_in_its_size(ws: Path) -> None:
    cpu: dict[int, float] = {}
    restored = {}
    for n in (2_000, 20_000):
        async with Runtime(ws, "local", session_dir=ws.parent / f"s{n}", use_settings=False) as rt:
            history = _reads(n)
            start = time.process_time()
            restored[n] = rt.restore(history)
            cpu[n] = time.process_time() - start
        assert restored[n].changes == [] and restored[n].recorded == n
        assert restored[n].messages == history
    print(f"restore CPU: 2,000 uses {cpu[2_000]:.3f} s, 20,000 uses {cpu[20_000]:.3f} s")
    assert cpu[20_000] < 15 * max(cpu[2_000], 0.02), cpu  # 10x the input, not 100x the time
    assert cpu[20_000] < 5, cpu  # 13.2 s before; 0.5-0.7 s idle, 1.65 s in CI66 (process CPU, all threads)
    for n, done in restored.items():
        # The marks are for the files read last (the ones an Edit follows), at most the cap.
        marked = min(n, _history.MAX_RESTORED_READS)
        assert len(done.stale_reads) == marked, len(done.stale_reads)
        assert done.stale_reads[0] == str(ws / f"d{(n - marked) % 50}" / f"f{n - marked}.txt")
        assert done.stale_reads[-1] == str(ws / f"d{(n - 1) % 50}" / f"f{n - 1}.txt")


async def test_a_history_past_the_cap_is_refused_with_what_to_send(ws: Path) -> None:
    cap = 100_000  # the documented cap (`messages.MAX_HISTORY_ITEMS`, checked below)
    blocks: list[dict[str, Any]] = [{} for _ in range(cap)]  # 2 bytes each on the wire
    history = [{"role": "user", "content": blocks}, {"role": "assistant", "content": "ok"}]
    with pytest.raises(MessageFormatError, match=f"more than {cap:,} JSON objects and arrays") as caught:
        messages.repair_history(history)
    assert "newest messages" in str(caught.value)
    async with Runtime(ws, "local", session_dir=ws.parent / "s", use_settings=False) as rt:
        answer = await handle_line(rt, json.dumps({"type": "history", "messages": history}), 7)
        assert answer is not None and answer["type"] == "error", str(answer)[:200]
        assert answer["error"].startswith("line 7: ") and f"{cap:,}" in answer["error"]
        # A malformed result was an "internal error: ValidationError" after the read marks were set.
        bad = _reads(2)
        bad[2]["content"][1]["content"] = [{}]
        answer = await handle_line(rt, json.dumps({"type": "history", "messages": bad}), 8)
        assert answer is not None and "tool_result 'r1' is malformed" in answer["error"], answer
        assert "internal error" not in answer["error"] and rt.context.read_state == {}
        # Nothing of either was taken: the session restores a history under the cap as before.
        small = rt.restore(_reads(3))
        assert small.recorded == 3 and len(small.stale_reads) == 3
    assert cap == messages.MAX_HISTORY_ITEMS


def test_read_paths_and_repair_keep_their_order() -> None:
    """Sets beside the lists: the same first-seen order and the same repairs as before."""
    uses = [{"type": "tool_use", "id": f"u{i}", "name": "Read", "input": {"file_path": p}} for i, p in enumerate("abab")]
    answers = [{"type": "tool_result", "tool_use_id": f"u{i}", "content": "x"} for i in (3, 1, 2, 9, 1)]
    history = [{"role": "assistant", "content": uses}, {"role": "user", "content": answers}]
    repaired, changes = messages.repair_history(history)
    assert [b["tool_use_id"] for b in repaired[1]["content"]] == ["u0", "u1", "u2", "u3"]
    assert [(c.kind, c.tool_use_id) for c in changes] == [
        ("orphan_result_dropped", "u9"),
        ("duplicate_result_dropped", "u1"),
        ("synthetic_result", "u0"),
    ]
    assert _history.read_paths(repaired) == ["b", "a"]  # u0 (a) has no result: its first success is u2
