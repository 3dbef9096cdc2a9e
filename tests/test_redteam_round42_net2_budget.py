"""Red team round 42 (net2): the fd and memory budget of the proxies, as a unit (`sandbox._fdbudget`).

Pins the rules the end-to-end tests (`…_fdshare.py`, `…_tunnelmem.py`) rely on: room a later proxy
needs is taken from the proxy furthest over its share, its oldest connection first, never from one
within its share; the memory part bounds every proxy's connections together.
"""

from __future__ import annotations

import functools

from sandbox._fdbudget import BYTES_PER_CONNECTION, MEMORY_PART, FdBudget, Slot


def _admit(budget: FdBudget, proxy: int, shed: list[tuple[int, int]], n: int) -> list[Slot]:
    slots = []
    for i in range(n):
        slot = budget.admit(proxy, functools.partial(shed.append, (proxy, i)))
        assert isinstance(slot, Slot), (proxy, i, slot)
        slots.append(slot)
    return slots


def test_a_later_proxy_takes_its_share_from_the_greediest_oldest_first() -> None:
    budget = FdBudget(soft_limit=512, memory_bytes=1 << 40)  # pool 128, ceiling 192
    shed: list[tuple[int, int]] = []
    budget.register(1)
    _admit(budget, 1, shed, 128)
    assert isinstance(budget.admit(1, lambda: None), str)  # alone: its share is the pool
    budget.register(2)
    _admit(budget, 2, shed, 64)  # the half reserve
    assert shed == [] and budget.total == 192
    budget.register(3)
    third = _admit(budget, 3, shed, 42)  # its share: 128 // 3
    assert shed == [(1, i) for i in range(42)], shed[:5]
    assert (budget.held(1), budget.held(2), budget.held(3), budget.total) == (86, 64, 42, 192)
    refused = budget.admit(3, lambda: None)
    assert isinstance(refused, str) and "share" in refused
    # A shed slot given back later (its connection ended) counts nothing twice.
    budget.release(third[0])
    assert budget.total == 191 and budget.held(3) == 41


def test_nobody_over_their_share_refuses_rather_than_sheds() -> None:
    budget = FdBudget(soft_limit=512, memory_bytes=1 << 40)
    shed: list[tuple[int, int]] = []
    for proxy in range(24):  # 24 x MIN_SHARE 8 = 192: the ceiling, nobody over their share
        budget.register(proxy)
    for proxy in range(24):
        _admit(budget, proxy, shed, 8)
    budget.register(99)
    assert isinstance(budget.admit(99, lambda: None), str) and shed == []


def test_memory_bounds_every_proxy_together() -> None:
    memory = 384 << 20
    budget = FdBudget(soft_limit=1 << 20, memory_bytes=memory)
    ceiling = memory // MEMORY_PART // BYTES_PER_CONNECTION
    shed: list[tuple[int, int]] = []
    budget.register(1)
    _admit(budget, 1, shed, ceiling * 3 // 4)  # alone: the pool, three quarters of the ceiling
    assert isinstance(budget.admit(1, lambda: None), str)
    budget.register(2)
    _admit(budget, 2, shed, ceiling * 3 // 4 // 2)
    assert budget.total <= ceiling, (budget.total, ceiling)
