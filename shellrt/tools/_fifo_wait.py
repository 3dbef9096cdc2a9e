"""Whether a search process is stuck opening a FIFO: ripgrep and the ignore files it obeys.

Why: ripgrep opens ``.gitignore``, ``.ignore`` and ``.rgignore`` in each directory it enters with
a blocking open, so a FIFO by one of those names (one ``mkfifo``) held it in the kernel's wait
for a writer until the 60 s deadline, and every Glob and Grep of the tree failed (red team round
41, files4), or, with a command holding it open to write, in the read. It opens no FIFO for
anything else (a walk skips what is not a regular file), so a thread of it waiting there
(``wait_for_partner``, the FIFO open's wait, or a pipe read, in ``/proc/<pid>/task/<tid>/wchan``) means that: the caller stops it and lets the Python walker,
which reads only regular ignore files, answer instead.
"""

from __future__ import annotations

import os

import anyio

__all__ = ["FIFO_FIRST_LOOK_S", "waits_on_fifo", "watch_for_fifo"]

#: When the first look is taken: nearly every search has ended by then, and pays nothing.
FIFO_FIRST_LOOK_S = 0.25
#: Seconds between later looks.
_EVERY_S = 0.25
#: What ``wchan`` names for a thread blocked opening a FIFO (fs/pipe.c, ``fifo_open``), or reading
#: one a command holds open for writing (``pipe_read``; ``anon_pipe_read`` from Linux 6.16): ripgrep
#: reads no pipe (its stdin is not searched: it is always given a path).
_FIFO_WAITS = frozenset({"wait_for_partner", "fifo_open", "pipe_read", "anon_pipe_read"})


def waits_on_fifo(pid: int) -> bool:
    """Whether a thread of ``pid`` is blocked opening a FIFO (False when it cannot be told)."""
    tasks = f"/proc/{pid}/task"
    try:
        tids = os.listdir(tasks)
    except OSError:
        return False
    for tid in tids:
        try:
            with open(f"{tasks}/{tid}/wchan", "rb") as f:
                if f.read(64).decode(errors="replace").strip() in _FIFO_WAITS:
                    return True
        except OSError:
            continue
    return False


async def watch_for_fifo(pid: int) -> None:
    """Return once ``pid`` is seen blocked opening a FIFO; run it beside the wait for the process
    (cancel it when the process ends). Each look reads a few small ``/proc`` files."""
    pause = FIFO_FIRST_LOOK_S
    while True:  # a poll: the kernel tells no one when a process starts to wait on a FIFO
        await anyio.sleep(pause)
        if waits_on_fifo(pid):
            return
        pause = _EVERY_S
