"""Red team round 27 (fold): write-deny rules compared names as spelt.

``Edit(./secrets/**)`` denied did not deny ``SECRETS/k``, ``secrets./k`` or ``s<ZWJ>ecrets/k``,
which on a filesystem that folds names (macOS, Windows and SMB shares, vfat, a ``+F`` directory)
*are* ``secrets/k``. Deny and ask rules now also match the folded spelling (`sandbox._namefold`);
allow rules are not widened. The Runtime test writes with the file tools and with a command (the
after-command check reverts a denied name a command created).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import shellrt
from shellrt.permissions import parse_rule
from shellrt.permissions.rules import RuleOrigin
from shellrt.protocol import ToolUseBlock
from tests._governance import isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()
SPELLINGS = ("SECRETS/k", "Secrets/k", "secrets./k", "secrets /k", "s\u200decrets/k", "\u017fecrets/k")


def test_deny_and_ask_match_folded_spellings_allow_does_not(tmp_path: Path) -> None:
    origin = RuleOrigin("project", root=tmp_path)
    home = tmp_path / "home"
    for kind in ("deny", "ask"):
        for tool in ("Edit", "Write", "Read"):
            rule = parse_rule(f"{tool}(./secrets/**)", kind, origin)  # type: ignore[arg-type]
            for rel in SPELLINGS:
                assert rule.match_item(str(tmp_path / rel), home=home, resolve=False), (kind, tool, rel)
            assert not rule.match_item(str(tmp_path / "public/k"), home=home, resolve=False)
    floating = parse_rule("Edit(.env)", "deny", origin)
    assert floating.match_item(str(tmp_path / "sub/.ENV"), home=home, resolve=False)
    allow = parse_rule("Edit(./docs/**)", "allow", origin)
    assert allow.match_item(str(tmp_path / "docs/x"), home=home, resolve=True)
    assert not allow.match_item(str(tmp_path / "DOCS/x"), home=home, resolve=True)


async def test_file_tools_and_commands_cannot_write_folded_denied_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "secrets").mkdir()
    (ws / "secrets" / "k").write_text("KEY\n")
    calls = [
        ToolUseBlock(id=f"f27r{next(_ids)}", name="Write", input={"file_path": str(ws / rel), "content": "x"})
        for rel in SPELLINGS
    ]
    # A script the analysis cannot look into: the after-command check judges what it created.
    (ws / "plant.sh").write_text("mkdir -p SECRETS && printf planted > SECRETS/new && echo done\n")
    calls.append(ToolUseBlock(id=f"f27r{next(_ids)}", name="Bash", input={"command": "sh plant.sh"}))
    async with shellrt.Runtime(
        ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions", deny=["Edit(./secrets/**)"]
    ) as rt:
        results = await rt.run_envelopes(calls)
    assert all(r.is_error for r in results[: len(SPELLINGS)]), [r.model.content for r in results]
    written = [rel for rel in SPELLINGS if (ws / rel).exists()]
    assert written == [], written
    said = str(results[-1].model.content)
    assert "done" in said and not (ws / "SECRETS" / "new").exists(), said
    assert (ws / "secrets" / "k").read_text() == "KEY\n"
