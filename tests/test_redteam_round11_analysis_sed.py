"""Red team, round 11 (command analysis): a sed delimiter inside a bracket expression.

sed does not end a regex at its delimiter inside a bracket expression: GNU sed reads
``s/[/]/x/w out`` as the regex ``[/]``, the replacement ``x`` and the flag ``w out``. The
read-only check of sed scripts ended every part at the first delimiter, so it read ``s/[/]/``
(regex ``[``, replacement ``]``) and then harmless commands, and judged as read-only scripts
that write files (``w``) or run the input as shell commands (``e``). GNU sed also reads
character classes (``[[:alpha:]/]`` is one bracket); BusyBox sed does not (it ends that bracket
at ``:]``) and reads ``y`` strings with brackets where GNU does not. The check now reads each
part under both readings and refuses a script whose parts they end in different places.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.analysis.programs.sed import script_writes
from shellrt.protocol import ResultEnvelope
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio

#: Scripts GNU sed runs with a write (``w``) or an execution (``e``) hidden behind a bracket.
_HIDDEN = [
    "s/[/]/x/e;y/p/p/",
    "s/[/]/x/w out\nx;y/p/p/",
    "s/[/]/p/w out/p",
    "s/[]/]/x/e;y/p/p/",
    "s/[^]/]/x/e;y/p/p/",
    "s/[[:alpha:]/]/x/e;y/p/p/",
    "s/[[:alpha:][/]/x/e;y/p/p/",
    "s/a[/]/x/e;y/p/p/",
    # Refused before the fix too (the old check stumbled on the ``]``), kept as the class.
    "s|[|]|p|w out|p",
    "/[/]/x;y/p/p/;w out\n",
    "\\,[,],e id\n,p",
    # BusyBox reads these brackets; GNU sed does not (y) or reads a class (GNU ends the regex).
    "y/[/]/;p;/w out/x",
    "s/[[:alpha:][]/]/;p;/w out/x",
]


@pytest.mark.parametrize("script", _HIDDEN)
def test_a_write_or_exec_behind_a_bracket_is_not_read_only(script: str) -> None:
    for command in (f"sed -n '{script}' f", f"sed -n -e '{script}' f", f"sed -n --expression='{script}' f"):
        analysis = analyze(command)
        assert not analysis.read_only, (command, analysis.reasons)
    assert script_writes(script), script


def test_gnu_sed_really_runs_the_hidden_e_flag(tmp_path: Path) -> None:
    """The attack is real: GNU sed runs ``touch pwned/`` with the ``/`` replaced."""
    sed = shutil.which("sed")
    assert sed is not None
    (tmp_path / "f").write_text("touch pwned/\n")
    subprocess.run([sed, "-n", "s/[/]/x/e;y/p/p/", "f"], cwd=tmp_path, check=True, capture_output=True)
    assert (tmp_path / "pwnedx").exists()
    subprocess.run([sed, "-n", "s/[/]/x/w out\nx;y/p/p/", "f"], cwd=tmp_path, check=True, capture_output=True)
    assert (tmp_path / "out").exists()


#: Print-only scripts with brackets that both readings end in the same place stay read-only.
_READ_ONLY = [
    "s/.*\\/\\([^/]*\\)$/\\1/p",
    "/[[:digit:]]/p",
    "s/[]x]/y/p",
    "s/[^]x]/y/gp",
    "s/[a\\]/b/p",
    "s|[/]|x|p",
    "s/[/]/x/p",
    "/[0-9]\\{3\\}/,/end/p",
    "y/abc/xyz/;p",
    "s/[[:space:]]*$//p",
]


@pytest.mark.parametrize("script", _READ_ONLY)
def test_print_only_bracket_scripts_stay_read_only(script: str) -> None:
    analysis = analyze(f"sed -n '{script}' f")
    assert analysis.read_only, (script, analysis.reasons)


@pytest.mark.parametrize("script", [
    "s/[[:al/]:]/x/p",       # a class holding the delimiter
    "s^[^a]^x^p",            # a delimiter that means something in a bracket
    "s[a[b[p",
    "\\[a[p",               # an address delimited by a bracket
    "\\]a[b]c]p",
    "s/[a/b/p",              # unterminated bracket
    "s/a/b\\\nw out/p",      # backslash-newline in a part
    "s/a/b/pw out",          # flags run into a write
    "s/a/b/x",               # characters after the flags
])
def test_unmodelled_forms_fail_closed(script: str) -> None:
    analysis = analyze(f"sed -n '{script}' f")
    assert not analysis.read_only, (script, analysis.reasons)


def test_scripts_are_read_joined_as_sed_joins_them() -> None:
    # Each -e alone is print-only; sed joins them with newlines.
    analysis = analyze("sed -n -e 's/[/' -e ']/x/e;y/p/p/' f")
    assert not analysis.read_only, analysis.reasons


async def _bash(ws: Path, commands: list[str], *, mode: str) -> list[ResultEnvelope]:
    return await run_bash(ws, commands, mode=mode, id_prefix="r11s")


async def test_the_bash_tool_does_not_run_a_hidden_sed_exec_unasked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "f").write_text("touch pwned/\n")
    [envelope] = await _bash(ws, ["sed -n 's/[/]/x/e;y/p/p/' f"], mode="default")
    assert envelope.is_error, _text(envelope)
    assert not (ws / "pwnedx").exists()
    [ok] = await _bash(ws, ["sed -n 's/[/]/x/p' f"], mode="default")
    assert not ok.is_error, _text(ok)
    assert "touch pwnedx" in _text(ok)
