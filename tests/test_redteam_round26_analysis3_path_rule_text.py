"""Red team, round 26 (wave 3, analysis-3): path rules whose text silently matched no file.

``Read("./secrets/k")`` (quotes as in a shell) kept the quotes as part of the name; ``Read(./k\\ )`` (a
blank escaped as gitignore patterns allow, for a file named ``k ``) lost its blank when the specifier was
stripped, leaving a lone backslash; ``Read(./k\\)`` ends in one. Each deny rule matched nothing, so in
``bypassPermissions`` mode the file was read unasked. Now the quoted and the lone-backslash forms are
syntax errors (a bad deny rule degrades the session: fail closed) and an escaped blank is kept.
Decisions of the real permission engine with the real Read tool.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.permissions.errors import RuleSyntaxError
from shellrt.permissions.rules import parse_rule
from shellrt.tools.read import ReadTool
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

RULES = {'Read("./secrets/k")': "k", "Read('./secrets/k')": "k", "Read(./secrets/k\\ )": "k ",
         "Read(./secrets/k\\)": "k"}


async def test_a_path_rule_that_would_match_nothing_fails_closed(tmp_path: Path) -> None:
    allowed = []
    for i, (rule, name) in enumerate(RULES.items()):
        ws = tmp_path / f"w{i}"
        (ws / "secrets").mkdir(parents=True)
        (ws / "secrets" / name).write_text("s")
        [got] = await decide(tmp_path, ReadTool(), [{"file_path": str(ws / "secrets" / name)}],
                             "bypassPermissions", ws=ws, deny=[rule])
        allowed += [rule] if got == "allow" else []
    assert allowed == []
    with pytest.raises(RuleSyntaxError, match=r"write Read\(\./secrets/k\)"):
        parse_rule('Read("./secrets/k")', "deny")
    assert parse_rule("Read(./k\\\\)", "deny").specifier == "./k\\\\"  # an escaped backslash is kept
