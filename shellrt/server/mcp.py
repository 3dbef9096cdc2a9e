"""The MCP server: the session's tools for any MCP client, governed like every other call.

    async with Runtime(workspace, approver=elicitation_approver) as rt:
        await McpToolServer(rt).serve_stdio()

Each ``tools/call`` becomes exactly one ``tool_use`` through
``Runtime.run_envelopes`` — schema validation, hooks, permission rules,
large-result persistence all apply — and its ``tool_result`` comes back as a
``CallToolResult`` with ``isError`` mirroring ``is_error``. Nothing a tool does
(or fails to do) is turned into a protocol error.

- Permission asks go to the client's user via elicitation (`mcp_approval`);
  without that capability they are denied.
- Progress: events of the running call are forwarded as
  ``notifications/progress`` when the client sent a progress token.
- Cancellation: the SDK cancels the handler on ``notifications/cancelled``;
  the cancellation reaches the supervisor, which kills the command's tree.
  A tool whose ``interrupt_behavior`` is ``block`` finishes once started; cancelled
  before it started (queued, its hooks or approval pending), it never runs.
  A stdio client that goes away (stdin EOF) has every running call cancelled.
- Background tasks started over HTTP belong to the client's MCP session: they
  are stopped when it ends (DELETE or idle timeout); over stdio, when the
  client goes away (the session closes).
- Calls that are not concurrency-safe run one at a time (as the runtime's own
  scheduler would order them); read-only calls run alongside. Judged on the final
  input, after hooks rewrote it: one `CallSlots` holds every request's call.
- ToolSearch discoveries change ``tools/list``; the client is told with
  ``notifications/tools/list_changed``.
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import mcp.types as mt
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel import NotificationOptions, Server

from shellrt.permissions.shown import for_person
from shellrt.protocol import ProgressEvent, ResultEnvelope, TextBlock, Tool, ToolUseBlock
from shellrt.runtime import Runtime
from shellrt.runtime.orchestration import CallSlots, max_parallel_calls
from shellrt.server._mcp_stdio import stdio_wire
from shellrt.server._task_owner import collecting_started_tasks, watch_task_manager
from shellrt.server.mcp_approval import current_request, elicitation_approver
from shellrt.server.mcp_semantics import DEPENDS, semantics_of

__all__ = ["McpToolServer", "elicitation_approver", "loopback_security", "mcp_annotations", "to_call_tool_result"]

log = logging.getLogger("shellrt.mcp")

#: Progress events buffered per call; older ones are dropped when the client reads slowly.
_PROGRESS_BUFFER = 16
#: How long a cancelled HTTP server may take to shut down cleanly.
_HTTP_SHUTDOWN_S = 10.0
#: How often a running HTTP call checks that its client is still connected.
_DISCONNECT_CHECK_S = 0.5
#: How often ended HTTP sessions are looked for (their background tasks are then stopped).
_SESSION_CHECK_S = 1.0


def mcp_annotations(tool: Tool[Any, Any]) -> mt.ToolAnnotations:
    """MCP hints from the tool's own semantics; "depends on input" is never reported as safe."""
    sem = semantics_of(tool)
    read_only = sem.read_only is True
    return mt.ToolAnnotations(
        title=tool.user_facing_name() if tool.user_facing_name() != tool.name else None,
        read_only_hint=read_only,
        # Per the spec destructiveHint only means something when not read-only; "may be" counts as yes.
        destructive_hint=None if read_only else sem.destructive in (True, DEPENDS),
        idempotent_hint=None if read_only else sem.idempotent,
        open_world_hint=sem.open_world in (True, DEPENDS),
    )


def to_mcp_tool(tool: Tool[Any, Any]) -> mt.Tool:
    """A `Tool` as MCP lists it: name, model-facing description, JSON Schema, annotations."""
    return mt.Tool(
        name=tool.name,
        description=tool.prompt(),
        input_schema=tool.input_schema(),
        annotations=mcp_annotations(tool),
    )


