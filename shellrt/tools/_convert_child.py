"""The HTML converter's worker process: reads pages on stdin, writes their text on stdout.

Why a process: a page chooses how costly its conversion is, and in-process work could only
be checked between slices: one slice may build a string of hundreds of megabytes (html2text
indents every line of a ``<pre>`` by its ``<blockquote>`` depth: 1.2 MB of HTML asked for
300 MB of the host's memory) or run for seconds. Here the work has an address-space limit
of its own (`RLIMIT_AS`, set before anything is read) and the host kills the process at the
call's deadline (`shellrt.tools._convert_worker`).

Wire format, both ways: a 4-byte big-endian length and a JSON object; a request is followed
by an 8-byte length and the HTML as UTF-8 (``surrogatepass``). Nothing here trusts the page;
the host does not trust the answer either (its size is bounded there).

Each page has a process of its own (red team, round 22): the worker imports and warms the
converter, loads a seccomp filter (`sandbox._seccomp_worker`, as a fork server), and then only
forks; the child dies with it, stacks the plain allow list and serves one request. The parser's
code, should a page ever make it run the attacker's, can then only compute, read its stdin and
write its stdout: it opens, connects, spawns and signals nothing, and what it leaves in memory
ends with its process (one worker serves every session of the host process: a page must not
see or rewrite the next). The worker is started with an empty environment (the host's holds
keys). A worker that cannot load its filter ends with `UNCONFINED_STATUS` and converts nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import struct
import sys
import time
from typing import Any, BinaryIO

__all__ = ["UNCONFINED_STATUS", "main"]

#: The worker's exit status when its seccomp filter could not be loaded (it read no page).
UNCONFINED_STATUS = 78
#: A page process's exit status when stdin ended (the host closed it, or died): the worker ends.
_STDIN_ENDED = 77

#: Converted once before the filter is loaded: every code path a page takes is imported by then
#: (after it, an import could open no file).
_WARM_PAGE = (
    "<html><head><title>t</title><style>p{}</style><script>x</script></head><body><h1>h</h1>"
    "<p>a &amp; &eacute; &#233; &#xe9; <b>b</b><i>i</i><code>c</code><a href='/l' title='t'>l</a>"
    "<img src='/i' alt='i'></p><ul><li>u</li></ul><ol><li>o</li></ol><blockquote>q</blockquote>"
    "<pre>p</pre><table><tr><th>h</th></tr><tr><td>d</td></tr></table><hr><br><!-- c -->"
    "<![CDATA[x]]><dl><dt>t</dt><dd>d</dd></dl></body></html>"
)
#: Open files the worker may hold once it serves (its pipes and stderr, and some slack).
_MAX_FDS = 16


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _answer(out: BinaryIO, message: dict[str, Any]) -> None:
    data = json.dumps(message).encode("utf-8", "surrogatepass")
    out.write(struct.pack(">I", len(data)) + data)
    out.flush()


def _convert(request: dict[str, Any], html: str) -> dict[str, Any]:
    from shellrt.protocol import ToolExecutionError
    from shellrt.tools._web_text import html_to_markdown

    start = time.thread_time()
    try:
        converted = html_to_markdown(
            html,
            str(request["url"]),
            deadline=float(request["deadline"]),
            max_chars=int(request["max_chars"]),
        )
    except MemoryError:
        return {"error": "memory", "cpu": time.thread_time() - start}
    except ToolExecutionError as exc:
        return {"error": "failed", "message": str(exc), "cpu": time.thread_time() - start}
    except Exception as exc:  # the parser's own failure on a page: an answer, not an exit
        # Named by its type only: its text quotes the page (``expected name token at '<page words>'``),
        # and the answer is shown in shellrt's note (red team round 48, net3).
        return {
            "error": "failed",
            "message": f"the HTML parser raised {type(exc).__name__}",
            "cpu": time.thread_time() - start,
        }
    return {
        "text": converted.text,
        "note": converted.note,
        "lasting": converted.lasting,
        "cpu": time.thread_time() - start,
    }


def main() -> None:
    """Serve conversions, each in a forked process, until stdin ends (the host closed it, or died)."""
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Everything the work needs is imported now; then no file may grow and few may open: a page
    # reaches only the parser's logic, and should it ever run code here, that code writes nothing.
    import importlib

    from shellrt.tools import _web_text

    with contextlib.suppress(ImportError):
        importlib.import_module("html2text")
    with contextlib.suppress(Exception):  # lazy imports inside the converter happen now
        _web_text.html_to_markdown(
            _WARM_PAGE, "http://warm/", deadline=time.monotonic() + 60, max_chars=100_000
        )
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (_MAX_FDS, _MAX_FDS))
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the answers
    os.chdir("/")
    from sandbox._seccomp_worker import ConfineError, confine, die_with_parent

    try:
        confine(fork_server=True)
    except ConfineError as exc:
        print(f"shellrt converter: {exc}", file=sys.stderr)
        os._exit(UNCONFINED_STATUS)
    server = os.getpid()
    while True:
        child = os.fork()
        if child == 0:
            try:
                die_with_parent(server)
                confine()
            except ConfineError as exc:
                print(f"shellrt converter: {exc}", file=sys.stderr)
                os._exit(UNCONFINED_STATUS)
            status = 1
            try:
                status = _serve_one(inp, out)
            finally:  # never back into the server's loop, nor through its exit handlers
                os._exit(status)
        code = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
        if code == _STDIN_ENDED:
            return
        if code != 0:
            # A page's process died without its answer (or with half of it): end, so that the
            # host sees its pipe close and replaces this worker, as when one process did it all.
            os._exit(code if code > 0 else 128 - code)


def _serve_one(inp: BinaryIO, out: BinaryIO) -> int:
    """Read one request, answer it: this process's exit status (`_STDIN_ENDED` at stdin's end)."""
    size = _read_exactly(inp, 4)
    if size is None:
        return _STDIN_ENDED
    head = _read_exactly(inp, struct.unpack(">I", size)[0])
    body_size = _read_exactly(inp, 8)
    if head is None or body_size is None:
        return _STDIN_ENDED
    body = _read_exactly(inp, struct.unpack(">Q", body_size)[0])
    if body is None:
        return _STDIN_ENDED
    try:
        html = body.decode("utf-8", "surrogatepass")
        del body
        answer = _convert(json.loads(head), html)
        del html
    except MemoryError:
        answer = {"error": "memory", "cpu": 0.0}
    _answer(out, answer)
    return 0
