"""Red team round 33 (settings): a Bash deny rule spelled so that it denies nothing.

The operator's ``~/.shellrt/settings.json`` denies ``rm`` in one of the ways people write it:
``Bash(rm: *)``, ``Bash(rm::*)``, ``Bash(rm:**)``, a fullwidth colon, ``Bash("rm":*)``. Each parsed,
was listed by ``shellrt permissions list``, and matched no ``rm`` command: under
``bypassPermissions`` the model's ``rm -rf x`` was allowed. Now each is refused with the spelling
meant, and a refused deny rule degrades the session (bypass mode stops allowing).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.permissions import build_governance
from shellrt.protocol import ToolContext
from shellrt.tools.bash import Bash

pytestmark = pytest.mark.anyio

INERT = ["Bash(rm: *)", "Bash(rm::*)", "Bash(rm:**)", "Bash(rm\uff1a*)", 'Bash("rm":*)', "Bash('rm' -rf:*)"]
#: Still taken as written: they can match a command.
KEPT = ["Bash(rm:*)", "Bash(echo a: *)", "Bash(npm run test:*)", "Bash(git commit -m 'x':*)"]


async def test_inert_rm_deny_rules_are_refused_and_fail_closed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    (home / ".shellrt").mkdir(parents=True)
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "session", workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    bash = Bash()
    call = bash.parse_input({"command": "rm -rf x"})
    allowed, silent = [], []
    for rule in INERT:
        (home / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {"deny": [rule]}}))
        gov = build_governance(ws, home=home, managed_path=tmp_path / "managed.json", mode="bypassPermissions")
        if (await gov.engine.decide(bash, call, ctx)).behavior == "allow":
            allowed.append(rule)
        if not gov.settings.degraded or not any("rm:*" in d or "rm -rf:*" in d for d in gov.settings.diagnostics):
            silent.append(rule)
    assert not allowed, f"rm -rf x was allowed under these deny rules: {allowed}"
    assert not silent, f"not refused with the spelling meant: {silent}"
    (home / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {"deny": KEPT}}))
    gov = build_governance(ws, home=home, managed_path=tmp_path / "managed.json", mode="bypassPermissions")
    assert not gov.settings.degraded, gov.settings.diagnostics
    assert (await gov.engine.decide(bash, call, ctx)).behavior == "deny"
