"""Round 26, interfaces: one long line cost the MCP and JSONL servers time quadratic in its length.

Both servers frame their input with `LineReader` (lines up to 64 MB on MCP stdio, 32 MB on
JSONL). It searched the whole buffer for the newline again after every 64 KB read, so a line of
n bytes cost n²/128 KB of scanning on the event loop: a client sending 60 MB lines kept the
server's CPU busy about 3 s per line. A search now starts where the last one ended. The reader
on a real pipe, its CPU time for a long line against one eight times shorter.
"""

from __future__ import annotations

import os
import threading
import time

import anyio
import pytest

from shellrt.server._lines import LineReader

pytestmark = pytest.mark.anyio


async def _cpu_to_read(size: int) -> float:
    """CPU seconds this process spends reading one line of ``size`` bytes (and the next) from a pipe."""
    read_fd, write_fd = os.pipe()
    data = b"x" * size + b"\n" + b"{}\n"

    def client() -> None:
        with os.fdopen(write_fd, "wb", buffering=0) as pipe:
            view = memoryview(data)
            while view:
                view = view[pipe.write(view) :]

    writer = threading.Thread(target=client, daemon=True)
    try:
        with os.fdopen(read_fd, "rb", buffering=0) as source:
            reader = LineReader(source, 64 << 20)
            started = time.process_time()
            writer.start()
            with anyio.fail_after(120):
                line = await reader.readline()
                following = await reader.readline()
            spent = time.process_time() - started
    finally:
        writer.join(30)
    assert isinstance(line, bytes) and len(line) == size + 1 and following == b"{}\n"
    return spent


async def test_a_long_line_costs_time_linear_in_its_length() -> None:
    short = await _cpu_to_read(4 << 20)
    long = await _cpu_to_read(32 << 20)
    # Eight times the bytes: about eight times the CPU when linear, about 64 times when quadratic.
    assert long < 25 * max(short, 0.004), (short, long)
