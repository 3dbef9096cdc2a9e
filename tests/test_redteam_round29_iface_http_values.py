"""Red team round 29 (iface): one accepted HTTP body held ``serve --http``'s event loop for seconds.

Round 28 bounded what one wire line may cost (`_line_budget`: past 1 MiB, at most 1,000,000 of
``[ { , :``). An HTTP body is read four times on the server's one loop (the strict check, its depth
walk, the SDK's parse, the runtime's checks), and Python's readers hold the GIL in a worker thread
too: a 1.47 MB body of 490,000 empty arrays, within that budget, held the loop 7.2 s at load ~19
(measured in process, a heartbeat task on the server's loop; 2.6 s of it the depth walk, 1.4 s the
strict parse, 0.7 s the SDK's), and every other client waited. An HTTP body now holds at most
50,000 of those characters outside its strings (0.5 s held at that bound, same load); big strings
(a file's content, source code with escaped quotes) are not counted.
"""

from __future__ import annotations

import json

import pytest

from shellrt.server._http_strict import StrictJsonBodyMiddleware
from tests._asgi_post import RecordingApp, post

pytestmark = pytest.mark.anyio


def _call(msg_id: int, arguments: str) -> bytes:
    head = '{"jsonrpc":"2.0","id":' + str(msg_id) + ',"method":"tools/call","params":{"name":"Write","arguments":'
    return (head + arguments + "}}").encode()


async def test_an_http_body_of_many_values_is_refused_before_it_is_read() -> None:
    app = RecordingApp()
    middleware = StrictJsonBodyMiddleware(app, body_timeout=30)
    many = _call(7, '{"pad":[' + ",".join(["[]"] * 490_000) + "]}")  # 1.47 MB, within round 28's budget
    sent = await post(middleware, many)
    assert sent[0]["status"] == 413 and not app.reached, sent[:1]
    got = json.loads(sent[1]["body"])
    assert got["id"] == 7 and "50,000" in got["error"]["message"] and "base64" in got["error"]["message"], got
    strings = _call(8, '{"pad":[' + ",".join(['""'] * 60_000) + "]}")  # many strings: commas between them
    assert (await post(middleware, strings))[0]["status"] == 413 and not app.reached
    # Accepted: a body within the bound, and big strings whatever they hold (a CSV, source code).
    for msg_id, arguments in (
        (9, '{"pad":[' + ",".join(["[]"] * 24_000) + "]}"),
        (10, json.dumps({"file_path": "/w/a.csv", "content": "1,2,3,4\n" * 200_000})),
        (11, json.dumps({"file_path": "/w/a.py", "content": "f(a, {'x': \"y\", 'z': [1, 2]})\n" * 30_000})),
    ):
        sent = await post(middleware, _call(msg_id, arguments))
        assert sent[0]["status"] == 200, (msg_id, sent)
    assert len(app.reached) == 3