def _mcp_entry(tool: Tool[Any, Any]) -> Callable[[str, str, dict[str, Any]], dict[str, Any]]:
    """The checked name, description and schema as MCP lists them, judged here by the wire's own
    check of every protocol version: the SDK runs it on the whole answer, so one tool it refuses
    failed ``tools/list`` for every tool ("Handler returned an invalid result"; round 38)."""

    def build(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
        listed = mt.Tool(name=name, description=description, input_schema=schema, annotations=mcp_annotations(tool))
        wire = [listed.model_dump(mode="json", by_alias=True, exclude_none=True)]
        for check in _wire_tool_checks():
            check.validate_python(wire, by_name=False)
        return {"tool": listed}

    return build


@functools.cache
def _wire_tool_checks() -> tuple[Any, ...]:
    """The wire's check of a ``tools/list`` answer's ``tools``, one per protocol version's model."""
    from mcp_types.methods import SERVER_RESULTS
    from pydantic import TypeAdapter

    models = {model for (method, _version), model in SERVER_RESULTS.items() if method == "tools/list"}
    return tuple(TypeAdapter(model.model_fields["tools"].annotation) for model in models)  # type: ignore[union-attr]


def to_call_tool_result(envelope: ResultEnvelope) -> mt.CallToolResult:
    """The model face of a result as MCP content (text and images)."""
    content = envelope.model.content
    blocks: list[mt.TextContent | mt.ImageContent] = []
    if isinstance(content, str):
        blocks.append(mt.TextContent(type="text", text=content))
    else:
        for block in content:
            if isinstance(block, TextBlock):
                blocks.append(mt.TextContent(type="text", text=block.text))
            else:
                blocks.append(
                    mt.ImageContent(type="image", data=block.source.data, mime_type=block.source.media_type)
                )
    meta = {"shellrt/persistedPath": envelope.persisted_path} if envelope.persisted_path else None
    return mt.CallToolResult(content=list(blocks), is_error=envelope.is_error, _meta=meta)


def _error_result(message: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=message)], is_error=True)


#: A progress message is one status line: at most this many characters reach the client.
_PROGRESS_CHARS = 1000


def _describe_progress(event: ProgressEvent) -> str:
    """The progress message a client shows its user: the command's output line with its controls
    escaped (it may set the clipboard, rewrite the line or reorder text, as on a terminal).

    One line of at most `_PROGRESS_CHARS`: a tool's own message is not ours to trust for size (an
    external MCP server's went on whole, 2 MB a notification to every client: round 39)."""
    parts = [(event.message or f"{event.tool_name} running")[:_PROGRESS_CHARS]]
    if event.bytes_so_far:
        parts.append(f"{event.bytes_so_far:,} bytes of output")
    if event.last_lines:
        parts.append(f"last line: {event.last_lines[-1][:200]}")
    shown = for_person("; ".join(parts), one_line=True)
    return shown if len(shown) <= _PROGRESS_CHARS else shown[: _PROGRESS_CHARS - 1] + "…"


