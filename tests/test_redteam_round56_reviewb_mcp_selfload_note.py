"""Red team, round 56 (review b): the self-load budget's word when the operator loads every tool.

Round 56 (mcpclient2) bounds what a server's own ``anthropic/alwaysLoad`` puts in every request.
It charged the claims even of a server the operator set ``"alwaysLoad": true`` on, and then said
"N of them stay deferred ... set alwaysLoad on the server to load them all" -- of tools that were
loaded, on a server that had it set: a diagnostic telling the operator to do what they did.
"""

from __future__ import annotations

from pathlib import Path

from tests.test_redteam_round56_mcpclient2_selfload import _loaded, _tools


def test_no_deferral_note_when_the_operator_loads_every_tool(tmp_path: Path) -> None:
    """Failed before (1 of 1): the note named tools that were in fact loaded."""
    tools, diagnostics = _loaded(tmp_path, _tools(10, 20_000), alwaysLoad=True)
    assert [t.is_deferred() for t in tools] == [False] * 10
    assert not [d for d in diagnostics if "stay deferred" in d], diagnostics
