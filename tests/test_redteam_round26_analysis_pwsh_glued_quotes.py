"""Red team, round 26 (analysis): a PowerShell word glued to a quoted string is one argument to pwsh.

PowerShell's tokenizer, in argument mode, scans a bare word on through quotes: ``ScanGenericToken``
appends a ``'...'`` or ``"..."`` met inside the word to the same token, and ``ScanParameter`` turns a
dash followed by a quote into such a word ("quotes are never part of a parameter"): ``-'o'x`` is
the one argument ``-ox``, ``--'pre'=sh`` is ``--pre=sh``, ``.'./'f`` is ``../f``. The analysis ended
the word at the quote and read the pieces as separate arguments (``-``, ``o``, ``x``), so on Linux
and macOS, where these names run the native programs, ``sort -'o'x in`` (writes ``x``), ``rg
--'pre'=sh x`` (runs ``sh`` on every file it searches) and ``git diff --'output'=x`` (writes) were
read-only and allowed unasked in default mode, and ``Get-Content .'./'secret.txt`` read a file
outside the workspace unasked (each piece looked inside). A quote glued to a word, a parameter or
another string is now a PowerShell parse error whose reason says to put a blank between them or
quote the whole argument: the tool asks. ``-Name:'value'`` (a parameter's value after its colon),
arrays (``'a','b'``) and member access keep their readings. Decisions only (no pwsh here); the
premise is the joined argv run by the real GNU sort.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.tools.powershell import PowerShell
from tests._governance import default_decisions
from tests.conftest import require

pytestmark = pytest.mark.anyio

#: Each is one argument to pwsh that writes, runs a program or reads outside the workspace.
ATTACKS = [
    "sort -'o'x in",
    'sort -"o"x in',
    "sort in -'o'x",
    "rg --'pre'=sh x",
    'rg --"pre=sh" x',
    "git diff --'output'=x",
    "Get-Content .'./'secret.txt",
    "Get-ChildItem -Path .'.' -Recurse",
]
#: A string glued to what follows it: refused too (fail closed, whatever pwsh makes of it).
GLUED_AFTER = ["sort '-'o x in", "Write-Output \"a\"\"b\"", "Get-Content 'in'x"]
#: Quotes that stand alone, a parameter's value after its colon, arrays: still allowed.
KEPT = [
    "Get-Content -Path:'in'",
    'Get-Content -Path:"in"',
    "Get-Content 'in','in'",
    "Get-Content \"in\", 'in'",
    "Write-Output 'a' 'b'",
    "Write-Output 'a''b'",
    "Get-Content 'in' | Sort-Object",
    "Get-ChildItem -Filter '*.txt'",
    "Select-String -Pattern 'x' -Path 'in'",
    "Get-Content 'in';Get-Content 'in'",
]


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "in").write_text("b\na\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    return ws


def test_premise_the_joined_argument_writes(tmp_path: Path) -> None:
    sort = shutil.which("sort")
    require(sort is not None, "sort is not installed")
    (tmp_path / "in").write_text("b\na\n")
    subprocess.run([str(sort), "-ox", "in"], cwd=tmp_path, check=True, timeout=30, stdin=subprocess.DEVNULL)
    assert (tmp_path / "x").read_text() == "a\nb\n"


async def test_powershell_tool_asks_for_a_quote_glued_to_a_word(tmp_path: Path) -> None:
    commands = ATTACKS + GLUED_AFTER + KEPT
    decided = dict(zip(commands, await default_decisions(tmp_path, PowerShell(), commands, _workspace(tmp_path)),
                       strict=True))
    assert [c for c in ATTACKS + GLUED_AFTER if decided[c] != "ask"] == []
    assert [c for c in KEPT if decided[c] != "allow"] == []


def test_the_reason_says_what_to_write() -> None:
    for command in ATTACKS + GLUED_AFTER:
        verdict = analyze(command, shell="powershell")
        assert not verdict.read_only and not verdict.parse_ok, command
    reasons = " ".join(analyze("sort -'o'x in", shell="powershell").reasons)
    assert "one argument" in reasons and "blank" in reasons, reasons
