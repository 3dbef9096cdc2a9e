"""Red team round 14: one message with thousands of tool_use blocks cannot hold the session.

The scheduler (`StreamingExecution`) has every waiting call wait on each call ahead of it, so a
message of n calls cost n² event-loop wake-ups. Measured on the old code on this loaded 2-core
machine, `shellrt serve --jsonl` with one line of n calls of an unknown tool: 500 calls 32 s,
1,000 calls 74 s, 2,000 calls (a 130 KB line) 183 s — the session answered nothing else meanwhile
and 20,000 calls (1.3 MB, far below the 32 MiB line limit) did not finish in ten minutes. Now
`Runtime.stream` schedules at most `MAX_CALLS_SCHEDULED` calls together, one group after the
other (500 calls: 5.4 s in-process, down from 24.6 s), keeping the message's order and context.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime, orchestration, session
from shellrt.runtime.session import MAX_CALLS_SCHEDULED


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    return tmp_path / "ws"


def _message(blocks: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": f"call_{i}", "name": name, "input": tool_input}
            for i, (name, tool_input) in enumerate(blocks)
        ],
    }


def test_a_message_of_many_calls_runs_in_bounded_groups_in_order(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At most `MAX_CALLS_SCHEDULED` calls per execution; a ``cd`` in the first group is where the
    last group's command runs, and every call is answered in the message's order."""
    held: dict[int, int] = {}
    add = orchestration.StreamingExecution.add

    def counting(self: orchestration.StreamingExecution, block: Any) -> None:
        held[id(self)] = held.get(id(self), 0) + 1
        add(self, block)

    monkeypatch.setattr(orchestration.StreamingExecution, "add", counting)
    monkeypatch.setattr(session.StreamingExecution, "add", counting)
    blocks: list[tuple[str, dict[str, Any]]] = [("Bash", {"command": "cd sub"})]
    blocks += [("Nope", {}) if i % 5 else ("TodoWrite", {"todos": []}) for i in range(MAX_CALLS_SCHEDULED)]
    blocks.append(("Bash", {"command": "pwd"}))

    async def go() -> dict[str, Any]:
        async with Runtime(ws, "local", mode="bypassPermissions") as rt:
            return await rt.run(_message(blocks))

    out = anyio.run(go)
    assert [b["tool_use_id"] for b in out["content"]] == [f"call_{i}" for i in range(len(blocks))]
    middle = out["content"][1:-1]
    assert all(("Unknown tool" in str(b["content"])) == bool(i % 5) for i, b in enumerate(middle))
    last = out["content"][-1]
    assert not last["is_error"], last
    assert str(last["content"]).strip().endswith("/ws/sub"), last
    assert sum(held.values()) == len(blocks)
    assert max(held.values()) <= MAX_CALLS_SCHEDULED, sorted(held.values())
