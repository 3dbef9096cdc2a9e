"""Red team round 15: the Python API's default gate (no settings) asks before reaching the network.

``Runtime(ws, use_settings=False)`` — or ``Runtime(ws, hooks=…)`` with no gate, which also leaves
settings out — decides with `BasicGate`: "the tool's own check, read-only allowed, the rest
asked". WebFetch is read-only (it changes nothing here) but reaches any host the model names,
with whatever the model puts in the URL. Measured on the old code, headless: the model's
``WebFetch http://127.0.0.1:PORT/?leak=…`` was fetched unasked (the server saw the request);
the settings engine asks for it (open world). Now the default gate allows a read-only call
unasked only when it stays in this machine's files (not open world), as the engine does.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx  # noqa: F401 - WebFetch is enabled only with it (and the non-root run must carry it)
import pytest

from shellrt.permissions import HookRunner
from shellrt.permissions.interfaces import NoHooks
from shellrt.runtime import Runtime


class _Seen(http.server.BaseHTTPRequestHandler):
    paths: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        _Seen.paths.append(self.path)
        body = b"hello"
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Seen)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def _fetch_and_read(ws: Path, url: str, **kw: Any) -> list[dict[str, Any]]:
    (ws / "notes.txt").write_text("plain notes\n")
    settings = {"webFetch": {"allowPrivateHosts": True}}  # the test server is on loopback
    async with Runtime(ws, "local", settings=settings, session_dir=ws.parent / "s", **kw) as rt:
        out = await rt.run(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "w",
                        "name": "WebFetch",
                        "input": {"url": f"{url}/?leak=k3y", "prompt": "x"},
                    },
                    {
                        "type": "tool_use",
                        "id": "r",
                        "name": "Read",
                        "input": {"file_path": str(ws / "notes.txt")},
                    },
                ],
            }
        )
    results: list[dict[str, Any]] = out["content"]
    return results


@pytest.mark.parametrize("how", ["use_settings=False", "hooks only"])
def test_the_default_gate_asks_before_fetching(tmp_path: Path, url: str, how: str) -> None:
    _Seen.paths.clear()
    (tmp_path / "ws").mkdir()
    kw: dict[str, Any] = {"use_settings": False} if how == "use_settings=False" else {"hooks": NoHooks()}
    assert isinstance(kw.get("hooks", NoHooks()), HookRunner)
    fetched, read = anyio.run(lambda: _fetch_and_read(tmp_path / "ws", url, **kw))
    assert not any("leak" in p for p in _Seen.paths), _Seen.paths
    assert fetched["is_error"] and "not granted" in str(fetched["content"]), fetched
    assert not read.get("is_error") and "plain notes" in str(read["content"]), read  # local reads still run
