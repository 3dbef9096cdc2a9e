"""Inspect provider benchmark: per-call latency through shellrt's provider vs Inspect's own ``local`` sandbox.

    python benchmarks/bench_inspect.py [-n 200] [--image shellrt-test-debian] [--skip-docker]

Measures, in one run and interleaved round by round (so machine noise hits
every system alike), the latency of ``exec(["true"])``, of ``exec`` of a
command printing 1 MiB, and of a 4 KiB ``write_file`` + ``read_file`` pair
through the ``SandboxEnvironment`` API: shellrt on local, bwrap and docker,
and Inspect's own ``local`` sandbox (no isolation: the floor). Inspect's docker
provider needs ``docker compose`` v2, which is not installed here, so it is not
a row. Prints p50/p95 and the ratio of each p50 to Inspect local's.
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Awaitable, Callable

import anyio
from inspect_ai.util import SandboxEnvironment
from inspect_ai.util._sandbox.local import LocalSandboxEnvironment

from shellrt.integrations.inspect import ShellrtSandboxConfig, ShellrtSandboxEnvironment

TASK = "bench-inspect"
BASELINE = "inspect local"
PAYLOAD = b"x" * 4096


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def op_true(env: SandboxEnvironment) -> None:
    result = await env.exec(["true"])
    assert result.success, result.stderr


async def op_1mib(env: SandboxEnvironment) -> None:
    result = await env.exec(["head", "-c", "1048576", "/dev/zero"])
    assert len(result.stdout) == 1048576, result.stderr


async def op_files(env: SandboxEnvironment) -> None:
    await env.write_file("bench.bin", PAYLOAD)
    assert await env.read_file("bench.bin", text=False) == PAYLOAD


OPS: dict[str, Callable[[SandboxEnvironment], Awaitable[None]]] = {
    "exec true": op_true,
    "exec 1 MiB out": op_1mib,
    "write+read 4 KiB": op_files,
}


async def open_envs(
    image: str, docker: bool
) -> dict[str, tuple[type[SandboxEnvironment], SandboxEnvironment]]:
    envs: dict[str, tuple[type[SandboxEnvironment], SandboxEnvironment]] = {}
    local = await LocalSandboxEnvironment.sample_init(TASK, None, {})
    envs[BASELINE] = (LocalSandboxEnvironment, local["default"])
    kinds = ["local", "bwrap", *(["docker"] if docker else [])]
    for kind in kinds:
        if kind == "bwrap" and shutil.which("bwrap") is None:
            print("  (bwrap not installed: no bwrap row)")
            continue
        settings = ShellrtSandboxConfig(sandbox=kind, image=image)  # type: ignore[arg-type]
        made = await ShellrtSandboxEnvironment.sample_init(TASK, settings, {})
        envs[f"shellrt {kind}"] = (ShellrtSandboxEnvironment, made["default"])
    return envs


async def main(n: int, image: str, docker: bool) -> None:
    envs = await open_envs(image, docker)
    try:
        for op_name, op in OPS.items():
            rounds = n if op_name != "exec 1 MiB out" else max(10, n // 5)
            samples: dict[str, list[float]] = {name: [] for name in envs}
            for _ in range(3):  # warm-up
                for _cls, env in envs.values():
                    await op(env)
            for _ in range(rounds):
                for name, (_cls, env) in envs.items():
                    begin = time.perf_counter()
                    await op(env)
                    samples[name].append(time.perf_counter() - begin)
            base = pct(samples[BASELINE], 0.5)
            print(f"\n{op_name}  (n={rounds} per system, interleaved)")
            for name, values in samples.items():
                p50, p95 = pct(values, 0.5), pct(values, 0.95)
                print(
                    f"  {name:<16} p50={p50 * 1000:8.2f} ms  p95={p95 * 1000:8.2f} ms  "
                    f"ratio to {BASELINE} p50: {p50 / base:5.2f}x"
                )
    finally:
        for cls, env in envs.values():
            await cls.sample_cleanup(TASK, None, {"default": env}, False)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200, help="rounds per operation (1 MiB output: n/5)")
    parser.add_argument("--image", default="shellrt-test-debian", help="image of the docker row")
    parser.add_argument("--skip-docker", action="store_true", help="no docker row")
    args = parser.parse_args()
    anyio.run(main, args.n, args.image, not args.skip_docker)
