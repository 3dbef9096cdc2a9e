"""An approver's answer as `ApprovalResponse` validation would have made it, or none at all.

The gate runs a call on every answer whose ``behavior`` is not ``"deny"``. Validation allows only
``"allow"`` and ``"deny"``, but ``ApprovalResponse.model_construct(behavior="no")`` (or a
``model_copy(update=...)``) skips it: an approver that put the person's own word there ran the call
it meant to refuse (red team round 35). Each answer is validated afresh (a few microseconds, once
per question a person answers); one that fails raises, and the gate denies when asking fails.
"""

from __future__ import annotations

import functools
from typing import Any

from shellrt.permissions import ApprovalResponse, Approver
from shellrt.runtime.revalidated import revalidated

__all__ = ["checked_answers"]


def checked_answers(approver: Approver) -> Approver:
    """``approver`` whose every answer is a validated `ApprovalResponse` (else a `ValueError`/`TypeError`)."""

    @functools.wraps(approver)
    async def asking(request: Any) -> ApprovalResponse:
        return revalidated(await approver(request), (ApprovalResponse,), "approver answer")

    return asking
