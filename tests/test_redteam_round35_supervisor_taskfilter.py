"""Red team, round 35 (supervisor): a filtered task read left an escape sequence open.

Round 33 settled the output's own end (a finished task's last chunk) and round 26 held a sequence
open at a read's cut back for the next read. Both judge the raw lines. A filter keeps some of
them: a sequence one kept line opens and a dropped line closes (``keep \\e]0;`` / ``skip \\a`` /
``keep two``) is closed in the raw text but open in the kept lines, so what is shown after it
(the next kept lines, the caller's notes: "Full output: PATH") was taken in by a terminal
rendering the result (an OSC: into the window title).

`TaskManager.read_new`'s ``pattern`` now settles each kept line on its own
(`shellrt.supervisor.text.settled_lines`): a sequence a line ends inside is shown as escapes
(``\\x1b]0;``). TaskOutput's ``filter`` runs in `shellrt.tools.task_output` (not the supervisor's
files): the same one call there is left to its owner, and its test below is an expected failure.
"""

from __future__ import annotations

import anyio
import pytest

from shellrt.protocol import ToolContext
from shellrt.supervisor import Supervisor
from shellrt.supervisor._escape_cut import open_sequence_start
from shellrt.tools.bash import Bash, BashInput
from shellrt.tools.task_output import TaskOutput, TaskOutputInput, format_task_output
from tests import test_tools_bash

pytestmark = pytest.mark.anyio

#: A real supervisor over the local backend, as TaskOutput's own tests use.
ctx = test_tools_bash.ctx

_LINES = "printf 'keep one \\033]0;\\nskip \\007\\nkeep two\\n'; exec sleep 30"
_SIZE = 29  # bytes _LINES prints


def _open_at(text: str) -> int | None:
    return open_sequence_start(text.encode("utf-8", "surrogateescape"))


async def _running_task(ctx: ToolContext) -> str:
    """A task that printed `_LINES` and runs on (stopped by the caller)."""
    started = await Bash().call(BashInput(command=_LINES, run_in_background=True), ctx)
    task_id = started.data.task_id
    assert task_id
    with anyio.fail_after(20):
        while ctx.service(Supervisor).tasks.get(task_id).total_bytes < _SIZE:
            await anyio.sleep(0.02)
    return task_id


async def test_a_pattern_read_never_leaves_a_sequence_open(ctx: ToolContext) -> None:
    """Failed before (1 of 1): the kept lines ended inside the OSC a dropped line closed."""
    tasks = ctx.service(Supervisor).tasks
    task_id = await _running_task(ctx)
    try:
        kept = (await tasks.read_new(task_id, "^keep")).text
    finally:
        await tasks.stop(task_id)
    assert _open_at(kept) is None, repr(kept)
    assert kept == "keep one \\x1b]0;\nkeep two\n", repr(kept)  # shown, not dropped


async def test_task_output_filter_never_leaves_a_sequence_open(ctx: ToolContext) -> None:
    """The model-facing twin, `shellrt.tools.task_output._filtered` (lead: settled_lines; it was a
    strict xfail on the supervisor's branch, 1 of 1 failed before)."""
    task_id = await _running_task(ctx)
    try:
        result = await TaskOutput().call(TaskOutputInput(task_id=task_id, filter="^keep"), ctx)
    finally:
        await ctx.service(Supervisor).tasks.stop(task_id)
    shown = format_task_output(result.data)
    assert _open_at(shown[: shown.index("[shellrt] Full output")]) is None, shown
