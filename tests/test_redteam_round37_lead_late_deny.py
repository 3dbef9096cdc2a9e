"""Round 37 (lead, from the rules helper's report): a deny rule added after the session started
was judged by the permission engine but not by the sandbox compiled from the rules at start.

`Read(...)`/`Edit(...)` denies compile into the sandbox policy (masked / read-only paths) once,
when the Runtime starts. A rule the Python API adds later (``rt.governance.settings.rules.add``)
was obeyed by the engine's own checks only: in ``bypassPermissions`` a script written earlier
(``bash x.sh`` running ``cat secret.txt``) printed what the new rule denies, and Grep's hits are
filtered by the compiled masks. Now every call after such a change is refused with what to do.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions.rules import RuleOrigin, parse_rule
from tests.conftest import require

pytestmark = pytest.mark.anyio

_IDS = itertools.count()


async def _bash(rt: shellrt.Runtime, command: str) -> dict[str, Any]:
    user = await rt.run(
        [{"type": "tool_use", "id": f"t{next(_IDS)}", "name": "Bash", "input": {"command": command}}]
    )
    block: dict[str, Any] = user["content"][0]
    return block


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


async def test_a_read_deny_added_mid_session_is_not_left_to_a_stale_sandbox(tmp_path: Path) -> None:
    """Failed before: ``bash x.sh`` printed the secret after the rule was added (bwrap: the same
    rule given at start masks it, below)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "secret.txt").write_text("TOPSECRET\n")
    (ws / "x.sh").write_text("cat secret.txt\n")
    async with shellrt.Runtime(
        workspace=ws, sandbox="bwrap", mode="bypassPermissions", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        first = await _bash(rt, "echo before")
        assert not first["is_error"], first
        rt.governance.engine.rules.add(
            parse_rule("Read(./secret.txt)", "deny", RuleOrigin("session", root=rt.workspace))
        )
        block = await _bash(rt, "bash x.sh")
        text = _text(block)
        assert block["is_error"], text
        assert "TOPSECRET" not in text, text
        assert "new session" in text and "Read(./secret.txt)" in text, text


async def test_an_edit_deny_added_mid_session_is_live(tmp_path: Path) -> None:
    """An ``Edit`` deny added later needs no new session: the after-command check reverts what it
    names (round 15's quarantine), so calls go on and the file keeps its content."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "x.sh").write_text("echo changed > made.cfg\n")
    async with shellrt.Runtime(
        workspace=ws, sandbox="bwrap", mode="bypassPermissions", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        rt.governance.engine.rules.add(
            parse_rule("Edit(**/*.cfg)", "deny", RuleOrigin("session", root=rt.workspace))
        )
        block = await _bash(rt, "bash x.sh")
        assert not (ws / "made.cfg").exists(), _text(block)


async def test_an_allow_remembered_mid_session_changes_nothing(tmp_path: Path) -> None:
    """What an approver remembers (an allow) narrows nothing: calls go on."""
    ws = tmp_path / "ws"
    ws.mkdir()
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", mode="bypassPermissions", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        rt.governance.settings.rules.add(parse_rule("Bash(echo:*)", "allow"))
        block = await _bash(rt, "echo fine")
        assert not block["is_error"] and "fine" in _text(block), block


async def test_the_same_rule_given_at_start_is_the_sandboxs(tmp_path: Path) -> None:
    """The baseline the refusal stands for: given at start, the rule is a mask and the script reads nothing."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "secret.txt").write_text("TOPSECRET\n")
    (ws / "x.sh").write_text("cat secret.txt\n")
    async with shellrt.Runtime(
        workspace=ws,
        sandbox="bwrap",
        mode="bypassPermissions",
        session_dir=tmp_path / "s",
        settings_files=(),
        deny=("Read(./secret.txt)",),
    ) as rt:
        block = await _bash(rt, "bash x.sh")
        assert "TOPSECRET" not in _text(block), block
