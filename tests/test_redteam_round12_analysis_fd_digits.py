"""Red team, round 12 (command analysis): ``>&WORD`` whose WORD Python calls a digit and bash does not.

bash reads ``>&WORD`` as a descriptor duplication only when WORD is ASCII digits (or ``-``);
any other WORD makes it ``&>WORD``: stdout and stderr truncate the file WORD. The analysis
tested ``str.isdigit()``, which is true for every Unicode digit (``²``, ``١``, ``𝟙``), so
``echo hi >&²`` was judged read-only (auto-allowed in default and plan mode) and created or
truncated the file ``²``, and no part named the write, so ``Edit(...)`` deny rules did not see
it in ``bypassPermissions``. Descriptors are now ASCII digits only, in the judge, the write
targets, the parts and the Bash tool's own reading of the plan.

Each case runs for real in bash (and through the Bash tool on the local backend, where
governance is the only guard).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from shellrt.analysis import analyze
from shellrt.protocol import ResultEnvelope
from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio

#: (command, the file bash writes)
_UNICODE_DIGIT_DUPS = [
    ("echo hi >&²", "²"),
    ("echo hi 1>&١", "١"),
    ("ls >&𝟙", "𝟙"),
    ("cat in.txt >&٣٤", "٣٤"),
    ("ls -d . >&۵", "۵"),
    ("{ echo hi; } >&²", "²"),
]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


async def _bash(ws: Path, commands: list[str], *, mode: str, **kw: Any) -> list[ResultEnvelope]:
    return await run_bash(ws, commands, mode=mode, id_prefix="r12fd", **kw)


@pytest.mark.parametrize(("command", "target"), _UNICODE_DIGIT_DUPS)
def test_bash_writes_the_file_a_unicode_digit_names(tmp_path: Path, command: str, target: str) -> None:
    (tmp_path / "in.txt").write_text("hello\n")
    subprocess.run(["bash", "--norc", "-c", command], cwd=tmp_path, capture_output=True, timeout=10)
    assert (tmp_path / target).exists(), command  # the premise: bash really writes it


@pytest.mark.parametrize(("command", "target"), _UNICODE_DIGIT_DUPS)
def test_a_unicode_digit_duplication_is_a_write(command: str, target: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only, (command, analysis.reasons)
    assert not analysis.concurrency_safe, command
    assert target in analysis.write_targets, (command, analysis.write_targets)
    assert any(target in sub.writes for sub in analysis.subcommands), analysis.subcommands


def test_ascii_descriptor_duplications_stay_read_only() -> None:
    for command in ("echo hi >&2", "ls 2>&1", "cat in.txt 1>&2", "ls >&-", "cat <&0", "echo hi 2>&1 | cat"):
        analysis = analyze(command)
        assert analysis.read_only, (command, analysis.reasons)
        assert analysis.write_targets == [], (command, analysis.write_targets)


@pytest.mark.parametrize("mode", ["default", "plan"])
async def test_a_unicode_digit_duplication_does_not_run_unasked(ws: Path, mode: str) -> None:
    commands = [command for command, _ in _UNICODE_DIGIT_DUPS]
    results = await _bash(ws, commands, mode=mode)
    for envelope in results:
        assert envelope.is_error, _text(envelope)
    assert not [target for _, target in _UNICODE_DIGIT_DUPS if (ws / target).exists()]


async def test_an_edit_deny_rule_sees_a_unicode_digit_duplication(ws: Path) -> None:
    (ws / "²").write_text("precious\n")
    results = await _bash(ws, ["echo hi >&²", "pwd 1>&²"], mode="bypassPermissions", deny=["Edit(./²)"])
    for envelope in results:
        assert envelope.is_error, _text(envelope)
    assert (ws / "²").read_text() == "precious\n"


async def test_the_bash_tool_still_runs_ascii_duplications(ws: Path) -> None:
    [envelope] = await _bash(ws, ["echo hi >&2 2>&1"], mode="default")
    assert not envelope.is_error, _text(envelope)


# --- the same confusion in option bundles: `-5` is a count, `-²` is not ------------------------

_UNICODE_DIGIT_OPTIONS = ["head -² in.txt", "diff -²l in.txt in.txt", "grep -n²r x in.txt", "nice -² ls"]


@pytest.mark.parametrize("command", _UNICODE_DIGIT_OPTIONS)
def test_a_unicode_digit_option_is_not_a_count(command: str) -> None:
    # A Unicode digit was read as a -NUM count and ended the bundle, so the options after it
    # (`diff -²l` hides -l, which runs pr) were never judged. The programs reject it: unmodelled.
    analysis = analyze(command)
    assert not analysis.read_only, (command, analysis.reasons)


def test_ascii_counts_stay_read_only() -> None:
    for command in ("head -5 in.txt", "grep -n2 x in.txt", "diff -u3 a b", "nice -5 ls"):
        analysis = analyze(command)
        assert analysis.read_only, (command, analysis.reasons)
