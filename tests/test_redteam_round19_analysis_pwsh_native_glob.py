"""Red team, round 19 (classifier): PowerShell's native wildcard expansion (analysis only, no pwsh here).

On Linux and macOS pwsh expands an unquoted wildcard (``*``, ``?``, ``[``) in a native program's
argument into the matching file names, as bash does (PowerShell 7, ``about_Parsing``; the native
command binder globs on non-Windows). Round 17 judged ``sort`` (a Windows-only alias: on Linux pwsh
runs ``/usr/bin/sort``) and other native programs with the bash option models, but on the words as
written: ``sort *`` was read-only, while with a file named ``--output=x`` in the directory it is
``sort --output=x …`` and writes x (in bash, ``sort *`` is refused: a glob that may expand to an
option). A native argument with a wildcard is now refused unless every option of that program is
harmless (``glob_safe``: ``ls``, ``cat``, ``grep``, ``head`` …), stricter than bash's judgement
(which lets ``git log x*`` through: no name it expands to starts with ``-``).
"""

from __future__ import annotations

import pytest

from shellrt.analysis import analyze

#: Read-only before this round; each expands into options or extra operands the model never saw.
REFUSED = ["sort *", "sort x*", "uniq x*", "git log x*", "xxd x*", "base64 x?"]
#: Quoted (pwsh does not expand it), cmdlets (they take the pattern themselves), or programs whose
#: every option is harmless.
KEPT = ["sort '*'", 'sort "*"', "ls *", "cat x*", "grep x *", "head -n 1 *", "Get-ChildItem *", "Get-Content x*",
        "Select-String x *.py"]


@pytest.mark.parametrize("command", REFUSED)
def test_a_native_wildcard_is_not_read_only(command: str) -> None:
    result = analyze(command, shell="powershell")
    assert not result.read_only
    assert any("wildcard" in r for r in result.reasons), result.reasons


@pytest.mark.parametrize("command", KEPT)
def test_quoted_patterns_cmdlets_and_glob_safe_programs_stay_read_only(command: str) -> None:
    assert analyze(command, shell="powershell").read_only, analyze(command, shell="powershell").reasons

