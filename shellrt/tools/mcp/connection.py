"""One external MCP server: connect lazily, call tools, recycle on failure.

The SDK's transports and `ClientSession` are async context managers holding
task groups, so they must be entered and exited by the same task. Each
connection therefore runs an *owner task* (in the manager's task group) that
enters them, hands the live session out, and waits to be told to close. Calls
come from other tasks and only send requests over the session.

A server that fails to start, dies mid-call or times out is not fatal: the call
gets a clear `McpServerError`, the broken generation is torn down (process tree
included, by the SDK's stdio transport), and the next call starts a fresh one.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

import anyio
import anyio.abc
import mcp.types as mt
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from shellrt.permissions.hook_files import WHOLE_WORKSPACE
from shellrt.tools.mcp._http_client import mcp_http_client
from shellrt.tools.mcp._launch import launch_cwd, launch_env
from shellrt.tools.mcp._listing_bounds import MAX_TOOLS_PER_SERVER
from shellrt.tools.mcp._restart_guard import ServerFiles, server_files, why_not_restart
from shellrt.tools.mcp._stderr_log import CappedLog
from shellrt.tools.mcp._stderr_tty import EscapedStderr
from shellrt.tools.mcp._stdio import LineTooLong, bounded_stdio_client
from shellrt.tools.mcp.config import HttpServerConfig, McpServerConfig, StdioServerConfig

__all__ = ["McpServerConnection", "McpServerError"]

log = logging.getLogger("shellrt.mcp")

#: Last characters of a server's stderr quoted in a startup error.
_STDERR_TAIL_CHARS = 1_500



async def _result_unchecked(name: str, result: mt.CallToolResult) -> None:
    """Stands in for ``ClientSession.validate_tool_result``: a result is not judged by the server's
    own ``outputSchema`` (its regexes ran on the server's strings in the event loop)."""

class McpServerError(Exception):
    """Raised by `McpServerConnection` when the server could not be reached, died, or timed out.

    The message is meant for the model: it says what happened and that the next
    call will reconnect.
    """


class _Generation:
    """One started server process / HTTP session and the owner task's stop signal."""

    def __init__(self) -> None:
        self.session: ClientSession | None = None
        self.stop = anyio.Event()
        self.done = anyio.Event()
        self.tools: list[mt.Tool] = []
        #: Why the transport ended the connection or refused an answer, when it did (a stdio line
        #: past its bound; an HTTP answer too long or compressed: round 40).
        self.refused: list[Exception] = []
        #: The server sent ``notifications/tools/list_changed`` since ``tools`` was read.
        self.listing_changed = False


class McpServerConnection:
    """A lazily connected client for one configured server."""

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        task_group: anyio.abc.TaskGroup,
        *,
        log_dir: Path | None = None,
        workspace: Path | None = None,
        writable_roots: Sequence[Path] = (),
    ) -> None:
        self.name = name
        self.config = config
        #: The session's workspace: a stdio server whose command line runs a file there (or in
        #: another of ``writable_roots``) is not restarted once that file changed
        #: (`_restart_guard`). None: nothing is checked.
        self._workspace = workspace
        roots = (*((workspace,) if workspace is not None else ()), *writable_roots)
        self._writable_roots = tuple(dict.fromkeys(roots))
        #: Where a stdio server starts: never a directory the sandbox writes unless configured (`_launch`).
        self._cwd = launch_cwd(config, self._writable_roots) if isinstance(config, StdioServerConfig) else ""
        self._first_files: ServerFiles | None = None
        #: Why this server must not start at all this session (`refuse`), else None.
        self._refused: str | None = None
        self._tg = task_group
        self._log_dir = log_dir
        self._stderr_log: CappedLog | None = None
        self._current: _Generation | None = None
        self._lock = anyio.Lock()
        #: How many times a session was started (1 after the first connect).
        self.starts = 0

    # --- lifecycle -------------------------------------------------------------------
    async def connect(self) -> _Generation:
        """Return the live generation, starting one if there is none (one starter at a time)."""
        async with self._lock:
            gen = self._current
            if gen is not None and not gen.stop.is_set():
                return gen
            await self._check_files()
            gen = _Generation()
            try:
                await self._tg.start(self._own, gen)
            except Exception as exc:
                refused = gen.refused[0] if gen.refused else None
                raise McpServerError(self._startup_message(refused or exc, noted=refused is not None)) from exc
            self._current = gen
            self.starts += 1
            return gen

    async def baseline(self) -> bool:
        """Hash what a stdio server's command line runs now, at session start, before any command
        (a server first started later is compared with it: round 24); True when it loads the
        workspace whole (its cwd, or an env value naming it)."""
        if self._workspace is None or not isinstance(self.config, StdioServerConfig):
            return False
        workspace, config, cwd = self._workspace, self.config, self._cwd
        self._first_files = await anyio.to_thread.run_sync(
            server_files, workspace, config, cwd, self._writable_roots
        )
        found = self._first_files.workspace
        return WHOLE_WORKSPACE in found.files or WHOLE_WORKSPACE in found.dirs

    def refuse(self, why: str) -> None:
        """Never start this server in this session (``why`` says what to do)."""
        self._refused = why

    async def _check_files(self) -> None:
        """Hash what a stdio server's command line runs from the workspace before its first start
        (unless `baseline` did); before a start after that, refuse when it changed (a command may
        have planted it)."""
        if self._refused is not None:
            raise McpServerError(f"MCP server '{self.name}' cannot be used: {self._refused}.")
        if self._workspace is None or not isinstance(self.config, StdioServerConfig):
            return
        workspace, config, cwd = self._workspace, self.config, self._cwd
        if self._first_files is None:
            self._first_files = await anyio.to_thread.run_sync(
                server_files, workspace, config, cwd, self._writable_roots
            )
            return
        why = await anyio.to_thread.run_sync(why_not_restart, workspace, config, cwd, self._first_files)
        if why is not None:
            raise McpServerError(f"MCP server '{self.name}' cannot be used: {why}.")

    async def list_tools(self) -> list[mt.Tool]:
        """The server's tools (all pages), connecting if needed."""
        gen = await self.connect()
        return gen.tools

    async def current_tool(self, tool: str) -> mt.Tool | None:
        """What the server lists under ``tool`` now (None: not listed); raises `McpServerError`
        when it cannot be reached or listed.

        Why: permission pins compare it with what a person allowed; a server restarted since,
        or one that said its list changed, is listed anew (`shellrt.permissions.mcp_pins`)."""
        gen = self._current
        if gen is None or gen.stop.is_set() or gen.session is None:
            gen = await self.connect()  # the lock (a checkpoint) only when one must be started
        if gen.listing_changed and gen.session is not None:
            gen.listing_changed = False  # a notice during the read marks it again
            try:
                gen.tools = await self._all_tools(gen.session)
            except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                gen.listing_changed = True
                raise McpServerError(f"MCP server '{self.name}' could not list its tools again: {exc!r}") from exc
        return next((t for t in gen.tools if t.name == tool), None)

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], *, progress: ProgressFnT | None = None
    ) -> mt.CallToolResult:
        """Call ``tool``; raises `McpServerError` when the server is gone or too slow."""
        gen = await self.connect()
        session = gen.session
        assert session is not None
        try:
            return await session.call_tool(
                tool, arguments, read_timeout_seconds=self.config.timeout, progress_callback=progress
            )
        except MCPError as exc:
            if exc.code == mt.CONNECTION_CLOSED and gen.refused:
                await self._discard(gen)
                raise McpServerError(
                    f"MCP server '{self.name}' did not complete {tool}: {gen.refused[0]}. The server will "
                    "be restarted on the next call."
                ) from exc
            if exc.code == mt.CONNECTION_CLOSED:
                await self._discard(gen)
                raise McpServerError(
                    f"MCP server '{self.name}' closed the connection during the call (it may have crashed)"
                    f"{self._stderr_hint()}. The call did not complete; the server will be restarted on "
                    "the next call."
                ) from exc
            if exc.code == mt.REQUEST_TIMEOUT:
                await self._discard(gen)
                raise McpServerError(
                    f"MCP server '{self.name}' did not answer {tool} within {self.config.timeout:g}s; the "
                    "call was abandoned and the server will be restarted on the next call (raise "
                    f"mcpServers.{self.name}.timeout if the tool is legitimately slow)."
                ) from exc
            refused = _named_refusal(gen.refused, exc.message)
            if refused is not None:  # an answer the HTTP client refused: its words, not the SDK's parse error
                raise McpServerError(f"MCP server '{self.name}' did not complete {tool}: {refused}") from exc
            raise McpServerError(
                f"MCP server '{self.name}' rejected the call to {tool}: {exc.message}"
            ) from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            await self._discard(gen)
            raise McpServerError(
                f"the connection to MCP server '{self.name}' broke ({type(exc).__name__}); the server will "
                "be restarted on the next call."
            ) from exc

    async def close(self) -> None:
        """Stop the current generation (if any) and wait until its process is gone."""
        gen = self._current
        self._current = None
        if gen is not None:
            await self._stop_and_wait(gen)

    async def _discard(self, gen: _Generation) -> None:
        if self._current is gen:
            self._current = None
        await self._stop_and_wait(gen)

    @staticmethod
    async def _stop_and_wait(gen: _Generation) -> None:
        gen.stop.set()
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            await gen.done.wait()

    # --- the owner task ------------------------------------------------------------------
    async def _own(self, gen: _Generation, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        started = False
        # The startup deadline is a cancel scope entered *first* on the stack, so it is exited
        # last: the transport's task groups nest inside it, as anyio requires.
        deadline = anyio.CancelScope(deadline=anyio.current_time() + self.config.startup_timeout)
        try:
            async with AsyncExitStack() as stack:
                stack.enter_context(deadline)
                read, write = await stack.enter_async_context(self._transport(stack, gen))
                async def on_message(message: Any) -> None:
                    if isinstance(message, mt.ToolListChangedNotification):
                        gen.listing_changed = True  # read again before the next pin check (no I/O here)

                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        client_info=mt.Implementation(name="shellrt", version="0"),
                        message_handler=on_message,
                    )
                )
                # The SDK checks a result against the server's outputSchema with jsonschema in the
                # event loop: a backtracking `pattern` held every session (round 38). The model gets
                # the result's text; the server's own schema is not ours to enforce.
                setattr(session, "validate_tool_result", _result_unchecked)  # noqa: B010
                await session.initialize()
                gen.tools = await self._all_tools(session)
                deadline.deadline = math.inf
                gen.session = session
                started = True
                task_status.started()
                await gen.stop.wait()
        except Exception as exc:
            if not started:
                raise
            log.debug("MCP server %s: connection ended with %r", self.name, exc)
        finally:
            gen.stop.set()
            gen.done.set()
        if not started:
            raise TimeoutError(f"startup took longer than {self.config.startup_timeout:g}s")

    def _transport(self, stack: AsyncExitStack, gen: _Generation) -> Any:
        config = self.config
        if isinstance(config, StdioServerConfig):
            # Not the SDK's stdio_client: it reads a line without a bound (`_stdio`).
            return bounded_stdio_client(
                config.command,
                config.args,
                env=launch_env(config, self._writable_roots),
                cwd=self._cwd,
                errlog=self._errlog(stack),
                refused=gen.refused,
            )
        assert isinstance(config, HttpServerConfig)
        # The SDK's own factory (its recommended timeouts); the configured headers stay home.
        client = mcp_http_client(config.url, config.headers, gen.refused)
        stack.push_async_callback(client.aclose)
        return streamable_http_client(config.url, http_client=client)

    def _errlog(self, stack: AsyncExitStack) -> TextIO:
        """Where the server's stderr goes: a per-server log file (quoted in errors), else ours,
        escaped (`_stderr_tty`: never the server's raw bytes on the operator's terminal)."""
        if self._log_dir is None:
            shown = EscapedStderr(self.name)
            stack.callback(shown.writer.close)
            return shown.writer
        self._log_dir.mkdir(parents=True, exist_ok=True)
        self._stderr_log = CappedLog(self._stderr_path())  # a server must not fill the disk
        stack.callback(self._stderr_log.writer.close)
        return self._stderr_log.writer

    @staticmethod
    async def _all_tools(session: ClientSession) -> list[mt.Tool]:
        """Every page, up to one tool past `MAX_TOOLS_PER_SERVER` (so a cut can be said): a server
        paging 50,000 tools is not read to the end (`_listing_bounds`)."""
        tools: list[mt.Tool] = []
        cursor: str | None = None
        for _page in range(100):
            params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
            result = await session.list_tools(params=params)
            tools.extend(result.tools[: MAX_TOOLS_PER_SERVER + 1 - len(tools)])
            cursor = result.next_cursor
            if not cursor or len(tools) > MAX_TOOLS_PER_SERVER:
                break
        return tools

    # --- messages ------------------------------------------------------------------------
    def _stderr_path(self) -> Path:
        assert self._log_dir is not None
        return self._log_dir / f"mcp-{self.name}.stderr.log"

    def _stderr_hint(self) -> str:
        if self._log_dir is None:
            return ""
        if self._stderr_log is not None:
            self._stderr_log.settle()  # what the server wrote before it failed is in the file
        try:  # only the tail: a server may have written gigabytes (red team round 8)
            with open(self._stderr_path(), "rb") as fh:
                fh.seek(max(0, fh.seek(0, os.SEEK_END) - 4 * _STDERR_TAIL_CHARS))
                text = fh.read().decode("utf-8", errors="replace").strip()
        except OSError:
            return ""
        if not text:
            return ""
        return f"; its stderr ends with:\n{text[-_STDERR_TAIL_CHARS:]}\n(full log: {self._stderr_path()})"

    def _startup_message(self, exc: BaseException, noted: bool = False) -> str:
        """Why the server did not start; ``noted``: ``exc`` is the transport's own refusal (its words)."""
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        where = (
            f"`{self.config.command} {' '.join(self.config.args)}`".strip()
            if isinstance(self.config, StdioServerConfig)
            else self.config.url
        )
        if isinstance(exc, TimeoutError):
            why = f"it did not finish starting within {self.config.startup_timeout:g}s"
        elif noted or isinstance(exc, LineTooLong):
            why = str(exc)
        elif isinstance(exc, MCPError):
            why = f"it answered the handshake with an error: {exc.message}"
        else:
            why = f"{type(exc).__name__}: {exc}"
        return (
            f"MCP server '{self.name}' ({where}) could not be started: {why}{self._stderr_hint()}. "
            "It will be retried on the next call; check mcpServers in your settings."
        )


def _named_refusal(refused: list[Exception], message: str) -> Exception | None:
    """The noted refusal ``message`` (the SDK's error for one call) names, taken off the list; None
    when it names none: the server's own error is then the call's (round 40, review17: another
    answer's refusal was reported on a call the server rejected in its own words)."""
    for i, error in enumerate(refused):
        if str(error) in message:
            return refused.pop(i)
    return None
