"""Scenario — docker warm exec against the SDK's ``exec_run``, alternating bursts (issue 22, item 5).

The goal kept from issue 16: shellrt's warm exec of ``true`` >= 10x faster than the docker SDK's
``container.exec_run`` on the same container. `benchmarks/bench_docker.py` measures it (and
more) on its own; here it is part of ``python -m benchmarks --quick``, so the ratio comes from
the same run as every other figure. The two take turns in back-to-back bursts, round after
round (`benchmarks._bursts`), so each round's ratio compares calls timed next to each other.
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from benchmarks._bursts import alternating_bursts
from benchmarks._harness import Row, Table, summarize
from benchmarks.peers.ours import DOCKER_IMAGE
from benchmarks.scenarios._common import RunConfig, burst_table

__all__ = ["run"]

OURS = "shellrt docker warm exec (DockerBackend.exec)"
SDK = "docker SDK exec_run"
_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin"}


async def run(cfg: RunConfig) -> Table:
    rounds, burst = cfg.reps(6, 15), cfg.reps(8, 12)
    table = burst_table(
        "docker-exec",
        "`true` by docker warm exec vs the SDK's exec_run (same container), alternating bursts",
        ms={"fastest_s": "fastest call ms"},
        ratios={"vs_ours": "x shellrt (median of rounds)"},
        digits=1,
    )
    try:
        import docker

        from sandbox import DockerConfig, ExecRequest, SandboxPolicy
        from sandbox.docker import DockerBackend
    except ImportError as exc:
        table.rows.append(Row(OURS, status="skipped", note=f"not installed: {exc}"))
        return table
    with tempfile.TemporaryDirectory(prefix="shellrt-bench-") as tmp:
        try:
            backend: Any = DockerBackend(DockerConfig(image=DOCKER_IMAGE), SandboxPolicy(workspace=Path(tmp)))
            await backend.start()
        except Exception as exc:
            table.rows.append(Row(OURS, status="skipped", note=f"{type(exc).__name__}: {exc}"))
            return table
        client = docker.from_env()
        try:
            container = client.containers.get(backend.container_id)

            async def ours() -> None:
                proc = await backend.exec(ExecRequest(argv=("true",), cwd="/", env=_ENV))
                status = await proc.wait()
                if status.exit_code != 0:
                    raise RuntimeError(f"`true` returned {status.exit_code}")

            async def sdk() -> None:
                result = await anyio.to_thread.run_sync(lambda: container.exec_run(["true"]))
                if result.exit_code != 0:
                    raise RuntimeError(f"exec_run `true` returned {result.exit_code}")

            fns: dict[str, Callable[[], Awaitable[None]]] = {OURS: ours, SDK: sdk}
            bursts = await alternating_bursts(fns, rounds, burst)
        finally:
            client.close()
            await backend.close()
    ratios = bursts.ratios(SDK, OURS)
    for label in (OURS, SDK):
        table.rows.append(
            Row(
                label,
                values={
                    "per_call_s": summarize(bursts.medians[label]),
                    "fastest_s": bursts.fastest[label],
                    "vs_ours": 1.0 if label == OURS else summarize(ratios).median,
                },
            )
        )
    spread = summarize(ratios)
    verdict = "met" if spread.median >= 10 else "NOT met"
    table.notes.append(
        f"exec_run / shellrt per round: median {spread.median:.1f}x, quartiles {spread.q1:.1f}-{spread.q3:.1f}x; "
        f"goal >= 10x: {verdict}."
    )
    table.notes.append(
        f"{bursts.rounds} rounds of 1 untimed + {burst} timed calls per side, taking turns; image "
        f"{DOCKER_IMAGE}; {bursts.load_text()}."
    )
    return table
