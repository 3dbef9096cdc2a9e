"""Red team round 20 (iface): a hook's answer that shellrt cannot read must not end the session.

A hook that prints JSON nested deeper than the parser's recursion limit (one that passes a
model's or an MCP server's nested value through, or a broken one) raised RecursionError out of
the hook runner: `run_envelopes` ended with an ExceptionGroup for the whole batch, and for a
PostToolUse hook that was after the command had run, so its result never reached the model. Now
such an answer is a hook that did not answer (a notice; a guard marked ``onFailure: "block"``
blocks), as any other unreadable answer. Real hooks, real commands, the local backend.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from tests._governance import envelope_text, isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


def _deep_hook(ws: Path, event: str, **extra: object) -> Path:
    """Settings with one ``event`` hook on Bash that prints 200,000-deep JSON."""
    deep = ws.parent / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    settings = ws.parent / f"operator{next(_ids)}.json"
    hook = {"type": "command", "command": f"cat {deep}", "timeout": 10, **extra}
    settings.write_text(json.dumps({"hooks": {event: [{"matcher": "Bash", "hooks": [hook]}]}}))
    return settings


async def _touch(ws: Path, name: str, settings: Path, mode: str) -> tuple[bool, str, list[str]]:
    async with shellrt.Runtime(
        ws, "local", session_dir=ws.parent / f"s{next(_ids)}", tools=[Bash()], settings_files=[settings], mode=mode
    ) as rt:
        [envelope] = await rt.run_envelopes(
            [ToolUseBlock(id=f"r20h{next(_ids)}", name="Bash", input={"command": f"touch {name}; echo made"})]
        )
        return envelope.is_error, envelope_text(envelope), list(rt.diagnostics)


@pytest.mark.parametrize(("event", "mode"), [("PreToolUse", "bypassPermissions"), ("PermissionRequest", "default")])
async def test_a_guard_whose_answer_is_too_deep_blocks_and_the_session_lives(ws: Path, event: str, mode: str) -> None:
    failed, text, _ = await _touch(ws, "guarded", _deep_hook(ws, event, onFailure="block"), mode)
    assert failed and not (ws / "guarded").exists(), text
    assert "nested too deeply" in text and 'onFailure is "block"' in text, text


async def test_a_post_hook_whose_answer_is_too_deep_leaves_the_result_to_the_model(ws: Path) -> None:
    failed, text, _ = await _touch(ws, "ran", _deep_hook(ws, "PostToolUse"), "bypassPermissions")
    assert (ws / "ran").exists()
    assert not failed and "made" in text, text
