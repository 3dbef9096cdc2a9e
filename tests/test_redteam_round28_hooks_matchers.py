r"""Red team round 28 (hooks): a guard hook whose matcher can match no tool is not silently dropped.

Hook matchers name tools, case-sensitively (as in Claude Code). A PreToolUse guard written like a
permission rule (``"matcher": "Bash(rm:*)"``, a regex that matches ``Bashrm``) or in another case
(``"bash"``, ``"Write|edit"``) or with spaces (``"Edit | Write"``) matched no call: the guard never ran and nothing said so (an invalid
regex was at least reported). A regex nesting repeats (``mcp__(\w+)+X``) stalled the session on
a long MCP tool name (it is matched on the event loop for every call). Now each is reported with what to write instead, and for the events
that decide whether a call runs (PreToolUse, PermissionRequest) the session is degraded, as for a
malformed deny rule: the missing guard may be the one that mattered, so nothing but a person allows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shellrt.permissions import build_governance


def _gov(tmp_path: Path, name: str, hooks: dict[str, Any], permissions: dict[str, Any] | None = None) -> Any:
    ws = tmp_path / name
    (ws / ".shellrt").mkdir(parents=True)
    settings = {"hooks": hooks, "permissions": permissions or {}}
    (ws / ".shellrt" / "settings.json").write_text(json.dumps(settings, indent=2))
    return build_governance(ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", trust_workspace=True)


def _hook(matcher: str) -> list[dict[str, Any]]:
    return [{"matcher": matcher, "hooks": [{"type": "command", "command": "exit 2"}]}]


def test_a_guard_matcher_that_names_no_tool_degrades_the_session(tmp_path: Path) -> None:
    cases = {
        "rule": ("PreToolUse", "Bash(rm:*)", "not permission rules"),
        "case": ("PreToolUse", "bash", "did you mean 'Bash'"),
        "case2": ("PermissionRequest", "Write|edit", "did you mean 'Edit'"),
        "regex": ("PreToolUse", "Bash(", "not a valid regex"),
        "spaces": ("PreToolUse", "Edit | Write", "write 'Edit|Write'"),
        # Nested repeats: 8 s per call on a 27-character MCP tool name, hours on a longer one.
        "redos": ("PreToolUse", r"mcp__(\w+)+X", "exponential time"),
    }
    for name, (event, matcher, said) in cases.items():
        gov = _gov(tmp_path, name, {event: _hook(matcher)}, {"allow": ["Bash(ls:*)"]})
        assert any(said in d and repr(matcher)[1:-1] in d for d in gov.diagnostics), (name, gov.diagnostics)
        assert gov.settings.degraded and gov.engine.degraded, (name, gov.diagnostics)
    # A post hook decides nothing: reported, not degrading.
    gov = _gov(tmp_path, "post", {"PostToolUse": _hook("bash")})
    assert any("did you mean 'Bash'" in d for d in gov.diagnostics) and not gov.settings.degraded
    # Matchers that name tools as written are left alone.
    fine = {"PreToolUse": [*_hook("Bash"), *_hook("Edit|Write"), *_hook("mcp__gh__.*"), *_hook("Notebook.*"), *_hook("*"), *_hook("KillShell")]}
    gov = _gov(tmp_path, "fine", fine)
    assert not gov.diagnostics and not gov.settings.degraded, gov.diagnostics
    assert len(gov.hooks.specs) == 6
