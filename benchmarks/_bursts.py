"""Back-to-back bursts of each function, the functions taking turns: the fair way to compare two
ways of running a command on a loaded machine.

Why bursts: a bwrap session command leaves work behind (its init's exit, the next init made),
which lands on whatever runs next; in a burst that is the session's own next call, so its cost
is billed to the session, not to the raw spawn timed after it. Why taking turns, round after
round: the load of a shared machine drifts by the second, and two bursts timed next to each
other see the same load, so the ratio of each round is fair even when the absolute times are
not. Reported: the median of the per-round ratios, the ratio of the medians, and the ratio of
the fastest single calls (what each costs when nothing else gets in the way). Each burst's CPU a
call is kept beside its wall time (this process, and its reaped children: a load that swells the
wall time by 2x moves the CPU far less), so a ratio can be judged by both.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

__all__ = ["BURST", "Bursts", "alternating_bursts", "cpu_timed", "raw_spawn"]

#: Calls per burst (after one untimed call), as the quick benchmark's latency table times them.
BURST = 12


def raw_spawn() -> None:
    """``bash -c true`` with its output read through one pipe to its end, stderr merged into it:
    the output handling ``Supervisor.run`` gives a command (one merged pipe, read to EOF)."""
    subprocess.run(["bash", "-c", "true"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)


def cpu_timed(fn: Callable[[], Awaitable[None]], cpu: list[float]) -> Callable[[], Awaitable[None]]:
    """``fn``, adding this process's CPU time of each call to ``cpu``."""

    async def timed() -> None:
        start = time.process_time()
        await fn()
        cpu.append(time.process_time() - start)

    return timed


def _paired(ours: list[float], theirs: list[float]) -> list[float]:
    return [a / b for a, b in zip(ours, theirs, strict=False) if b > 0]


def _cpu_s(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _load() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:  # pragma: no cover - unavailable
        return (0.0, 0.0, 0.0)


@dataclass
class Bursts:
    """Per function, each round's burst median and its fastest call; the load around the run."""

    medians: dict[str, list[float]]
    fastest: dict[str, float]
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    #: Per function, each round's CPU a call of this process (user + system, all its threads).
    cpu: dict[str, list[float]] = field(default_factory=dict)
    #: Likewise of the children it reaped in the burst (the commands, when they are its children).
    child_cpu: dict[str, list[float]] = field(default_factory=dict)

    @property
    def rounds(self) -> int:
        return min((len(v) for v in self.medians.values()), default=0)

    def median(self, name: str) -> float:
        return statistics.median(self.medians[name])

    def ratios(self, name: str, base: str) -> list[float]:
        """Each round's ``name`` burst median / ``base``'s in the same round."""
        return _paired(self.medians[name], self.medians[base])

    def total_cpu(self, name: str) -> list[float]:
        """Each round's CPU a call, this process and its reaped children together."""
        return [a + b for a, b in zip(self.cpu[name], self.child_cpu[name], strict=True)]

    def cpu_ratios(self, name: str, base: str, *, children: bool = True) -> list[float]:
        """Each round's CPU a call of ``name`` / ``base``'s in the same round (with the children's, or
        this process's only)."""
        if children:
            return _paired(self.total_cpu(name), self.total_cpu(base))
        return _paired(self.cpu[name], self.cpu[base])

    def ratio(self, name: str, base: str) -> float:
        """The median over rounds of ``name``'s burst median / ``base``'s in the same round."""
        return statistics.median(self.ratios(name, base))

    def ratio_of_medians(self, name: str, base: str) -> float:
        return self.median(name) / self.median(base)

    def ratio_of_fastest(self, name: str, base: str) -> float:
        return self.fastest[name] / self.fastest[base]

    def load_text(self) -> str:
        return f"load average {self.load_before[0]:.1f} at the start, {self.load_after[0]:.1f} at the end"


async def alternating_bursts(
    fns: dict[str, Callable[[], Awaitable[None]]], rounds: int, burst: int = BURST
) -> Bursts:
    """Each round, for each function in turn (the order rotating): one untimed call, then
    ``burst`` timed calls in a row; the burst's median is that round's figure."""
    out = Bursts(
        medians={k: [] for k in fns},
        fastest={k: float("inf") for k in fns},
        load_before=_load(),
        cpu={k: [] for k in fns},
        child_cpu={k: [] for k in fns},
    )
    items = list(fns.items())
    for i in range(rounds):
        k = i % len(items)
        for name, fn in items[k:] + items[:k]:
            await fn()
            times = []
            own, children = _cpu_s(resource.RUSAGE_SELF), _cpu_s(resource.RUSAGE_CHILDREN)
            for _ in range(burst):
                t = time.perf_counter()
                await fn()
                times.append(time.perf_counter() - t)
            out.cpu[name].append((_cpu_s(resource.RUSAGE_SELF) - own) / burst)
            out.child_cpu[name].append((_cpu_s(resource.RUSAGE_CHILDREN) - children) / burst)
            out.medians[name].append(statistics.median(times))
            out.fastest[name] = min(out.fastest[name], *times)
    out.load_after = _load()
    return out
