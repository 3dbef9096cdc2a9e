"""A path's ``realpath`` read again while a link on its way keeps changing.

Why: ``os.path.realpath`` reads a link it has just seen (``lstat``, then ``readlink``); a command
that swaps a link and a directory in between makes ``readlink`` fail with EINVAL. Read once, the
permission check of the file tools failed as a whole (round 31 CI), and a path judged against the
roots was "not contained" (1 call in ~1,000 under a swapping loop, round 35): each judge retried
on its own or not at all. This is the one retrying reader; it gives up (None: the caller fails
closed) only when every try failed.
"""

from __future__ import annotations

import os

__all__ = ["RESOLVE_TRIES", "settled_realpath"]

#: Reads of a path before `settled_realpath` gives up (each a few microseconds; a command swapping a
#: link and a directory in a loop made 3 tries fail 1 write in ~2,400 under the confinement race test).
RESOLVE_TRIES = 50


def settled_realpath(path: str) -> str | None:
    """``os.path.realpath(path)``, or None when a link on the way kept changing while it was read
    (or the path cannot be resolved at all: a NUL byte)."""
    for _ in range(RESOLVE_TRIES):
        try:
            return os.path.realpath(path)
        except OSError:
            continue
        except ValueError:
            return None
    return None
