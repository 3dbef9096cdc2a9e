"""The cross-system scenarios; each module exposes ``async def run(cfg: RunConfig) -> Table``."""

from __future__ import annotations

__all__ = ["SCENARIOS"]

#: Scenario name -> module (imported lazily by `benchmarks.__main__`).
SCENARIOS: dict[str, str] = {
    "latency": "benchmarks.scenarios.latency",
    "pipeline": "benchmarks.scenarios.pipeline",
    "bwrap-session": "benchmarks.scenarios.bwrap_session",
    "parallel": "benchmarks.scenarios.parallel",
    "output": "benchmarks.scenarios.output",
    "hygiene": "benchmarks.scenarios.hygiene",
    "classification": "benchmarks.scenarios.classification",
    "startup": "benchmarks.scenarios.startup",
    "docker-exec": "benchmarks.scenarios.docker_exec",
}
