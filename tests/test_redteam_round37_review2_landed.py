"""Red team round 37 (review2): the check of where Edit's and Write's file landed was racy itself.

Round 37 files holds the deepest existing directory of the path by fd before the write
(`_landed.anchor`) and, after it, accepts the write when the path names the entry below that fd.
But the anchor and the write resolve the path separately. A command that swapped a look-alike
directory in for the anchoring (``mv scripts s.old; mv other scripts``) and the checked one back
for the write (which the permission check's identity pins to the checked directory), then, while
the write ran, moved the checked directory into ``.git/hooks`` and the look-alike to the path,
made the check compare the look-alike's file with itself and pass: the result said the path was
updated (2 of 2 failed before: Write and Edit), the path held the old content,
and the model's content sat in ``.git/hooks/pre-commit``. Now the anchor must find what the
permission check judged (`confine.Identity`: the directory and the entry), as the write must: both
are then the one directory, and a swap in between is refused before anything is written ("changed
since it was checked; try again"); without a judged identity the write is pinned to the anchor's.
The swaps are played around the anchor's resolution and at the write's first ``fsync``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox import confine
from shellrt.protocol import ToolExecutionError
from shellrt.tools import _fileio
from shellrt.tools.edit import EditTool
from shellrt.tools.read import ReadTool
from shellrt.tools.write import WriteTool
from tests import _nonroot
from tests.test_redteam_round37_files_moved import _call, _workspace
from tests.test_tools_edit import make_ctx


@pytest.fixture
def swaps(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Callable[[], None]]]:
    """``before_anchor`` and ``after_anchor`` run around the anchor's resolution (after the
    permission check); ``at_fsync`` at the write's first fsync."""
    plays: dict[str, Callable[[], None]] = {}
    real_anchor = _fileio.anchor
    real_fsync = os.fsync

    def anchor(*args: Any) -> Any:
        if "before_anchor" in plays:
            plays.pop("before_anchor")()
        held = real_anchor(*args)
        if "after_anchor" in plays:
            plays.pop("after_anchor")()
        return held

    def fsync(fd: int) -> None:
        real_fsync(fd)
        if "at_fsync" in plays:
            plays.pop("at_fsync")()

    monkeypatch.setattr(_fileio, "anchor", anchor)
    monkeypatch.setattr(confine.os, "fsync", fsync)
    yield plays


@pytest.mark.parametrize("tool", ["Write", "Edit"])
def test_a_directory_swapped_around_the_anchor_does_not_pass_the_check(
    tmp_path: Path, swaps: dict[str, Callable[[], None]], tool: str
) -> None:
    root = _workspace(tmp_path)
    ctx = make_ctx(root)
    script = root / "scripts/pre-commit"
    _call(ReadTool(), ctx, {"file_path": str(script)})
    (root / "other").mkdir()
    shutil.copy2(script, root / "other/pre-commit")  # a look-alike the command prepared

    def swap_in() -> None:  # the anchor now holds "other"
        os.rename(root / "scripts", root / "s.old")
        os.rename(root / "other", root / "scripts")

    def swap_back() -> None:  # the write resolves the checked directory again, and writes there
        os.rename(root / "scripts", root / "other")
        os.rename(root / "s.old", root / "scripts")

    def hide() -> None:  # the checked directory into .git/hooks, the look-alike at the path
        os.rename(root / "scripts", root / ".git/hooks")
        os.rename(root / "other", root / "scripts")

    swaps["before_anchor"], swaps["after_anchor"], swaps["at_fsync"] = swap_in, swap_back, hide
    if tool == "Write":
        raw = {"file_path": str(script), "content": "#!/bin/sh\necho ok\n"}
        call: Any = WriteTool()
    else:
        raw = {"file_path": str(script), "old_string": "checked", "new_string": "ok"}
        call = EditTool()
    try:
        out = _call(call, ctx, raw)
    except ToolExecutionError as exc:  # refused (nothing written), or said where the content went
        message = str(exc)
        assert "changed since it was checked" in message or "a directory on the way was moved" in message
        assert "went to" not in message or ".git/hooks/pre-commit" in message, message
        hooked = root / ".git/hooks/pre-commit"
        assert "changed since" not in message or not hooked.exists() or "ok" not in hooked.read_text()
        return
    # The write passed the check: then the path must hold what it wrote.
    assert "ok" in script.read_text(), (
        f"the result claimed the path ({out!r}) while it holds {script.read_text()!r} and "
        f".git/hooks/pre-commit holds {(root / '.git/hooks/pre-commit').read_text()!r}"
    )


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_directory_swapped_around_the_anchor_does_not_pass_the_check")
