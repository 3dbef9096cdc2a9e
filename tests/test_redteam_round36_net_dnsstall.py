"""Red team round 36 (net): a name whose DNS never answers held WebFetch's lookups for every session.

WebFetch resolved each host with ``anyio.getaddrinfo``: asyncio's ``loop.getaddrinfo``, run in the
event loop's default executor, a pool of ``min(32, cpus + 4)`` threads (6 on a 2-core host) shared
by the whole process. A lookup cannot be cancelled: the call's deadline ends the wait, not the
thread, which stays until the resolver gives up (glibc: ``timeout`` x ``attempts`` per name server,
10 s or more each). So a handful of fetches of names whose authoritative server never answers (any
name the attacker owns) filled the pool, and every later fetch in the process -- another session's
under ``serve --http``, an IP literal too (it goes through ``getaddrinfo`` as well) -- queued
behind them until its own deadline. DNS is outside the machine: a stand-in ``getaddrinfo`` that
never answers for ``*.stall.test`` plays the attacker's name server, as round 27's tests do.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import anyio
import pytest

from sandbox._lookup import PER_SESSION
from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool
from tests._http_server import serve

#: More stalled names than the default executor has threads (min(32, cpus + 4)), and than a session may hold.
_STALLED = max(min(32, (os.cpu_count() or 1) + 4), PER_SESSION) + 2


def _ctx(tmp_path: Path, timeout: float, session: str) -> ToolContext:
    return ToolContext(
        session_id=session,
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": ["127.0.0.1", "localhost"], "timeoutSeconds": timeout}},
    )


def test_stalled_lookups_do_not_hold_other_fetches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo
    release = threading.Event()
    stalled: list[str] = []

    def resolver(host: object, port: object, *args: object, **kwargs: object) -> object:
        name = host.decode() if isinstance(host, bytes) else str(host)  # anyio passes IDNA bytes
        if name.rstrip(".").endswith(".stall.test"):
            stalled.append(name)
            release.wait(60)  # a name server that never answers: the resolver's own timeout ends it
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    tool = WebFetchTool()
    attacker = _ctx(tmp_path, 1.0, "attacker")
    refused: list[str] = []
    routes = {"/page": (200, {"Content-Type": "text/plain"}, b"the victim's page\n")}
    try:
        with serve(routes) as srv:
            victim_urls = [
                f"http://127.0.0.1:{srv.server_port}/page",
                f"http://localhost:{srv.server_port}/page",
            ]
            threads_before = threading.active_count()

            async def attack(i: int) -> None:
                try:
                    await tool.call(WebFetchInput(url=f"http://n{i}.stall.test/"), attacker)
                except ToolExecutionError as exc:
                    if "still waiting" in str(exc):
                        refused.append(str(exc))  # past the session's bound: refused at once

            async def main() -> tuple[float, str, int]:
                async with anyio.create_task_group() as group:
                    for i in range(_STALLED):
                        group.start_soon(attack, i)
                # Every attacker call has ended (deadline); their lookups still hang.
                held = threading.active_count() - threads_before
                started = time.monotonic()
                result = ""
                for url in victim_urls:  # another session: an IP literal, then a name
                    try:
                        out = await tool.call(WebFetchInput(url=url), _ctx(tmp_path, 5.0, "victim"))
                        result += out.data.content
                    except ToolExecutionError as exc:
                        result += f"error: {exc}\n"
                elapsed = time.monotonic() - started
                release.set()  # the name server "times out": the held threads end
                return elapsed, result, held

            elapsed, result, held = anyio.run(main)
    finally:
        release.set()
    assert len(stalled) >= 1, "the stand-in resolver was never asked"
    # The pages are what pins it (a fetch held to its 5 s deadline errs); round 49: 8 s, not 4 s, for
    # two fetches in a loaded lane (two held to their deadline: 10 s).
    assert result.count("the victim's page") == 2 and elapsed < 8.0, (
        f"another session's two fetches after {_STALLED} stalled lookups took {elapsed:.1f} s: {result[:300]}"
    )
    # Bounded: one session holds at most PER_SESSION lookup threads; its next fetches are refused at once.
    assert held <= PER_SESSION + 2, held
    assert len(stalled) <= PER_SESSION and len(refused) >= _STALLED - PER_SESSION, (stalled, refused)
