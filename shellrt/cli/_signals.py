"""SIGINT, SIGTERM and SIGHUP end a long-running CLI command cleanly and at once.

Python's default SIGTERM/SIGHUP action kills the interpreter on the spot: no
``finally`` runs, so the sandbox never kills the command trees it started.
`run_until_signal` turns each of them into a cancellation of the command's
main task instead: every ``async with`` unwinds (supervisor, backend, runtime
close shielded), trees are killed, temp dirs removed, and the process exits
with ``128 + signal``. A second signal while unwinding is ignored: the
teardown is bounded by the backends' own deadlines. A usage error the command raises as
`SystemExit` leaves as itself (round 26: it printed the task group's traceback before its message).

Docker containers are removed first, synchronously, from the handler
(`sandbox.docker.emergency_cleanup`): the async close may need seconds (an
unresponsive container) or never run (a SIGKILL following the SIGTERM), and a
container must not outlive its owner either way.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

__all__ = ["HANDLED_SIGNALS", "run_until_signal"]

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


async def run_until_signal(func: Callable[..., Awaitable[int]], *args: Any) -> int:
    """``await func(*args)``; on SIGINT/SIGTERM/SIGHUP cancel it, clean up, return ``128 + signum``."""
    received: list[int] = []
    result = 0
    #: A usage error the body raised (``SystemExit("shellrt: …")``): raised again once the task
    #: group is closed, where it is the plain message, not a traceback of an exception group.
    exits: list[SystemExit] = []
    with anyio.open_signal_receiver(*HANDLED_SIGNALS) as signals:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                async for signum in signals:
                    if not received:
                        received.append(int(signum))
                        _remove_containers()
                        tg.cancel_scope.cancel()

            async def body() -> None:
                nonlocal result
                try:
                    result = await func(*args)
                except SystemExit as exc:
                    exits.append(exc)
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            tg.start_soon(body)
    if received:
        return 128 + received[0]
    if exits:
        raise exits[0]
    return result


def _remove_containers() -> None:
    """Remove this process's docker containers now (only if the docker backend was ever loaded)."""
    docker = sys.modules.get("sandbox.docker")
    cleanup = getattr(docker, "emergency_cleanup", None)
    if cleanup is None:
        return
    try:
        cleanup()
    except Exception as exc:  # the async close and atexit still try; say why this did not
        print(f"shellrt: removing containers on signal failed: {exc}", file=sys.stderr)
