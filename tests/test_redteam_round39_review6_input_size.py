"""Red team round 39 (review6): a huge tool input was kept and written whole before it was refused.

Round 38 (novel3) left "any tool input of up to 64 MiB is parsed by the server and written whole
into the transcript's start line before validation refuses it". Measured here, it was worse: the
start line and the call line each held it (a 16 MiB input wrote 32 MiB of transcript), and the
session kept the input of each of its last 2,000 calls to tell a resend from a reused id (its
`_started` map), refused ones included: ten refused 16 MiB calls held 176 MiB of the shellrt
process for good and wrote 320 MiB, 2.7 s a call; at the server's 64 MiB line cap, 2,000 calls
are 128 GB of memory and 256 GB of disk, from a model alone. Now an input past
`MAX_INPUT_CHARS` is refused before any of that: its lines and the session keep a note of its
size, and the model is told what to do.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.runtime.input_size import MAX_INPUT_CHARS
from tests._governance import isolated_workspace

pytestmark = pytest.mark.anyio
_ids = itertools.count()


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


def _transcript_bytes(session_dir: Path) -> int:
    return (session_dir / "transcript.jsonl").stat().st_size


@pytest.mark.parametrize("shape", ["one_string", "many_items"])
async def test_a_huge_input_is_refused_before_it_is_kept_or_written(ws: Path, shape: str) -> None:
    (ws / "f.txt").write_text("a\n")
    size = MAX_INPUT_CHARS + 1024
    junk: object = "a" * size if shape == "one_string" else ["ab"] * (size // 2)
    session_dir = ws.parent / "s"
    async with shellrt.Runtime(ws, "local", session_dir=session_dir) as rt:
        block = ToolUseBlock(
            id=f"r39big{next(_ids)}", name="Read", input={"file_path": "f.txt", "junk": junk}
        )
        [envelope] = await rt.run_envelopes([block])
        kept = list(rt._started.values())  # what the session holds to tell a resend from a reused id
        [again] = await rt.run_envelopes([block])  # a resend: the same answer, not "another call"
        message = await rt.run({"role": "assistant", "content": [block.model_dump()]})
    assert envelope.is_error
    text = envelope.model.text()
    assert "more than" in text and f"{MAX_INPUT_CHARS:,}" in text, text
    assert again.is_error and again.model.text() == text
    assert message["content"][0]["is_error"] is True
    assert all(len(repr(entry[1])) < 1000 for entry in kept), "the session kept the huge input"  # repr: round 40 review14
    assert _transcript_bytes(session_dir) < 100_000, "the transcript holds the huge input"


async def test_an_input_at_the_bound_still_runs(ws: Path) -> None:
    """A Write of a large file (just under the bound) is written and transcribed whole."""
    content = "x" * (MAX_INPUT_CHARS - 4096)
    session_dir = ws.parent / "s"
    async with shellrt.Runtime(ws, "local", session_dir=session_dir, mode="acceptEdits") as rt:
        block = ToolUseBlock(
            id=f"r39ok{next(_ids)}",
            name="Write",
            input={"file_path": str(ws / "big.txt"), "content": content},
        )
        [envelope] = await rt.run_envelopes([block])
    assert not envelope.is_error, envelope.model.text()
    assert (ws / "big.txt").read_text() == content
    assert _transcript_bytes(session_dir) > len(content)


async def test_a_restored_huge_call_is_kept_as_its_size_and_still_answered(ws: Path) -> None:
    """`restore` kept each answered call's input (2,000 of them) to answer a resend: a history's
    huge input is kept as the marker a resend of it is bounded to, and the resend is answered."""
    use_id = f"r39restore{next(_ids)}"
    huge = {"file_path": str(ws / "big.txt"), "content": "x" * (MAX_INPUT_CHARS + 10)}
    history = [
        {"role": "user", "content": "write it"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": use_id, "name": "Write", "input": huge}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_id, "content": "written"}]},
    ]
    async with shellrt.Runtime(ws, "local", session_dir=ws.parent / "s", mode="acceptEdits") as rt:
        rt.restore(history)
        kept = [entry[1] for entry in rt._recorded.values()]
        [again] = await rt.run_envelopes([ToolUseBlock(id=use_id, name="Write", input=huge)])
    assert all(len(repr(entry)) < 1000 for entry in kept), "the session kept the huge input"  # repr: round 40 review14
    assert again.model.text() == "written" and not (ws / "big.txt").exists()
