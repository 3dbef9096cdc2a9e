"""Direction (a) of issue 22 item 2: what a local start pays for crossing to the session cgroup's
spawner thread and back, against the same start on the calling thread (round 37).

``sudo PYTHONPATH=. python3 -m benchmarks.percall_handoff [--rounds 16] [--burst 200]``

Root only (the session cgroup is a root caller's: `sandbox._session_cgroup`). A session cgroup
below the owner guard's, as the local backend makes it; then bursts taking turns: `/bin/true`
started through ``SessionCgroup.start`` (the spawner thread's vfork+exec, as every local command)
and the same `sandbox._spawn.start` on the calling thread (what a start without the hand-off, a
``clone3(CLONE_INTO_CGROUP)`` from the loop thread, could cost at best: the child is then in no
session cgroup, so this is an upper bound of the saving, not a candidate). Per start: this
process's CPU (every thread), the calling thread's, the children's, wall, voluntary switches.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

_EXE = "/bin/true"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.percall_handoff", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--burst", type=int, default=200)
    args = parser.parse_args(argv)
    from sandbox import _spawn
    from sandbox._ownerguard import guard_owner
    from sandbox._session_cgroup import open_session_cgroup

    guard = guard_owner()
    cgroup = open_session_cgroup(guard.cgroup if guard is not None else None)
    if cgroup is None:
        print("no session cgroup here (root with a cgroup v1 pids hierarchy only): nothing to measure")
        return 1
    devnull = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
    env = dict(os.environ)

    def starter() -> Any:
        return _spawn.start([_EXE], executable=_EXE, stdin=devnull, stdout=devnull, stderr=None, cwd="/", env=env)

    def via_spawner() -> None:
        child = cgroup.start(starter)
        os.waitpid(child.pid, 0)
        cgroup.ended(child.pid)

    def direct() -> None:
        os.waitpid(starter().pid, 0)

    def burst(fn: Callable[[], None]) -> tuple[float, ...]:
        n = args.burst
        fn()
        s0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        t0, w0 = time.thread_time(), time.perf_counter()
        for _ in range(n):
            fn()
        w1, t1 = time.perf_counter(), time.thread_time()
        s1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return (
            (s1.ru_utime + s1.ru_stime - s0.ru_utime - s0.ru_stime) / n * 1e6,
            (t1 - t0) / n * 1e6,
            (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) / n * 1e6,
            (w1 - w0) / n * 1e6,
            (s1.ru_nvcsw - s0.ru_nvcsw) / n,
        )

    ways = {"spawner": via_spawner, "direct": direct}
    rows: dict[str, list[tuple[float, ...]]] = {name: [] for name in ways}
    load0 = os.getloadavg()[0]
    try:
        for r in range(args.rounds):
            order = list(ways.items())
            for name, fn in order if r % 2 == 0 else order[::-1]:
                rows[name].append(burst(fn))
    finally:
        cgroup.close()
        os.close(devnull)
    print(f"{args.rounds} rounds of {args.burst} starts of {_EXE}; load {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"{'start':<8} {'proc us':>8} {'caller us':>9} {'child us':>8} {'wall us':>8} {'vcsw':>5}")
    for name, got in rows.items():
        med = [statistics.median(col) for col in zip(*got, strict=True)]
        print(f"{name:<8} {med[0]:8.1f} {med[1]:9.1f} {med[2]:8.1f} {med[3]:8.1f} {med[4]:5.2f}")
    diff = [a[0] - b[0] for a, b in zip(rows["spawner"], rows["direct"], strict=True)]
    quart = statistics.quantiles(diff, n=4)
    print(f"the hand-off, process CPU a start (spawner - direct, per round): median {statistics.median(diff):.1f} us, "
          f"quartiles {quart[0]:.1f}-{quart[2]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
