"""Red team round 28 (hooks): what each permission mode promises, probed with real calls (bwrap).

Found closed (no change; kept as a guard): ``plan`` runs nothing that writes (a redirect, ``sed -i``,
``python3 -c`` writing, the Write tool); ``acceptEdits`` allows a Write and a redirect inside the
workspace, but not ``sed -i`` (not judged an edit), not a Write through a symlinked directory that
leads out, nor git metadata; ``bypassPermissions`` keeps the sandbox: a write outside the workspace
does not reach the host, and a deny rule still wins.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import shellrt
from tests._bwrap_session import require_bwrap
from tests._calls import block_text, one_call

pytestmark = pytest.mark.anyio


async def _call(rt: shellrt.Runtime, name: str, tool_input: dict[str, Any]) -> tuple[bool, str]:
    block = await one_call(rt, name, **tool_input)
    return bool(block.get("is_error")), block_text(block)


async def test_each_mode_keeps_its_promise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_bwrap()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    ws, out = tmp_path / "ws", tmp_path / "outside"
    (ws / ".shellrt").mkdir(parents=True)
    out.mkdir()
    (out / "o.txt").write_text("orig\n")
    (ws / "f.txt").write_text("aaa\n")
    (ws / "linkdir").symlink_to(out)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Bash(touch:*)"]}}))

    async def session(mode: str, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
        async with shellrt.Runtime(ws, "bwrap", session_dir=tmp_path / f"s-{mode}", mode=mode) as rt:
            return [await _call(rt, name, inp) for name, inp in calls]

    plan = await session("plan", [
        ("Bash", {"command": "echo x > g.txt"}),
        ("Bash", {"command": "sed -i s/a/b/ f.txt"}),
        ("Bash", {"command": "python3 -c \"open('p.txt','w').write('x')\""}),
        ("Write", {"file_path": str(ws / "w.txt"), "content": "x"}),
        ("Bash", {"command": "cat f.txt"}),
    ])
    # The python3 -c call is refused one step earlier since round 29 (analysis): code no deny rule
    # can read asks beside the `Bash(touch:*)` deny, and no one answers here; refused either way.
    assert all(err and ("plan mode" in text or "code that can build any command" in text) for err, text in plan[:4]), plan
    assert sum("plan mode" in text for _, text in plan[:4]) >= 3, plan
    assert plan[4] == (False, "aaa"), plan[4]
    edits = await session("acceptEdits", [
        ("Write", {"file_path": str(ws / "new.txt"), "content": "hi"}),
        ("Bash", {"command": "echo x > g.txt"}),
        ("Bash", {"command": "sed -i s/a/b/ f.txt"}),
        ("Write", {"file_path": str(ws / "linkdir" / "w.txt"), "content": "PWN"}),
        ("Write", {"file_path": str(ws / ".git" / "hooks" / "pre-commit"), "content": "#!/bin/sh\n"}),
    ])
    assert [err for err, _ in edits] == [False, False, True, True, True], edits
    assert "outside the allowed directories" in edits[3][1] and "git metadata" in edits[4][1], edits
    bypass = await session("bypassPermissions", [
        ("Bash", {"command": f"echo PWN > {out}/o.txt; echo PWN > {out}/b.txt; echo PWN > linkdir/c.txt; true"}),
        ("Bash", {"command": "touch t.txt"}),
    ])
    assert not bypass[0][0] and bypass[1][0] and "Bash(touch:*)" in bypass[1][1], bypass
    assert sorted(os.listdir(out)) == ["o.txt"] and (out / "o.txt").read_text() == "orig\n"
    assert (ws / "f.txt").read_text() == "aaa\n" and (ws / "new.txt").exists() and not (ws / "t.txt").exists()
    assert not (ws / "p.txt").exists() and not (ws / "w.txt").exists() and not (ws / ".git").exists()
