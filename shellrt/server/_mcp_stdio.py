"""MCP over stdio that answers every line and stops at once when the client goes away.

The SDK's ``stdio_server`` hands a line it cannot parse to the session as an
exception, which answers nothing: a client that sent a malformed request (or
a valid one the SDK's strict JSON parser rejects, such as a lone surrogate in
a tool name) waits forever. It also reads stdin in a worker thread, which
SIGINT cannot interrupt. This transport:

- answers a line that is not JSON with ``-32700`` and a JSON object that is
  not a valid JSON-RPC message with ``-32600`` (echoing its ``id`` when it has
  one); answers are written as ASCII JSON, so any id round-trips;
- answers a request whose id is not a string or an integer, and one reusing the id of a
  request still running, with ``-32600`` (the SDK dropped the first and let the second take the
  running call's cancel: `_request_ids`, round 25);
- answers a request beyond `MAX_REQUESTS_IN_FLIGHT` unanswered ones with ``-32600`` at once, on
  the reader's own turn: a client that sent requests and never read the answers grew the server
  without bound (~3 MB/s of pending ``tools/list`` answers, round 37); now, once its answers fill
  the pipe, the refusal's write waits and stdin is no longer read;
- answers a response the SDK cannot serialise with ``-32603`` instead of
  dying;
- reads stdin through the event loop (`LineReader`), so cancellation stops it;
- notices at once that nobody reads stdout any more (`_reader_gone`: a killed client left its
  call in flight running to its timeout, and the next answer's write ended the server with an
  exception-group traceback, round 36): the session ends as at EOF, status 1;
- while serving, points fd 0 at /dev/null and fd 1 at stderr, so nothing a
  child prints can corrupt the wire (like the SDK does).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from shellrt.protocol._one_line import one_line
from shellrt.server._line_budget import over_budget, parse_off_loop
from shellrt.server._lines import TOO_LONG, LineReader
from shellrt.server._reader_gone import wait_reader_gone
from shellrt.server._request_ids import InFlight, bad_id_reason, bad_token_reason, lenient_loads
from shellrt.server._shallow_id import leading_id, top_level_scalars
from shellrt.server._strict_json import StrictJsonError, strict_loads
from shellrt.server._wire_chars import MAX_MESSAGE_BYTES, too_many_chars

__all__ = ["StdioWire", "stdio_wire"]

log = logging.getLogger("shellrt.mcp")

#: Longest accepted JSON-RPC line (one tool input at its longest, round 40: was 64 MiB); longer
#: ones are answered with -32600 and skipped as they are read.
MAX_LINE_BYTES = MAX_MESSAGE_BYTES
#: Requests of the client not answered yet at most; one more is refused (written inline: back-pressure).
MAX_REQUESTS_IN_FLIGHT = 256
#: Bytes a pipe that polls writable accepts without blocking.
_PIPE_BUF = 4096


class StdioWire:
    """The two private descriptors of the wire and the JSON-RPC framing on them."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self._write_lock = anyio.Lock()
        self._pollable = True
        #: Set when stdin reached EOF or nobody reads stdout any more (the client closed an end or died).
        self.disconnected = anyio.Event()
        #: Set when nobody reads stdout any more: answers are dropped, the server ends with status 1.
        self.reader_gone = False
        #: The client's requests not answered (or cancelled) yet.
        self._in_flight = InFlight()

    async def write_line(self, data: bytes) -> None:
        """Write one whole line; a pipe is written in PIPE_BUF pieces as it drains (never blocks the loop).

        Once nobody reads (a broken pipe, a reset socket) the line is dropped and the wire disconnects."""
        async with self._write_lock:
            if self.reader_gone:
                return
            view = memoryview(data)
            try:
                while view:
                    if self._pollable:
                        try:
                            await anyio.wait_writable(self.write_fd)
                        except (OSError, ValueError, NotImplementedError):
                            self._pollable = False  # a regular file: writes do not block
                    piece = view[:_PIPE_BUF] if self._pollable else view
                    view = view[os.write(self.write_fd, piece) :]
            except (BrokenPipeError, ConnectionResetError):
                self.lost_reader()

    def lost_reader(self) -> None:
        """Nobody reads the answers any more: end the session (its calls cancelled, as at EOF)."""
        if not self.reader_gone:
            self.reader_gone = True
            print("shellrt serve: stdout was closed by the client; stopping", file=sys.stderr)
        self.disconnected.set()

    async def watch_reader(self) -> None:
        """Disconnect as soon as stdout has no reader, without waiting for an answer to fail."""
        await wait_reader_gone(self.write_fd)
        self.lost_reader()

    async def send_error(self, msg_id: Any, code: int, message: str) -> None:
        if not (msg_id is None or (isinstance(msg_id, (str, int)) and not isinstance(msg_id, bool))):
            msg_id = None
        payload = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
        await self.write_line(json.dumps(payload, ensure_ascii=True).encode("ascii") + b"\n")

    async def reader(self, send: Any) -> None:
        """Forward valid messages to the session; answer the rest here. Returns at EOF."""
        lines = LineReader(os.fdopen(self.read_fd, "rb", buffering=0, closefd=False), MAX_LINE_BYTES)
        async with send:
            while True:
                raw = await lines.readline()
                if raw is None:
                    self.disconnected.set()
                    return
                if raw is TOO_LONG:
                    await self.send_error(
                        None,
                        types.INVALID_REQUEST,
                        f"message longer than {MAX_LINE_BYTES:,} bytes (the line cap: one tool input of "
                        "4 Mi characters at most); skipped unread. Send less at once: write a large file in "
                        "parts (Write the first part, then Edit to add the rest), or generate it with a command",
                    )
                    continue
                assert isinstance(raw, bytes)
                if not raw.strip():
                    continue
                too_many = over_budget(raw, "message") or too_many_chars(raw)
                if too_many is not None:
                    await self.send_error(leading_id(raw), types.INVALID_REQUEST, f"Invalid Request: {too_many}")
                    continue
                try:
                    # a repeated key or NaN: refused, as other readers differ on them; in a worker
                    # thread when long (both readers hold the GIL: `_line_budget` bounds them)
                    value = await parse_off_loop(strict_loads, raw)
                    message = await parse_off_loop(_validate, raw)
                except Exception as exc:
                    await self._answer_invalid(raw, exc)
                    continue
                refused = self._refusal(value, message)
                if refused is not None:
                    await self.send_error(*refused)
                    continue
                try:
                    await send.send(SessionMessage(message))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    # The session stopped first (its client closed stdout): nothing reads requests
                    # now, and this one is answered by nobody. Not an error of the server's own.
                    self.disconnected.set()
                    return

    def _refusal(self, value: Any, message: Any) -> tuple[Any, int, str] | None:
        """The error for a request the SDK would drop or mis-correlate (its id), else None; notes
        the ids of requests in flight and frees one the client cancels."""
        reason = bad_id_reason(value)
        if reason is not None:
            return None, types.INVALID_REQUEST, reason
        reason = bad_token_reason(value)
        if reason is not None and isinstance(message, types.JSONRPCRequest):
            return message.id, types.INVALID_PARAMS, reason
        if isinstance(message, types.JSONRPCRequest):
            if len(self._in_flight) >= MAX_REQUESTS_IN_FLIGHT:
                return (
                    message.id,
                    types.INVALID_REQUEST,
                    f"Invalid Request: {len(self._in_flight)} requests are waiting for their answers (at most "
                    f"{MAX_REQUESTS_IN_FLIGHT}); this one was not run. Read the answers before sending more",
                )
            if not self._in_flight.claim(message.id):
                return message.id, types.INVALID_REQUEST, InFlight.reuse_message(message.id)
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            params = message.params if isinstance(message.params, dict) else {}
            self._in_flight.release(params.get("requestId"))
        return None

    async def _answer_invalid(self, raw: bytes, exc: Exception) -> None:
        try:
            value = await parse_off_loop(lenient_loads, raw)  # a number Python will not read: the id is still found
        except RecursionError:  # valid JSON perhaps, too deep to read: still answered under its id
            await self._answer_too_deep(raw)
            return
        except ValueError:
            await self.send_error(None, types.PARSE_ERROR, "Parse error: the line is not valid JSON")
            return
        msg_id = value.get("id") if isinstance(value, dict) else None
        if isinstance(value, dict) and "id" not in value and "method" in value:
            log.warning("dropped an invalid notification: %s", exc)  # notifications get no answer
            return
        errors = getattr(exc, "errors", None)
        try:
            if isinstance(exc, StrictJsonError):
                detail = f"{exc}; the request was not run"
            else:
                detail = str(errors()[0]["msg"]) if callable(errors) else str(exc).splitlines()[0]
        except Exception:
            detail = type(exc).__name__
        await self.send_error(msg_id, types.INVALID_REQUEST, f"Invalid Request: {detail}")

    async def _answer_too_deep(self, raw: bytes) -> None:
        """A line nested too deeply for the JSON reader: refused under its top-level id (round 27:
        answered with id null, its client waited forever), nothing for a notification."""
        scalars = top_level_scalars(raw.decode("utf-8", "surrogateescape"))
        if scalars is None:
            await self.send_error(None, types.PARSE_ERROR, "Parse error: the line is not valid JSON")
            return
        if "id" not in scalars and "method" in scalars:
            log.warning("dropped a notification nested too deeply to read")
            return
        await self.send_error(
            scalars.get("id"),
            types.INVALID_REQUEST,
            "Invalid Request: the message is nested too deeply to read; the request was not run. "
            "Send it with flatter parameters",
        )

    async def writer(self, receive: Any) -> None:
        async with receive:
            async for session_message in receive:
                message = session_message.message
                if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
                    self._in_flight.release(message.id)
                try:
                    text = one_line(message.model_dump_json(by_alias=True, exclude_unset=True))
                    data = text.encode("utf-8") + b"\n"
                except Exception as exc:
                    msg_id = getattr(message, "id", None)
                    log.warning("an answer could not be serialised: %r", exc)
                    if msg_id is not None:
                        await self.send_error(
                            msg_id,
                            types.INTERNAL_ERROR,
                            f"Internal error: the answer could not be encoded ({exc})",
                        )
                    continue
                await self.write_line(data)


@contextlib.asynccontextmanager
async def stdio_wire() -> AsyncIterator[tuple[StdioWire, Any, Any]]:
    """``(wire, read_stream, write_stream)`` on the process's stdin/stdout, diverted while serving."""
    sys.stdout.flush()
    read_fd = os.dup(0)
    write_fd = os.dup(1)
    os.set_inheritable(read_fd, False)
    os.set_inheritable(write_fd, False)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    wire = StdioWire(read_fd, write_fd)
    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(wire.reader, read_writer)
            tg.start_soon(wire.writer, write_reader)
            tg.start_soon(wire.watch_reader)
            yield wire, read_stream, write_stream
            tg.cancel_scope.cancel()
    finally:
        os.dup2(read_fd, 0)
        os.dup2(write_fd, 1)
        os.close(read_fd)
        os.close(write_fd)


def _validate(raw: bytes | str) -> Any:
    """The JSON-RPC message as the SDK reads it (pydantic refuses a lone surrogate, Python's does not)."""
    return types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
