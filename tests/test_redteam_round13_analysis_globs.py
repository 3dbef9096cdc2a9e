"""Red team, round 13 (command analysis): a glob that expands to a recursion flag.

``grep`` and ``ls`` are "glob safe": every option they have is harmless, so ``grep x *`` stays
read-only even when ``*`` may expand to an option. But an option can change *what* they read: a
repository file named ``-r`` (or ``-drecurse``, ``--recursive``; ``-R`` for ``ls``) makes
``grep -h x *`` search every directory the glob names, recursively. The analysis said the part
did not walk, so a ``Read(./secrets/key)`` deny rule never met the walk into ``secrets/``: the
command ran unasked on the local backend and printed the denied file (``ls *`` its names).

Now a part of a program a flag makes recursive (grep, egrep, fgrep, ls, diff) says it walks when
one of its globs before ``--`` may expand to an option; a deny rule below a matched directory
asks (or denies). ``grep x ./*``, ``grep x -- *`` and plain ``grep x a`` are unchanged.
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

_PLANTED = [("-r", "grep -h hunter *"), ("--recursive", "grep hunter *"), ("-drecurse", "grep -h hunter *"),
            ("-rh", "egrep hunter *"), ("-R", "ls *")]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


async def _bash(ws: Path, commands: list[str], *, mode: str, **kw: Any) -> list[ResultEnvelope]:
    return await run_bash(ws, commands, mode=mode, id_prefix="r13g", **kw)


def _tree(root: Path, planted: str) -> None:
    (root / "secrets").mkdir()
    (root / "secrets" / "key").write_text("hunter2\n")
    (root / "a").write_text("other\n")
    if planted:
        (root / planted).write_text("")


@pytest.mark.parametrize(("planted", "command"), _PLANTED)
def test_the_glob_turns_the_walk_on_in_the_real_shell(tmp_path: Path, planted: str, command: str) -> None:
    _tree(tmp_path, planted)
    bash = shutil.which("bash")
    assert bash is not None
    out = subprocess.run([bash, "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert ("key" if command.startswith("ls") else "hunter2") in out.stdout, out


@pytest.mark.parametrize(
    "command", ["grep x *", "grep -n x *", "egrep x ?*", "ls *", "ls -l *.py", "grep x a *"]
)
def test_a_glob_that_may_be_an_option_makes_the_part_recursive(command: str) -> None:
    analysis = analyze(command)
    assert analysis.read_only, analysis.reasons  # still read-only: the walk is what rules must see
    assert [s.recursive for s in analysis.subcommands] == [True], command


@pytest.mark.parametrize("command", ["grep x ./*", "grep x -- *", "fgrep x src/*", "grep x a", "ls", "ls ./*", "cat *"])
def test_globs_that_cannot_be_options_keep_the_part_flat(command: str) -> None:
    analysis = analyze(command)
    assert analysis.read_only, analysis.reasons
    assert [s.recursive for s in analysis.subcommands] == [False], command


def test_a_wrapped_grep_is_recursive_too() -> None:
    assert all(s.recursive for s in analyze("timeout 5 grep x *").subcommands)


@pytest.mark.parametrize(("planted", "command"), _PLANTED)
async def test_a_read_deny_rule_below_a_globbed_directory_holds(ws: Path, planted: str, command: str) -> None:
    _tree(ws, planted)
    [envelope] = await _bash(ws, [command], mode="default", deny=["Read(./secrets/key)"])
    assert envelope.is_error, _text(envelope)
    assert "hunter2" not in _text(envelope)
    assert "secrets:\nkey" not in _text(envelope)


async def test_a_glob_grep_without_deny_rules_still_runs_unasked(ws: Path) -> None:
    _tree(ws, "")
    [envelope] = await _bash(ws, ["grep -h other *"], mode="default")
    assert "other" in _text(envelope)  # it ran (grep exits 2: "secrets: Is a directory")
    assert "not granted" not in _text(envelope)
