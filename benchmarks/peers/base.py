"""The adapter interface every measured system implements (shellrt, the raw baseline and the peers)."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Self

import anyio

__all__ = ["Outcome", "System", "SystemUnavailable", "missing_modules"]


class SystemUnavailable(Exception):
    """Raised by `System.__aenter__` when the system cannot run here (reported as skipped)."""


@dataclass
class Outcome:
    """What the caller got back from one command."""

    exit_code: int | None
    timed_out: bool = False
    #: Bytes of output the caller can get back (in memory or from a file the system points to).
    recoverable_bytes: int = 0
    #: Free text: an error the system raised, or how the bytes are recoverable.
    note: str = ""


def missing_modules(*modules: str) -> str | None:
    """``"not installed (pip install -r benchmarks/requirements-peers.txt)"`` when a module is missing."""
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken install, or blocked via sys.modules[name] = None
            found = False
        if not found:
            return f"not installed ({module}; pip install -r benchmarks/requirements-peers.txt)"
    return None


class System:
    """One way of running a shell command: start it, run commands, close it.

    Subclasses set ``name`` (the row label) and implement `run`; `unavailable`
    says why the system cannot run here (a missing package), without importing it.
    """

    name: str = "?"

    def unavailable(self) -> str | None:
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    async def run(self, command: str, timeout_s: float) -> Outcome:
        raise NotImplementedError

    async def run_many(self, commands: Sequence[str], timeout_s: float) -> list[Outcome]:
        """Run ``commands`` concurrently the way a user of this system would (default: one task each)."""
        results: list[Outcome | None] = [None] * len(commands)

        async def one(i: int, command: str) -> None:
            results[i] = await self.run(command, timeout_s)

        async with anyio.create_task_group() as tg:
            for i, command in enumerate(commands):
                tg.start_soon(one, i, command)
        return [r for r in results if r is not None]
