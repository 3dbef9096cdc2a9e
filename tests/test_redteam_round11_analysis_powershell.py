"""Red team, round 11 (command analysis, PowerShell): parameters, remoting, UNC paths, --%.

Analysis only (no pwsh on this machine). PowerShell binds any unambiguous prefix of a
parameter name (``-OutV`` is ``-OutVariable``, ``-On`` is ``-Online``), so the check of bad
parameters by their full names passed ``Get-Process -OutVar x`` and ``Get-Help x -On``.
Remoting parameters (``-ComputerName``, ``-cn``, ``-Session``, ``-CimSession``) make a
``Get-*`` cmdlet reach another host, and a UNC path (``\\\\host\\share``, ``//host/share``,
``FileSystem::\\\\host\\s``, also joined to a parameter as ``-Path:\\\\host\\s``) makes a read
connect to a server of the command's choosing (and authenticate to it). ``--%`` passes the
rest of the line to the program unparsed (a ``#`` there is no comment; ``%VAR%`` expands),
which this tokenizer does not model. ``Get-PackageProvider`` may download and install a
provider. Nesting deeper than the analysis follows left the inner commands out of the parts.
All of these are now not read-only (``--%`` and over-deep nesting are parse errors).
"""

from __future__ import annotations

import pytest

from shellrt.analysis import analyze

_NOT_READ_ONLY = [
    "Get-Process -OutVar x",
    "Get-Process -OutV:x",
    "Get-ChildItem -PipelineVar p",
    "Get-ChildItem -ErrorV e",
    "Get-ChildItem -WarningVar w",
    "Get-ChildItem -InformationVar i",
    "Get-Help Get-Item -On",
    "Get-Help Get-Item -Onl:$true",
    "Get-Process -ComputerName evil",
    "Get-Process -Comp evil",
    "Get-Process -cn evil",
    "Get-Service -ComputerName:evil",
    "Get-CimInstance Win32_OS -CimSession s",
    "Get-Command -Name x -Session s",
    "Get-Command -Name x -PSSession s",
    "Get-WinEvent -LogName System -Credential c",
    "Get-Content \\\\evil\\share\\x",
    "Test-Path //evil/share",
    "Get-Content '\\\\evil\\s\\x'",
    'Get-Content "\\\\evil\\s\\x"',
    "Get-Content -Path:\\\\evil\\s",
    "Get-Content a,\\\\evil\\s",
    "Get-Item FileSystem::\\\\evil\\s",
    "Get-Item Microsoft.PowerShell.Core\\FileSystem::\\\\evil\\s",
    "Get-ChildItem -LiteralPath \\\\?\\UNC\\evil\\s",
    "git -C \\\\evil\\s log",
    "Get-PackageProvider -Name NuGet -ForceBootstrap",
    "Install-Package x",
    "Install-Module x",
    "Install-Script x",
    "Save-Module x -Path .",
    "Find-Module x",
]


@pytest.mark.parametrize("command", _NOT_READ_ONLY)
def test_not_read_only(command: str) -> None:
    analysis = analyze(command, "powershell")
    assert not analysis.read_only, (command, analysis.reasons)


@pytest.mark.parametrize("command", [
    "git log --% # --output=pwn",
    "Write-Output --% # ; x",
    "Get-ChildItem --% %USERPROFILE%",
    "Get-Content (" * 20 + "Remove-Item victim" + ")" * 20,
])
def test_unmodelled_syntax_is_a_parse_error(command: str) -> None:
    analysis = analyze(command, "powershell")
    assert not analysis.read_only and not analysis.parse_ok, (command, analysis.reasons)
    assert analysis.subcommands[-1].text == command


def test_commands_nested_too_deeply_are_never_left_out_of_the_parts() -> None:
    # Before: every part was Get-Content (a PowerShell(Get-Content:*) rule covered them all),
    # the Remove-Item nested 20 levels deep was no part at all.
    analysis = analyze("Get-Content (" * 20 + "Remove-Item victim" + ")" * 20, "powershell")
    names = {part.name.lower() for part in analysis.subcommands}
    assert names != {"get-content"}, names
    analysis = analyze("Write-Output " + "$(" * 20 + "Remove-Item victim" + ")" * 20, "powershell")
    assert not analysis.read_only
    assert any(part.name == "" for part in analysis.subcommands[1:]), analysis.subcommands


@pytest.mark.parametrize("command", [
    "Get-ChildItem -Path . -Filter *.txt",
    "Get-ChildItem -Recurse -Force",
    "Get-Content x -Tail 5",
    "Get-Content -Path:C:\\x\\y.txt",
    "Get-Content -Path:.\\a.txt",
    "Select-String -Pattern http://x -Path a.txt",
    "Get-Process | Where-Object Name -In a,b",
    "Get-Process | Select-Object -First 5",
    "git log -n 5",
])
def test_plain_reads_stay_read_only(command: str) -> None:
    analysis = analyze(command, "powershell")
    assert analysis.read_only, (command, analysis.reasons)
