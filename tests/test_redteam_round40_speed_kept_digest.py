"""Red team round 40 (speed): a large input's digest and size, worked out once per call.

Round 39 (lead) keeps an input counted past `KEPT_WHOLE_CHARS` as the SHA-256 of its canonical JSON.
The session worked it out twice for a call that ran (its start, `_starting`, and its record,
`_record`: ~15 ms each at 4 Mi characters) and counted the input's size three times (`bounded_block`,
then `_kept_input` at each of those). Now one count and one digest a call; a resend is still answered
from the record and the same id with another large input still refused (behaviour unchanged).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.runtime import Runtime, input_size, session

_CHARS = 256 * 1024


def _write(use_id: str, path: Path, text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": use_id,
                "name": "Write",
                "input": {"file_path": str(path), "content": text},
            }
        ],
    }


def test_a_large_call_is_counted_and_hashed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: 2 digests and 3 counts for one large call that ran, 3 digests to answer its
    resend and 6 for the input that reused its id (`_replay` ran three times, each comparing with
    the record and the start)."""
    digests: list[int] = []
    counts: list[int] = []
    real_digest, real_count = session._digest, input_size.input_chars

    def digest(value: Any) -> bytes:
        digests.append(1)
        return real_digest(value)

    def count(value: Any, limit: int = input_size.MAX_INPUT_CHARS) -> int:
        counts.append(1)
        return real_count(value, limit)

    monkeypatch.setattr(session, "_digest", digest)
    monkeypatch.setattr(session, "input_chars", count, raising=False)
    monkeypatch.setattr(input_size, "input_chars", count)
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "big.txt"

    async def main() -> list[dict[str, Any]]:
        async with Runtime(ws, "local", session_dir=tmp_path / "s", mode="acceptEdits") as rt:
            digests.clear()
            counts.clear()
            first = await rt.run(_write("w1", target, "a" * _CHARS))
            one = (len(digests), len(counts))
            digests.clear()
            again = await rt.run(_write("w1", target, "a" * _CHARS))
            resent = len(digests)
            digests.clear()
            other = await rt.run(_write("w1", target, "b" * _CHARS))
            assert one == (1, 1), f"{one[0]} digests and {one[1]} counts for one large call"
            assert len(digests) == 1, f"{len(digests)} digests to refuse a reused id"
            assert resent == 1, f"{resent} digests to answer a resend from its record"
            return [first, again, other]

    first, again, other = anyio.run(main)
    assert not first["content"][0]["is_error"], first
    assert target.read_text() == "a" * _CHARS
    assert again["content"] == first["content"], "a resend of the same call is answered from its record"
    assert "named another" in str(other["content"][0]["content"]), other
