"""Red team, round 13 (command analysis): ``{NAME}`` redirections run code in array subscripts.

bash reads a word ``{NAME}`` written right before a redirection operator as part of the
redirection: it opens a new file descriptor and stores its number in the variable NAME. NAME may be
an array element, and bash evaluates its subscript as arithmetic: ``ls {a['$(touch f)']}>/dev/null``
runs ``touch f``, and ``{a[_]}`` evaluates ``$_`` (the previous command's last argument) as an
expression, so ``true 'b[$(touch f)]'; ls {a[_]}>/dev/null`` runs it too with no substitution in
sight. tree-sitter-bash reads ``{...}`` as an ordinary argument of ``ls``: both commands were
judged read-only (the first one's substitution is inside single quotes) and ran unasked.

The analysis now treats a ``{NAME}`` word glued to a redirection as a disagreement between the
grammar and bash (a syntax error: not read-only, and no rule allows a part of it). ``{ ls; }>f``,
``ls {x} >f``, ``ls "{x}">f`` and ``ls {}>f`` (no name in the braces: bash keeps the word) are unchanged.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from shellrt.analysis import analyze
from shellrt.protocol import ResultEnvelope
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio

_ATTACKS = [
    "ls {a['$(touch pwned)']}>/dev/null",
    "true 'b[$(touch pwned)]'; ls {a[_]}>/dev/null",
    "true 'b[$(touch pwned)]'; cat {a[_]}</dev/null",
    "true 'b[$(touch pwned)]'; ls {a[_]}<<<x",
    "true 'b[$(touch pwned)]'; echo hi {a[_]}>&2",
]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


async def _bash(ws: Path, commands: list[str], *, mode: str, **kw: Any) -> list[ResultEnvelope]:
    return await run_bash(ws, commands, mode=mode, id_prefix="r13v", **kw)


@pytest.mark.parametrize("command", _ATTACKS)
def test_the_subscript_runs_in_the_real_shell(tmp_path: Path, command: str) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    subprocess.run([bash, "-c", command], cwd=tmp_path, capture_output=True, timeout=30)
    assert (tmp_path / "pwned").exists(), command


@pytest.mark.parametrize(
    "command",
    [*_ATTACKS, "ls {x}>/dev/null", "ls {x}<&-", "ls {_x1}>>/dev/null", "cat {x}<<E\nhi\nE",
     "ls; {x}>/dev/null", "timeout 5 ls {a[_]}>/dev/null"],
)
def test_a_name_in_braces_before_a_redirection_is_not_read_only(command: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only, command
    assert not analysis.parse_ok, (command, analysis.reasons)  # no rule may allow a part of it


def test_inside_a_shell_script_string_too() -> None:
    analysis = analyze("bash -c \"ls {a['\\$(touch pwned)']}>/dev/null\"")
    assert not analysis.read_only, analysis.reasons


@pytest.mark.parametrize(
    "command",
    ["{ ls; }>/dev/null", "ls {x} >/dev/null", 'ls "{x}">/dev/null', "ls {}>/dev/null", "ls {1}>/dev/null",
     "ls 2>/dev/null", "ls x}>/dev/null"],
)
def test_words_bash_keeps_as_arguments_are_unchanged(command: str) -> None:
    analysis = analyze(command)
    assert analysis.parse_ok and analysis.read_only, (command, analysis.reasons)


@pytest.mark.parametrize("command", _ATTACKS[:2])
@pytest.mark.parametrize("allow", [[], ["Bash(ls:*)", "Bash(true:*)"]])
async def test_governance_runs_nothing_unasked(ws: Path, command: str, allow: list[str]) -> None:
    [envelope] = await _bash(ws, [command], mode="default", allow=allow)
    assert envelope.is_error, _text(envelope)
    assert not (ws / "pwned").exists(), _text(envelope)


async def test_a_repository_file_name_feeds_the_subscript(ws: Path) -> None:
    # No `$(` in the command text: `$_` is the last name `ls *` expanded to, a hostile file's.
    (ws / "b[$(touch pwned)]").write_text("")
    [envelope] = await _bash(ws, ["ls *; ls {a[_]}>/dev/null"], mode="default")
    assert not (ws / "pwned").exists(), _text(envelope)
    assert envelope.is_error, _text(envelope)
