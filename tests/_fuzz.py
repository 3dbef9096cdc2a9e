"""How many generated cases a fuzz test of the analyser draws, per lane.

scripts/test.sh runs every ``tests/test_analysis_*.py`` twice: first on the pure-Python analyser
(``SHELLRT_EXPECT_COMPILED=0``, the build without a compiler), then compiled by mypyc in the parallel
lane (``SHELLRT_EXPECT_COMPILED=1``), where each generator draws its full count. The pure-Python lane
draws a quarter of it: the same generators and assertions, so a rule that differs between the builds
is still met, while the full search runs once (round 29: the pure lane's fuzz tests took about 60 s
of CPU of its 70 s). A local run (the variable unset) draws the full count.
"""

from __future__ import annotations

import os
from typing import TypeVar

T = TypeVar("T")

#: The pure-Python lane's share of a full count.
PURE_LANE_SHARE = 4
#: Never fewer than this: a trimmed search still covers each generator's branches.
MINIMUM = 50


def in_pure_lane() -> bool:
    """Whether this is scripts/test.sh's pure-Python analysis lane (the compiled lane repeats it in full)."""
    return os.environ.get("SHELLRT_EXPECT_COMPILED") == "0"


def examples(full: int) -> int:
    """``full`` generated cases, or this lane's share of them (`PURE_LANE_SHARE`, at least `MINIMUM`)."""
    if not in_pure_lane():
        return full
    return min(full, max(MINIMUM, full // PURE_LANE_SHARE))


def share(items: list[T]) -> list[T]:
    """``items``, or this lane's share of them (every `PURE_LANE_SHARE`-th): for a seeded generator's
    list whose every item costs a bash or bwrap run."""
    return items[::PURE_LANE_SHARE] if in_pure_lane() else items
