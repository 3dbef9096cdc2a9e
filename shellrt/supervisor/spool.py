"""Spooling a stream to disk as it arrives, keeping only a head and a tail in memory.

The file is the truth: byte-identical to what the command wrote, however much
that is. Memory stays bounded by ``head_bytes + tail_bytes`` per stream, which
is what the preview shown to a model is built from.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from shellrt.supervisor.text import safe_decode, trim_partial_utf8

__all__ = ["OutputSpool", "SpoolFiles"]


class SpoolFiles:
    """Numbered spool files of one directory, created (empty) ahead of use on a worker thread.

    Creating a file costs 0.1-0.5 ms on a journaling filesystem under load — as
    much as the whole ``bash -c true`` it would spool. The next few files are
    made in advance, so a command's `OutputSpool` finds its file in place and
    only opens it (``O_TRUNC`` of an empty file: a few µs). The worker creates
    with ``O_EXCL`` and never truncates, so whoever comes first creates the file
    and nothing a command wrote is ever touched. `close` removes the files made
    for numbers never taken.
    """

    def __init__(self, directory: Path, stem: str, *, ahead: int = 8) -> None:
        self.directory = directory
        self._stem = stem
        self._ahead = ahead
        self._taken = 0  # numbers 1.._taken were handed out
        self._made = 0  # numbers 1.._made were (or are being) created by the worker
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False

    def name(self, n: int) -> str:
        return f"{self._stem}-{n:04d}"

    def take(self) -> str:
        """The next name (its ``.out`` file probably exists already); tops up the files made ahead."""
        self._taken += 1
        n = self._taken
        if not self._closed and self._made - n <= self._ahead // 2:
            first, last = max(self._made, n) + 1, n + self._ahead
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="shellrt-spool"
                )
            self._executor.submit(self._create, first, last)
            self._made = last
        return self.name(n)

    def _create(self, first: int, last: int) -> None:
        for n in range(first, last + 1):
            path = self.directory / f"{self.name(n)}.out"
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
            except OSError:  # already there (a command got to it first), or the dir is gone
                pass

    def close(self) -> None:
        """Stop making files and remove the ones made for numbers never taken (blocking)."""
        self._closed = True
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        for n in range(self._taken + 1, self._made + 1):
            with contextlib.suppress(OSError):
                (self.directory / f"{self.name(n)}.out").unlink()
        self._made = self._taken


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
