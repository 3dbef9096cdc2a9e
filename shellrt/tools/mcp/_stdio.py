"""The stdio transport to an MCP server, reading its JSON-RPC lines with a length bound.

The SDK's `stdio_client` joins a server's stdout into lines with no bound (and re-splits the
whole pending text on every 64 KiB read): a server that writes one endless line grows shellrt's
memory until it dies and spends CPU quadratic in the line's length (round 8's open gap). Here
the same transport reads bytes, looks for line ends only in what arrived, and a line longer
than `MAX_LINE_BYTES` ends the connection: the pending call fails with `LineTooLong`'s message
(the connection reports it), and the server is stopped like any other (stdin closed, then its
process group terminated, then killed) with the SDK's own tree kill.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any, TextIO

import anyio
import anyio.abc
import mcp.types as mt
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from shellrt.tools._hostchild import calm_argv

__all__ = ["MAX_LINE_BYTES", "LineTooLong", "bounded_stdio_client"]

#: The longest JSON-RPC line taken from a server: a 5 MB image is ~7 MB of base64; the MCP HTTP
#: server takes bodies up to the same 64 MiB.
MAX_LINE_BYTES = 64 * 1024 * 1024
#: After stdin closes, how long a server may take to exit before its process group is terminated.
_EXIT_GRACE = 2.0
#: How long accepted messages may take to reach the server's stdin at shutdown.
_FLUSH = 0.5


class LineTooLong(Exception):
    """Raised (as a value on the read stream, then the connection ends) when a server sends a
    JSON-RPC line longer than the limit; the message says so and what to do."""


@asynccontextmanager
async def bounded_stdio_client(
    command: str,
    args: list[str],
    *,
    env: dict[str, str] | None,
    cwd: str | None,
    errlog: TextIO,
    max_line_bytes: int = MAX_LINE_BYTES,
    refused: list[Exception] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server and yield (read, write) streams for a `ClientSession`.

    ``refused`` receives the `LineTooLong` that ended the connection, for the caller's message.
    """
    child_env = get_default_environment() | (env or {})
    process = await anyio.open_process(
        calm_argv([command, *args], child_env.get("PATH", os.defpath)),
        env=child_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        cwd=cwd,
        start_new_session=True,
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    async def reader() -> None:
        assert process.stdout is not None
        try:
            async with read_writer:
                await _read_lines(process.stdout, read_writer, max_line_bytes, refused)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        # Whatever follows is discarded unread: a server blocked on a full pipe could not exit.
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            async for _chunk in process.stdout:
                pass

    async def writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()
        finally:
            writer_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await _shutdown(process, read_stream, write_stream, writer_done)
            tg.cancel_scope.cancel()


async def _read_lines(
    stdout: anyio.abc.ByteReceiveStream,
    send: Any,
    max_line_bytes: int,
    refused: list[Exception] | None,
) -> None:
    """Send each line's message until end of file, or until a line passes ``max_line_bytes``."""
    pending = bytearray()
    async for chunk in stdout:
        scan = len(pending)  # a line end can only be in what just arrived
        pending += chunk
        while (end := pending.find(b"\n", scan)) != -1:
            line, scan = bytes(pending[:end]), 0
            del pending[: end + 1]
            await send.send(_parse(line))
        if len(pending) > max_line_bytes:
            error = LineTooLong(
                f"it sent a JSON-RPC message longer than shellrt takes ({max_line_bytes:,} bytes on one "
                "line), so shellrt disconnected it; make the tool return less (or in pages)"
            )
            if refused is not None:
                refused.append(error)
            return  # the read stream closes: the pending requests fail as "connection closed"


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mt.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # the session surfaces it, as the SDK's transport does
        return exc


async def _shutdown(
    process: anyio.abc.Process, read_stream: Any, write_stream: Any, writer_done: anyio.Event
) -> None:
    """The SDK's order: stop traffic, flush, close stdin, wait, then end the process group (also
    when its leader exited: what it started in the group goes with it)."""
    read_stream.close()
    write_stream.close()
    with anyio.move_on_after(_FLUSH):
        await writer_done.wait()
    assert process.stdin is not None and process.stdout is not None
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    await _exited(process, _EXIT_GRACE)
    # Always, not only when the leader is still running: a server that exits at end of input left
    # the children of its group running (red team round 36); a gone group costs one killpg.
    if not _recycled(process):
        await terminate_posix_process_tree(process, _EXIT_GRACE)
    await _exited(process, _EXIT_GRACE)
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()


def _recycled(process: anyio.abc.Process) -> bool:
    """Whether the server's group id now names someone else's group (red team round 36, review4).

    The group id is the leader's pid. While any member of the group lives, the kernel gives that
    pid to no one; once the leader is reaped (asyncio does it at once) and the group is empty, the
    pid is free, and a process given it that leads a group (``start_new_session``) would be killed
    with ours. So a live process with the reaped leader's pid means the group is not ours."""
    if process.returncode is None:
        return False  # the leader is ours, unreaped: its pid cannot have been given out
    try:
        os.kill(process.pid, 0)
    except ProcessLookupError:
        return False  # no such process: the group, if any is left, is the server's orphans
    except PermissionError:
        return True  # another user's process has the pid
    return True


async def _exited(process: anyio.abc.Process, within: float) -> bool:
    """Poll the exit status (not ``wait()``: a child holding the pipes would make it hang)."""
    for _ in range(int(within / 0.01)):
        if process.returncode is not None:
            return True
        await anyio.sleep(0.01)
    return process.returncode is not None
