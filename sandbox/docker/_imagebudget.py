"""The channel budget of each image, for the whole host process.

`ChannelBudget` bounds what an image's ``/bin/sh`` may write on the control channel (noise,
stderr) and remembers the line that made the host stop believing it. Per backend, a batch's
every task, or a ``serve`` process's every session, started the image again with fresh budgets
(red team round 38): 16 MiB of stderr and 16 MiB of noise for the host to read each time, and a
forged line met anew. Keyed by the image's id (its content), not its name: a rebuilt image is
another image. The honest executor writes nothing there (measured: 0 bytes over failing, killed
and recycled commands), so a process's sessions of an honest image never reach it.
"""

from __future__ import annotations

import threading

from sandbox.docker._channel import ChannelBudget

__all__ = ["budget_for"]

_budgets: dict[str, ChannelBudget] = {}
_lock = threading.Lock()


def budget_for(image_id: str) -> ChannelBudget:
    """The budget every container of ``image_id`` spends from in this process."""
    with _lock:
        budget = _budgets.get(image_id)
        if budget is None:
            budget = _budgets[image_id] = ChannelBudget()
        return budget
