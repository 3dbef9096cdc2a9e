"""Red team round 7 (interfaces): a hook's answer cut short by shellrt must not turn a block into a pass.

A hook's stdout is kept up to 1 MiB. A guard hook that denies and, as hook examples do, names what
it refused in its reason (``"permissionDecisionReason": "blocked: <the input>"``) printed more than
that for a large input the model chose (a Write of 2 MB): shellrt cut the JSON, could not parse
it, reported a notice and ran the call as if the hook had not answered. An answer too long to read
now blocks. A real hook process from trusted settings; the local backend.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock

pytestmark = pytest.mark.anyio

_ids = itertools.count()

_GUARD = """
import json, sys
payload = json.load(sys.stdin)
content = payload["tool_input"].get("content", "")
if "FORBIDDEN" in content:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
          "permissionDecisionReason": "blocked this content: " + content}}))
"""

_NOISY = """
import sys
sys.stdin.read()
sys.stdout.write("log line\\n" * 200_000)
"""


def _runtime(tmp_path: Path, script: str) -> shellrt.Runtime:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    hook = tmp_path / "hook.py"
    hook.write_text(script)
    settings = tmp_path / "settings.json"
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "Write",
                            "hooks": [{"type": "command", "command": f"{sys.executable} {hook}"}],
                        }
                    ]
                }
            }
        )
    )
    return shellrt.Runtime(
        ws, "local", session_dir=tmp_path / f"s{next(_ids)}", settings_files=[settings], mode="acceptEdits"
    )


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trust" / "store.json"))


async def _write(rt: shellrt.Runtime, path: Path, content: str) -> tuple[bool, str]:
    (envelope,) = await rt.run_envelopes(
        [
            ToolUseBlock(
                id=f"r7h{next(_ids)}", name="Write", input={"file_path": str(path), "content": content}
            )
        ]
    )
    return envelope.is_error, str(envelope.model.content)[:300]


async def test_a_deny_too_long_to_read_still_blocks(tmp_path: Path) -> None:
    async with _runtime(tmp_path, _GUARD) as rt:
        small = await _write(rt, rt.workspace / "small.txt", "FORBIDDEN")
        big = await _write(rt, rt.workspace / "big.txt", "FORBIDDEN" + "x" * 2_000_000)
        fine = await _write(rt, rt.workspace / "fine.txt", "harmless")
    assert small[0] and big[0], (small, big)
    assert not (rt.workspace / "big.txt").exists() and not (rt.workspace / "small.txt").exists()
    assert "too long" in big[1], big
    assert not fine[0] and (rt.workspace / "fine.txt").read_text() == "harmless"


async def test_a_hook_that_prints_too_much_blocks_with_a_reason(tmp_path: Path) -> None:
    async with _runtime(tmp_path, _NOISY) as rt:
        is_error, text = await _write(rt, rt.workspace / "a.txt", "x")
    assert is_error and "1 MiB" in text and not (rt.workspace / "a.txt").exists(), text
