"""Red team round 37 (net): hostile sessions filling the process's bound of stalled lookups.

Round 36 bounded the host-name lookups still running (their threads cannot be cancelled): 8 per
session (a WebFetch session, a proxy), 256 per process. Round 36 left that 32 hostile sessions,
each with 8 names whose name server never answers, fill the process's 256, and then every other
session's fetches and proxied connections were refused until the resolver gave up on theirs.
Now every session keeps `FLOOR` lookups of its own whatever the others hold: a session below it
is admitted past the process bound (threads: at most ``PER_PROCESS + FLOOR`` x sessions), one at
or above it is refused as before. Scaled down here (``PER_PROCESS`` 16: two hostile sessions at
their bound fill it); a stand-in ``getaddrinfo`` plays the name server that never answers.
"""

from __future__ import annotations

import socket
import threading
import time

import anyio
import pytest

import sandbox._lookup as lookups
from sandbox._lookup import PER_SESSION, LookupsBusy, lookup


def test_other_sessions_keep_lookups_when_hostile_ones_fill_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo
    release = threading.Event()
    stalled: list[str] = []

    def resolver(host: object, port: object, *args: object, **kwargs: object) -> object:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name.endswith(".stall.test"):
            stalled.append(name)
            release.wait(30)  # a name server that never answers
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    monkeypatch.setattr(lookups, "PER_PROCESS", 2 * PER_SESSION)
    outcome: dict[str, object] = {}

    async def stall(session: str, name: str) -> None:
        try:
            await lookup(name, 443, session)
        except OSError as exc:
            outcome.setdefault(f"{session} refused", str(exc))

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for k in range(2):
                for i in range(PER_SESSION):
                    group.start_soon(stall, f"hostile-{k}", f"n{k}-{i}.stall.test")
            with anyio.fail_after(10):
                while len(stalled) < 2 * PER_SESSION:
                    await anyio.sleep(0.01)
            try:
                outcome["victim"] = await lookup("localhost", 80, "victim")
            except LookupsBusy as exc:
                outcome["victim"] = exc
            # The victim's own stalled lookups: its floor, then refused (the process stays bounded).
            for i in range(4):
                group.start_soon(stall, "victim", f"v{i}.stall.test")
            await anyio.sleep(0.5)
            group.cancel_scope.cancel()

    try:
        anyio.run(main)
    finally:
        release.set()
        deadline = time.monotonic() + 10
        while lookups._running and time.monotonic() < deadline:
            time.sleep(0.01)
    assert isinstance(outcome["victim"], list) and outcome["victim"], outcome["victim"]
    victim_stalled = [s for s in stalled if s.startswith("v")]
    assert len(victim_stalled) <= lookups.FLOOR, victim_stalled
    assert "still waiting" in str(outcome.get("victim refused")), outcome
    assert not lookups._running, lookups._running
