"""Red team, round 56 (rules): a deny naming a place through a symlink whose name is not ASCII.

A deny that names a place through a symbolic link covers where the link points, as the sandbox's
masks do (``Read(./config/**)`` with ``config -> ../store`` denies ``store/key``). For a non-ASCII
name the matcher normalised the rule to NFC *before* looking for the link, so a link named in NFD on
disk (what macOS writes) was never found -- whichever form the rule was written in: the Read tool read
``../store/key`` unasked in ``bypassPermissions`` under ``Read(./café/**)``, while the sandbox (which
looks for every spelling) masked it. Now every spelling on disk of the rule's fixed prefix is looked at.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from shellrt.tools.read import ReadTool
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

NFC, NFD = "caf\u00e9", "cafe\u0301"


@pytest.mark.anyio
@pytest.mark.parametrize("link", [NFD, NFC])
@pytest.mark.parametrize("spec", ["./{}/**", "./{}/key", "{}", "./{}/k*"])
@pytest.mark.parametrize("form", ["NFC", "NFD"])
async def test_the_links_target_is_denied(tmp_path: Path, link: str, spec: str, form: str) -> None:
    """Failed 8 of 16 before (the NFD link, under a rule in either form; the NFC link held, the
    matcher having normalised the rule to NFC): the Read tool read the target."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "key").write_text("SECRET56\n")
    os.symlink("../store", ws / link)
    rule = f"Read({spec.format(unicodedata.normalize(form, NFC))})"  # type: ignore[arg-type]
    got = await decide(tmp_path, ReadTool(), [{"file_path": str(tmp_path / "store" / "key")}], "bypassPermissions",
                       ws=ws, deny=[rule])  # fmt: skip
    assert got == ["deny"], (rule, got)


@pytest.mark.anyio
async def test_an_ascii_link_still_holds(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "key").write_text("SECRET56\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "key").write_text("fine\n")
    os.symlink("../store", ws / "conf")
    calls = [{"file_path": str(tmp_path / "store" / "key")}, {"file_path": str(tmp_path / "other" / "key")}]
    got = await decide(tmp_path, ReadTool(), calls, "bypassPermissions", ws=ws, deny=["Read(./conf/**)"])
    assert got == ["deny", "allow"], got


@pytest.mark.parametrize("form", ["NFC", "NFD"])
def test_the_after_command_check_follows_the_link_too(tmp_path: Path, form: str) -> None:
    """Failed 1 of 2 before (the rule in NFC; in NFD it names the link as spelled): ``Edit(./café/*.ini)``
    with ``cafe`` + U+0301 -> ``real``: the check that reverts what an Edit deny names after a command (a
    new file no mount covered) did not name ``real/new.ini`` (it did for an ASCII link: the control)."""
    from shellrt.permissions.rules import RuleOrigin, parse_rule
    from shellrt.permissions.ruleset import RuleSet
    from shellrt.runtime.write_deny_globs import WriteDenyGlobs

    ws = tmp_path / "ws"
    (ws / "real").mkdir(parents=True)
    os.symlink("real", ws / NFD)
    os.symlink("real", ws / "conf")
    origin = RuleOrigin("cli", None, None, ws)
    for name in (unicodedata.normalize(form, NFC), "conf"):
        rules = RuleSet([parse_rule(f"Edit(./{name}/*.ini)", "deny", origin)], home=tmp_path)
        assert WriteDenyGlobs(rules).match(str(ws / "real" / "new.ini"), str(ws)) is not None, name
