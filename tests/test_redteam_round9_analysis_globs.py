"""Red team, round 9 (command analysis): a glob that expands to an option naming a file to read.

``diff`` and ``hexdump`` were "glob safe" (a glob expanding to one of their options was taken to be
harmless), but both have an option whose value is a file they print: a repository file named
``--from-file=.env`` makes ``diff *`` compare (print) ``.env``, and one named ``-f.env`` makes
``hexdump *`` print ``.env`` in its "bad format" error. No word names ``.env``: the analysis judged
``diff *`` read-only with the read path ``*``. Defence in depth held: the Bash tool expands globs
when it resolves reads and saw ``.env`` behind the option, so ``Read(./.env)`` denied it (the
engine tests below passed before the fix too). They are no longer glob safe, and
``hexdump -f FILE`` is a read path of the analysis (an open item of round 8).
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
    return await run_bash(ws, commands, mode=mode, id_prefix="r9g", **kw)


@pytest.mark.parametrize("command", ["diff *", "diff -u *", "hexdump *", "hexdump -C *"])
def test_a_glob_that_may_become_a_file_option_is_not_read_only(command: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only, (command, analysis.reasons)


def test_hexdump_format_file_is_a_read_path() -> None:
    assert ".env" in analyze("hexdump -f .env a").read_paths
    assert ".env" in analyze("hexdump -Cf .env a").read_paths


def test_plain_diffs_and_dumps_stay_read_only() -> None:
    for command in ("diff a b", "diff -r src/* x", "hexdump -C a", "ls *", "grep -rn x *"):
        assert analyze(command).read_only, command


@pytest.mark.parametrize(
    ("planted", "command"),
    [("--from-file=.env", "diff *"), ("-f.env", "hexdump *"), ("", "hexdump -f .env a")],
)
async def test_a_read_deny_rule_sees_a_file_named_through_an_option(
    ws: Path, planted: str, command: str
) -> None:
    (ws / ".env").write_text("SECRET=hunter2\n")
    (ws / "a").write_text("other\n")
    if planted:
        (ws / planted).write_text("")
    [envelope] = await _bash(ws, [command], mode="default", deny=["Read(./.env)"])
    assert envelope.is_error, _text(envelope)
    assert "hunter2" not in _text(envelope)
