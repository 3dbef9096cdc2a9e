"""Round 36 (lead): the per-session lookup bound refused a build's parallel requests for one host.

Round 36 net bounded the host-name lookups a session (a proxy) may have running at 8, to stop
lookups that never end from holding every thread. But 24 parallel requests of one command for
one host were 24 lookups of the same name: past the 8th each was refused (403) while all were
healthy, only slow (a loaded machine: CI's `test_bwrap_commands_reach_allowed_server_only_through_
the_proxy` lost requests). Lookups of one name by one key at once now share one thread and one
count; a stalled name still holds at most the bound, and distinct names past it are still refused.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import anyio
import pytest

from sandbox import _lookup
from sandbox._lookup import PER_SESSION, LookupsBusy, lookup


def _slow_resolver(monkeypatch: pytest.MonkeyPatch, delay_s: float) -> list[str]:
    """A stand-in resolver (the machine's would answer at once): each call ``delay_s`` slow."""
    asked: list[str] = []
    real = socket.getaddrinfo

    def slow(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(host)
        time.sleep(delay_s)
        return real("127.0.0.1", port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    return asked


def test_parallel_lookups_of_one_name_share_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _slow_resolver(monkeypatch, 0.3)
    results: list[Any] = []

    async def main() -> None:
        async def one() -> None:
            try:
                results.append(await lookup("build.example", 443, "session-a"))
            except LookupsBusy as exc:
                results.append(exc)

        async with anyio.create_task_group() as tg:
            for _ in range(3 * PER_SESSION):
                tg.start_soon(one)

    anyio.run(main)
    refused = [r for r in results if isinstance(r, Exception)]
    assert not refused, f"{len(refused)} of {len(results)} healthy lookups refused: {refused[0]}"
    assert all(r and r[0][4][0] == "127.0.0.1" for r in results)
    assert asked == ["build.example"], asked  # one resolver call for the 24
    assert not _lookup._flights and not _lookup._running


def test_distinct_names_past_the_bound_are_still_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _slow_resolver(monkeypatch, 0.5)
    outcomes: list[str] = []

    async def main() -> None:
        async def one(i: int) -> None:
            try:
                await lookup(f"n{i}.example", 443, "session-b")
                outcomes.append("ok")
            except LookupsBusy:
                outcomes.append("busy")

        async with anyio.create_task_group() as tg:
            for i in range(PER_SESSION + 3):
                tg.start_soon(one, i)

    anyio.run(main)
    assert outcomes.count("ok") == PER_SESSION and outcomes.count("busy") == 3, outcomes
    assert not _lookup._flights and not _lookup._running


def test_a_sharer_of_an_abandoned_lookup_asks_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first asker leaves (its deadline) while its thread still waits on DNS: the sharers still
    get the answer when it comes, and the count goes when the thread ends."""
    release = threading.Event()
    real = socket.getaddrinfo

    def gated(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        release.wait(5)
        return real("127.0.0.1", port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", gated)
    got: list[Any] = []

    async def main() -> None:
        async def first() -> None:
            with anyio.move_on_after(0.2):
                await lookup("slow.example", 80, "session-c")

        async def sharer() -> None:
            await anyio.sleep(0.05)
            got.append(await lookup("slow.example", 80, "session-c"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            tg.start_soon(sharer)
            await anyio.sleep(0.4)
            release.set()

    anyio.run(main)
    assert got and got[0][0][4][0] == "127.0.0.1"
    deadline = time.monotonic() + 5
    while (_lookup._running or _lookup._flights) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _lookup._flights and not _lookup._running
