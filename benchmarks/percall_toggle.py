"""Before/after in ONE process: the same sessions, bursts alternating a switch off and on.

``PYTHONPATH=. python3 -m benchmarks.percall_toggle [--set MODULE:NAME=VALUE ...] [--rounds 16] [--burst 40]``

`benchmarks.percall_ab` compares two source trees in separate processes; on this shared machine
that carries a bias of its own (eighteenth round: two copies of the *same* code differed by up to
~15% in CPU per call, the raw spawn too), as large as the cuts a round looks for. This one keeps
everything but the change fixed: one Runtime session per path (local, warm shells 0 and 1), and
per round each variant's burst of ``true`` calls, the variants' order rotating round by round.
Variant "as is" runs the code untouched; variant "set" with every ``--set`` applied (a module
attribute, e.g. a flag a candidate change reads per call; VALUE is a Python literal). Without
``--set`` both variants are the same code: the in-process noise floor (an A/A run).

Printed per path and variant: medians over rounds of this process's CPU per call (all threads),
its reaped children's (the commands' bash), their total and the wall time; then per path the
median and quartiles of the per-round ratio set / as-is of our CPU, the figure a round's ">= 15%
cut" is judged on (issue 22, item 2).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio

from benchmarks._bursts import raw_spawn

_PATHS = ("rt-cold", "rt-warm", "sup-cold", "sup-warm")


def _setting(text: str) -> tuple[Any, str, Any]:
    """``module:NAME=VALUE`` -> (the module, the attribute's name, the value)."""
    target, sep, value = text.partition("=")
    module, colon, name = target.partition(":")
    if not sep or not colon or not name:
        raise SystemExit(
            f"--set {text!r}: write MODULE:NAME=VALUE (e.g. shellrt.supervisor.execution:_FAST_S=0.01)"
        )
    mod = importlib.import_module(module)
    if not hasattr(mod, name):
        raise SystemExit(f"--set {text!r}: {module} has no attribute {name!r}")
    return mod, name, ast.literal_eval(value)


def _cpu() -> tuple[float, float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime, time.perf_counter()


async def _burst(fn: Callable[[], Awaitable[Any]], n: int) -> tuple[float, float, float]:
    """Per call: our CPU, the children's CPU and the wall time (ms), after one untimed call."""
    await fn()
    a0, c0, w0 = _cpu()
    for _ in range(n):
        await fn()
    a1, c1, w1 = _cpu()
    return (a1 - a0) / n * 1e3, (c1 - c0) / n * 1e3, (w1 - w0) / n * 1e3


async def _run(settings: list[tuple[Any, str, Any]], rounds: int, burst: int, paths: list[str]) -> int:
    import benchmarks.peers.ours as ours
    from sandbox import LocalConfig

    as_is = [(mod, name, getattr(mod, name)) for mod, name, _ in settings]
    variants: dict[str, list[tuple[Any, str, Any]]] = {"as is": as_is, "set": settings}
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    async with AsyncExitStack() as stack:
        systems: dict[str, Any] = {}
        for path in paths:
            warm = 1 if path.endswith("warm") else 0
            ours._config = lambda kind, w=warm: LocalConfig(warm_shells=w)  # type: ignore[assignment,misc]
            system = (
                ours.ShellrtRuntime("docker") if path.startswith("rt") else ours.ShellrtSupervisor("local")
            )
            systems[path] = await stack.enter_async_context(system)

        def call(path: str) -> Callable[[], Awaitable[Any]]:
            return lambda: systems[path].run("true", 30.0)

        async def raw() -> None:
            raw_spawn()

        for path in paths:  # warmed up: analysis memo, remembered allow, pool, caches
            for _ in range(30):
                await call(path)()
        load0 = os.getloadavg()[0]
        names = list(variants)
        try:
            for i in range(rounds):
                for name in names[i % 2 :] + names[: i % 2]:
                    for mod, attr, value in variants[name]:
                        setattr(mod, attr, value)
                    for path in paths:
                        results.setdefault((path, name), []).append(await _burst(call(path), burst))
                results.setdefault(("raw", ""), []).append(await _burst(raw, burst))
        finally:
            for mod, attr, value in as_is:
                setattr(mod, attr, value)
    what = ", ".join(f"{m.__name__}:{a}={v!r}" for m, a, v in settings) or "nothing (A/A: the noise floor)"
    print(f"set: {what}")
    print(
        f"{rounds} rounds of {burst} calls; load {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    )
    print(f"{'path':<9} {'variant':<7} {'ours ms':>8} {'child ms':>8} {'total':>7} {'wall ms':>8}")
    for (path, name), rows in results.items():
        ours_ms, child_ms, wall_ms = (statistics.median(col) for col in zip(*rows, strict=True))
        print(f"{path:<9} {name:<7} {ours_ms:8.3f} {child_ms:8.3f} {ours_ms + child_ms:7.3f} {wall_ms:8.3f}")
    for path in paths:
        ratios = [s[0] / a[0] for s, a in zip(results[(path, "set")], results[(path, "as is")], strict=True)]
        q1, _, q3 = statistics.quantiles(ratios, n=4)
        print(
            f"{path:<9} our CPU set / as is, per round: median {statistics.median(ratios):.3f} (quartiles {q1:.3f}-{q3:.3f})"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.percall_toggle", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--set", action="append", default=[], metavar="MODULE:NAME=VALUE")
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--git", action="store_true", help="each workspace a fresh git repository")
    parser.add_argument("--burst", type=int, default=40)
    parser.add_argument("--paths", nargs="*", choices=_PATHS, default=["rt-cold", "rt-warm"])
    args = parser.parse_args(argv)
    if args.git:
        os.environ["SHELLRT_BENCH_GIT_WORKSPACE"] = "1"
    if args.rounds < 2:
        parser.error("--rounds must be at least 2 (the variants take turns)")
    settings = [_setting(text) for text in args.set]
    return anyio.run(_run, settings, args.rounds, args.burst, args.paths)


if __name__ == "__main__":
    sys.exit(main())
