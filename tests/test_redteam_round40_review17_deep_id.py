"""Red team, round 40 (review17): a backslash run in a deep request's params hid its id.

Round 40 (iface3) made the shallow id scan (`_shallow_id`) skip strings with ``str.find`` and a
walk of backslashes bounded at 200,000, ending the scan past it, also when no bound was asked.
A request nested too deeply for Python's reader is answered under its top-level id, found by that
unbounded scan (round 27); with one string of 200,002 backslashes (200 KB) before the ``id``,
the scan stopped before the id, and the stdio wire took the request for a notification: dropped,
no answer, the client waited forever (the HTTP middleware answered id null). A string's end is now
found by one pattern, possessive, with no state per repeat: C speed, no bound needed.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import pytest

from shellrt.server._mcp_stdio import StdioWire
from shellrt.server._shallow_id import NESTED, leading_id, top_level_scalars

_DEEP = b"[" * 5_000 + b"]" * 5_000
_SLASHES = b"\\" * 200_002  # an even run: 100,001 escaped backslashes, then the string ends


def _request(msg_id: bytes) -> bytes:
    return (
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"Bash","arguments":{"command":"'
        + _SLASHES + b'","x":' + _DEEP + b'}},"id":' + msg_id + b"}"
    )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@pytest.mark.anyio
async def test_a_deep_request_with_a_long_backslash_run_is_answered_under_its_id() -> None:
    client_out, server_in = os.pipe()
    server_out, client_in = os.pipe()
    wire = StdioWire(client_out, client_in)
    send, receive = anyio.create_memory_object_stream[Any](10)
    answers = os.fdopen(server_out, "rb")

    def answer() -> dict[str, Any]:
        line = answers.readline()
        assert line, "the wire closed"
        value: dict[str, Any] = json.loads(line)
        return value

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(wire.reader, send)
            with anyio.fail_after(20):
                await anyio.to_thread.run_sync(_write_all, server_in, _request(b'"slashes"') + b"\n")
                got = await anyio.to_thread.run_sync(answer, abandon_on_cancel=True)
            assert got["id"] == "slashes" and got["error"]["code"] == -32600, got
            assert "nested too deeply" in got["error"]["message"], got
            tg.cancel_scope.cancel()
    finally:
        for fd in (client_in, server_in, client_out):
            os.close(fd)
        answers.close()
        send.close()
        receive.close()


def test_the_scan_reads_every_top_level_key_past_long_runs_and_escaped_quotes() -> None:
    for body in (_SLASHES, b'\\"' * 300_000, b"\\\\" + b'\\"' * 3 + b"x"):
        text = '{"params":{"a":"' + body.decode() + '"},"id":7,"method":"m"}'
        assert json.loads(text)["id"] == 7
        assert top_level_scalars(text) == {"params": NESTED, "id": 7, "method": "m"}
    # a key given twice is still seen twice past a long run (so left out), not the first one kept
    text = '{"id":1,"params":{"a":"' + _SLASHES.decode() + '"},"id":2}'
    assert top_level_scalars(text) == {"params": NESTED}
    assert leading_id(_request(b"9")) == 9


def test_string_ends_agree_with_the_json_reader() -> None:
    """Every string of up to 7 characters from a backslash, a quote and a letter, in an array."""
    import itertools

    for n in range(8):
        for chars in itertools.product('\\"a', repeat=n):
            body = "".join(chars)
            text = '{"k":["' + body + '"],"id":3}'
            try:
                json.loads(text)
            except ValueError:
                continue  # not JSON: the scan's answer does not matter (the line is refused)
            assert top_level_scalars(text) == {"k": NESTED, "id": 3}, text
