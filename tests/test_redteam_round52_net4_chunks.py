"""Red team round 52 (net4): a chunked body whose framing costs what its bytes do not count.

`shellrt.tools._http_body.BoundedBody` bounds the bytes a body carries (``maxBytes``, decoded and
raw, round 13), but a ``Transfer-Encoding: chunked`` body is de-chunked by h11 before WebFetch sees
a byte: what the framing costs was counted nowhere. A server on 127.0.0.1 answering with endless
one-byte chunks, each behind a 16,000-byte chunk extension (``1;aaa…\\r\\nX\\r\\n``), made the
fetch read hundreds of MB off the socket for a few bytes of body (373 MB in an 8 s call, measured),
and endless bare one-byte chunks (``1\\r\\nX\\r\\n``, 64 KiB of them per ``send``: one system call
of the server's, ~10,000 parsed events of ours) kept the host's event loop parsing: both ran to
the call's whole deadline and failed ("took longer"), nothing shown. Failed before: 2 of 2.

Now the fetch counts the bytes read off the socket for the body and the pieces it arrives in; past
``2 * maxBytes`` (plus a head's worth) of the one or `BoundedBody`'s piece bound of the other, the
body is cut there and marked truncated, like a body over ``maxBytes``. Bounded by counts: the
test waits on the real answer (a deadline of 60 s only a failure reaches).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from shellrt.protocol import ToolContext
from shellrt.tools._http_body import BoundedBody
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool

_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
#: Each chunk carries one byte of body.
_CHUNKS = {
    "padded": b"1;" + b"a" * 16_000 + b"\r\nX\r\n",
    "tiny": b"1\r\nX\r\n",
}
_LIMIT = 1 << 20


@contextmanager
def _endless(chunk: bytes) -> Iterator[int]:
    """A server sending one endless chunked body per connection (until the client closes)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    batch = chunk * max(1, 65_536 // len(chunk))

    def answer(conn: socket.socket) -> None:
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                got = conn.recv(4096)
                if not got:
                    return
                data += got
            conn.sendall(_HEAD)
            while True:
                conn.sendall(batch)
        except OSError:
            pass
        finally:
            conn.close()

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(10)


@pytest.mark.parametrize("kind", sorted(_CHUNKS))
def test_a_chunked_body_is_cut_by_what_its_framing_costs(tmp_path: Path, kind: str) -> None:
    ctx = ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": ["127.0.0.1"], "timeoutSeconds": 60, "maxBytes": _LIMIT}},
    )

    async def go() -> object:
        return (await WebFetchTool().call(WebFetchInput(url=f"http://127.0.0.1:{port}/"), ctx)).data

    with _endless(_CHUNKS[kind]) as port:
        output = anyio.run(go)  # before: "took longer than 60 s in total and was stopped"
    assert getattr(output, "truncated", False), output
    shown = getattr(output, "bytes", -1)
    # One byte per chunk: the piece bound cuts 'tiny', the bytes read cut 'padded' (~130 chunks).
    assert 0 < shown <= BoundedBody("", _LIMIT).max_pieces, shown
    assert set(getattr(output, "content", "")) <= {"X", "\n", " "}, output


def test_the_bounds_keep_an_ordinary_body() -> None:
    """A body in ordinary pieces (a page read 1,460 bytes at a time, one TCP segment per read) is
    never cut by the framing bounds: only the byte limit cuts it."""
    body = BoundedBody("", _LIMIT)
    piece = b"x" * 1460
    fed = 0
    while fed + len(piece) <= _LIMIT:
        body.feed(piece)
        body.read_off_the_wire(fed + len(piece) + 6)  # a chunk's size line and CRLFs each
        fed += len(piece)
    assert not body.truncated
    assert len(body.body()) == fed
