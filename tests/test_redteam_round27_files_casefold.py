"""Red team, round 27 (files): a protected name spelt as a case-insensitive filesystem reads it.

The file tools judge a path by its name: a write below ``.git/hooks`` or ``.claude/`` asks a
person (a safety check no mode skips), a read below a read-denied path is refused. On a
filesystem that folds case (macOS's APFS and HFS+, Windows and its shares, vfat, an ext4 or
tmpfs directory with ``+F``) ``.Git/hooks/pre-commit`` *is* ``.git/hooks/pre-commit``; HFS+ also
ignores zero-width characters in names and Windows trailing dots and blanks. git refuses such
spellings in trees on every platform for that reason. Writing ``.Git/hooks/pre-commit`` or
``.CLAUDE/settings.json`` went through unasked in ``acceptEdits``, and reading ``SECRETS/key``
(``secrets`` read-denied) was allowed: a later git (or agent) obeys what the tool planted, and
the secret's bytes reach the model. This machine's kernel has no Unicode tables (no casefold
mount), so the verdicts are checked by name: the fold is the class, whatever the filesystem.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

import shellrt
from shellrt.protocol import ToolContext
from shellrt.tools.edit import EditTool
from shellrt.tools.read import ReadTool
from shellrt.tools.write import WriteTool
from tests._calls import block_text, one_call

#: Spellings of protected places a folding filesystem resolves to the protected file.
TWINS = [
    ".Git/hooks/pre-commit",
    ".GIT/HOOKS/post-checkout",
    ".g\u200cit/hooks/pre-commit",  # HFS+ ignores zero-width (non-)joiners in names
    ".git./hooks/pre-commit",  # Windows drops a trailing dot
    ".CLAUDE/settings.json",
    ".Claude/commands/x.md",
    ".Shellrt/settings.json",
    ".\u017fhellrt/settings.json",  # long s: Unicode case folding makes it an s
    ".MCP.json",
    ".VSCode/tasks.json",
    ".BashRC",
    ".GIT/objects/info/alternates",
]


def _ctx(root: Path, **kw: Any) -> ToolContext:
    return ToolContext(
        session_id="s", session_dir=root / ".session", workspace=root, cwd=str(root), allowed_roots=(root,), **kw
    )


async def _verdict(tool: Any, raw: dict[str, Any], ctx: ToolContext) -> tuple[str, bool]:
    inp = tool.parse_input(raw)
    await tool.validate(inp, ctx)
    res = await tool.check_permissions(tool.backfill(inp), ctx)
    return str(res.behavior), bool(getattr(res, "safety_check", False))


def test_a_folded_twin_of_a_protected_name_needs_approval(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = _ctx(ws)
    unasked = []
    for rel in TWINS:
        behavior, safety = anyio.run(_verdict, WriteTool(), {"file_path": str(ws / rel), "content": "x"}, ctx)
        if behavior != "ask" or not safety:
            unasked.append((rel, behavior))
    assert unasked == [], f"{len(unasked)} of {len(TWINS)} twins written without a safety check: {unasked}"
    # Ordinary mixed-case names stay ordinary.
    for rel in ("src/Main.py", "Docs/README.md", "GitNotes.txt", "claude_notes.md"):
        assert anyio.run(_verdict, WriteTool(), {"file_path": str(ws / rel), "content": "x"}, ctx)[0] != "ask"


def test_a_folded_twin_of_a_read_denied_path_is_denied(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / "secrets" / "key").write_text("k")
    (ws / ".env").write_text("TOKEN=1")
    ctx = _ctx(ws, read_denied=(ws / "secrets", ws / ".env"))
    for rel in ("SECRETS/key", "Secrets/key", "secrets./key", ".ENV", ".e\u200dnv", ".env "):
        for tool, raw in (
            (ReadTool(), {"file_path": str(ws / rel)}),
            (EditTool(), {"file_path": str(ws / rel), "old_string": "k", "new_string": "j"}),
        ):
            assert anyio.run(_verdict, tool, raw, ctx)[0] == "deny", (rel, tool.name)
    assert anyio.run(_verdict, ReadTool(), {"file_path": str(ws / "secretsX")}, ctx)[0] != "deny"


def test_a_session_plants_no_twin_and_reads_no_denied_twin(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / "secrets" / "key").write_text("TOPSECRET\n")
    (ws / ".shellrt").mkdir()
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(./secrets/**)"]}}))

    async def main() -> list[str]:
        async with shellrt.Runtime(
            workspace=ws, sandbox="local", mode="acceptEdits", session_dir=tmp_path / "s"
        ) as rt:
            return [
                block_text(await one_call(rt, "Write", file_path=str(ws / rel), content="#!/bin/sh\n"))
                for rel in (".Git/hooks/pre-commit", ".CLAUDE/settings.json")
            ] + [block_text(await one_call(rt, "Read", file_path=str(ws / "SECRETS" / "key")))]

    *writes, read = anyio.run(main)
    assert all("touches" in t for t in writes), writes
    assert not (ws / ".Git").exists() and not (ws / ".CLAUDE").exists()
    # The mask refuses it, or (round 27 fold) the deny rule, which now matches the folded name first.
    assert "read-denied" in read or "denied by deny rule Read(./secrets/**)" in read, read
    assert "TOPSECRET" not in read
