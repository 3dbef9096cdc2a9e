"""Red team round 43 (review22): the walker's second pass after a stop had a deadline of its own.

Round 42 (files5): when the walker stops (more than 100,000 lines, or a million files) in a session
with a deny rule, Grep lists the tree, judges each file and searches again without the refused
ones. Each of those steps had its own deadline: the search's 60 s, the listing's 60 s (after 2 s
in a thread), 20 s of judging, and the second search's 60 s again -- about 200 s of one Grep for a
search documented to end at 60 s. A hostile tree pays nothing for it: a rule-denied file with
100,001 matching lines stops the first pass at once, and the rest of the tree (or the pattern's
backtracking there) takes the remaining passes to their ends. Now all passes share one deadline.

The test records the deadline each walker child is given, when its call began and when it returned:
every later pass ends by the first one's end. The bound is exact, with no tolerance for load: the
shared deadline was fixed no later than the first call began (`first`), and a later pass's limit
was worked out no earlier than the previous pass returned, so a shared deadline gives
`limit <= first + budget - previous_end`, while a fresh 60 s per pass exceeds it by the time the
earlier passes took. (CI on stop 63's main failed the old check, `when + limit <= first + budget +
0.01`, by 0.02 s: the spy's `when` is read after the limit was computed, so load between the two
moved it.) No time is waited for.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.permissions import PermissionGate, build_governance
from shellrt.tools import _search
from shellrt.tools._search_types import MAX_HIT_LINES
from shellrt.tools.grep import GrepTool
from tests import _nonroot
from tests.test_tools_edit import make_ctx


def test_the_walkers_passes_after_a_stop_share_one_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / ".shellrt").mkdir(parents=True)
    (root / ".session").mkdir()
    (root / "secrets").mkdir()
    (root / "ok.txt").write_text("hello\n")
    (root / ".shellrt/settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(./**/*.pem)"]}}))
    gov = build_governance(
        root, home=tmp_path / "home", managed_path=tmp_path / "managed.json", trust_workspace=True
    )
    (root / "keys").mkdir()
    (root / "keys/id.pem").write_text("TOKEN=hunter2\n" * (MAX_HIT_LINES + 1))
    monkeypatch.setattr(_search, "ripgrep_binary", lambda: None)  # a masked session: the walker
    monkeypatch.setattr(_search, "IN_PROCESS_LIST_S", 0.0)  # the listing in its child too (a big tree)
    ctx = make_ctx(root, read_denied=(root / "secrets",))
    ctx.services[PermissionGate] = gov.gate
    given: list[tuple[float, float]] = []
    ended: list[float] = []
    real = _search._walker_process

    async def spy(request: bytes, fds: tuple[int, ...], limit: float, *rest: Any) -> bytes:
        given.append((time.monotonic(), limit))
        try:
            return await real(request, fds, limit, *rest)
        finally:
            ended.append(time.monotonic())

    monkeypatch.setattr(_search, "_walker_process", spy)

    async def go() -> str:
        tool = GrepTool()
        inp = tool.parse_input({"pattern": "hello|TOKEN", "output_mode": "content"})
        assert (await tool.validate(inp, ctx)).ok
        return str(tool.to_model_content((await tool.call(inp, ctx)).data))

    got = anyio.run(go)
    assert "ok.txt" in got and "hunter" not in got, got
    assert len(given) == 3, given  # the search, the listing, the search again
    assert len(ended) == 3, ended
    first, budget = given[0]
    for (_when, limit), previous_end in zip(given[1:], ended[:-1], strict=True):
        assert limit <= first + budget - previous_end + 1e-6, (  # 1e-6: float rounding only
            f"a later pass may run {limit - (first + budget - previous_end):.3f} s past the search's {budget:g} s"
        )


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_the_walkers_passes_after_a_stop_share_one_deadline")
