"""Shared scaffolding of the governance red-team suites: an isolated home, a workspace, a local Runtime.

Governance attacks run on the local backend, where governance is the only guard; each suite
used to carry its own copy of this set-up.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.protocol import ResultEnvelope, ToolUseBlock
from shellrt.tools.bash import Bash

_ids = itertools.count()


def envelope_text(envelope: ResultEnvelope) -> str:
    """The model-facing text of a result, whether its content is a string or blocks."""
    content = envelope.model.content
    return content if isinstance(content, str) else "\n".join(getattr(b, "text", "") for b in content)


def isolated_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path/ws``, with HOME, shellrt's state, managed settings and the trust store moved
    under ``tmp_path``."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trust" / "store.json"))
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def trust_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """HOME, the trust store and managed settings moved under ``tmp_path``; the values set."""
    values = {
        "HOME": str(tmp_path / "home"),
        "SHELLRT_TRUST_STORE": str(tmp_path / "config" / "trusted.json"),
        "SHELLRT_MANAGED_SETTINGS": str(tmp_path / "managed.json"),
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return values


async def run_bash(
    ws: Path, commands: list[str], *, mode: str, id_prefix: str, **kw: Any
) -> list[ResultEnvelope]:
    """Each command as one Bash tool_use of one batch, in a fresh local session on ``ws``."""
    async with shellrt.Runtime(
        workspace=ws,
        sandbox="local",
        session_dir=ws.parent / f".s{next(_ids)}",
        tools=[Bash()],
        settings_files=kw.pop("settings_files", ()),
        mode=mode,
        **kw,
    ) as rt:
        blocks = [
            ToolUseBlock(id=f"{id_prefix}{next(_ids)}", name="Bash", input={"command": c}) for c in commands
        ]
        return await rt.run_envelopes(blocks)


async def default_decisions(tmp_path: Path, tool: Any, commands: list[str], ws: Path | None = None) -> list[str]:
    """The permission engine's behaviour ("allow", "ask", "deny") for each command of ``tool`` in
    default mode, in a trusted workspace (``ws``, else ``tmp_path/ws``) with no rules of its own."""
    from shellrt.permissions import build_governance
    from shellrt.protocol import ToolContext

    ws = ws or tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True, exist_ok=True)
    (ws / ".shellrt" / "settings.json").write_text('{"permissions": {}}')
    gov = build_governance(ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", mode="default",
                           trust_workspace=True)
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "session", workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    return [(await gov.engine.decide(tool, tool.parse_input({"command": c}), ctx)).behavior for c in commands]


def record_entries(path: Path) -> dict[str, object]:
    """The workspace-writes record's per-workspace entries (not its ``~marks``/``~reviewed``
    tables, round 25): what a clean session leaves none of."""
    data = json.loads(path.read_text())
    return {k: v for k, v in data.items() if not k.startswith("~")}


async def rule_decisions(
    tmp_path: Path, tool: Any, commands: list[str], *, mode: str, deny: list[str], ws: Path | None = None
) -> list[str]:
    """The permission engine's behaviour for each command of ``tool`` in ``mode``, in a trusted
    workspace (``ws``, else ``tmp_path/ws``) whose project settings hold the ``deny`` rules."""
    from shellrt.permissions import build_governance
    from shellrt.protocol import ToolContext

    ws = ws or tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True, exist_ok=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {"deny": deny}}))
    gov = build_governance(ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", mode=mode,
                           trust_workspace=True)
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "session", workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    return [(await gov.engine.decide(tool, tool.parse_input({"command": c}), ctx)).behavior for c in commands]
