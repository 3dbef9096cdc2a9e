"""Read's parse children (PDFs, large notebooks): at most `MAX_PARSING` at once in the process.

Why: each child may hold a core for its whole deadline (20 s) and up to its address-space bound
(2 GiB for pypdf, 1 GiB for a notebook) of the host's memory, and the file is the repository's: a
68 KB PDF whose page shows one 70 MB string made pypdf hold 871 MB and a core for 42 s. Read is
concurrency safe, so a session ran ten such children at once and every session of a ``serve``
process more: about 9 GB and ten cores asked of the host by one turn (red team, round 35).
WebFetch's converter has the same kind of bound (`_convert_worker.MAX_BUSY`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from shellrt.tools._child_slots import ChildSlots

__all__ = ["MAX_PARSING", "parse_slot"]

#: Parse children running at once in this process, whatever the number of sessions.
MAX_PARSING = 2

_slots = ChildSlots("shellrt_parse_slots", MAX_PARSING)


@contextmanager
def parse_slot(deadline: float, label: str, instead: str) -> Iterator[float]:
    """Hold one slot while a child parses ``label``; yields the seconds of ``deadline`` left for it.

    Blocking (call it from a worker thread). A Read waits for a slot at most half its deadline,
    so a child that starts always has the other half; past that the Read is refused with what to
    do (``instead``: the Bash command that reads the file)."""
    started = time.monotonic()

    def refusal() -> str:
        return (
            f"{label} was not parsed: {MAX_PARSING} other PDF or notebook parses of this process kept "
            f"running for {deadline / 2:g} s (slow or very large files). Read it again when they are "
            f"done, read fewer of them at once, or use Bash instead (e.g. `{instead}`)."
        )

    with _slots.held(deadline / 2, refusal):
        yield deadline - (time.monotonic() - started)
