"""What a tool's own code raised: whether the turn answers it, and how it is quoted.

A registered tool runs its own code while a call runs (parse, validate, call, render) and while
``tools[]`` is built (name, prompt, schema). Both places turn anything it raises into an answer
(an error result; a tool left out of the listing) except what must end the turn or the process;
both quote the exception the same way (round 36 runtime and runtime2, one idea).
"""

from __future__ import annotations

import asyncio

import anyio

__all__ = ["answerable", "quoted"]

_PASSING = (KeyboardInterrupt, SystemExit, GeneratorExit, BaseExceptionGroup, asyncio.CancelledError)


def answerable(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a tool's own code, is answered (an error result, a tool left out)
    rather than propagated: anything but a cancellation, the process's own exit or interrupt, and
    a group that may hold one of those."""
    if isinstance(exc, Exception):
        return True
    if isinstance(exc, _PASSING):
        return False
    try:
        cancelled = anyio.get_cancelled_exc_class()
    except Exception:  # no event loop here: none of its cancellations can be
        return True
    return not isinstance(exc, cancelled)


def quoted(exc: BaseException, limit: int, *, one_line: bool = False) -> str:
    """``Type: text`` of ``exc``, cut at ``limit`` characters (``one_line``: its blanks collapsed);
    an exception whose ``str`` itself raises is named only."""
    kind = type(exc).__name__
    try:
        text = str(exc)
    except Exception:
        return kind
    if one_line:
        text = " ".join(text.split())
    text = text if len(text) <= limit else text[:limit] + "…"
    return f"{kind}: {text}" if text else kind
