"""Red team, round 56 (pwsh2): quotes and backslashes a native program reads as more arguments.

pwsh 7.2 and earlier, Windows PowerShell and ``$PSNativeCommandArgumentPassing = 'Legacy'`` build one command
line for a native program: an argument with a blank is wrapped in ``"`` with its own ``"`` and backslashes left
as they are, and the program (Windows' C runtime, or .NET splitting the line again on Linux and macOS) reads it
back. ``rg 'x" --pre=sh "z' .`` then gives rg ``--pre=sh`` (it runs ``sh`` on every file it searches), and
``git log 'x \\' 'a --output=y'`` gives git ``--output=y`` (a trailing backslash escapes the closing quote):
both were read-only, judged on the arguments pwsh 7.3 passes. Decisions only (no pwsh here).
"""

from __future__ import annotations

from shellrt.analysis import analyze

#: Each gives the program an option under legacy argument passing.
ATTACKS = [
    "rg 'x\" --pre=sh \"z' .",
    "git log 'x\" --output=y \"z'",
    "git log 'x \\' 'a --output=y'",
    "rg 'x \\' 'a --pre=sh' .",
    "git grep -e 'a\" --open-files-in-pager=sh \"b'",
    "git log \"x\" 'y\"z --output=o'",
]
#: Arguments every argument passing gives the program alike: still read-only.
KEPT = ["git log 'a b'", "rg 'two words' .", "git log -n 1", "rg -e 'a\\b' .", "git log 'C:\\x'"]


def test_legacy_command_line_reading_is_judged() -> None:
    assert [c for c in ATTACKS if analyze(c, shell="powershell").read_only] == []
    assert "legacy" in " ".join(analyze(ATTACKS[0], shell="powershell").reasons)


def test_arguments_read_alike_stay_read_only() -> None:
    assert [c for c in KEPT if not analyze(c, shell="powershell").read_only] == []
