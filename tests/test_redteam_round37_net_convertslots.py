"""Red team round 37 (net): two sessions kept every page converter of the process busy.

WebFetch converts HTML in worker processes, at most `MAX_BUSY` (4) at once for the whole process
(each may take 512 MiB), a session at most 2. A hostile server's page of 1,400,000 empty ``<p>``
elements converts to nothing for seconds of CPU; two sessions fetching it two at a time, again as
soon as one ends, held all four: another session's small page waited for a slot until its own
deadline and came back unconverted ("Other pages held every converter process", round 36's
Left). Now a freed slot goes to the waiting session holding the fewest (a session holding none
first), and a conversion holds its slot at most `SLOT_SECONDS` (scaled down here), so a session
waits at most about that long, whatever the others ask. Real HTTP server on 127.0.0.1, real
converter processes.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import anyio
import pytest

import shellrt.tools._convert_worker as worker
from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool
from tests._http_server import serve

pytestmark = pytest.mark.skipif(importlib.util.find_spec("html2text") is None, reason="needs shellrt[web]")

_SLOW = b"<html><body>" + b"<p></p>" * 1_400_000 + b"</body></html>"
_SMALL = b"<html><body><h1>Victim</h1><p>the victim's own page</p></body></html>"


def _ctx(tmp_path: Path, timeout: float, session: str) -> ToolContext:
    return ToolContext(
        session_id=session,
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": ["127.0.0.1"], "timeoutSeconds": timeout}},
    )


def test_two_sessions_cannot_hold_every_converter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "SLOT_SECONDS", 1.5, raising=False)
    html = {"Content-Type": "text/html"}
    routes = {"/slow": (200, html, _SLOW), "/small": (200, html, _SMALL)}
    results: dict[str, object] = {}
    with serve(routes) as srv:
        base = f"http://127.0.0.1:{srv.server_port}"

        async def hostile(tool: WebFetchTool, ctx: ToolContext, stop: anyio.Event) -> None:
            while not stop.is_set():
                try:
                    await tool.call(WebFetchInput(url=f"{base}/slow?{time.monotonic()}"), ctx)
                except ToolExecutionError:
                    pass

        async def main() -> None:
            stop = anyio.Event()
            async with anyio.create_task_group() as group:
                for session in ("hostile-a", "hostile-b"):
                    tool, ctx = WebFetchTool(), _ctx(tmp_path, 60.0, session)
                    for _ in range(2):
                        group.start_soon(hostile, tool, ctx, stop)
                with anyio.fail_after(20):  # four hostile pages served: every slot converting one
                    while srv.hits["/slow"] < worker.MAX_BUSY:
                        await anyio.sleep(0.02)
                await anyio.sleep(0.5)
                started = time.monotonic()
                out = await WebFetchTool().call(WebFetchInput(url=f"{base}/small"), _ctx(tmp_path, 5.0, "victim"))
                results["victim"] = out.data
                results["waited"] = time.monotonic() - started
                stop.set()
                group.cancel_scope.cancel()

        anyio.run(main)
    victim = results["victim"]
    assert "the victim's own page" in victim.content, (victim.note, results["waited"])  # type: ignore[attr-defined]


def test_a_freed_slot_goes_to_the_session_holding_fewest() -> None:
    import threading

    from shellrt.tools._fair_slots import FairSlots

    slots = FairSlots(2, 2)
    assert slots.acquire("a", 0) and slots.acquire("b", 0)
    order: list[str] = []

    def ask(key: str) -> None:
        if slots.acquire(key, 5):
            order.append(key)

    first = threading.Thread(target=ask, args=("a",))  # asks first, holds one already
    first.start()
    time.sleep(0.1)
    second = threading.Thread(target=ask, args=("c",))  # asks later, holds none: served first
    second.start()
    time.sleep(0.1)
    slots.release("b")
    second.join(5)
    assert order == ["c"], order
    slots.release("c")
    first.join(5)
    assert order == ["c", "a"], order
    assert not slots.acquire("a", 0.05)  # full (and "a" at its cap of 2)
    slots.release("a")
    slots.release("a")
    assert slots.acquire("d", 0) and slots.acquire("e", 0) and not slots.acquire("f", 0.05)  # full
