"""How many bytes of request bodies ``shellrt serve --http`` holds at once, over every connection.

Why: each body is bounded (`MAX_MESSAGE_BYTES`, ~24 MiB) and each peer's connections (64), but not
their sum: a body is held from its first byte until its request ends (read, parsed, and kept by the
SDK while the call runs or waits for its turn), so one local client with the token sent 16 bodies
of ~24 MiB behind a running command and took the process holding every session to 565-625 MB
(32 bodies: 763 MB; 64 connections ~1.5 GB, 256 ~6 GB; red team round 44, round 28's Left). A body past
`SMALL_BODY_BYTES` is now admitted only while the bodies held stay under `MAX_HELD_BODY_BYTES`; one
that would go past it is refused 503 as it arrives (the client sends it again later). Small bodies
(every ordinary call) are always admitted, so large ones cannot lock out the rest.
"""

from __future__ import annotations

__all__ = ["MAX_HELD_BODY_BYTES", "SMALL_BODY_BYTES", "BodyBudget"]

#: Bytes of bodies held at once (four of the largest message): beyond, a large body is refused.
MAX_HELD_BODY_BYTES = 4 * 25_231_360
#: A body up to this size is always admitted (it still counts against the budget).
SMALL_BODY_BYTES = 1024 * 1024


class BodyBudget:
    """The bytes of bodies held by requests in flight (one event loop: no lock needed)."""

    def __init__(self, limit: int = MAX_HELD_BODY_BYTES, small: int = SMALL_BODY_BYTES) -> None:
        if limit < small or small < 0:
            raise ValueError("the body budget must be at least the small-body size, which is at least 0")
        self.limit = limit
        self.small = small
        self.held = 0

    def take(self, request_bytes: int, more: int) -> bool:
        """Count ``more`` bytes of a request that holds ``request_bytes`` already; False (nothing
        counted) when they would take a large body past the budget."""
        if request_bytes + more > self.small and self.held + more > self.limit:
            return False
        self.held += more
        return True

    def give_back(self, count: int) -> None:
        """A request ended: its bytes are free."""
        self.held = max(0, self.held - count)

    def refusal(self) -> str:
        return (
            f"the server is holding {self.held:,} bytes of other requests' bodies and takes at most "
            f"{self.limit:,} at once; this request was not read. Send it again when a call has finished, "
            "or send less at once (write a large file in parts: Write, then Edit)"
        )
