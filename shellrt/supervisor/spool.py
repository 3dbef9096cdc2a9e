"""Spooling a stream to disk as it arrives, keeping only a head and a tail in memory.

The file is the truth: byte-identical to what the command wrote, however much
that is. Memory stays bounded by ``head_bytes + tail_bytes`` per stream, which
is what the preview shown to a model is built from.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from shellrt.supervisor.text import safe_decode, trim_partial_utf8

__all__ = ["OutputSpool"]


class OutputSpool:
    """One output file plus the head/tail kept for previews and progress."""

    def __init__(
        self,
        path: Path,
        *,
        head_bytes: int = 16_384,
        tail_bytes: int = 16_384,
        on_chunk: Callable[[bytes], None] | None = None,
    ) -> None:
        self.path = path
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.total_bytes = 0
        self._head = bytearray()
        self._tail = bytearray()
        self._on_chunk = on_chunk
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)

    def write(self, chunk: bytes) -> None:
        """Append ``chunk`` to the file and update head/tail (synchronous: page-cache writes are fast)."""
        if not chunk:
            return
        fd = self._fd
        if fd is not None:
            view = memoryview(chunk)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        self.total_bytes += len(chunk)
        if len(self._head) < self.head_bytes:
            self._head += chunk[: self.head_bytes - len(self._head)]
        if len(chunk) >= self.tail_bytes:
            self._tail = bytearray(chunk[-self.tail_bytes :])
        else:
            self._tail += chunk
            excess = len(self._tail) - self.tail_bytes
            if excess > 0:
                del self._tail[:excess]
        if self._on_chunk is not None:
            self._on_chunk(chunk)

    def close(self) -> None:
        """Close the file (idempotent); head/tail stay readable."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    @property
    def complete_in_memory(self) -> bool:
        """True when head and tail together hold every byte written."""
        return self.total_bytes <= len(self._head) + len(self._tail)

    def full_bytes(self) -> bytes | None:
        """Every byte written, when it is all in memory (else None)."""
        if self.total_bytes <= len(self._head):
            return bytes(self._head)
        if self.complete_in_memory:
            return bytes(self._head) + bytes(
                self._tail[len(self._tail) - (self.total_bytes - len(self._head)) :]
            )
        return None

    def preview(self) -> tuple[str, bool]:
        """``(text, truncated)``: the whole output, or head + an omission marker + tail."""
        full = self.full_bytes()
        if full is not None:
            return safe_decode(full), False
        omitted = self.total_bytes - len(self._head) - len(self._tail)
        head = safe_decode(trim_partial_utf8(bytes(self._head), at_start=False))
        tail = safe_decode(trim_partial_utf8(bytes(self._tail), at_start=True))
        marker = f"\n\n... [{omitted} bytes omitted; full output in {self.path}] ...\n\n"
        return head + marker + tail, True

    def last_lines(self, n: int = 5) -> tuple[str, ...]:
        """The last ``n`` lines seen (decoded safely), for progress events."""
        tail = bytes(self._tail if self.total_bytes > len(self._head) else self._head)
        lines = tail.rstrip(b"\n").split(b"\n")[-n:]
        return tuple(safe_decode(trim_partial_utf8(line, at_start=True)) for line in lines if line)
