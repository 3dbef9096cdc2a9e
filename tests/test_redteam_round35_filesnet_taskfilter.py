"""Red team round 35 (filesnet): parallel TaskOutput filters ran one regex child each, unbounded.

TaskOutput matches its ``filter`` in a child process killed at `FILTER_TIMEOUT_S` (10 s; round 12:
backtracking), and TaskOutput is concurrency safe: a model (or the text steering it) sending ten
calls with ``^(a+)+$`` over a task's ``aaaa…!`` lines would hold ten cores for 10 s, every turn. The
same class as Read's parse children (`_parse_slots`): now at most `MAX_FILTERING` filter children
run at once per event loop (one for a ``serve`` process); a call waits for a slot at most half the
filter's deadline, before it reads (so a refused call consumes nothing), then says what to do.
"""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.supervisor import Supervisor
from shellrt.tools import task_output
from shellrt.tools.bash import Bash, BashInput
from shellrt.tools.task_output import TaskOutput, TaskOutputInput
from tests import test_tools_bash
from tests._child_procs import count_children

pytestmark = pytest.mark.anyio

_MARK = b"rx = re.compile(req['pattern'])"


def _filter_children() -> int:
    return count_children((_MARK,))


#: A real supervisor over the local backend, as TaskOutput's own tests use.
ctx = test_tools_bash.ctx


async def test_parallel_filters_run_a_bounded_number_of_children(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(task_output, "FILTER_TIMEOUT_S", 2.0)  # the test stays short
    tasks = ctx.service(Supervisor).tasks
    line = "a" * 40 + "!"
    ids = []
    for _ in range(4):
        started = await Bash().call(
            BashInput(command=f"for i in 1 2 3; do echo {line}; done; sleep 30", run_in_background=True), ctx
        )
        assert started.data.task_id
        ids.append(started.data.task_id)
    with anyio.fail_after(30):
        while any(tasks.get(i).total_bytes < 3 * (len(line) + 1) for i in ids):
            await anyio.sleep(0.05)

    peak = [0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _filter_children())
            time.sleep(0.02)

    answers: list[str] = []

    async def one(task_id: str) -> None:
        try:
            await TaskOutput().call(TaskOutputInput(task_id=task_id, filter="^(a+)+$"), ctx)
            answers.append("matched")
        except ToolExecutionError as exc:
            answers.append(str(exc))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        async with anyio.create_task_group() as tg:
            for task_id in ids:
                tg.start_soon(one, task_id)
    finally:
        stop.set()
        watcher.join()
    assert peak[0] <= 2, (peak[0], answers)  # `task_output.MAX_FILTERING`
    assert len(answers) == 4
    busy = [a for a in answers if "other TaskOutput filters" in a]
    assert busy, answers
    for answer in busy:
        assert "nothing was read" in answer and "without filter" in answer, answer
    # A refused call consumed nothing: its task's lines are still there to read.
    refused_reads = 0
    for task_id in ids:
        again = await TaskOutput().call(TaskOutputInput(task_id=task_id), ctx)
        refused_reads += again.data.text.count(line)
    assert refused_reads == 3 * len(busy)
    for task_id in ids:
        await tasks.stop(task_id)
