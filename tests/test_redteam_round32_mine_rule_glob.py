"""Red team, round 32 (lead, found by the files2 helper): a rule glob ``re`` refuses broke every call.

A repository's settings may hold deny rules (they only tighten, trusted or not). ``Read(./[z-a]/**)``
(a reversed range) made the glob's translation a class ``re`` refuses: every Read of the workspace
raised ``re.error`` from the permission check (1 of 1 before). Now a class is translated member by
member, each escaped, and a reversed range is left out as bash and fnmatch read it (a class of only
that matches nothing); the other rules keep denying what they name. Decisions of the real engine,
the same for every caller and backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.read import ReadTool
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio


async def test_a_glob_re_refuses_neither_crashes_nor_opens_what_other_rules_deny(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for name in ("plain.txt", "b/x", "z/x", "q/x"):
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("x")
    deny = ["Read(./[z-a]/**)", "Read(./[a-c]/**)", "Read(./[!a-y]/**)", "Read(./[a-]/*)"]
    calls = [{"file_path": str(ws / name)} for name in ("plain.txt", "b/x", "z/x", "q/x")]
    got = await decide(tmp_path, ReadTool(), calls, "default", ws=ws, deny=deny)
    assert got == ["allow", "deny", "deny", "allow"], got
