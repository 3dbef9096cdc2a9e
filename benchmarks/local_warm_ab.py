"""Local pre-spawned shells on against off, side by side in one run (issue 22, items 2 and 4).

``PYTHONPATH=. python3 -m benchmarks.local_warm_ab [--rounds 20] [--burst 12]``

Five ways of running ``true``, taking turns in back-to-back bursts (`benchmarks._bursts`):
a raw spawn (``bash -c true``, output read to EOF), ``Supervisor.run`` on a local session with
``warm_shells=1`` and with 0 (with ``--always``, the warm ones also pre-starting whatever the CPU
pressure: `WarmPool.busy_psi`), and ``Runtime.run`` with one Bash tool_use block (the full
pipeline, the quick benchmark's "Runtime + Bash" row) on each. Printed per row: the median of
the bursts, the median over rounds of the ratio to the same round's raw burst, the ratio of the
fastest calls, this process's CPU per call (``time.process_time``, all its threads), and how many
calls of the warm sessions were handed to a warm shell.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio

from benchmarks._bursts import alternating_bursts, cpu_timed, raw_spawn
from sandbox._warm import WarmPool


async def _run(rounds: int, burst: int, always: bool) -> int:
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
            ours._config = lambda kind, w=warm: LocalConfig(warm_shells=w)  # type: ignore[assignment]
            # The Runtime adapter hands a "local" sandbox over by name (the default config) and
            # builds a config (`_config`, patched above) only for "docker": so that is asked for.
            systems[name] = await stack.enter_async_context(
                cls("docker") if cls is ours.ShellrtRuntime else cls("local")
            )

        def runner(name: str) -> Callable[[], Awaitable[None]]:
            system = systems[name.removesuffix("-always")]
            always = name.endswith("-always")

            async def call() -> None:
                # "-always": the warm session pre-starting whatever the CPU pressure (`WarmPool.busy_psi`).
                saved = WarmPool.busy_psi
                if always:
                    WarmPool.busy_psi = 101.0
                try:
                    outcome = await system.run("true", 30.0)
                finally:
                    WarmPool.busy_psi = saved
                if outcome.exit_code != 0:
                    raise RuntimeError(f"{name}: `true` returned {outcome.exit_code}: {outcome.note}")

            return call

        async def raw() -> None:
            raw_spawn()

        names = ["raw", *systems]
        if always:
            names += ["sup-warm-always", "rt-warm-always"]
        cpu: dict[str, list[float]] = {name: [] for name in names}
        fns = {name: cpu_timed(raw if name == "raw" else runner(name), cpu[name]) for name in names}
        bursts = await alternating_bursts(fns, rounds, burst)
        pools = _pools()
    print(f"{bursts.rounds} rounds of {burst} calls each, taking turns; {bursts.load_text()}")
    handed = sum(pool.handed for pool in pools)
    print(
        f"warm sessions: {handed} calls handed to a warm shell, {sum(p.missed for p in pools)} missed, "
        f"{sum(p.skipped for p in pools)} pre-starts skipped (busy: CPU pressure above {WarmPool.busy_psi:g}%)"
    )
    print(f"{'path':<9} {'ms/call':>8} {'x raw':>6} {'fastest':>8} {'fast x':>7} {'CPU ms':>7}")
    for name in names:
        print(
            f"{name:<9} {bursts.median(name) * 1e3:8.3f} {bursts.ratio(name, 'raw'):5.2f}x "
            f"{bursts.fastest[name] * 1e3:8.3f} {bursts.ratio_of_fastest(name, 'raw'):6.2f}x "
            f"{statistics.median(cpu[name]) * 1e3:7.3f}"
        )
    return 0


def _pools() -> list[Any]:
    """Every local warm pool alive in this process (a session's shows up when it starts)."""

    return [obj for obj in gc.get_objects() if isinstance(obj, WarmPool)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.local_warm_ab", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=20, help="rounds of bursts (default 20)")
    parser.add_argument("--burst", type=int, default=12, help="timed calls per burst (default 12)")
    parser.add_argument(
        "--always",
        action="store_true",
        help="also the warm sessions pre-starting whatever the CPU pressure (NAME-always)",
    )
    args = parser.parse_args(argv)
    return anyio.run(_run, args.rounds, args.burst, args.always)


if __name__ == "__main__":
    sys.exit(main())
