"""PowerShell analysis: read-only cmdlets accepted, everything else refused."""

from __future__ import annotations

import pytest

from shellrt.analysis import analyze

READ_ONLY = [
    "Get-ChildItem",
    "Get-ChildItem -Recurse -Filter *.ps1",
    "ls",
    "dir C:\\Users",
    "gci -Force | Select-Object Name, Length",
    "Get-Content README.md",
    "cat README.md | Select-String TODO",
    "gc x.txt | Measure-Object -Line",
    "Get-Process | Sort-Object CPU -Descending | Select-Object -First 5",
    "Get-Process | Where-Object CPU -gt 10",
    "Get-Service | Format-Table",
    "Test-Path C:\\x",
    "Get-Location",
    "pwd",
    "echo hello",
    "Write-Output 'a b'",
    "Write-Output \"$(Get-Date)\"",
    "Get-Item x | Format-List *",
    "Get-Date -Format yyyy",
    "Get-Content $env:USERPROFILE\\x.txt",
    "Get-ChildItem | ConvertTo-Json",
    "Resolve-Path .",
    "Get-Command Get-ChildItem",
    "git status",
    "git log --oneline -n 5",
    "Get-ChildItem; Get-Location",
    "Get-Content x.txt # trailing comment",
]

NOT_READ_ONLY = [
    "Remove-Item x",
    "rm x",
    "del x",
    "gci | Remove-Item",
    "Get-Process | Stop-Process",
    "kill 42",
    "Set-Content x y",
    "Add-Content x y",
    "New-Item x",
    "ni x",
    "Out-File x",
    "Get-Process | Out-File p.txt",
    "Get-Item x > out.txt",
    "Get-Item x >> out.txt",
    "Get-Item x 2> err.txt",
    "Get-Item x *> all.txt",
    "Copy-Item a b",
    "Move-Item a b",
    "Rename-Item a b",
    "Clear-Content x",
    "Invoke-Expression 'rm x'",
    "iex 'rm x'",
    "Invoke-Command { rm x }",
    "Invoke-WebRequest http://x -OutFile y",
    "iwr http://x",
    "Start-Process calc",
    "& ./x.ps1",
    "& { rm x }",
    ". ./profile.ps1",
    "./script.ps1",
    "[IO.File]::Delete('x')",
    "[System.IO.File]::WriteAllText('x', 'y')",
    "(Get-Item x).Delete()",
    "$x = 1",
    "$x.Delete()",
    "Get-ChildItem $(Remove-Item x)",
    "Get-Process -Name (Remove-Item x)",
    "Write-Output \"$(Remove-Item x)\"",
    "Get-Process | Where-Object { $_.CPU -gt 10 }",
    "gci | % { rm $_ }",
    "gci | ForEach-Object { $_ }",
    "Select-Object @{n='x';e={rm y}}",
    "Get-ChildItem @args",
    "Get-ChildItem -OutVariable x",
    "Get-Help ls -Online",
    "Get-Credential",
    "Get-Content x; Remove-Item y",
    "Get-Content x && Remove-Item y",
    "Set-Variable x 1",
    "Set-Alias ls rm",
    "Import-Module x",
    "Export-Csv x",
    "Tee-Object x",
    "Stop-Computer",
    "git push",
    "git -c core.pager=sh log",
    "cat \"unterminated",
    "Get-Item `\n-Path x `\n| Remove-Item",
    "python -c 1",
    "cmd /c del x",
]


@pytest.mark.parametrize("command", READ_ONLY)
def test_powershell_read_only(command: str) -> None:
    result = analyze(command, shell="powershell")
    assert result.read_only, (command, result.reasons)
    assert result.shell == "powershell"


@pytest.mark.parametrize("command", NOT_READ_ONLY)
def test_powershell_not_read_only(command: str) -> None:
    result = analyze(command, shell="powershell")
    assert not result.read_only, (command, result.reasons)
    assert result.reasons


def test_powershell_subcommands_include_hidden_commands() -> None:
    texts = [s.text for s in analyze("Get-ChildItem $(Remove-Item x); gci | % { rm $_ }", "powershell").subcommands]
    assert "Remove-Item x" in texts and "rm $_" in texts


def test_powershell_destructive_and_git_env() -> None:
    assert analyze("Remove-Item -Recurse x", "powershell").destructive
    assert "GIT_CONFIG_COUNT" in analyze("git status", "powershell").env
