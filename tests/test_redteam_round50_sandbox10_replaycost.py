"""Red team, round 50 (sandbox10), a cost item: each init's lock-view replay was quadratic in the plan.

`_zygote_main._replay` found each group head's end (the directory a shared overlay's part goes
over) by copying the rest of the plan (``calls[at + 1:]``) and scanning it: every init, every head,
the whole remaining plan. The plan is the same for every init of a session, so the ends are worked
out once now, with the plan (`_zygote_main._group_plans`, the zygote's `Zygote.__init__`;
``zinit.c`` `read_config` alike), and the replay only reads each call once.

Bounded by counts (entries the replay reads from the plan), not by time. No root, no mounts: the
plan's directories do not exist, so every group is skipped at its head, as a directory gone since
the plan is.
"""

from __future__ import annotations

from typing import Any, SupportsIndex

from sandbox import _zygote_main as zm
from sandbox._zygote_main import _CALL_GROUP_END, _CALL_GROUP_HEAD, _CALL_IF_PRESENT, _CALL_OUTER, _mount_call

_MS_RDONLY, _MS_BIND, _MS_MOVE = 1, 4096, 8192


class _Counted(list):  # type: ignore[type-arg]
    """A plan that counts the entries read from it (by index, by slice and by iteration)."""

    read = 0

    def __getitem__(self, key: SupportsIndex | slice) -> Any:
        got = super().__getitem__(key)
        type(self).read += len(got) if isinstance(key, slice) else 1
        return got

    def __iter__(self) -> Any:
        for item in super().__iter__():
            type(self).read += 1
            yield item


def _plan(groups: int) -> list[Any]:
    """``groups`` directories' own overlays and, after them, one shared overlay with as many parts
    (`_lock_view_calls` and `_shared_view_calls`' shapes), all of directories that are gone."""
    gone = "/nonexistent-round50"
    calls = []
    for i in range(groups):
        calls.append(_mount_call("overlay", "/lv/h", "overlay", _MS_RDONLY | _CALL_GROUP_HEAD, f"lowerdir={gone}/d{i}:/lv/e"))
        calls.append(_mount_call(f"{gone}/d{i}/m", "/lv/h/m", None, _MS_MOVE | _CALL_IF_PRESENT))
        calls.append(_mount_call("/lv/h", f"{gone}/d{i}", None, _MS_MOVE | _CALL_GROUP_END))
    calls.append(_mount_call("overlay", "/lv/h", "overlay", _MS_RDONLY | _CALL_GROUP_HEAD | _CALL_OUTER, f"lowerdir={gone}:/lv/e"))
    for i in range(groups):
        calls.append(_mount_call(f"/lv/h/s{i}", "/lv/s", None, _MS_BIND | _CALL_GROUP_HEAD))
        calls.append(_mount_call("/lv/s", f"{gone}/s{i}", None, _MS_MOVE | _CALL_GROUP_END))
    calls.append(_mount_call(None, "/lv/h", None, _MS_MOVE | _CALL_GROUP_END | _CALL_OUTER))
    return calls  # fmt: skip


def test_the_ends_are_the_first_inner_group_end_after_each_head() -> None:
    """What each init looked up by scanning, now worked out once: the same answers."""
    calls = _plan(5)
    ends = [plan and plan[0] for plan in zm._group_plans(calls)]
    for at, call in enumerate(calls):
        scanned = next(
            (c[1] for c in calls[at + 1 :] if c[3].value & _CALL_GROUP_END and not c[3].value & _CALL_OUTER), None
        )
        assert ends[at] == (scanned if call[3].value & _CALL_GROUP_HEAD else None), at
    assert ends[3 * 5 + 1] == b"/nonexistent-round50/s0"  # a shared part's head: its directory
    assert zm._group_plans(calls)[0] == (b"/nonexistent-round50/d0", (b"/nonexistent-round50/d0/m",))


def test_an_init_replay_reads_each_call_of_the_plan_once() -> None:
    """Failed before (``_replay`` took no precomputed ends; run with none, it read 22,597 entries of
    this plan's 397, near the plan's bound of 400 calls (`_LOCK_VIEW_CALLS`): each head copied the
    rest of the plan). Now each once (bounded at twice the plan's length)."""
    calls = _plan(79)
    assert len(calls) <= zm._LOCK_VIEW_CALLS
    plans = zm._group_plans(calls)
    counted = _Counted(calls)
    _Counted.read = 0
    zm._replay(counted, plans)
    assert _Counted.read <= 2 * len(calls), (_Counted.read, len(calls))
