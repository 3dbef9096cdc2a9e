"""Red team round 28 (hooks): a guard hook entry dropped as malformed degrades the session.

A PreToolUse or PermissionRequest entry that does not parse (``"timeout": 0``, Claude Code's
``"type": "prompt"``, a key shellrt does not know), an event name in another case
(``"preToolUse"``) or an event's hooks that are not a list were dropped with a diagnostic, and the
session went on allowing as if the guard had been there. Like a malformed deny rule (and a guard
whose matcher names no tool, `test_redteam_round28_hooks_matchers.py`), such a lost guard now
degrades the session: only a person allows until the file is fixed. A post hook's entry decides
nothing (reported only), and an untrusted workspace's hooks never run (so their typos do not
degrade either).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shellrt.permissions import build_governance


def _gov(tmp_path: Path, name: str, hooks: Any, *, trusted: bool = True) -> Any:
    ws = tmp_path / name
    (ws / ".shellrt").mkdir(parents=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"hooks": hooks}, indent=2))
    return build_governance(
        ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", trust_workspace=trusted
    )


def _entry(**hook: Any) -> list[dict[str, Any]]:
    return [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 2", **hook}]}]


def test_a_dropped_guard_entry_degrades_the_session(tmp_path: Path) -> None:
    lost = {
        "timeout": ({"PreToolUse": _entry(timeout=0)}, "bad PreToolUse hook"),
        "prompt": ({"PermissionRequest": _entry(type="prompt")}, "bad PermissionRequest hook"),
        "key": ({"PreToolUse": _entry(statusMessage="checking")}, "bad PreToolUse hook"),
        "case": ({"preToolUse": _entry()}, "did you mean 'PreToolUse'"),
        "shape": ({"PreToolUse": {"matcher": "Bash"}}, "must be a list"),
    }
    for name, (hooks, said) in lost.items():
        gov = _gov(tmp_path, name, hooks)
        assert any(said in d and "disabled until it is fixed" in d for d in gov.diagnostics), (name, gov.diagnostics)
        assert gov.settings.degraded and gov.engine.degraded, (name, gov.diagnostics)
    gov = _gov(tmp_path, "post", {"PostToolUse": _entry(timeout=0)})
    assert any("bad PostToolUse hook" in d for d in gov.diagnostics) and not gov.settings.degraded
    gov = _gov(tmp_path, "untrusted", {"PreToolUse": _entry(timeout=0)}, trusted=False)
    assert not gov.settings.degraded, gov.diagnostics
    gov = _gov(tmp_path, "fine", {"PreToolUse": _entry(timeout=5, onFailure="block")})
    assert not gov.settings.degraded and len(gov.hooks.specs) == 1, gov.diagnostics
