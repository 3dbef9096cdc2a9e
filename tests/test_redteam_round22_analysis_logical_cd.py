"""Red team, round 22 (classifier): bash's logical ``cd l/..`` led git where no check looked.

bash's ``cd`` and ``pushd`` are logical by default: ``..`` removes the name before it, a symlink
included, so ``cd l/..`` (``l -> clean/d``) returns to the directory that holds ``l``. The Bash tool
followed ``cd`` targets physically (``realpath``: ``clean/d/..`` is ``clean``) and checked the
repository there. In a workspace whose own repository names a clean filter, with a clean nested
repository ``clean`` and a symlink ``l`` into it, ``cd l/.. && git status`` was read-only, the check
ran on ``clean``, and git ran in the workspace: the workspace repository's filter ran, unasked in
default mode (bwrap). The same held for ``cd l && cd ..`` and ``pushd l/..``. A ``..`` after a
symlink in the ``cd`` targets now makes the directory unknown (git there asks; relative reads ask,
so ``cd l/.. && cat secret`` cannot read past a deny rule by another name). The commands run only
inside bubblewrap.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from tests._bwrap_session import require_bwrap

pytestmark = pytest.mark.anyio

_GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
#: Each leaves bash in the workspace while the physical path of its targets is ``clean``.
ATTACKS = ["cd l/.. && git status", "cd l && cd .. && git status", "pushd l/.. && git status",
           "cd ./l/../ && git status", "cd l/d2/../.. && git status"]


def _workspace(ws: Path) -> Path:
    """A repository whose own config runs a clean filter, holding a clean repository and a link into it."""
    ws.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "f").write_text("a\n")
    (ws / ".gitattributes").write_text("f filter=x\n")
    env = {**os.environ, **_GIT_ENV}
    subprocess.run(["git", "add", "-A"], cwd=ws, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "1"], cwd=ws, check=True, env=env)
    (ws / "f").write_text("b\n")
    subprocess.run(["git", "config", "filter.x.clean", "sh -c 'touch P && cat'"], cwd=ws, check=True)
    (ws / "clean" / "d" / "d2").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws / "clean")], check=True)
    (ws / "l").symlink_to("clean/d")
    return ws / "P"


async def _run(ws: Path, session: Path, commands: list[str], mode: str = "default") -> list[str]:
    async with shellrt.Runtime(workspace=ws, sandbox="bwrap", session_dir=session, tools=[Bash()],
                               mode=mode) as rt:  # type: ignore[arg-type]
        texts = []
        for i, command in enumerate(commands):  # one after another: the working directory carries over
            [envelope] = await rt.run_envelopes([ToolUseBlock(id=f"lc{i}", name="Bash", input={"command": command})])
            texts.append(str(envelope.model.content))
    return texts


async def test_git_after_a_logical_cd_through_a_symlink_is_asked(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    marker = _workspace(ws)
    # One session, each form from the workspace (a form that ran may have moved it).
    texts = await _run(ws, tmp_path / ".s", [f"cd {ws} && " + a for a in ATTACKS])
    assert not marker.exists(), texts
    assert all("not granted" in t for t in texts), list(zip(ATTACKS, texts, strict=True))


async def test_the_premise_bash_cd_is_logical_and_git_status_plain_is_asked(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    marker = _workspace(ws)
    probes = [f"cd {ws} && " + a.replace("git status", "pwd -P >> where") for a in ATTACKS]
    await _run(ws, tmp_path / ".s", probes, mode="bypassPermissions")
    assert (ws / "where").read_text().split() == [str(ws)] * len(ATTACKS)
    [plain] = await _run(ws, tmp_path / ".s2", ["git status"])
    assert "filter.x.clean" in plain and not marker.exists(), plain
