"""Red team, round 17 (classifier): PowerShell aliases that exist on Windows only.

PowerShell 7 on Linux and macOS does not define the aliases that collide with native programs
(``ac cat clear compare cp cpp diff kill ls man mount mv ps rm rmdir sleep sort start tee write``):
there ``sort`` is ``/usr/bin/sort``, not ``Sort-Object``. The analysis read them as the cmdlets, so
``sort -ooutput.txt in`` (Sort-Object with an odd parameter) was read-only while pwsh on Linux, where
shellrt's sandboxes run it, writes ``output.txt``; ``ps e`` printed every process's environment and
``write root`` writes to another user's terminal. Such a name is now judged both ways: the cmdlet
with its parameter allow-list and the native program with the bash option models; read-only only
when both are. The premise (the native program writes) is run for real; no pwsh on this machine.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze

#: Read-only before this round (checked on main: 5 of 5), not read-only now.
REFUSED = [
    "sort -ooutput.txt in",
    "Get-ChildItem | sort -ooutput.txt",
    "ps e",
    "ps auxe",
    "write root",
]
#: Both readings are plain reads: stay read-only.
KEPT = ["sort data.txt", "ls", "cat README.md", "Get-Process | sort CPU", "diff a b", "sleep 1", "ps"]


def test_premise_native_sort_writes_its_o_operand(tmp_path: Path) -> None:
    (tmp_path / "in").write_text("b\na\n")
    subprocess.run(["sort", "-ooutput.txt", "in"], cwd=tmp_path, check=True, timeout=30)
    assert (tmp_path / "output.txt").read_text() == "a\nb\n"


@pytest.mark.parametrize("command", REFUSED)
def test_windows_only_alias_is_judged_as_the_native_program_too(command: str) -> None:
    result = analyze(command, shell="powershell")
    assert result.parse_ok
    assert not result.read_only, command
    assert not result.concurrency_safe


@pytest.mark.parametrize("command", KEPT)
def test_reads_either_way_stay_read_only(command: str) -> None:
    result = analyze(command, shell="powershell")
    assert result.read_only, (command, result.reasons)


def test_reason_names_the_native_program() -> None:
    reasons = analyze("write root", shell="powershell").reasons
    assert any("Linux and macOS" in r and "write" in r for r in reasons), reasons
