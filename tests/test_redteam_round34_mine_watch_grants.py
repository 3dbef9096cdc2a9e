"""Red team round 34 (lead): two guards of one process granted the same room of the uid's ceiling.

A guard grows its inotify watches in steps, each granted after counting what the uid holds
(`shellrt.supervisor._watch_budget`). The kernel counts watches held, not room granted and not yet
used: a guard that counted while another of the same process had just been granted a step was
granted that room too, and together they passed the ceiling (round 17's test saw 4,537 of 4,000 +
one step once in CI84, under load). Here the two guards take turns, one watch each, as the event
loop interleaves two sessions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import shellrt.supervisor._inotify as inotify


def test_two_guards_of_one_process_stay_under_the_ceiling_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: 1,024 watches held under a ceiling of 1,000 (each guard granted 512)."""
    a, b = inotify.Inotify.open(), inotify.Inotify.open()
    assert a is not None and b is not None
    try:
        # The uid's count is these two guards' own (other processes of the machine's uid move it).
        monkeypatch.setattr(inotify, "uid_watches", lambda uid=None: len(a._paths) + len(b._paths))
        monkeypatch.setenv("SHELLRT_GUARD_UID_WATCHES", "1000")
        refused = {"a": False, "b": False}
        for i in range(700):
            for name, guard in (("a", a), ("b", b)):
                if refused[name]:
                    continue
                d = tmp_path / f"{name}{i}"
                d.mkdir()
                refused[name] = not guard.add(str(d))
        held = len(a._paths) + len(b._paths)
        assert refused == {"a": True, "b": True}
        assert 900 <= held <= 1000, f"{held} watches held by two guards under a ceiling of 1,000"
    finally:
        a.close()
        b.close()
