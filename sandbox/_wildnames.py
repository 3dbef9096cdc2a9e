"""The names a proxy resolves only because a wildcard allows them: bounded per session.

Why: the proxy resolves every name it lets through on the host, and the host's resolver carries
the name to the zone's name server. Under an allowed wildcard (``*.example.org``) a command
chooses the names, so ``<data>.example.org`` sends data to whoever runs that zone, one lookup a
chunk, past a sandbox with no route of its own (red team, round 36's Left; round 37). Names the
operator listed exactly carry nothing the command chose. So, per proxy (one session): the part a
command writes under the pattern is at most `MOST_WILDCARD_PART` characters (one DNS label's
worth: ordinary names under a wildcard -- ``raw``, ``files``, ``bucket.s3.us-east-1``,
``d111111abcdef8`` -- are far shorter), and at most `MOST_WILDCARD_NAMES` distinct names are
resolved through wildcards; past either the name is refused before any lookup, saying to list it
exactly. A name asked again is not counted again. What a session can still send this way is
bounded: 128 names x 63 characters (~5 KiB of hex), where it was unbounded.
"""

from __future__ import annotations

import threading

from sandbox.policy import domain_matches

__all__ = ["MOST_WILDCARD_NAMES", "MOST_WILDCARD_PART", "WildcardNames"]

#: Distinct names one session may have resolved through wildcards.
MOST_WILDCARD_NAMES = 128
#: Characters a name may have under the wildcard that allows it (dots included).
MOST_WILDCARD_PART = 63


class WildcardNames:
    """The distinct names of one session resolved only through a wildcard of ``allowed``."""

    def __init__(self, allowed: tuple[str, ...]) -> None:
        self._exact = frozenset(a for a in allowed if not a.startswith("*."))
        self._patterns = tuple(a for a in allowed if a.startswith("*."))
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def refusal(self, name: str) -> str | None:
        """None when ``name`` (normalized, allowed) may be looked up now, else why not (and counts it)."""
        if name in self._exact:
            return None
        suffixes = [p[1:] for p in self._patterns if domain_matches(name, p)]
        if not suffixes:
            return None  # not through a wildcard (decide() judged it): nothing to count
        part = len(name) - max(len(s) for s in suffixes)
        if part > MOST_WILDCARD_PART:
            return (
                f"{part} characters under the wildcard that allows it (at most {MOST_WILDCARD_PART}: names "
                "under a wildcard are looked up on the host, so their length is bounded); list the name "
                "exactly if it is really needed"
            )
        with self._lock:
            if name in self._seen:
                return None
            if len(self._seen) >= MOST_WILDCARD_NAMES:
                return (
                    f"this session already had {MOST_WILDCARD_NAMES} distinct names under wildcards "
                    "looked up (each lookup carries the name to the zone's name server, so their number is "
                    "bounded); list the name exactly if it is really needed"
                )
            self._seen.add(name)
        return None
