"""Red team, round 13: a glob that expands to ``-R`` makes ``grep`` follow links out of the workspace.

The classifier now says ``grep x *`` walks when ``*`` may expand to an option; but whether the
walk follows symbolic links was decided from the written words only (``-R``,
``--dereference-recursive``), so a repository file named ``-R`` beside ``d/out -> /elsewhere``
made ``grep -h hunter *`` read ``/elsewhere`` unasked on the local backend. A glob that may
expand to an option now counts as a possible following flag: the links' targets are reads, and
a target outside the workspace (or under a deny rule) asks.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests._governance import envelope_text as _text
from tests._governance import isolated_workspace, run_bash

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    ws = isolated_workspace(tmp_path, monkeypatch)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret").write_text("hunter2\n")
    (ws / "d").mkdir()
    (ws / "d" / "out").symlink_to(outside)
    (ws / "-R").write_text("")
    (ws / "a").write_text("other\n")
    return ws, outside


def test_the_real_grep_follows_the_link(tree: tuple[Path, Path]) -> None:
    ws, _ = tree
    bash = shutil.which("bash")
    assert bash is not None
    out = subprocess.run([bash, "-c", "grep -h hunter *"], cwd=ws, capture_output=True, text=True, timeout=30)
    assert "hunter2" in out.stdout, out


@pytest.mark.parametrize("command", ["grep -h hunter *", "egrep -h hunter ?*", "fgrep -h hunter [-d]*"])
async def test_a_link_target_outside_is_not_read_unasked(tree: tuple[Path, Path], command: str) -> None:
    ws, outside = tree
    [envelope] = await run_bash(ws, [command], mode="default", id_prefix="r13f", deny=[f"Read({outside}/**)"])
    assert envelope.is_error, _text(envelope)
    assert "hunter2" not in _text(envelope)


async def test_a_plain_glob_grep_with_no_link_still_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "a").write_text("other\n")
    [envelope] = await run_bash(ws, ["grep -h other *"], mode="default", id_prefix="r13f")
    assert "other" in _text(envelope), _text(envelope)
