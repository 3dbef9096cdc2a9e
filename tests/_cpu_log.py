"""Each test's CPU seconds, written when ``SHELLRT_TEST_CPU_LOG`` names a directory (round 52, suitetime2).

CI's ``--durations`` are wall-clock seconds: on 2 cores shared by 3 workers (and, while helpers
work, by ~8 more processes) they say how long a test waited as much as what it cost, so a suite-time
round cannot tell a costly test from a starved one. With the variable set, every pytest process
(each xdist worker, the serial lane; not a non-root child, whose environment is its own) writes
``cpu-<worker>-<pid>.tsv`` there: one line per test with the CPU seconds of this process and of the
children it reaped during the test (setup, call and teardown), and its wall seconds; a first line
``<collection>`` with the CPU of the process up to the end of its collection. Work in a process
nobody reaped during the test (dockerd, a server a module fixture keeps, a sandbox's reaper) is not
counted, or counted with the test that reaped it. Unset (as in scripts/test.sh), nothing is
registered and nothing is written.

Sum by file: ``cat DIR/cpu-*.tsv | awk -F'\\t' '{split($1, a, "::"); s[a[1]] += $2 + $3} END
{for (f in s) print s[f], f}' | sort -rn | head -40``.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

VARIABLE = "SHELLRT_TEST_CPU_LOG"


def _own() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class CpuLog:
    """The plugin: registered by tests/conftest.py only when `VARIABLE` is set."""

    def __init__(self, directory: Path, worker: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = open(directory / f"cpu-{worker}-{os.getpid()}.tsv", "a", buffering=1)  # noqa: SIM115

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._file.write(f"<collection>\t{_own():.3f}\t{_children():.3f}\t0\n")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        own, children, wall = _own(), _children(), time.monotonic()
        yield
        self._file.write(
            f"{item.nodeid}\t{_own() - own:.3f}\t{_children() - children:.3f}\t{time.monotonic() - wall:.3f}\n"
        )

    def pytest_unconfigure(self) -> None:
        self._file.close()


def register(config: pytest.Config) -> None:
    """Register `CpuLog` when `VARIABLE` names a directory."""
    where = os.environ.get(VARIABLE)
    if not where:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    config.pluginmanager.register(CpuLog(Path(where), worker), "shellrt-cpu-log")
