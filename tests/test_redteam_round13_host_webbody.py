"""Red team round 13 (host side): a compressed body that never decodes to anything.

`shellrt.tools._http_body.BoundedBody` bounds what a body *decodes to* (``maxBytes``), not what
the server sends: a ``gzip`` body of empty members (20 bytes each, nothing decoded) or a
``deflate`` stream of empty stored blocks (5 bytes each) was read and decompressed, in the event
loop, for as long as the server kept sending, up to the call's whole deadline. Failed before: a
server on 127.0.0.1 streaming either held a 20-second call the full 20 s, decoding gigabytes with
a core of the host busy, and the call then failed ("took longer"). Now the raw bytes read count
too: past ``maxBytes`` of them the body is cut, like a body that decodes past it (the compressed
form of any real page is smaller than the page), and so is a body of more than
`MAX_GZIP_MEMBERS` gzip members (each costs a decompressor).
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from shellrt.protocol import ToolContext
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool

#: Serves one endless body per connection: empty gzip members, or empty deflate stored blocks.
_SERVER = r"""
import gzip, socket, sys, threading
kind = sys.argv[1]
member = gzip.compress(b"")
chunk = member * 4096 if kind == "gzip" else b"\x00\x00\x00\xff\xff" * 16384
head = (
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: %s\r\nConnection: close\r\n\r\n" % kind
).encode()
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(8)
print(listener.getsockname()[1], flush=True)

def answer(conn):
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            got = conn.recv(4096)
            if not got:
                return
            data += got
        conn.sendall(head + (b"\x78\x01" if kind == "deflate" else b""))
        while True:
            conn.sendall(chunk)
    except OSError:
        pass
    finally:
        conn.close()

while True:
    conn, _ = listener.accept()
    threading.Thread(target=answer, args=(conn,), daemon=True).start()
"""


@pytest.fixture(params=["gzip", "deflate"])
def endless(request: pytest.FixtureRequest) -> Iterator[int]:
    process = subprocess.Popen(
        [sys.executable, "-c", _SERVER, request.param], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield int(process.stdout.readline())
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("max_bytes", [1 << 20, None])
def test_a_body_that_decodes_to_nothing_is_cut_at_max_bytes_read(
    tmp_path: Path, endless: int, max_bytes: int | None
) -> None:
    """``None``: the default limit (10 MB of 20-byte gzip members: half a million decompressors
    without the member bound)."""
    limits = {} if max_bytes is None else {"maxBytes": max_bytes}
    ctx = ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": ["127.0.0.1"], "timeoutSeconds": 20, **limits}},
    )

    async def go() -> object:
        return (await WebFetchTool().call(WebFetchInput(url=f"http://127.0.0.1:{endless}/"), ctx)).data

    cpu = resource.getrusage(resource.RUSAGE_SELF)
    started = time.monotonic()
    output = anyio.run(go)
    elapsed = time.monotonic() - started
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = used.ru_utime - cpu.ru_utime + used.ru_stime - cpu.ru_stime
    # Ends well before the 20 s timeout an unbounded read would run into (5 s was passed, 5.2 s,
    # with the machine busy); the CPU bound is what says the limit cost little.
    assert elapsed < 15, elapsed
    assert cpu_s < 1.5, cpu_s
    assert getattr(output, "truncated", False), output
