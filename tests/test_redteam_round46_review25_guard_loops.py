"""Red team round 46, review25: round 45's shared guard walk across event loops.

`_ignore_guard._as_walked` shares a walk of one tree between searches under way at once through
a module-level table of `anyio.Event`s. An Event belongs to the event loop that waits on it, but
the table was the process's: a program running sessions in several threads (one event loop each,
as `anyio.run` per thread does) had a search in loop B wait on loop A's walk, whose end set the
Event from A's thread -- which does not wake loop B. B's Glob or Grep sat there until something
else woke its loop (here: its own timeout).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import anyio

from shellrt.tools import _ignore_guard


def test_a_search_in_another_event_loop_is_not_left_waiting(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src/a.txt").write_text("x\n")
    first_started, release = threading.Event(), threading.Event()
    real = _ignore_guard.odd_ignore_file
    calls: list[str] = []

    def gated(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(threading.current_thread().name)
        if len(calls) == 1:  # the first walk (loop A) holds until loop B waits
            first_started.set()
            release.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(_ignore_guard, "odd_ignore_file", gated)
    results: dict[str, object] = {}

    def loop_a() -> None:
        results["a"] = anyio.run(_ignore_guard._as_walked, root, None, ())

    async def in_b() -> bool:
        async with anyio.create_task_group() as tg:
            got: list[bool] = []

            async def search() -> None:
                got.append(await _ignore_guard._as_walked(root, None, ()))

            tg.start_soon(search)
            await anyio.wait_all_tasks_blocked()  # B waits (on A's walk, or its own)
            release.set()
        return got[0]

    def loop_b() -> None:
        first_started.wait(10)
        started = time.monotonic()
        try:
            results["b"] = anyio.run(_b_with_timeout, in_b)
        finally:
            results["b_s"] = time.monotonic() - started

    a = threading.Thread(target=loop_a, name="loop-a")
    b = threading.Thread(target=loop_b, name="loop-b")
    a.start()
    b.start()
    a.join(20)
    b.join(20)
    assert not a.is_alive() and not b.is_alive()
    assert results.get("a") is True, results
    assert results.get("b") is True, results
    # 10 s (its timeout, "timed out" above) before: A's end never woke loop B. Round 49: 5 s, not 2 s
    # (the timeout was 4 s): a loaded lane's waits are not the wake-up this pins.
    assert float(results["b_s"]) < 5.0, results


async def _b_with_timeout(work):  # type: ignore[no-untyped-def]
    with anyio.move_on_after(10):
        return await work()
    return "timed out"
