"""Round 27 wave 2, interfaces: an MCP POST nested too deeply was answered under id null.

Measured on a real ``shellrt serve --http``: ``{"id": "deep", "method": "ping", "params":
{"x": [[[…]]]}}`` 400 or 100,000 arrays deep got ``400`` with ``{"id": null, "error":
{"code": -32700, "message": "Parse error: recursion limit exceeded …"}}``: valid JSON, read by
Python (400) or not (100,000), refused by the SDK's reader past about 200 levels, and not
answered under the request's id. The body check now measures the depth (`_json_depth`) and
refuses a message nested more than 200 levels itself, ``-32600`` under its top-level id (found
without descending, `_shallow_id`, when Python cannot read it); flatter messages reach the app.
The body check as ASGI middleware in front of an app that records what reached it.
"""

from __future__ import annotations

import json

import pytest

from shellrt.server._http_strict import StrictJsonBodyMiddleware
from tests._asgi_post import RecordingApp, post

pytestmark = pytest.mark.anyio


def _body(msg_id: str, arrays: int) -> bytes:
    head = '{"jsonrpc":"2.0","id":"' + msg_id + '","method":"ping","params":{"x":'
    return (head + "[" * arrays + "]" * arrays + "}}").encode()


async def test_a_deep_body_is_refused_under_its_own_id() -> None:
    app = RecordingApp()
    middleware = StrictJsonBodyMiddleware(app, body_timeout=5)
    reached = app.reached

    for msg_id, arrays in (("d100k", 100_000), ("d400", 400), ("d199", 199)):
        sent = await post(middleware, _body(msg_id, arrays))
        got = json.loads(sent[1]["body"])
        assert got["id"] == msg_id and got["error"]["code"] == -32600, got
        if arrays > 50_000:  # round 29: more values than an HTTP body may hold, refused unread (413)
            assert sent[0]["status"] == 413 and "50,000" in got["error"]["message"], got
            continue
        assert sent[0]["status"] == 400, (msg_id, sent[:1])
        assert "nested more than 200 levels" in got["error"]["message"], got
    assert not reached
    sent = await post(middleware, _body("flat", 198))  # 200 levels with the two objects around it
    assert sent[0]["status"] == 200 and len(reached) == 1, sent[:1]
    sent = await post(middleware, b'{"jsonrpc":"2.0","id":5,"params":' + b"[" * 40_000)  # not JSON at all (under the values bound)
    got = json.loads(sent[1]["body"])
    assert got["id"] is None and got["error"]["code"] == -32700, got
