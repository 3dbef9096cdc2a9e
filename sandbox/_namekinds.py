"""Whether a listed name answered public addresses before: a later private answer is rebinding.

Why: a name the operator lists exactly may reach non-public addresses (an internal service, on
every port), and a public one on the web ports. Whoever runs that name's DNS chooses which it is
at each lookup: ``api.example.org``, public when the session starts, answered ``10.0.0.5`` a
moment later and the proxy opened ``10.0.0.5:22``, a host on the operator's network no rule named
(red team, round 37: DNS rebinding mid-session). So each host-side fetcher (a proxy, a WebFetch
session) keeps the first kind of answer of every name: once a name answered only public addresses,
an answer holding a non-public one is refused for the rest of the session. A name first answering
non-public addresses (``localhost``, an internal name) keeps them; public ones are reached as ever.
"""

from __future__ import annotations

import threading

__all__ = ["MOST_NAMES_KEPT", "FirstKinds"]

#: Names whose first kind is kept (a session's listed names are few; wildcard names are bounded
#: by `sandbox._wildnames`): past it the oldest are forgotten.
MOST_NAMES_KEPT = 4096


class FirstKinds:
    """Per name: whether its first answer this session was public only."""

    def __init__(self) -> None:
        self._public: dict[str, bool] = {}
        self._lock = threading.Lock()

    def refusal(self, name: str, public: bool) -> str | None:
        """None when an answer of ``name`` that is ``public`` (all global) or not may be reached."""
        with self._lock:
            first = self._public.setdefault(name, public)
            if len(self._public) > MOST_NAMES_KEPT:
                del self._public[next(iter(self._public))]
        if first and not public:
            return (
                "it answered public addresses earlier in this session and now a loopback, link-local or "
                "private one (DNS rebinding); list that address itself if it is really meant"
            )
        return None
