"""Red team, round 42 (analysis5): a PowerShell module written where PSModulePath looks, then imported.

Round 40 asked when a part that may write stands beside a part that may run code it finds by place,
but read-only core cmdlets were no runners (round 40's Left): ``Get-Command``/``Get-Help`` of a
command name import the module that holds it (about_Modules' auto-loading), and a module written
under the user's module directory (first on PSModulePath) may shadow the core module a read-only
cmdlet (``Get-Date``, ``Get-ChildItem``) is autoloaded from. Each passed ``PowerShell(Remove-Item:*)``
in ``bypassPermissions``. Decisions of the engine (no pwsh here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.powershell import PowerShell
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

M = "~/.local/share/powershell/Modules"
ATTACKS = [
    f"Set-Content -Path {M}/Evil/Evil.psm1 -Value 'x'; Get-Command Get-Evil",
    f"Set-Content -Path {M}/Evil/Evil.psm1 -Value 'x'; Get-Help Get-Evil",
    f"Set-Content -Path {M}/Evil/Evil.psm1 -Value 'x'; Get-ChildItem",
    f"Copy-Item q {M}/Microsoft.PowerShell.Utility/Microsoft.PowerShell.Utility.psm1; Get-Date",
    f"Set-Content -Path {M}/Evil/Evil.psd1 -Value 'x'; Get-Module -ListAvailable",
    f"New-Item -ItemType Directory {M}/Evil; Copy-Item q {M}/Evil; gcm Get-Evil",
    "Set-Content notes.txt hi; help Get-Evil",
]
KEPT = ["Set-Content notes.txt hi; Get-Content notes.txt", "Get-ChildItem & Get-Content x", "Get-Command ls",
        "Get-Help Get-ChildItem", "Set-Content notes.txt hi; Get-ChildItem"]


async def test_a_module_written_beside_a_cmdlet_that_may_import_it_is_asked(tmp_path: Path) -> None:
    got = await decide(tmp_path, PowerShell(), ATTACKS + KEPT, "bypassPermissions", deny=["PowerShell(Remove-Item:*)"])
    allowed = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (allowed, refused) == ([], [])
