"""Red team, round 19 (classifier): ``cd`` to a glob led where the checks did not look.

bash's ``cd x?`` changes into the directory whose name matches (``xy``), but the Bash tool resolved
the target as the literal name ``x?``: a directory that does not exist. So ``cd x? && git status``
was read-only with the repository check run on no repository, while git ran in ``xy``, a nested
repository of the workspace whose ``.git/config`` names a clean filter: the filter ran, unasked in
default mode (bwrap run below). A ``cd`` word with ``*``, ``?`` or ``[`` now leads to an unknown
directory (relative reads are unknown: the tool asks), and git after such a ``cd`` is a hazard (its
repository was not checked). ``cd s* && cat key`` under ``Read(./secrets/**)`` held before (the
``cd`` word's glob already met the rule) and is kept as a regression test. The commands run only
inside bubblewrap.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from tests._bwrap_session import require_bwrap
from tests._git import filtered_repo

pytestmark = pytest.mark.anyio


def _nested_repo(ws: Path) -> Path:
    """``ws/xy``: a repository whose own config runs a clean filter on its modified file."""
    filtered_repo(ws / "xy", touches="../P")
    return ws / "P"


async def _run(ws: Path, session: Path, commands: list[str], **kw: object) -> list[str]:
    async with shellrt.Runtime(workspace=ws, sandbox="bwrap", session_dir=session, tools=[Bash()], mode="default",
                               **kw) as rt:  # type: ignore[arg-type]
        envelopes = await rt.run_envelopes(
            [ToolUseBlock(id=f"cd{i}", name="Bash", input={"command": c}) for i, c in enumerate(commands)]
        )
    return [str(e.model.content) for e in envelopes]


async def test_git_after_a_cd_to_a_glob_does_not_run_a_nested_repositorys_filter(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    marker = _nested_repo(ws)
    texts = await _run(ws, tmp_path / ".s", ["cd x? && git status", "cd x[y] && git diff"])
    assert not marker.exists(), texts
    assert all("not granted" in t for t in texts), texts
    # The same repository named plainly is checked, and refused for its filter (the premise).
    [plain] = await _run(ws, tmp_path / ".s2", ["cd xy && git status"])
    assert "filter.x.clean" in plain and not marker.exists(), plain


async def test_a_denied_file_is_not_read_through_a_cd_glob(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / "secrets" / "key").write_text("hunter2\n")
    texts = await _run(ws, tmp_path / ".s", ["cd s* && cat key", "pushd se?rets && cat key"],
                       deny=["Read(./secrets/**)"])
    assert all(("not granted" in t or "denied by deny rule" in t) and "hunter2" not in t for t in texts), texts
