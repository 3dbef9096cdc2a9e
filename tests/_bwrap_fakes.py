"""Fake bwrap attempts for the retry wrapper's unit tests: scripted output, exit code and report, no bwrap."""

from __future__ import annotations

import os
from typing import Any

import anyio

from sandbox._bwrap_retry import RetryingBwrapProcess
from sandbox.base import ExitStatus


class FakeStream:
    """A byte stream that yields scripted chunks, optionally only after ``gate`` is set."""

    def __init__(self, chunks: list[bytes], gate: anyio.Event | None = None) -> None:
        self._chunks = list(chunks)
        self._gate = gate

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._gate is not None:
            await self._gate.wait()
        if not self._chunks:
            raise anyio.EndOfStream
        return self._chunks.pop(0)

    async def aclose(self) -> None:
        self._chunks = []


class FakeProcess:
    """One bwrap attempt: its stdout chunks, and an exit code it reports once ``exit_gate`` is set."""

    pid = 1
    stderr = None
    stdin = None

    def __init__(self, chunks: list[bytes], code: int, exit_gate: anyio.Event | None = None) -> None:
        self.stdout = FakeStream(chunks)
        self._code = code
        self._exit_gate = exit_gate

    async def wait(self) -> ExitStatus:
        if self._exit_gate is not None:
            await self._exit_gate.wait()
        return ExitStatus(exit_code=self._code)

    async def kill(self) -> None:
        pass


def fake_attempt(chunks: list[bytes], code: int, report: bytes, gate: anyio.Event | None = None) -> Any:
    """An attempt as the wrapper's start function returns it: the process and the read end of its report."""
    r, w = os.pipe()
    os.write(w, report)
    os.close(w)
    return FakeProcess(chunks, code, gate), r


async def read_all(proc: RetryingBwrapProcess) -> bytes:
    """Everything the wrapped process writes to stdout, to its end."""
    out = b""
    try:
        while True:
            out += await proc.stdout.receive()
    except anyio.EndOfStream:
        return out
