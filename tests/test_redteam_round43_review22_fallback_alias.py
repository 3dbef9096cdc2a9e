"""Red team round 43 (review22): a bwrap session's walker fallback counted a masked file's other name.

In a bwrap session ripgrep runs in the sandbox, where a masked file and its other names (hard
links: `sandbox._maskaliases`) are hidden. Round 42 (files5) made a ripgrep that ran out of its
data bound answer by the host walker, and a command chooses that: ``ln -s /dev/zero .gitignore``.
Grep built that walker's query for ripgrep, though: without the masked files' inodes
(`GrepQuery.skip_inodes` was left empty whenever ripgrep was to search), so the host walker read a
hard link of a masked file and counted its lines toward the 100,000-line stop before its hits were
dropped: ``TOKEN=h`` failed with the stop where ``TOKEN=x`` answered -- the masked file's content,
a guess a call (round 41's class, reopened by the fallback). Now the walker never runs without
the masked files' inodes: a fallback gets them then.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import shellrt
from sandbox.policy import SandboxPolicy
from shellrt.tools._search_types import MAX_HIT_LINES
from tests import _nonroot
from tests._calls import one_call
from tests.conftest import require


@pytest.mark.anyio
async def test_the_fallback_walker_does_not_count_a_masked_files_other_name(tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "ok.txt").write_text("hello\n")
    (root / "secrets/key.txt").write_text("TOKEN=hunter2\n" * (MAX_HIT_LINES + 1))
    os.link(root / "secrets/key.txt", root / "copy.txt")
    async with shellrt.Runtime(
        workspace=root,
        sandbox="bwrap",
        mode="acceptEdits",
        session_dir=tmp_path / "s",
        settings_files=(),
        allow=("Bash",),
        policy=SandboxPolicy(workspace=root, read_denied=(root / "secrets",)),
    ) as rt:
        made = await one_call(rt, "Bash", command="mkdir -p .git && ln -s /dev/zero .gitignore && cat copy.txt")
        assert "hunter2" not in str(made["content"]), made  # the other name is masked in the sandbox
        hit = await one_call(rt, "Grep", pattern="hello|TOKEN=h", output_mode="content")
        miss = await one_call(rt, "Grep", pattern="hello|TOKEN=x", output_mode="content")
    assert "ok.txt" in str(miss["content"]) and "hunter" not in str(hit["content"]), (hit, miss)
    assert hit["content"] == miss["content"], f"the answer depends on the masked file:\n{hit}\n---\n{miss}"


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The leak's caller: a root caller's Grep judged every walked file after the stop (its sandbox
    user's rights), which dropped the other name; a non-root one without deny rules did not."""
    _nonroot.held_as_nobody(__file__, "test_the_fallback_walker_does_not_count_a_masked_files_other_name")
