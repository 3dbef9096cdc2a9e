"""Red team round 42 (files5): ripgrep followed a hidden tracked file swapped for a symlink.

Grep also searches the files git tracks that the tree's ignore files hide, each by its own path
(`_hidden_search`); `hidden_tracked` checks that each is a regular file, and ripgrep then opened
the path -- following a symlink, as ripgrep always does for a path on its command line
(``--no-follow`` does not change that). A command that swapped ``notes.txt`` for a link to a
rule-denied ``keys/id.pem`` between the two showed the denied file's lines under the tracked
name, which no rule denies, once it swapped it back before the hits were judged (each judgement
after it opens the name without following a link, or resolves it). The swaps are a race; the
test stands in for it by swapping right before ripgrep runs and back right after. Now those files are searched by the walker, which opens each below the anchored root
without following a link.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.permissions import PermissionGate, build_governance
from shellrt.tools import _search
from shellrt.tools import grep as grep_module
from shellrt.tools.grep import GrepTool
from tests import _nonroot
from tests.conftest import require
from tests.test_tools_edit import make_ctx


def test_a_hidden_tracked_file_swapped_for_a_link_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(_search.ripgrep_binary() is not None, "ripgrep (the host search that followed the link)")
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / ".shellrt").mkdir(parents=True)
    (root / ".session").mkdir()
    (root / "notes.txt").write_text("nothing\n")
    (root / "ok.txt").write_text("hello\n")
    subprocess.run(["git", "-C", str(root), "init", "-q"], check=True)
    subprocess.run(["git", "-C", str(root), "add", "notes.txt", "ok.txt"], check=True)
    (root / ".ignore").write_text("notes.txt\n")
    (root / ".shellrt/settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(./**/*.pem)"]}}))
    gov = build_governance(
        root, home=tmp_path / "home", managed_path=tmp_path / "m.json", trust_workspace=True
    )
    (root / "keys").mkdir()
    (root / "keys/id.pem").write_text("TOKEN=hunter2\n")
    real_search, real_binary = grep_module.search_hidden, _search._binary_hits

    async def swapped(*args: Any, **kw: Any) -> Any:
        os.unlink(root / "notes.txt")
        os.symlink("keys/id.pem", root / "notes.txt")  # after the checks: the race's first half
        return await real_search(*args, **kw)

    def swapped_back(*args: Any) -> Any:
        os.unlink(root / "notes.txt")  # and back once ripgrep read it, before the hits are judged
        (root / "notes.txt").write_text("nothing\n")
        return real_binary(*args)

    monkeypatch.setattr(grep_module, "search_hidden", swapped)
    monkeypatch.setattr(_search, "_binary_hits", swapped_back)
    ctx = make_ctx(root)
    ctx.services[PermissionGate] = gov.gate

    async def go() -> str:
        tool = GrepTool()
        inp = tool.parse_input({"pattern": "TOKEN|hello", "output_mode": "content"})
        assert (await tool.validate(inp, ctx)).ok
        return str(tool.to_model_content((await tool.call(inp, ctx)).data))

    got = anyio.run(go)
    assert "ok.txt" in got, got
    assert "hunter2" not in got and "TOKEN" not in got, got


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_hidden_tracked_file_swapped_for_a_link_is_not_followed")
