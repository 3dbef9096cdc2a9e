"""Red team, round 40 (analysis3): PowerShell writes code where a later program finds it.

Round 39's rule (review7/13: a part writes what git, pytest, npm or a program on PATH later runs by
place) read Bash's parts only (CI108). PowerShell resolves no path, so ``Copy-Item q
.git/hooks/pre-commit; git commit``, ``Set-Content conftest.py …; pytest``, ``'x' > .git/hooks/…``
with a harmless-looking value, a variable's path and ``Copy-Item q ~/bin/cat; cat`` ran past
``PowerShell(Remove-Item:*)`` in ``bypassPermissions`` mode, where deny rules are the only guard.
Decisions of the real permission engine (no pwsh here; the same for root and uid 65534).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.powershell import PowerShell
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

DENY = ["PowerShell(Remove-Item:*)"]
#: A write (cmdlet, alias, native, redirection, variable path, nested block) then a program that finds code.
ATTACKS = [
    "Copy-Item q .git/hooks/pre-commit; git commit -m x", "cp q .git/hooks/pre-commit; git commit -m x",
    "copy q .git/hooks/pre-commit; git commit -m x", "Move-Item q .git/hooks/pre-commit; git commit -m x",
    "Set-Content .git/hooks/pre-commit x; git status", "sc .git/hooks/pre-commit x; git commit -m x",
    "Out-File -FilePath .git/hooks/pre-commit -InputObject x; git commit -m x",
    "Tee-Object -FilePath .git/hooks/pre-commit -InputObject x; git commit -m x",
    "Get-Content q | Set-Content .git/hooks/pre-commit; git commit -m x",
    "Get-Content q > .git/hooks/pre-commit; git commit -m x", "Get-Content q *> .git/hooks/pre-commit; git commit",
    "Set-Content -LiteralPath .git/hooks/pre-commit x; git commit -m x", "Set-Content .git\\hooks\\pre-commit x; git commit",
    "Copy-Item q $p; git commit -m x", "$d = '.git/hooks'; Copy-Item q \"$d/pre-commit\"; git commit -m x",
    "Copy-Item q .git/hooks/pre-commit && git commit -m x",
    "1 | ForEach-Object { Copy-Item q .git/hooks/pre-commit }; git commit -m x",
    "Copy-Item q .git/hooks/pre-commit; 1 | ForEach-Object { git commit -m x }",
    "Write-Output (Copy-Item q .git/hooks/pre-commit); git commit -m x",
    "New-Item -ItemType SymbolicLink -Path .git/hooks/pre-commit -Target q; git commit -m x",
    "Set-Content .git/config '[core] hooksPath=h'; git status", "Copy-Item -Recurse payload/* .; git commit -m x",
    "Expand-Archive a.zip .; git commit -m x", "Set-Content conftest.py 'import os'; pytest",
    "Copy-Item q conftest.py; python3 -m pytest", "Set-Content package.json '{}'; npm test",
    "Copy-Item q .git/hooks/pre-commit; make", "Set-Content -Path ~/bin/ls -Value x; ls y",
    "Copy-Item q ~/bin/cat; cat y", "Set-Content ./t.ps1 x; ./t.ps1", "Set-Content $PROFILE x; pwsh -c 1",
    "Set-Content ~/.local/share/powershell/Modules/M/M.psm1 x; Get-M",
]
#: Allowed before and after: reads beside reads, a write beside a core cmdlet, git beside no write.
KEPT = [
    "git add .; git commit -m x", "Get-ChildItem & Get-Content x", "Get-Content a.txt | Select-String foo",
    "git status; git log", "npm ci; npm test", "Write-Output hi; git status", "$x = 1; git status",
    "Copy-Item a.txt b.txt; Get-ChildItem", "Set-Content notes.txt hi; Get-Content notes.txt", "git diff > out.patch",
]


async def test_a_powershell_write_beside_a_program_that_finds_code_is_asked(tmp_path: Path) -> None:
    got = await decide(tmp_path, PowerShell(), ATTACKS + KEPT, "bypassPermissions", deny=DENY)
    allowed = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (allowed, refused) == ([], [])


async def test_an_ask_rule_asks_the_same_and_no_rule_changes_nothing(tmp_path: Path) -> None:
    attack = "Copy-Item q .git/hooks/pre-commit; git commit -m x"
    assert await decide(tmp_path, PowerShell(), [attack], "bypassPermissions", ask=DENY) == ["ask"]
    # Without a deny or ask command rule bypassPermissions allows it (the mode's promise; unchanged).
    assert await decide(tmp_path, PowerShell(), [attack], "bypassPermissions") == ["allow"]
