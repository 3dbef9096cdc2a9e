"""Red team, round 27 (analysis): a Bash deny or ask rule meets its program name in any case.

On a case-insensitive filesystem (macOS by default, Windows) ``CURL x`` runs curl; a deny rule
``Bash(curl:*)`` compared the name as written, so in ``bypassPermissions`` mode (deny rules are the
only guard) it let ``CURL`` through. Deny and ask rules now compare the program name without case (a
deny is never weakened by matching more); allow rules keep it (never widened). Real engine decisions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio


async def test_bash_deny_and_ask_rules_fold_the_program_name(tmp_path: Path) -> None:
    commands = ["CURL x", "Curl -s x", "/usr/bin/CURL x", "env CURL x", "echo a && cUrL x"]
    got = await decide(tmp_path, Bash(), commands, "bypassPermissions", deny=["Bash(curl:*)"])
    assert got == ["deny"] * len(commands)
    got = await decide(tmp_path, Bash(), ["GIT push", "Git push -f"], "bypassPermissions", deny=["Bash(git push:*)"])
    assert got == ["deny", "deny"]
    assert await decide(tmp_path, Bash(), ["LS -a"], "bypassPermissions", ask=["Bash(ls:*)"]) == ["ask"]
    # A rule written in capitals meets the lower-case program too.
    assert await decide(tmp_path, Bash(), ["curl x"], "bypassPermissions", deny=["Bash(CURL:*)"]) == ["deny"]
    # Arguments keep their case (``-X`` is not ``-x``), and allow rules are not widened.
    assert await decide(tmp_path, Bash(), ["curl -x y"], "bypassPermissions", deny=["Bash(curl -X:*)"]) == ["allow"]
    assert await decide(tmp_path, Bash(), ["MYTOOL a", "mytool a"], "default", allow=["Bash(mytool:*)"]) == [
        "ask", "allow"]
