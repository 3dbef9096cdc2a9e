"""Red team, round 10 (file tools): the decision and the open are one resolution.

`validate` resolves a path once; the permission check judges that resolution and the call's
anchored open refuses a path that now leads elsewhere (``expect``). When the path could *not*
be resolved at `validate` (a symlink loop a background command had put there), nothing was
recorded: the permission check resolved it again (a second moment) and the call opened it with
no expectation at all (a third). A command swapping ``lnk`` from a loop to a directory inside
the workspace (before the check) and then to one outside (before the call) got a Read allowed
as "inside the allowed directories" to return a file outside them, unasked; Grep and Glob alike.
Now `validate` always records what the check judges (the lexical path when it cannot be
resolved, with the refusal when the view refused it) and the call opens only that.

The swaps are made between the steps the runtime takes (validate, permission check, call), so the
race is won every time.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.glob import GlobInput, GlobTool
from shellrt.tools.grep import GrepInput, GrepTool
from shellrt.tools.read import ReadInput, ReadTool

pytestmark = pytest.mark.anyio


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, ToolContext]:
    ws = tmp_path / "ws"
    (ws / "inner").mkdir(parents=True)
    (ws / "inner" / "secret.txt").write_text("harmless\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOPSECRET outside the workspace\n")
    os.symlink("lnk", ws / "lnk")  # a loop: `validate` cannot resolve it
    ctx = ToolContext(
        session_id="s", session_dir=tmp_path / "session", workspace=ws, cwd=str(ws), allowed_roots=(ws,)
    )
    (tmp_path / "session").mkdir()
    return ws, outside, ctx


def _swap(link: Path, target: Path) -> None:
    tmp = link.with_name(link.name + ".new")
    os.symlink(target, tmp)
    os.replace(tmp, link)


async def _raced_result(tool: Any, tool_input: Any, places: tuple[Path, Path, ToolContext]) -> str:
    """What the model gets when ``lnk`` is a loop at `validate`, leads inside the workspace at
    the permission check and outside it at the call ("" when the check or the call refused)."""
    ws, outside, ctx = places
    await tool.validate(tool_input, ctx)
    _swap(ws / "lnk", ws / "inner")
    verdict = await tool.check_permissions(tool_input, ctx)
    _swap(ws / "lnk", outside)
    if verdict.behavior != "allow":
        return ""
    try:
        output = await tool.call(tool_input, ctx)
    except ToolExecutionError:
        return ""
    return str(tool.to_model_content(output.data))


async def test_read_opens_only_what_its_permission_check_judged(
    places: tuple[Path, Path, ToolContext],
) -> None:
    text = await _raced_result(ReadTool(), ReadInput(file_path="lnk/secret.txt"), places)
    assert "TOPSECRET" not in text, "a Read judged inside the workspace read a file outside it"


async def test_grep_searches_only_what_its_permission_check_judged(
    places: tuple[Path, Path, ToolContext],
) -> None:
    grep_input = GrepInput(pattern="TOPSECRET", path="lnk", output_mode="content")
    assert "TOPSECRET" not in await _raced_result(GrepTool(), grep_input, places)


async def test_glob_lists_only_what_its_permission_check_judged(
    places: tuple[Path, Path, ToolContext],
) -> None:
    (places[1] / "only-outside.txt").write_text("x")
    text = await _raced_result(GlobTool(), GlobInput(pattern="*.txt", path="lnk"), places)
    assert "only-outside" not in text


async def test_a_loop_that_stays_is_refused_and_a_plain_read_still_works(
    places: tuple[Path, Path, ToolContext],
) -> None:
    ws, _, ctx = places
    tool = ReadTool()
    looping = ReadInput(file_path="lnk/secret.txt")
    await tool.validate(looping, ctx)
    assert (await tool.check_permissions(looping, ctx)).behavior == "deny"
    plain = ReadInput(file_path="inner/secret.txt")
    await tool.validate(plain, ctx)
    assert (await tool.check_permissions(plain, ctx)).behavior == "allow"
    assert "harmless" in (await tool.call(plain, ctx)).data.text
    _swap(ws / "lnk", ws / "inner")
    ctx.read_state.clear()
    ctx.tool_state.clear()  # no "unchanged since last read" answer: read it again
    linked = ReadInput(file_path="lnk/secret.txt")  # a symlink inside the workspace stays usable
    await tool.validate(linked, ctx)
    assert (await tool.check_permissions(linked, ctx)).behavior == "allow"
    assert "harmless" in (await tool.call(linked, ctx)).data.text
