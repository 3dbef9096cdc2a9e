"""Red team, round 51 (analysis11): code handed on to another shell that no part showed, and env's one reading.

``ssh HOST WORDS…`` joins WORDS with spaces and the remote user's shell parses the line again (OpenSSH's
documented behaviour, also after options read again past the host: ``ssh h -p 22 CMD``). Beside ``Bash(rm:*)``
denied in ``bypassPermissions`` the deny rule's scan read only the words as written: ``ssh localhost 'x=r;
${x}m y'`` ran ``rm y`` on this machine unasked (2 of 2 allowed before). Now a remote command line that is more
than plain words is code no rule reads (asked beside deny and ask rules, as ``sh`` reading its standard input
is); plain words (``ssh h ls -l``) are unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.analysis.programs.wrappers import WRAPPERS, unwrap
from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

ATTACKS = ["ssh localhost 'x=r; ${x}m y'", "ssh -p 22 localhost -o BatchMode=yes 'x=r; ${x}m y'",
           "ssh -- localhost 'x=r;' '${x}m y'"]  # fmt: skip
KEPT = ["ssh localhost ls -l", "ssh -p 22 localhost uname -a"]


@pytest.mark.anyio
async def test_a_remote_command_line_meets_deny_rules(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "bypassPermissions", deny=["Bash(rm:*)"])
    ran = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (ran, refused) == ([], [])


def test_env_has_one_reading() -> None:
    """Round 50 made `env_args.read_env` env's only reader; the wrapper table kept an option spec for env that
    nothing read (a second, unchecked reading waiting to be used). It holds none now, and env still unwraps."""
    spec = WRAPPERS["env"]
    assert (spec.value_opts, spec.script_opts, spec.assignments, spec.skip) == (frozenset(), frozenset(), False, 0)
    assert unwrap(["env", "-u", "X", "-C", "d", "Y=1", "ls"]).start == 6
    assert unwrap(["env", "-S", "ls -l"]).script is not None or unwrap(["env", "-S", "ls -l"]).start is not None
