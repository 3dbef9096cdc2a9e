"""Docker sandbox benchmark: shellrt's warm exec vs the docker SDK and CLI, side by side in one run.

    python benchmarks/bench_docker.py [--image shellrt-test-busybox] [-n 300]

Prints warm-exec latency of ``true`` (p50/p95) through shellrt's persistent
executor (also with a per-call user, resolved in the container), through the docker SDK's ``exec_run`` and through the ``docker exec``
CLI, all against the same kind of hardened container; the time from creating a
sandbox to the end of its first command; and the throughput of 20 sandboxes
opened in parallel. Goal (issue 16): p50 <= 5 ms and >= 10x faster than
``exec_run``. Needs a local daemon and the test images
(scripts/start-dockerd.sh, scripts/build-test-images.sh).
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

import anyio
import docker

from sandbox import DockerConfig, ExecRequest, SandboxPolicy
from sandbox.docker import DockerBackend

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin"}


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def row(name: str, samples: list[float]) -> tuple[float, float]:
    p50, p95 = pct(samples, 0.5) * 1000, pct(samples, 0.95) * 1000
    print(f"  {name:<28} n={len(samples):<4} p50={p50:8.2f} ms  p95={p95:8.2f} ms")
    return p50, p95


async def run_true(backend: DockerBackend, user: str | None = None) -> None:
    proc = await backend.exec(ExecRequest(argv=("true",), cwd="/", env=ENV, user=user))
    await proc.wait()


async def shellrt_latency(backend: DockerBackend, n: int, user: str | None = None) -> list[float]:
    for _ in range(10):  # warm-up
        await run_true(backend, user)
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await run_true(backend, user)
        samples.append(time.perf_counter() - t)
    return samples


def sdk_latency(container_id: str, n: int) -> list[float]:
    client = docker.from_env()
    container = client.containers.get(container_id)
    container.exec_run(["true"])
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        container.exec_run(["true"])
        samples.append(time.perf_counter() - t)
    client.close()
    return samples


def cli_latency(container_id: str, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(["docker", "exec", container_id, "true"], check=True)
        samples.append(time.perf_counter() - t)
    return samples


async def start_to_first(image: str, ws: Path, n: int) -> tuple[list[float], list[float], list[float]]:
    """Per sandbox: start() alone, start to the end of the first command, and close() alone."""
    starts, firsts, closes = [], [], []
    for _ in range(n):
        backend = DockerBackend(DockerConfig(image=image), SandboxPolicy(workspace=ws))
        t = time.perf_counter()
        try:
            await backend.start()
            starts.append(time.perf_counter() - t)
            await run_true(backend)
            firsts.append(time.perf_counter() - t)
        finally:
            t = time.perf_counter()
            await backend.close()
            closes.append(time.perf_counter() - t)
    return starts, firsts, closes


def raw_lifecycle(image: str, ws: Path, n: int) -> tuple[list[float], list[float]]:
    """The floor: the same hardened create + start, then a forced remove, through the SDK alone."""
    client = docker.from_env()
    host_config = client.api.create_host_config(
        init=True,
        network_mode="none",
        read_only=True,
        tmpfs={"/tmp": "rw,nosuid,nodev,exec,size=256m,mode=1777"},
        mounts=[docker.types.Mount(target="/workspace", source=str(ws), type="bind")],
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        pids_limit=2048,
    )
    ups, downs = [], []
    for _ in range(n):
        t = time.perf_counter()
        cid = client.api.create_container(
            image, command=["sleep", "3600"], entrypoint=[], user="65534:65534", host_config=host_config
        )["Id"]
        client.api.start(cid)
        ups.append(time.perf_counter() - t)
        t = time.perf_counter()
        client.api.remove_container(cid, force=True, v=True)
        downs.append(time.perf_counter() - t)
    client.close()
    return ups, downs


async def parallel(image: str, ws: Path, sandboxes: int, per: int) -> tuple[float, float]:
    async def one() -> None:
        async with DockerBackend(DockerConfig(image=image), SandboxPolicy(workspace=ws)) as backend:
            for _ in range(per):
                await run_true(backend)

    t = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(sandboxes):
            tg.start_soon(one)
    return time.perf_counter() - t, sandboxes * per


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="shellrt-test-busybox")
    parser.add_argument("-n", type=int, default=300, help="shellrt samples (baselines take n/10)")
    parser.add_argument(
        "--starts", type=int, default=10, help="sandboxes opened one by one for start/close latency"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        print(f"docker sandbox benchmark: image={args.image}")
        async with DockerBackend(DockerConfig(image=args.image), SandboxPolicy(workspace=ws)) as backend:
            assert backend.container_id is not None
            ours = await shellrt_latency(backend, args.n)
            as_root = await shellrt_latency(backend, max(20, args.n // 3), user="root")
            base_n = max(20, args.n // 10)
            sdk = await anyio.to_thread.run_sync(sdk_latency, backend.container_id, base_n)
            cli = await anyio.to_thread.run_sync(cli_latency, backend.container_id, base_n)
        print("warm exec of `true` (same hardened container):")
        ours_p50, ours_p95 = row("shellrt executor", ours)
        row("shellrt, per-call user root", as_root)
        sdk_p50, sdk_p95 = row("docker SDK exec_run", sdk)
        cli_p50, cli_p95 = row("docker exec CLI", cli)
        print(
            f"  ratio p50: exec_run/shellrt = {sdk_p50 / ours_p50:.1f}x, docker exec/shellrt = {cli_p50 / ours_p50:.1f}x"
        )
        print(
            f"  ratio p95: exec_run/shellrt = {sdk_p95 / ours_p95:.1f}x, docker exec/shellrt = {cli_p95 / ours_p95:.1f}x"
        )
        goal = ours_p50 <= 5 and sdk_p50 / ours_p50 >= 10
        print(f"  goal (p50 <= 5 ms and >= 10x exec_run): {'met' if goal else 'NOT met'}")
        starts, firsts, closes = await start_to_first(args.image, ws, args.starts)
        ups, downs = await anyio.to_thread.run_sync(raw_lifecycle, args.image, ws, args.starts)
        print("sandbox start and close, one at a time (vs the raw SDK create+start / remove floor):")
        row("shellrt start()", starts)
        row("shellrt start + first `true`", firsts)
        row("shellrt close()", closes)
        row("raw SDK create+start", ups)
        row("raw SDK remove(force)", downs)
        elapsed, commands = await parallel(args.image, ws, 20, 50)
        print("20 sandboxes in parallel (open, 50 x `true` each, close):")
        print(f"  total {elapsed:.2f} s: {20 / elapsed:.1f} sandboxes/s, {commands / elapsed:.0f} commands/s")


if __name__ == "__main__":
    anyio.run(main)
