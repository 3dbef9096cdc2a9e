"""Red team round 39 (lead): the hook watcher does not outlive its use.

Round 39's hooks2 started one watcher process a shellrt process (`_host_pause_watch`) at the first
hook or pause, and it lived as long as shellrt did: a process the embedding program never started,
left running while shellrt sat idle (the suite's leftover check named it after any in-process hook
test). Now a watcher holding nothing for `IDLE_S` ends (it kills nothing), and the next hook starts
another that still holds the hook.
"""

from __future__ import annotations

import os
import time

import anyio

from shellrt.permissions.hookproc import run_hook_process
from shellrt.supervisor import _host_pause_watch as watch

#: How long an idle watcher may stay: its idle time and a margin for a loaded machine.
_WAIT_S = getattr(watch, "IDLE_S", 1.0) + 5.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _hook() -> int:
    result = anyio.run(
        lambda: run_hook_process(
            "sleep 0.3; echo ran", b"{}", cwd=None, env={"PATH": "/usr/bin:/bin"}, timeout=10
        )
    )
    assert result.exit_code == 0 and result.stdout.strip() == "ran", result
    pid = watch.watcher_pid()
    assert pid is not None, "the hook was held by no watcher"
    return pid


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_an_idle_watcher_ends_and_the_next_hook_starts_another() -> None:
    first = _hook()
    assert _gone_within(first, _WAIT_S), f"watcher {first} outlived its hook by {_WAIT_S} s"
    second = _hook()
    assert second != first
    assert _gone_within(second, _WAIT_S)


def test_a_watcher_in_use_is_kept_between_hooks() -> None:
    first = _hook()
    second = _hook()  # well inside IDLE_S
    assert second == first and _alive(first)
    assert _gone_within(first, _WAIT_S)
