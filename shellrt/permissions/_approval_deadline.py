"""How long a permission ask waits for its person: ``$SHELLRT_APPROVAL_TIMEOUT`` (seconds).

An ask without a deadline held its call, and the agent, for as long as nobody answered: the SDK
waits for an MCP elicitation without end (red team round 25), and `TerminalApprover` waited in
``readline`` (round 26). Both asks now end, denied, after this many seconds. Kept free of
anything heavy so that ``shellrt serve`` checks the value before it starts anything.
"""

from __future__ import annotations

import math
import os

__all__ = ["APPROVAL_TIMEOUT_S", "approval_timeout", "unanswered"]

#: Seconds an ask waits by default.
APPROVAL_TIMEOUT_S = 600.0
#: The longest wait one may ask for (a day).
_MAX_S = 86_400.0


def approval_timeout(value: float | None = None) -> float:
    """Seconds an ask waits for an answer: ``value`` when given, else ``$SHELLRT_APPROVAL_TIMEOUT``,
    else `APPROVAL_TIMEOUT_S`.

    Raises `ValueError` saying what to give."""
    if value is not None:
        if not 0 < value <= _MAX_S:  # nan fails too
            raise ValueError(
                f"an approval timeout of {value!r} s: give the seconds a permission ask waits for an "
                f"answer, above 0 and at most {_MAX_S:g}"
            )
        return float(value)
    raw = os.environ.get("SHELLRT_APPROVAL_TIMEOUT", "").strip()
    if not raw:
        return APPROVAL_TIMEOUT_S
    try:
        number = float(raw)
    except ValueError:
        number = math.nan
    if not 0 < number <= _MAX_S:  # nan fails too
        raise ValueError(
            f"SHELLRT_APPROVAL_TIMEOUT={raw!r}: give the seconds a permission ask waits for an answer, "
            f"above 0 and at most {_MAX_S:g} (default {APPROVAL_TIMEOUT_S:g})"
        )
    return number


def unanswered(deadline: float) -> str:
    """What the model is told when an ask got no answer within ``deadline`` seconds."""
    return (
        f"The approval request got no answer within {deadline:g} s (SHELLRT_APPROVAL_TIMEOUT), so the "
        "call was not run; call it again when someone can answer."
    )
