"""Red team round 41 (files4): Glob's refusal counted the names in a read-denied directory.

Glob leaves masked names out of what it lists and out of its "showing N of M" count, but when
matching ran past its deadline (a long pattern with many ``*``: the model's to choose) the error
said "Matching the pattern against the N paths": N was the listing before masks, so it told
how many files a masked directory holds (the walker lists them; ripgrep on bwrap sees an empty
place). Now the error names no count.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from shellrt.tools import _search, glob
from shellrt.tools.glob import GlobTool
from tests import _nonroot
from tests.test_tools_edit import make_ctx


def test_the_match_timeout_does_not_count_masked_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / ".session").mkdir()
    (root / "a.txt").write_text("a\n")
    for i in range(7):
        (root / f"secrets/k{i}").write_text("KEY\n")
    monkeypatch.setattr(_search, "ripgrep_binary", lambda: None)  # the walker, as a masked local session
    monkeypatch.setattr(glob, "MATCH_TIMEOUT_S", -1.0)  # past its deadline at once
    ctx = make_ctx(root, read_denied=(root / "secrets",))

    async def go() -> str:
        tool = GlobTool()
        inp = tool.parse_input({"pattern": "**/*"})
        assert (await tool.validate(inp, ctx)).ok
        try:
            return str(tool.to_model_content((await tool.call(inp, ctx)).data))
        except Exception as exc:
            return str(exc)

    got = anyio.run(go)
    assert "took longer than" in got, got
    assert "8" not in got.replace(str(root), ""), got  # 1 visible + 7 masked names


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_the_match_timeout_does_not_count_masked_names")
