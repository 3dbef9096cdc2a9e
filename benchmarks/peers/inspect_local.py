"""Inspect AI's local sandbox (``LocalSandboxEnvironment.exec``): an anyio subprocess per command."""

from __future__ import annotations

import math
from types import TracebackType
from typing import Any, Self

from benchmarks.peers.base import Outcome, System, missing_modules

__all__ = ["InspectLocal"]


class InspectLocal(System):
    """``sandbox.exec(["bash", "-c", cmd], timeout=...)``; Inspect keeps the last 10 MiB of a stream."""

    name = "Inspect local sandbox exec"

    def __init__(self) -> None:
        self.env: Any = None

    def unavailable(self) -> str | None:
        return missing_modules("inspect_ai")

    async def __aenter__(self) -> Self:
        from inspect_ai.util._sandbox.local import LocalSandboxEnvironment

        self.env = LocalSandboxEnvironment()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.env is not None:
            self.env.directory.cleanup()

    async def run(self, command: str, timeout_s: float) -> Outcome:
        from inspect_ai.util import OutputLimitExceededError

        try:
            # Inspect's exec takes whole seconds.
            result = await self.env.exec(["bash", "-c", command], timeout=max(1, math.ceil(timeout_s)))
        except TimeoutError:
            return Outcome(exit_code=None, timed_out=True, note="output lost on timeout")
        except OutputLimitExceededError as exc:
            kept = len((exc.truncated_output or "").encode())
            return Outcome(exit_code=None, recoverable_bytes=kept, note="output limit exceeded")
        except Exception as exc:
            return Outcome(exit_code=None, note=f"call failed: {type(exc).__name__}: {exc}")
        got = len(result.stdout.encode()) + len(result.stderr.encode())
        return Outcome(exit_code=result.returncode, recoverable_bytes=got)
