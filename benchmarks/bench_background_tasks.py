"""Latency of a foreground ``echo`` with N live background tasks vs with none (local backend).

Each background task is ``sleep`` in a fresh shell; the foreground command is
``echo hi`` through ``Supervisor.run``. Goal: with 50 live tasks, the median
is within 2x of the median with none (it must not grow with the task count).
Also prints how long starting the N tasks and closing the session took.

Run: ``python benchmarks/bench_background_tasks.py [--tasks 50] [--n 40]``. Never run as a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandbox import SandboxPolicy  # noqa: E402
from sandbox.local import LocalBackend  # noqa: E402
from shellrt.supervisor import Supervisor  # noqa: E402


async def echo_median_ms(sup: Supervisor, n: int) -> float:
    samples: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        await sup.run("echo hi", timeout_s=30)
        samples.append(time.perf_counter() - t0)
        await anyio.sleep(0.01)  # let the pollers run between samples, as between real calls
    return statistics.median(samples) * 1000


async def measure(tasks: int, n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        backend = LocalBackend(policy=SandboxPolicy(workspace=workspace))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=Path(tmp) / "s") as sup:
                base = await echo_median_ms(sup, n)
                t0 = time.perf_counter()
                for _ in range(tasks):
                    await sup.start_background("sleep 1000")
                start_s = time.perf_counter() - t0
                await anyio.sleep(1.0)  # every task is past its first descendant poll
                loaded = await echo_median_ms(sup, n)
                t1 = time.perf_counter()
            close_s = time.perf_counter() - t1
        finally:
            await backend.close()
    return {"echo_ms": base, "echo_loaded_ms": loaded, "start_s": start_s, "close_s": close_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--n", type=int, default=40)
    args = parser.parse_args()
    r = anyio.run(measure, args.tasks, args.n)
    ratio = r["echo_loaded_ms"] / r["echo_ms"]
    print(f"echo, no background tasks:      {r['echo_ms']:.2f} ms (median of {args.n})")
    print(
        f"echo, {args.tasks} live background tasks: {r['echo_loaded_ms']:.2f} ms  ratio {ratio:.2f}x (goal <= 2x)"
    )
    print(f"starting {args.tasks} tasks: {r['start_s']:.2f} s; closing the session: {r['close_s']:.2f} s")


if __name__ == "__main__":
    main()
