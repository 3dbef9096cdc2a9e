"""Red team, round 28 (analysis): code a pwsh command line runs that its words do not show.

``pwsh -EncodedCommand`` (``-enc``, ``-e``, ``-ec``, ``/ec``, any prefix) runs base64 of UTF-16LE
text, and pwsh reads its commands from standard input with ``-Command -``, ``-File -``, ``-`` or no
command at all, and after one with ``-NoExit``/``-Interactive``. A deny rule reads words only, so in
``bypassPermissions`` mode, where deny rules are the only guard, these ran what the rule names.
Decisions of the real engine, from the Bash and the PowerShell tools (no pwsh here: the CLI's
documented parameters).
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from shellrt.tools.powershell import PowerShell
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide, missed_denies

pytestmark = pytest.mark.anyio


def enc(script: str) -> str:
    return base64.b64encode(script.encode("utf-16-le")).decode()


#: Hidden forms of one command (the rule names it as the tool sees it).
HIDDEN = [
    f"pwsh -enc {enc('Remove-Item x; rm x')}", f"powershell -EncodedCommand {enc('ls; Remove-Item x; rm x')}",
    f"PWSH -NoProfile /ec '{enc('rm x; Remove-Item x')}'", f"pwsh -e {enc('pwsh -enc ' + enc('rm x; ri x'))}",
    f"pwsh -enc {enc('rm x')[:-3]}",  # does not decode here (an odd byte): fail closed
    "echo 'r''m x; ri x' | pwsh -c -", "cat cmds.txt | pwsh -NoProfile", "cat cmds.txt | pwsh -File -",
    "cat cmds.txt | pwsh -NoExit -c ls", "cat cmds.txt | pwsh -", f"pwsh -Frob -enc {enc('rm x; ri x')}",
]
BASH = [("Bash(rm:*)", [f"env {c}" if c.startswith("pwsh -enc") else c for c in HIDDEN])]
PWSH = [("PowerShell(Remove-Item:*)", HIDDEN)]


async def test_deny_rules_meet_encoded_and_standard_input_commands(tmp_path: Path) -> None:
    assert await missed_denies(tmp_path, Bash(), BASH) == []
    assert await missed_denies(tmp_path, PowerShell(), PWSH) == []
    # What pwsh's words show is judged as before: a script file, a command in the clear, a version.
    kept = ["pwsh -f x.ps1", "pwsh -c ls", "pwsh -v", f"pwsh -enc {enc('ls')}", "pwsh -ExecutionPolicy Bypass x.ps1"]
    assert await decide(tmp_path, Bash(), kept, "bypassPermissions", deny=["Bash(rm:*)"]) == ["allow"] * len(kept)
