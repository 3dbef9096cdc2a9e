"""A PreToolUse hook's rewrite decides whether a call may run beside its batch.

The scheduler groups calls by the model's input: two read-only Bash calls form one
parallel batch. A hook that rewrites one of them into a command that writes (judged and
permitted as such) left it running beside the other. Now the call runs in a slot judged on
its final input: alone, after the running siblings end and before the others start. Two
real commands on the local backend observe each other through a marker file.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from tests._governance import envelope_text, isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()
#: What the model asks for (read-only, concurrency-safe) and what the hook runs instead.
ASKED = "echo asked-for"
WRITER = "touch writer-running && sleep 1.5 && mv writer-running writer-done"
#: Read-only, concurrency-safe: reports whether the writer is running beside it.
OBSERVER = "sleep 0.5; if test -e writer-running; then echo BESIDE; else echo ALONE; fi"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


def _settings(tmp_path: Path) -> Path:
    hook = tmp_path / "rewrite.py"
    answer = json.dumps(
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": WRITER}}}
    )
    hook.write_text(
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        f"if data['tool_input'].get('command') == {ASKED!r}:\n"
        f"    print({answer!r})\n"
    )
    settings = tmp_path / "operator.json"
    command = f"{sys.executable} {hook}"
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]
                }
            }
        )
    )
    return settings


async def _run(ws: Path, commands: list[str]) -> list[str]:
    async with shellrt.Runtime(
        ws,
        "local",
        session_dir=ws.parent / f"s{next(_ids)}",
        tools=[Bash()],
        settings_files=[_settings(ws.parent)],
        mode="bypassPermissions",
    ) as rt:
        blocks = [ToolUseBlock(id=f"g8c{next(_ids)}", name="Bash", input={"command": c}) for c in commands]
        results = await rt.run_envelopes(blocks)
    for envelope in results:
        assert not envelope.is_error, envelope_text(envelope)
    return [envelope_text(e) for e in results]


@pytest.mark.parametrize("writer_first", [True, False])
async def test_a_call_rewritten_to_write_does_not_run_beside_its_batch(ws: Path, writer_first: bool) -> None:
    commands = [ASKED, OBSERVER, OBSERVER] if writer_first else [OBSERVER, ASKED, OBSERVER]
    texts = await _run(ws, commands)
    assert (ws / "writer-done").exists() and not (ws / "writer-running").exists()
    observed = [t for c, t in zip(commands, texts, strict=True) if c == OBSERVER]
    for text in observed:
        assert "ALONE" in text and "BESIDE" not in text, texts


async def test_calls_that_stay_safe_still_run_together(ws: Path) -> None:
    """The slots hold back only the rewritten call: safe calls of one batch still overlap."""
    timed = "date +%s.%N; sleep 0.5; date +%s.%N"
    texts = await _run(ws, [timed, timed, timed])
    spans = [tuple(float(x) for x in t.split()[:2]) for t in texts]
    assert max(start for start, _ in spans) < min(end for _, end in spans), spans
