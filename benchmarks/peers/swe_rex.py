"""SWE-ReX (``swerex.runtime.local.LocalRuntime``): a pexpect bash session, and one-shot ``execute``."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self

from benchmarks.peers.base import Outcome, System, missing_modules

__all__ = ["SweRexOneShot", "SweRexSession"]


class _SweRex(System):
    def __init__(self) -> None:
        self.runtime: Any = None

    def unavailable(self) -> str | None:
        return missing_modules("swerex")

    async def __aenter__(self) -> Self:
        from swerex.runtime.local import LocalRuntime

        self.runtime = LocalRuntime()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.runtime is not None:
            await self.runtime.close()


class SweRexSession(_SweRex):
    """``run_in_session(BashAction(...))`` on one persistent pexpect bash (SWE-agent's default path).

    On a timeout we send ``BashInterruptAction`` (Ctrl-C), as SWE-agent does, so the
    session stays usable; that recovery is part of the measured call.
    """

    name = "SWE-ReX local session"

    async def __aenter__(self) -> Self:
        await super().__aenter__()
        from swerex.runtime.abstract import CreateBashSessionRequest

        await self.runtime.create_session(CreateBashSessionRequest(session="bench"))
        return self

    async def run(self, command: str, timeout_s: float) -> Outcome:
        from swerex.exceptions import CommandTimeoutError
        from swerex.runtime.abstract import BashAction, BashInterruptAction

        try:
            obs = await self.runtime.run_in_session(
                BashAction(command=command, session="bench", timeout=timeout_s, check="silent")
            )
        except CommandTimeoutError:
            try:
                await self.runtime.run_in_session(BashInterruptAction(session="bench"))
            except Exception as exc:  # the session may be wedged; report, don't crash the bench
                return Outcome(exit_code=None, timed_out=True, note=f"interrupt failed: {exc}")
            return Outcome(exit_code=None, timed_out=True, note="output lost on timeout")
        except Exception as exc:  # e.g. pexpect.TIMEOUT on its fixed 1 s exit-code read under load
            return Outcome(exit_code=None, note=f"call failed: {type(exc).__name__}: {exc}")
        return Outcome(exit_code=obs.exit_code, recoverable_bytes=len(obs.output.encode()))


class SweRexOneShot(_SweRex):
    """``execute(Command(..., shell=True))``: a blocking ``subprocess.run`` per command."""

    name = "SWE-ReX one-shot execute"

    async def run(self, command: str, timeout_s: float) -> Outcome:
        from swerex.exceptions import CommandTimeoutError
        from swerex.runtime.abstract import Command

        try:
            resp = await self.runtime.execute(
                Command(command=["bash", "-c", command], timeout=timeout_s, merge_output_streams=True)
            )
        except CommandTimeoutError:
            return Outcome(exit_code=None, timed_out=True, note="output lost on timeout")
        except Exception as exc:
            return Outcome(exit_code=None, note=f"call failed: {type(exc).__name__}: {exc}")
        return Outcome(exit_code=resp.exit_code, recoverable_bytes=len(resp.stdout.encode()))
