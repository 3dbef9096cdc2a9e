"""Red team round 53 (supdock): two sessions' checks evicted each other's socket verdicts.

`sandbox._hostsockets._foreign_lines` remembers the verdict on each other-namespace socket line per
set of own paths (a session's), in one table of 65,536 lines that is cleared whole when full. A
sandboxed command binding 57,000 sockets in its /tmp (one line each in its namespace's table)
filled it with one session's verdicts; the next session's check, with other own paths, found none,
cleared it and judged all 57,000 again (a parse, an ``lstat`` and a resolution each), and so on:
every command of two sessions side by side took 1.1-2.0 s (0.35-0.46 s of host CPU), against
~0.26 s for one. Now each set of own paths has its own table (bounded, like the number of sets).
"""

from __future__ import annotations

import pytest

from sandbox import _hostsockets

#: Lines in the table: more than half the old shared bound, so two sessions' verdicts overflowed it.
_LINES = 40_000


def _table(root: str) -> bytes:
    head = b"0000000000000000: 00000002 00000000 00010000 0001 01 "
    return b"".join(head + b"%d %s/s/%d.sock\n" % (200_000 + i, root.encode(), i) for i in range(_LINES))


#: Where the lines' sockets are: under neither session's own paths (nothing is created there).
_ELSEWHERE = "/var/lib/shellrt-r53-nowhere"


def test_two_sessions_checks_keep_each_others_verdicts() -> None:
    """Failed before: every check after the first two judged all 40,000 lines again."""
    table = _table(_ELSEWHERE)
    judged: list[int] = []
    real = _hostsockets._judge

    def counted(rows: list[tuple[bytes, str, str]], own: list[str]) -> list[tuple[bytes, bool]]:
        judged.append(len(rows))
        return real(rows, own)

    session_a, session_b = ["/work/tmpws/r53-ws-a", "/tmp"], ["/work/tmpws/r53-ws-b", "/tmp"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_hostsockets, "_judge", counted)
        results = [_hostsockets._foreign_lines(table, own) for own in (session_a, session_b) * 3]
    assert judged[:2] == [_LINES, _LINES], judged  # each session judges them once
    assert sum(judged[2:]) == 0, f"lines judged again by the later checks of two sessions: {judged[2:]}"
    assert len(set(results)) == 1 and results[0] == table  # none is under either session's own paths
