"""Red team round 42 (files5): a rule-denied file's lines counted toward Grep's line stop.

Round 41 left it: a file only a deny rule covers (``Read(./**/*.pem)``, made after the session
started, so no mask hides it) was searched by ripgrep on the host and by the walker of a masked
session, and its matching lines counted toward the "more than 100,000 lines" stop before its hits
were dropped. ``hello|TOKEN=h`` failed with the stop and ``hello|TOKEN=x`` answered ``ok.txt``:
the denied file read a guess at a time. Now a hit of a file the session may not read is neither
kept nor counted (ripgrep's stream is judged per file as it comes; the walker is told the denied
files below its root and does not open them).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from shellrt.permissions import PermissionGate, build_governance
from shellrt.protocol import ToolContext
from shellrt.tools import _search
from shellrt.tools._search_types import MAX_HIT_LINES
from shellrt.tools.grep import GrepTool
from tests import _nonroot
from tests.test_tools_edit import make_ctx


def _session(tmp_path: Path, walker: bool, monkeypatch: pytest.MonkeyPatch) -> ToolContext:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / ".shellrt").mkdir(parents=True)
    (root / ".session").mkdir()
    (root / "secrets").mkdir()
    (root / "ok.txt").write_text("hello\n")
    (root / ".shellrt/settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(./**/*.pem)"]}}))
    gov = build_governance(
        root, home=tmp_path / "home", managed_path=tmp_path / "managed.json", trust_workspace=True
    )
    # Made after the session started: the rule masks nothing, it is judged per file.
    (root / "keys").mkdir()
    (root / "keys/id.pem").write_text("TOKEN=hunter2\n" * (MAX_HIT_LINES + 1))
    if walker:  # a masked local session: the fd-anchored walker searches
        monkeypatch.setattr(_search, "ripgrep_binary", lambda: None)
        ctx = make_ctx(root, read_denied=(root / "secrets",))
    else:
        if _search.ripgrep_binary() is None:
            pytest.fail("ripgrep is needed for the host-ripgrep case (install rg)")
        ctx = make_ctx(root)
    ctx.services[PermissionGate] = gov.gate
    return ctx


def _grep(ctx: ToolContext, pattern: str) -> str:
    async def go() -> str:
        tool = GrepTool()
        inp = tool.parse_input({"pattern": pattern, "output_mode": "content"})
        assert (await tool.validate(inp, ctx)).ok
        try:
            return str(tool.to_model_content((await tool.call(inp, ctx)).data))
        except Exception as exc:  # the error text is an answer too
            return f"{type(exc).__name__}: {exc}"

    return anyio.run(go)


@pytest.mark.parametrize("walker", [False, True], ids=["host-ripgrep", "walker"])
def test_a_rule_denied_files_lines_do_not_count_toward_the_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walker: bool
) -> None:
    ctx = _session(tmp_path, walker, monkeypatch)
    hit, miss = _grep(ctx, "hello|TOKEN=h"), _grep(ctx, "hello|TOKEN=x")
    assert "ok.txt" in hit and "hunter" not in hit, hit
    assert hit == miss, f"the answer depends on the denied file's content:\n{hit}\n---\n{miss}"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_rule_denied_files_lines_do_not_count_toward_the_stop")
