"""Red team, round 9 (command analysis): ``sh -c`` scripts judged with bash's grammar.

``sh`` is dash on Debian and Ubuntu, and dash has no ``[[``: it runs ``[[`` as a command, so
``||``, ``&&``, ``>`` and ``<`` between ``[[`` and ``]]`` are list operators and redirections.
``sh -c '[[ a || sh ]]'`` was judged read-only (bash reads one string test) and ran the
repository's file ``]]`` as a shell script; ``sh -c '[[ x > victim.txt ]]'`` truncated the file;
and ``sh -c '[[ a || touch x ]]'`` passed ``Bash(touch:*)`` in ``bypassPermissions`` (a read-only
part is not searched for embedded commands). ``&>`` (``&`` then ``>`` to dash) and ``<<<`` are read
otherwise too. A script for any shell but bash (and ``eval``) that uses such syntax is now unread:
never read-only, a part no allow rule matches, and deny rules see its words (the engine's search
of the script's words already caught ``Bash(touch:*)`` before the fix: that test held).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shellrt.analysis import analyze
from shellrt.protocol import ResultEnvelope
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


async def _bash(ws: Path, commands: list[str], *, mode: str, **kw: Any) -> list[ResultEnvelope]:
    return await run_bash(ws, commands, mode=mode, id_prefix="r9p", **kw)


_BASH_ONLY_IN_SH = [
    "sh -c '[[ a || sh ]]'",
    "sh -c '[[ -n a && sh ]]'",
    "sh -c '[[ x > victim.txt ]]'",
    "sh -c '[[ x < secret ]]'",
    "sh -c 'ls &>/dev/null'",
    "sh -c 'cat <<< x'",
    "bash -c \"sh -c '[[ a || sh ]]'\"",
    "timeout 5 sh -c '[[ a || sh ]]'",
]


@pytest.mark.parametrize("command", _BASH_ONLY_IN_SH)
def test_bash_only_syntax_in_an_sh_script_is_unread(command: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only, (command, analysis.reasons)
    assert "" in [part.name for part in analysis.subcommands], analysis.subcommands


def test_posix_scripts_and_bash_scripts_stay_read_only() -> None:
    for command in ("sh -c 'ls'", "sh -c '[ -f x ] && ls'", "bash -c '[[ a > b ]] && ls'", "sh -c 'ls 2>&1'"):
        assert analyze(command).read_only, command


# Where sh is bash nothing would run either way; the verdict (asked, so refused here) is the same.
@pytest.mark.parametrize("mode", ["default", "plan"])
async def test_an_sh_double_bracket_runs_no_repository_file_unasked(ws: Path, mode: str) -> None:
    (ws / "]]").write_text("echo planted > pwned.txt\n")
    (ws / "victim.txt").write_text("precious\n")
    results = await _bash(ws, ["sh -c '[[ a || sh ]]'", "sh -c '[[ x > victim.txt ]]'"], mode=mode)
    for envelope in results:
        assert envelope.is_error, _text(envelope)
    assert not (ws / "pwned.txt").exists()
    assert (ws / "victim.txt").read_text() == "precious\n"


async def test_a_deny_rule_sees_a_command_inside_an_sh_double_bracket(ws: Path) -> None:
    [envelope] = await _bash(
        ws, ["sh -c '[[ a || touch pwned.txt ]]'"], mode="bypassPermissions", deny=["Bash(touch:*)"]
    )
    assert envelope.is_error, _text(envelope)
    assert not (ws / "pwned.txt").exists()
