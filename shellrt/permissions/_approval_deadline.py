"""How long a permission ask over MCP waits for the client's user: ``$SHELLRT_APPROVAL_TIMEOUT``.

The SDK waits for an elicitation's answer without end; a client whose user never answered held
the call, and the agent, forever (red team round 25). Kept free of the MCP SDK so that
``shellrt serve`` checks the value before it starts anything.
"""

from __future__ import annotations

import math
import os

__all__ = ["APPROVAL_TIMEOUT_S", "approval_timeout"]

#: Seconds an ask waits by default.
APPROVAL_TIMEOUT_S = 600.0
#: The longest wait one may ask for (a day).
_MAX_S = 86_400.0


def approval_timeout() -> float:
    """Seconds an ask waits for an answer: ``$SHELLRT_APPROVAL_TIMEOUT`` or `APPROVAL_TIMEOUT_S`.

    Raises `ValueError` saying what to give."""
    raw = os.environ.get("SHELLRT_APPROVAL_TIMEOUT", "").strip()
    if not raw:
        return APPROVAL_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 < value <= _MAX_S:  # nan fails too
        raise ValueError(
            f"SHELLRT_APPROVAL_TIMEOUT={raw!r}: give the seconds a permission ask waits for an answer, "
            f"above 0 and at most {_MAX_S:g} (default {APPROVAL_TIMEOUT_S:g})"
        )
    return value
