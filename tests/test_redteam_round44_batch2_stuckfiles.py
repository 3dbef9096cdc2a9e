"""Red team, round 44 (batch2): one batch task cancelling its own file tools refused every task's.

The host-side file tools run their blocking work in worker threads (`shellrt.tools._offloop`); a
thread cannot be stopped, so one a caller abandons is counted "stuck", and past `MAX_STUCK` (16)
of them every file tool of the *process* is refused ("earlier file operations are still blocked
on a file system that does not answer"): the guard against a hung NFS or FUSE mount. A batch runs
every task's `tool_use` blocks in one harness process, and a task file chooses each block's
`timeout`: a task whose Glob blocks (a pattern of many ``*`` over long names: its matching runs up
to `glob.MATCH_TIMEOUT_S`, 20 s, and then stops itself) each end by that timeout after a fraction
of a second left a thread per block counted stuck at once, though each ends by itself well inside
the file-operation deadline. Measured with real bwrap tasks: 90 such blocks, 1 s each, reached
16 in 60 s, and the next Read, Glob or Grep of *any* task of the run was refused (a `failed`
verdict it did not earn). A thread now counts as stuck only once it has run for the whole
`FILE_IO_TIMEOUT_S` (what a hung mount does), whether it timed out or its caller went away.
"""

from __future__ import annotations

import shutil
import threading
from functools import partial
from pathlib import Path

import anyio
import pytest

from shellrt.batch import Task, run_sync
from shellrt.tools import _offloop
from tests.conftest import require

_OPTIONS = {"output_budget": None, "default_limits": None}


def test_cancelled_bounded_work_is_not_counted_as_a_hung_mount(monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: 16 cancelled calls whose threads still worked (bounded work, not a hung mount)
    made the next file operation of the process be refused at once."""
    monkeypatch.setattr(_offloop, "FILE_IO_TIMEOUT_S", 30.0)
    monkeypatch.setattr(_offloop, "_abandoned", {})  # this test's threads alone (see below)
    release = threading.Event()
    started = threading.Semaphore(0)

    def bounded_work() -> None:  # ends by itself (here: when released), well inside the deadline
        started.release()
        release.wait(60)

    async def main() -> str:
        for _ in range(_offloop.MAX_STUCK):
            async with anyio.create_task_group() as tg:
                tg.start_soon(partial(_offloop.off_loop, bounded_work, what="matching"))
                await anyio.to_thread.run_sync(partial(started.acquire, timeout=30))  # the thread is working
                tg.cancel_scope.cancel()  # its caller's own deadline (a batch block's timeout)
        try:
            return await _offloop.off_loop(lambda: "read", what="Reading a.txt")
        finally:
            release.set()  # before the loop closes: it joins its worker threads

    assert anyio.run(main) == "read"


def test_a_thread_past_the_whole_deadline_still_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard kept (passed before too): a call abandoned by its caller whose thread is still blocked
    after `FILE_IO_TIMEOUT_S` (a hung mount) counts, and past `MAX_STUCK` new work is refused."""
    monkeypatch.setattr(_offloop, "FILE_IO_TIMEOUT_S", 0.2)
    monkeypatch.setattr(_offloop, "MAX_STUCK", 2)
    # This test's threads alone: with the deadline shortened, another test's abandoned threads still
    # running in this worker (the batch test's Glob matching, up to 20 s) counted too, and the second
    # call here was refused before it started (CI121).
    monkeypatch.setattr(_offloop, "_abandoned", {})
    release = threading.Event()
    started = threading.Semaphore(0)
    before = _offloop.stuck_threads()

    def hung() -> None:
        started.release()
        release.wait(60)

    async def main() -> None:
        for _ in range(2):
            async with anyio.create_task_group() as tg:
                tg.start_soon(partial(_offloop.off_loop, hung, what="Reading"))
                await anyio.to_thread.run_sync(partial(started.acquire, timeout=30))
                tg.cancel_scope.cancel()
        await anyio.sleep(0.3)  # past the (shortened) deadline: blocked that long is a hung mount
        try:
            with pytest.raises(_offloop.ToolExecutionError, match="was not started"):
                await _offloop.off_loop(lambda: None, what="Reading a.txt")
            assert _offloop.stuck_threads() >= before + 2
        finally:
            release.set()  # before the loop closes: it joins its worker threads

    anyio.run(main)


def test_one_tasks_cancelled_globs_leave_the_next_tasks_read_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: the first task's Glob blocks (each ended by its 1 s timeout while its matching
    ran on for up to 20 s) were counted stuck; the next task's Read of its own file was refused and
    the task `failed`. The limit is lowered to 3 here (16 in a run: measured above) so that a few
    blocks show it; the threads are the real ones."""
    require(shutil.which("bwrap") is not None, "bubblewrap is needed for batch tasks")
    monkeypatch.setattr(_offloop, "MAX_STUCK", 3)
    make = "for i in $(seq 300); do : > \"$(printf 'a%.0s' $(seq 200))$i\"; done"
    pattern = "*a" * 1500 + "*b"  # each name costs ~1500 live states a character: minutes of matching
    globs = [
        {"type": "tool_use", "id": f"toolu_g{k}", "name": "Glob", "input": {"pattern": pattern}}
        for k in range(5)
    ]
    attacker = Task.model_validate(
        {"id": "att", "sandbox": "bwrap", "timeout": 1, "commands": [{"run": make, "timeout": 120}, *globs]}
    )
    victim = Task.model_validate(
        {
            "id": "vic",
            "sandbox": "bwrap",
            "commands": [
                "echo verdict > a.txt",
                {"type": "tool_use", "id": "toolu_r", "name": "Read", "input": {"file_path": "a.txt"}},
            ],
        }
    )
    results = {r.id: r for r in run_sync([attacker, victim], out=tmp_path / "r.jsonl", concurrency=1, **_OPTIONS)}
    assert results["att"].status == "timeout", results["att"]
    assert sum(c.timed_out for c in results["att"].commands) >= 3, results["att"].commands  # abandoned
    read = results["vic"].commands[1]
    assert results["vic"].status == "ok" and "verdict" in (read.preview or ""), read
