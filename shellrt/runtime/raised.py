"""What a tool's own code raised: whether the turn answers it, and how it is quoted.

A registered tool runs its own code while a call runs (parse, validate, call, render) and while
``tools[]`` is built (name, prompt, schema). Both places turn anything it raises into an answer
(an error result; a tool left out of the listing) except what must end the turn or the process;
both quote the exception the same way (round 36 runtime and runtime2, one idea).
"""

from __future__ import annotations

import asyncio

import anyio

from shellrt.protocol.notes import neutralize_output

__all__ = ["answerable", "quoted"]

_PASSING = (KeyboardInterrupt, SystemExit, GeneratorExit, asyncio.CancelledError)


#: Groups nested deeper than this are not read: quoted as the group, and propagated.
_MAX_GROUP_DEPTH = 16


def answerable(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a tool's own code, is answered (an error result, a tool left out)
    rather than propagated: anything but a cancellation, the process's own exit or interrupt, and
    a group holding one of those (or nested past `_MAX_GROUP_DEPTH`, or too large to read). A
    group of the tool's own exceptions is answered (round 37: it ended the whole message)."""
    if isinstance(exc, Exception):
        return True
    if isinstance(exc, BaseExceptionGroup):
        leaves = _leaves(exc)
        return leaves is not None and all(answerable(leaf) for leaf in leaves)
    if isinstance(exc, _PASSING):
        return False
    try:
        cancelled = anyio.get_cancelled_exc_class()
    except Exception:  # no event loop here: none of its cancellations can be
        return True
    return not isinstance(exc, cancelled)


#: The exceptions a group really holds (the C field: a subclass's own ``exceptions`` may show others).
_HELD = BaseExceptionGroup.__dict__["exceptions"]
#: A group holding more than this (all levels) is not read: it propagates.
_MAX_GROUP_LEAVES = 1000


def _held(group: BaseExceptionGroup[BaseException]) -> tuple[BaseException, ...]:
    return tuple(_HELD.__get__(group, BaseExceptionGroup))


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException] | None:
    """Every non-group exception in ``group``; None past the depth or size read."""
    leaves: list[BaseException] = []
    level: list[BaseException] = [group]
    for _ in range(_MAX_GROUP_DEPTH):
        nested: list[BaseException] = []
        for exc in level:
            if isinstance(exc, BaseExceptionGroup):
                nested.extend(_held(exc))
            else:
                leaves.append(exc)
            if len(leaves) + len(nested) > _MAX_GROUP_LEAVES:
                return None
        if not nested:
            return leaves
        level = nested
    return None


def quoted(exc: BaseException, limit: int, *, one_line: bool = False) -> str:
    """``Type: text`` of ``exc``, cut at ``limit`` characters (``one_line``: its blanks collapsed);
    an exception whose ``str`` itself raises is named only. An exception's text quotes foreign
    data (a server's answer, a file's line): a line of it that reads like a shellrt note is shown
    prefixed with ``(output)`` (`neutralize_output`; round 44: the model read it as a note). A group (a task group's failure) is
    quoted by its first leaf, with how many others it held: its own text ("unhandled errors in a
    TaskGroup") says nothing of what failed or what to do (round 37: a missing ``nice`` read so)."""
    more = 0
    for _ in range(_MAX_GROUP_DEPTH):
        inner = _held(exc) if isinstance(exc, BaseExceptionGroup) else ()
        if not inner:
            break
        more += len(inner) - 1
        exc = inner[0]
    text = _quoted_one(exc, limit, one_line=one_line)
    return f"{text} (and {more} more)" if more else text


def _quoted_one(exc: BaseException, limit: int, *, one_line: bool) -> str:
    kind = type(exc).__name__
    try:
        text = str(exc)
    except Exception:
        return kind
    if one_line:
        text = " ".join(text.split())
    text = text if len(text) <= limit else text[:limit] + "…"
    if not one_line:
        text = neutralize_output(text)[0]
    return f"{kind}: {text}" if text else kind
