"""Red team round 37 (net): WebFetch's lookups of denied names were not counted.

WebFetch refuses a URL whose DNS answers an address a denied exact name resolves to (round 28):
on every hop of every call it looks up each denied name (up to 64), 8 threads at a time in a
limiter of the call's own, waits 2 s, and leaves the threads of names not answered by then
running until the resolver gives up. Whoever runs the zone of a denied name (``deny
evil.example``: the attacker's own zone) makes its name server never answer, and every hop of
every call of every session then starts 8 more threads that outlive the call: nothing bounded
them (round 36 counted only the fetch's own lookup). Now they go through `sandbox._lookup` under a
key of the session's own (its bound, the process's, one thread per name however many calls ask),
apart from the session's fetches, whose lookups they never take. DNS is outside the machine: a
stand-in ``getaddrinfo`` plays the name server that never answers.
"""

from __future__ import annotations

import socket
import threading
import time

import anyio
import pytest

import sandbox._lookup as lookups
import shellrt.tools._fetch_denies as denies
from sandbox._lookup import PER_SESSION, lookup
from shellrt.tools._fetch_denies import Barred


def test_denied_name_lookups_are_bounded_across_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo
    release = threading.Event()
    stalled: list[str] = []

    def resolver(host: object, port: object, *args: object, **kwargs: object) -> object:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name.endswith(".stall.test"):
            stalled.append(name)
            release.wait(30)  # the denied zone's name server never answers
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    monkeypatch.setattr(denies, "NAME_LOOKUP_SECONDS", 0.3)
    barred = Barred(tuple((f"d{i}.stall.test", "a deny rule", False) for i in range(16)))
    found: dict[str, object] = {}

    async def main() -> None:
        for _call in range(4):  # four calls (or hops) of one session, one after another
            await barred.resolved()
        found["own"] = await lookup("localhost", 80, "")  # the session's own fetch still resolves

    started = time.monotonic()
    try:
        anyio.run(main)
    finally:
        time.sleep(0.2)
        threads = len(stalled)
        release.set()
        deadline = time.monotonic() + 10
        while lookups._running and time.monotonic() < deadline:
            time.sleep(0.01)
    assert threads <= PER_SESSION, f"{threads} lookup threads of denied names still waiting (4 calls)"
    assert found["own"], found
    assert time.monotonic() - started < 10
