"""Red team, round 17 (classifier): PowerShell parameters of read-only cmdlets, and module autoload.

Parameters of the read-only cmdlets were judged by a deny-list (remoting, variable and browser
names under every prefix), so any parameter nobody listed passed: ``Get-Content a -AsJob``,
``Get-WmiObject Win32_Service -Impersonation 3``, ``Get-Command -ParameterName Path`` (searches every
installed module), made-up names and prefixes (``Get-ChildItem -Fo``, ``Get-Date -Z``). Parameters
are now an allow-list per cmdlet (``analysis/pwsh_params.py``): a full name or alias, or a prefix that
matches only listed names and no known-bad one; anything else is not read-only (fail closed).

``Get-Command NAME``/``Get-Help NAME`` import the module that exports a command PowerShell has not
loaded (module autoload runs the module's code: an installed module's import-time code, the
operator's or whoever planted it on PSModulePath), and listing or searching commands (no name,
wildcards, ``-Noun``/``-Verb``, another module) analyses every installed module, which may import one.
Only written-out core cmdlet names and core modules are read-only now (``Get-Command -ListImported``
loads nothing). Analysis only: no pwsh on this machine; the semantics are PowerShell 7.4's documented
ones (about_Modules: "Using Get-Command to get a command in a module" imports it).
"""

from __future__ import annotations

import pytest

from shellrt.analysis import analyze
from shellrt.analysis.pwsh_cmdlets import READ_ONLY_CMDLETS
from shellrt.analysis.pwsh_params import PARAMS_OF

#: Read-only before this round (checked on main: 24 of 24), not read-only now.
REFUSED = [
    # parameters nobody listed, and unknown prefixes
    "Get-Content a -AsJob",
    "Get-WmiObject Win32_Service -AsJob",
    "Get-WmiObject Win32_Service -Impersonation 3",
    "Get-ChildItem -Fx",
    "Get-Content -Path a -Foo",
    "Select-String -Pattern x -Path a -ArgumentList q",
    "Get-Date -SetTime x",
    "Write-Output -Wh",
    "Get-Date -Z",
    "Get-Date -Z:1",
    "Get-Module -All -ListAvailable",
    "Get-Command -ParameterName Path",
    "Get-Help -Category Cmdlet",
    "Get-Command -UseFuzzyMatching Get-Chld",
    # module autoload: a command or module not loaded, or a search over every module
    "Get-Command git",
    "Get-Command Get-*",
    "Get-Command",
    "Get-Command -Noun Item",
    "Get-Help Get-S3Object",
    "gcm Invoke-Pester",
    "Get-Command -Module Az.Accounts",
    "Get-Command -Name:Invoke-Pester",
    "Get-Help -Name 'Get-MgUser'",
    "Get-Command Get-ChildItem,Invoke-Pester",
]

#: Core reads that stay read-only.
KEPT = [
    "Get-ChildItem -Recurse -Filter *.ps1 -Force",
    "Get-ChildItem -Path . -File -Depth 2",
    "Get-Content README.md -TotalCount 5 -Raw",
    "Get-Content -Path:a.txt -Tail 3",
    "Get-Content a.txt -Encoding utf8 -ErrorAction SilentlyContinue",
    "Get-Process | Sort-Object -Property CPU -Descending",
    "Get-ChildItem | Where-Object Length -GT 5",
    "Get-ChildItem | Where-Object -Property Name -In a,b",
    "Select-String -Pattern key -Path a.txt -SimpleMatch",
    "Get-Date -Format yyyy",
    "Get-Command Get-ChildItem",
    "Get-Command -Name Get-Content -Syntax",
    "Get-Command -Module Microsoft.PowerShell.Utility -Verb Get",
    "Get-Command -ListImported",
    "Get-Help Get-ChildItem -Full",
    "Get-Help",
    "Get-Module -ListAvailable",
    "Get-Item x -Verbose",
    "Get-ChildItem -Rec",
]


@pytest.mark.parametrize("command", REFUSED)
def test_unknown_parameters_and_autoload_are_not_read_only(command: str) -> None:
    result = analyze(command, shell="powershell")
    assert result.parse_ok, result.reasons
    assert not result.read_only, command
    assert not result.concurrency_safe
    assert any("parameter" in r or "module" in r or "core cmdlet" in r for r in result.reasons), result.reasons


@pytest.mark.parametrize("command", KEPT)
def test_core_reads_stay_read_only(command: str) -> None:
    result = analyze(command, shell="powershell")
    assert result.read_only, (command, result.reasons)


def test_every_read_only_cmdlet_has_a_parameter_list() -> None:
    # A cmdlet without a list would take any parameter: the allow-list must cover them all.
    assert set(PARAMS_OF) == set(READ_ONLY_CMDLETS)


def test_reason_says_what_to_do() -> None:
    reasons = analyze("Get-ChildItem -Bogus", shell="powershell").reasons
    assert any("allow-list per cmdlet" in r and "ask" in r for r in reasons), reasons
