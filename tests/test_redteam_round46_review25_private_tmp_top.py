"""Red team round 46, review25: round 45's guard walk ignored `search_top`.

On bwrap a search of the sandbox's ``/tmp`` runs in the session's private tmp, a relocated mount
(host ``/tmp/shellrt-bwrap-tmp-…/tmp``): `search_top` stops the walker's ancestors there, and
ripgrep in the sandbox sees that directory at ``/tmp``, in the sandbox's own ``/``. The guard that
decides whether ripgrep may answer took no ``top`` and walked the *host* ancestors of the private
tmp -- the host's ``/tmp`` (any local user's to write) and the holder directory: their ignore files,
which neither the sandbox nor the walker reads, decided the answer. Here, past the rule bound, every
Glob and Grep of ``/tmp`` was refused "Cannot search".
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import shellrt
from shellrt.tools import _gitignore, _search
from tests._calls import block_text, one_call
from tests.conftest import require


@pytest.mark.anyio
async def test_the_guard_reads_no_ignore_file_above_the_private_tmp(tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(_search.ripgrep_binary() is not None, "ripgrep")
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    async with shellrt.Runtime(
        workspace=root, sandbox="bwrap", mode="bypassPermissions", session_dir=tmp_path / "s", settings_files=()
    ) as rt:
        tmp = getattr(rt.backend, "session_tmp", None)
        assert isinstance(tmp, Path), rt.backend
        # The holder directory above the private tmp: the host's, which the sandbox never sees.
        (tmp.parent / ".ignore").write_text("".join(f"x{i}\n" for i in range(_gitignore.MAX_IGNORE_RULES + 1)))
        (tmp / "note.txt").write_text("hello\n")  # what a command writes to its /tmp
        glob = await one_call(rt, "Glob", pattern="*", path="/tmp")
        grep = await one_call(rt, "Grep", pattern="hello", path="/tmp", output_mode="files_with_matches")
    for got in (glob, grep):
        assert not got["is_error"], got
        assert "note.txt" in block_text(got), got
