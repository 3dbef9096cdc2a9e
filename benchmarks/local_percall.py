"""Where a local call's cost goes on a busy machine: wall, CPU (ours and the children's), context
switches and threads touched, per call (issue 22, item 2; the eleventh round).

``PYTHONPATH=. python3 -m benchmarks.local_percall [--rounds 6] [--burst 40]``

Five ways of running ``true`` (as `benchmarks.local_warm_ab`: a raw ``bash -c true`` spawn,
``Supervisor.run`` and ``Runtime.run`` with one Bash block, each on a local session with
``warm_shells=1`` and with 0), taking turns in bursts. For every burst: ``getrusage`` of this
process (user+system of all its threads, voluntary and involuntary context switches) and of its
reaped children (``RUSAGE_CHILDREN``: every command is our child when a session cgroup starts it,
the root case; under the reaper process they are its children and show up as 0 here), and per
thread the ``/proc/self/task/*/status`` switch counts, so the threads a call wakes are counted.
Printed per path: medians over rounds of the per-call figures.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio

from benchmarks._bursts import raw_spawn


def _threads() -> dict[str, tuple[int, int, int]]:
    """Per thread of this process (name/tid): voluntary and involuntary context switches, CPU ns."""
    out: dict[str, tuple[int, int, int]] = {}
    names = {t.native_id: t.name for t in threading.enumerate()}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/status") as f:
                text = f.read()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)
        name = f"{names.get(int(tid)) or fields.get('Name', '?').strip()}/{tid}"
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            ns = 0
        out[name] = (
            int(fields.get("voluntary_ctxt_switches", "0")),
            int(fields.get("nonvoluntary_ctxt_switches", "0")),
            ns,
        )
    return out


class _Sample:
    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.child_cpu: list[float] = []
        self.vcs: list[float] = []
        self.ivcs: list[float] = []
        self.threads: list[float] = []
        self.other_vcs: list[float] = []
        #: Per thread name (tid dropped): voluntary switches and CPU ms per call, summed over bursts.
        self.per_thread: dict[str, float] = {}
        self.per_thread_cpu: dict[str, float] = {}


async def _burst(fn: Callable[[], Awaitable[None]], n: int, sample: _Sample) -> None:
    await fn()
    t0 = _threads()
    s0 = resource.getrusage(resource.RUSAGE_SELF)
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - t)
    s1 = resource.getrusage(resource.RUSAGE_SELF)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t1 = _threads()
    main = f"{_main_name()}/{os.getpid()}"
    woke = 0
    other = 0
    for name, (v, i, ns) in t1.items():
        v0, i0, ns0 = t0.get(name, (0, 0, 0))
        if v - v0 + i - i0 > 0:
            woke += 1
            if name != main:
                other += v - v0
            key = name.rsplit("/", 1)[0] + ("" if name != main else " (loop)")
            sample.per_thread[key] = sample.per_thread.get(key, 0.0) + (v - v0) / n
        if ns - ns0 > 0:
            key = name.rsplit("/", 1)[0] + ("" if name != main else " (loop)")
            sample.per_thread_cpu[key] = sample.per_thread_cpu.get(key, 0.0) + (ns - ns0) / n / 1e6
    sample.wall.append(statistics.median(times))
    sample.cpu.append((s1.ru_utime + s1.ru_stime - s0.ru_utime - s0.ru_stime) / n)
    sample.child_cpu.append((c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) / n)
    sample.vcs.append((s1.ru_nvcsw - s0.ru_nvcsw) / n)
    sample.ivcs.append((s1.ru_nivcsw - s0.ru_nivcsw) / n)
    sample.threads.append(woke)
    sample.other_vcs.append(other / n)


def _main_name() -> str:
    return threading.main_thread().name


async def _run(rounds: int, burst: int, only: list[str] | None) -> int:
    import benchmarks.peers.ours as ours
    from sandbox import LocalConfig

    systems: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        for name, cls, warm in [
            ("sup-warm", ours.ShellrtSupervisor, 1),
            ("sup-cold", ours.ShellrtSupervisor, 0),
            ("rt-warm", ours.ShellrtRuntime, 1),
            ("rt-cold", ours.ShellrtRuntime, 0),
        ]:
            if only and name not in only:
                continue
            ours._config = lambda kind, w=warm: LocalConfig(warm_shells=w)  # type: ignore[assignment,misc]
            systems[name] = await stack.enter_async_context(
                cls("docker") if cls is ours.ShellrtRuntime else cls("local")
            )

        def runner(name: str) -> Callable[[], Awaitable[None]]:
            async def call() -> None:
                outcome = await systems[name].run("true", 30.0)
                if outcome.exit_code != 0:
                    raise RuntimeError(f"{name}: `true` returned {outcome.exit_code}: {outcome.note}")

            return call

        async def raw() -> None:
            raw_spawn()

        fns: dict[str, Callable[[], Awaitable[None]]] = {"raw": raw}
        fns.update({name: runner(name) for name in systems})
        samples = {name: _Sample() for name in fns}
        load0 = os.getloadavg()[0]
        items = list(fns.items())
        for i in range(rounds):
            k = i % len(items)
            for name, fn in items[k:] + items[:k]:
                await _burst(fn, burst, samples[name])
        load1 = os.getloadavg()[0]
    print(
        f"{rounds} rounds of {burst} calls, taking turns; load {load0:.1f} at the start, {load1:.1f} at the end"
    )
    print(
        f"{'path':<9} {'wall ms':>8} {'x raw':>6} {'CPU ms':>7} {'child ms':>8} {'total':>7} "
        f"{'vcsw':>5} {'ivcsw':>5} {'threads':>7} {'thr vcsw':>8}"
    )
    raw_walls = samples["raw"].wall
    for name, s in samples.items():
        ratio = statistics.median(w / r for w, r in zip(s.wall, raw_walls, strict=False))
        med = statistics.median
        print(
            f"{name:<9} {med(s.wall) * 1e3:8.3f} {ratio:5.2f}x {med(s.cpu) * 1e3:7.3f} "
            f"{med(s.child_cpu) * 1e3:8.3f} {(med(s.cpu) + med(s.child_cpu)) * 1e3:7.3f} "
            f"{med(s.vcs):5.1f} {med(s.ivcs):5.1f} {med(s.threads):7.0f} {med(s.other_vcs):8.2f}"
        )
    print("voluntary switches per call, by thread (mean over rounds):")
    for name, s in samples.items():
        parts = ", ".join(
            f"{t} {v / rounds:.2f}" for t, v in sorted(s.per_thread.items()) if v / rounds >= 0.01
        )
        print(f"  {name:<9} {parts}")
    print("CPU ms per call, by thread (mean over rounds):")
    for name, s in samples.items():
        parts = ", ".join(
            f"{t} {v / rounds:.3f}" for t, v in sorted(s.per_thread_cpu.items()) if v / rounds >= 0.001
        )
        print(f"  {name:<9} {parts}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.local_percall", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--git", action="store_true", help="each workspace a fresh git repository")
    parser.add_argument("--burst", type=int, default=40)
    parser.add_argument("--only", nargs="*", help="paths besides raw (sup-warm sup-cold rt-warm rt-cold)")
    args = parser.parse_args(argv)
    if args.git:
        os.environ["SHELLRT_BENCH_GIT_WORKSPACE"] = "1"
    return anyio.run(_run, args.rounds, args.burst, args.only)


if __name__ == "__main__":
    sys.exit(main())