class McpToolServer:
    """Serves one started `Runtime` over MCP (stdio or streamable HTTP)."""

    def __init__(self, runtime: Runtime, *, name: str = "shellrt") -> None:
        self.runtime = runtime
        #: Who is inside a tool's call, across requests (made on first use, in the event loop): up to
        #: ``$SHELLRT_MAX_PARALLEL_CALLS`` (default 10) concurrency-safe calls at once, the rest queue.
        self._slots: CallSlots | None = None
        #: HTTP session id -> background task ids its calls started (stopped when it ends).
        self._session_tasks: dict[str, set[str]] = {}
        self._progress: dict[str, MemoryObjectSendStream[ProgressEvent]] = {}
        self._downstream_progress = runtime.context.progress
        runtime.context.progress = self._route_progress
        self.server: Server[Any] = Server(
            name,
            version=_version(),
            instructions=(
                f"shellrt runs shell commands and file/web actions in the workspace {runtime.workspace} "
                "under sandboxing and permission rules. Tools marked deferred are found with ToolSearch."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    def initialization_options(self) -> Any:
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))

    # --- transports ----------------------------------------------------------------------
    async def serve_stdio(self) -> int:
        """Serve on stdin/stdout until the client closes stdin or stops reading stdout.

        Either means the client is gone: its calls still running are
        cancelled at once (their process trees killed), and the caller closing
        the runtime stops its background tasks. Every line gets an answer:
        malformed ones a JSON-RPC error (see `_mcp_stdio`). Returns 0, or 1
        when nobody read stdout any more (answers were lost).
        """
        async with stdio_wire() as (wire, read, write), anyio.create_task_group() as tg:

            async def stop_when_disconnected() -> None:
                await wire.disconnected.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(stop_when_disconnected)
            await self.server.run(read, write, self.initialization_options())
            tg.cancel_scope.cancel()
        return 1 if wire.reader_gone else 0

    async def serve_http(
        self,
        host: str,
        port: int,
        *,
        token: str | None,
        token_where: str = "",
        path: str = "/mcp",
        header_timeout: float | None = None,
        max_connections: int | None = None,
        max_per_peer: int | None = None,
        max_sessions: int | None = None,
        max_sessions_per_peer: int | None = None,
        session_idle_timeout: float | None = None,
    ) -> None:
        """Serve streamable HTTP at ``http://host:port/mcp`` until cancelled.

        Every request must carry ``Authorization: Bearer <token>`` (401 otherwise;
        ``token_where`` tells a refused client where to find it). ``token=None``
        serves without authentication: only for an explicit opt-out, since any
        local process could then run tools. DNS-rebinding protection (Host/Origin
        checks) is on for every loopback host either way (`_http_hosts`). A connection must send a request's headers
        within ``header_timeout`` seconds, at most ``max_connections`` are open at once and
        ``max_per_peer`` of one peer address; a full server closes its longest-idle connection
        (`shellrt.server._http_guard`; None: its defaults). At most ``max_sessions`` MCP sessions
        are open, ``max_sessions_per_peer`` of one peer address, each ending after
        ``session_idle_timeout`` seconds without a request; a newcomer ends the longest-idle
        session when full (`shellrt.server._http_sessions`; None: its defaults).
        """
        import uvicorn

        from shellrt.server._http_auth import BearerAuthMiddleware
        from shellrt.server._http_era import SessionEraMiddleware
        from shellrt.server._http_framing import FramingCheckMiddleware
        from shellrt.server._http_guard import HEADER_TIMEOUT_S, MAX_CONNECTIONS, guarded_protocol
        from shellrt.server._http_sessions import MAX_SESSIONS, SESSION_IDLE_S, SessionCapMiddleware
        from shellrt.server._http_strict import BODY_TIMEOUT_FACTOR, MAX_BODY_BYTES, StrictJsonBodyMiddleware

        header_timeout = HEADER_TIMEOUT_S if header_timeout is None else header_timeout
        security = loopback_security(host, port)  # origins: this server's own (round 29)
        connections = MAX_CONNECTIONS if max_connections is None else max_connections
        sessions = MAX_SESSIONS if max_sessions is None else max_sessions
        app: Any = self.server.streamable_http_app(
            streamable_http_path=path,
            host=host,
            transport_security=security,
            session_idle_timeout=SESSION_IDLE_S if session_idle_timeout is None else session_idle_timeout,
            # The SDK's own cap only backs ours up: sessions being opened are bounded by connections.
            max_sessions=sessions + connections,
            **_sdk_body_cap(self.server.streamable_http_app, MAX_BODY_BYTES),
        )
        # Innermost: only an authorised, well-formed request for the endpoint makes room (round 37).
        app = SessionCapMiddleware(
            app,
            self.server.session_manager,
            path=path,
            max_sessions=sessions,
            max_per_peer=max_sessions_per_peer,
            owns_tasks=lambda key: bool(self._session_tasks.get(key)),
        )
        app = SessionEraMiddleware(app)  # sessions only: no sessionless single-exchange requests
        # Read as the stdio wires read (inside the token check), the body within its own deadline.
        app = StrictJsonBodyMiddleware(app, body_timeout=BODY_TIMEOUT_FACTOR * header_timeout)
        if token is not None:
            app = BearerAuthMiddleware(app, token, where=token_where or "the token you were given")
        app = FramingCheckMiddleware(app)  # outermost: a smuggling attempt needs no token to be refused

        protocol = guarded_protocol(header_timeout, connections, max_per_peer)
        # No log_config: uvicorn's loggers propagate to the root logger, whose handler the CLI makes
        # escape what a client sent (`cli._terminal.escape_log_lines`), instead of uvicorn's raw one.
        # proxy_headers off: uvicorn otherwise takes X-Forwarded-For/-Proto from any loopback client
        # as its address, so each request named its own peer for the caps' shares (round 38).
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            log_config=None,
            lifespan="on",
            http=protocol,
            proxy_headers=False,
        )
        server = uvicorn.Server(config)
        finished = anyio.Event()
        # Shielded: a cancel (SIGINT/SIGTERM) asks uvicorn to shut down cleanly instead of
        # tearing its lifespan apart mid-flight; after `_HTTP_SHUTDOWN_S` it is cancelled anyway.
        shield = anyio.CancelScope(shield=True)

        async def run_server() -> None:
            with shield:
                try:
                    await server.serve()
                finally:
                    finished.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(self._stop_tasks_of_ended_sessions)
            tg.start_soon(run_server)
            try:
                await finished.wait()
            finally:
                server.should_exit = True
                with anyio.CancelScope(shield=True), anyio.move_on_after(_HTTP_SHUTDOWN_S):
                    await finished.wait()
                shield.shield = False
                shield.cancel()
                tg.cancel_scope.cancel()

    async def _stop_tasks_of_ended_sessions(self) -> None:
        """HTTP: once a client's MCP session ends (DELETE, idle timeout), stop the background tasks it started."""
        while True:
            await anyio.sleep(_SESSION_CHECK_S)
            manager = getattr(self.server, "_session_manager", None)
            live = getattr(manager, "_server_instances", None)
            if live is None:
                continue
            for key in [k for k in self._session_tasks if k not in live]:
                await self._stop_session_tasks(key)

    async def _stop_session_tasks(self, key: str) -> None:
        supervisor = getattr(self.runtime, "supervisor", None)
        for task_id in self._session_tasks.pop(key, set()):
            if supervisor is not None and supervisor.tasks.find(task_id) is not None:
                await supervisor.tasks.stop(task_id, reason="stopped because its MCP session ended")

    # --- handlers --------------------------------------------------------------------------
    async def _list_tools(self, ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        # Each entry through the listing's checks (size, plain JSON, an object schema, the registered
        # name; round 38: an array schema failed the whole answer); one broken tool is left out and
        # refused, never the listing (registry, round 37).
        entries = self.runtime.registry.entries(self.runtime.visible_tools(), _mcp_entry)
        return mt.ListToolsResult(tools=[entry["tool"] for entry in entries])

    async def _call_tool(self, ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        token = current_request.set(ctx)
        try:
            return await self._run_watched(ctx, params)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            log.exception("tools/call %s failed inside shellrt", params.name)
            return _error_result(
                f"shellrt could not run {params.name}: {type(exc).__name__}: {exc}. This is a shellrt "
                "error, not a result of the tool; try again or report it."
            )
        finally:
            current_request.reset(token)

    async def _run_watched(self, ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        """`_run_one`, cancelled at once (its tree killed) when the HTTP client disconnects."""
        is_disconnected = getattr(getattr(ctx, "request", None), "is_disconnected", None)
        if not callable(is_disconnected):
            return await self._run_one(ctx, params)
        result: mt.CallToolResult | None = None
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                while True:
                    await anyio.sleep(_DISCONNECT_CHECK_S)
                    try:
                        gone = bool(await is_disconnected())
                    except Exception:
                        return  # cannot tell: leave the call alone
                    if gone:
                        log.info("tools/call %s: the client disconnected; cancelling it", params.name)
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch)
            result = await self._run_one(ctx, params)
            tg.cancel_scope.cancel()
        if result is None:
            return _error_result("The client disconnected; the call was cancelled and its processes killed.")
        return result

    async def _run_one(self, ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        arguments: dict[str, Any] = dict(params.arguments or {})
        block = ToolUseBlock(id=f"mcp_{secrets.token_hex(8)}", name=params.name, input=arguments)
        before = [t.name for t in self.runtime.visible_tools()]
        wants_progress = bool(ctx.meta and ctx.meta.get("progress_token") is not None)
        session_key = _session_key(ctx)
        supervisor = getattr(self.runtime, "supervisor", None)
        foreign = self._foreign_task(session_key, params.name, arguments)
        if foreign is not None:
            return _error_result(foreign)
        if supervisor is not None:
            watch_task_manager(supervisor.tasks)  # a task is credited to the call that registers it
        owned = self._session_tasks.setdefault(session_key, set()) if isinstance(session_key, str) else set()
        with collecting_started_tasks(owned) as started:
            envelopes = await self._run_collected(ctx, block, wants_progress)
        if isinstance(session_key, str) and started:  # again: the session may have ended meanwhile
            self._session_tasks.setdefault(session_key, set()).update(started)
        if [t.name for t in self.runtime.visible_tools()] != before:
            await ctx.session.send_tool_list_changed()
        if not envelopes:
            return _error_result(f"shellrt produced no result for {params.name}; try again.")
        return to_call_tool_result(envelopes[0])

    async def _run_collected(self, ctx: Any, block: ToolUseBlock, wants_progress: bool) -> list[ResultEnvelope]:
        """The call through the runtime, its progress forwarded when the client asked for it."""
        async with anyio.create_task_group() as tg:
            if wants_progress:
                send, receive = anyio.create_memory_object_stream[ProgressEvent](_PROGRESS_BUFFER)
                self._progress[block.id] = send
                tg.start_soon(self._forward_progress, ctx, receive)
            try:
                # A client's cancel stops a call that has not started (queued here, its hooks or
                # its approval pending) whatever the tool; a `block` tool (Write, Edit, …) that
                # started finishes (the executor shields its call; the result is then discarded,
                # as MCP cancellation says).
                # Judged on the final input (a PreToolUse hook may rewrite a read-only call into a
                # write), right around the tool's call: hooks and approvals of calls overlap.
                if self._slots is None:
                    self._slots = CallSlots(max_parallel_calls())
                envelopes = await self.runtime.run_envelopes([block], run_slot=self._slots.slot)
            finally:
                stream = self._progress.pop(block.id, None)
                if stream is not None:
                    stream.close()
        return envelopes

    def _foreign_task(self, session_key: str | None, name: str, arguments: dict[str, Any]) -> str | None:
        """Why an HTTP session may not read or stop the task it names, or None (it may).

        A task started by one MCP session's calls is that session's (it is stopped when the
        session ends); another session's TaskStop killed it and its TaskOutput consumed the
        owner's output, and the "unknown id" error listed every session's ids (round 12). Tasks
        no live session started (stdio, a reopened session) stay reachable by id.
        """
        tool = self.runtime.registry.get(name)
        task_id = arguments.get("task_id")
        if tool is None or not isinstance(task_id, str) or tool.name not in _TASK_TOOLS:
            return None
        owners = {key for key, ids in self._session_tasks.items() if task_id in ids}
        if owners and session_key not in owners:  # a request of no session too (round 37)
            return (
                f"Task {task_id!r} belongs to another MCP session of this server: only the session that "
                f"started it may read or stop it. Use the task ids your own calls returned "
                f"({_listed(self._session_tasks.get(session_key or '', set()))})."
            )
        if not isinstance(session_key, str):
            return None
        supervisor = getattr(self.runtime, "supervisor", None)
        if not owners and supervisor is not None and supervisor.tasks.find(task_id) is None:
            # The tool's own error names every known id, other sessions' too: answered here instead.
            return (
                f"No background task with id {task_id!r}. Task ids of this MCP session: "
                f"{_listed(self._session_tasks.get(session_key, set()))}. Start one with Bash run_in_background."
            )
        return None

    # --- progress --------------------------------------------------------------------------
    def _route_progress(self, event: ProgressEvent) -> None:
        stream = self._progress.get(event.tool_use_id)
        if stream is not None:
            try:
                stream.send_nowait(event)
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # progress is advisory; never slow the command down for it
        self._downstream_progress(event)

    @staticmethod
    async def _forward_progress(ctx: Any, receive: MemoryObjectReceiveStream[ProgressEvent]) -> None:
        count = 0
        async with receive:
            async for event in receive:
                count += 1
                try:
                    await ctx.session.report_progress(float(count), None, _describe_progress(event))
                except Exception as exc:
                    log.debug("progress notification dropped: %r", exc)


#: Tools that name a background task by ``task_id`` (aliases resolve to these).
_TASK_TOOLS = frozenset({"TaskOutput", "TaskStop"})


def _listed(task_ids: set[str]) -> str:
    return ", ".join(sorted(task_ids)) or "none"


def _session_key(ctx: Any) -> str | None:
    """The HTTP ``Mcp-Session-Id`` of the request (None on stdio and stateless HTTP)."""
    key = getattr(ctx, "session_id", None)
    if isinstance(key, str):
        return key
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    try:
        value = headers.get("mcp-session-id") if headers is not None else None
    except Exception:
        return None
    return value if isinstance(value, str) else None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("shellrt")
    except PackageNotFoundError:
        return "0+unknown"


def _sdk_body_cap(make_app: Callable[..., Any], most: int) -> dict[str, Any]:
    """The SDK's own body limit set to ours (`_http_strict.MAX_BODY_BYTES`), where it has one.

    Why: MCP SDK 2.x refuses a body over 4 MiB with a plain-text 413 no client can pair (it saw
    ``-32603 Server returned an error response``), below the 4 Mi characters a tool input may
    hold: a Write the stdio wire takes failed over HTTP with nothing to act on (round 55). Ours is
    in front and refuses a larger body with a JSON-RPC error saying what to do.
    """
    import inspect

    try:
        takes = "max_request_body_size" in inspect.signature(make_app).parameters
    except (TypeError, ValueError):
        takes = False
    return {"max_request_body_size": most} if takes else {}


def loopback_security(host: str, port: int) -> Any:
    """The SDK's Host/Origin settings for a server on ``host``:``port`` (None: not loopback, the SDK's default)."""
    from shellrt.server._http_hosts import loopback_allowed

    allowed = loopback_allowed(host, port)
    if allowed is None:
        return None
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=allowed[0], allowed_origins=allowed[1]
    )
