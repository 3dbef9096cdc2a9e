"""Red team, round 16 (classifier): a metacharacter glued to a here-document delimiter.

bash's lexer ends the delimiter word at an unquoted metacharacter (``; | & ( ) < >``):
``cat <<E;`` is ``cat <<E`` then ``;``, so the body ends at the first line ``E``. tree-sitter-bash
keeps the metacharacter in the delimiter (``E;``) and ends the body at a line ``E;``. The check
that bash ends the body on the parser's line used the parser's word, so both agreed and every
line between the two ends -- commands bash runs -- was read as body text: ``cat <<E;`` + ``E`` +
``touch P`` + ``E;`` was read-only and ran ``touch`` unasked in default mode (also ``<<E>f``,
which truncates ``f``, and ``<<E|sh``). An unquoted metacharacter in a delimiter is now not
modelled and a syntax error (``parse_ok`` false: not read-only, no allow rule meets any part).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from tests._governance import envelope_text, isolated_workspace, run_bash

pytestmark = pytest.mark.anyio

_DELIMITERS = ["E;", "E;;", "E|", "E|cat", "E&", "E&&ls", "E||ls", "E>f", "E<f", "E;ls", "E&>f", "E|&cat",
               "'E';", "E\\\\;", '"E";', "E'';", "E;'x'", "E;#", "E;E", "E)"]


def _hiding(operator: str, delimiter: str, first: str = "cat") -> str:
    """A here-document that bash ends at the line ``E`` and the parser at the line ``delimiter``."""
    return f"{first} {operator}{delimiter}\nE\ntouch P\n{delimiter}\n"


@pytest.mark.parametrize("operator", ["<<", "<<-"])
@pytest.mark.parametrize("delimiter", _DELIMITERS)
def test_a_metacharacter_in_the_delimiter_is_not_read_only(operator: str, delimiter: str) -> None:
    analysis = analyze(_hiding(operator, delimiter))
    assert not analysis.read_only, analysis.reasons
    # a disagreement between the grammar and bash: a syntax error, so no allow rule meets any part
    assert not analysis.parse_ok, analysis.reasons


@pytest.mark.parametrize("delimiter", ["E;", "E|cat", "E>f"])
def test_a_posix_shell_reads_it_as_bash_does(delimiter: str, tmp_path: Path) -> None:
    """dash (an image without bash) also ends the word at the metacharacter: the `sh` verdict fails closed."""
    command = _hiding("<<", delimiter)
    analysis = analyze(command, "sh")
    assert not analysis.read_only and not analysis.parse_ok, analysis.reasons
    dash = shutil.which("dash")
    if dash is not None:
        subprocess.run([dash, "-c", command], cwd=tmp_path, capture_output=True, timeout=10)
        assert (tmp_path / "P").exists()


@pytest.mark.parametrize(
    "command",
    ["cat <<E\nx\nE\n", "cat <<'E;'\nx\nE;\n", 'cat <<"E|x"\nx\nE|x\n', "cat <<E\\;\nx\nE;\n",
     "cat <<E | cat\nx\nE\n", "cat <<-E\n\tx\n\tE\n", "cat <<E#\nx\nE#\n"],
)
def test_delimiters_bash_reads_as_the_parser_does_stay_read_only(command: str) -> None:
    analysis = analyze(command)
    assert analysis.read_only, (command, analysis.reasons)


def test_bash_runs_the_hidden_line(tmp_path: Path) -> None:
    """The premise, in bash itself: the line between the two ends runs."""
    bash = shutil.which("bash")
    assert bash is not None
    for delimiter in ("E;", "E|cat", "E>f"):
        work = tmp_path / f"w{len(list(tmp_path.iterdir()))}"
        work.mkdir()
        subprocess.run([bash, "-c", _hiding("<<", delimiter)], cwd=work, capture_output=True, timeout=10)
        assert (work / "P").exists(), delimiter


async def test_the_bash_tool_does_not_run_it_unasked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = isolated_workspace(tmp_path, monkeypatch)
    commands = [_hiding("<<", "E;"), _hiding("<<-", "E|cat", first="ls")]
    envelopes = await run_bash(ws, commands, mode="default", id_prefix="r16hd")
    for command, envelope in zip(commands, envelopes, strict=True):
        assert envelope.is_error, (command, envelope_text(envelope))
    assert not (ws / "P").exists()
