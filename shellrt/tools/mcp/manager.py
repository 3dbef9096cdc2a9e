"""`McpConnections`: every configured MCP server of a session, as Tools.

    async with McpConnections(settings["mcpServers"], log_dir=session_dir) as mcp:
        for tool in await mcp.tools():
            registry.register(tool)
        print(mcp.diagnostics)

Servers are started together when ``tools()`` is first awaited (their tool
lists are needed for ``tools[]``), each bounded by its startup timeout; one
that fails is reported in ``diagnostics`` and contributes no tools, the others
are unaffected. Leaving the context stops every server process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from shellrt.permissions.tree_guard import TreeGuard
from shellrt.protocol import Tool
from shellrt.tools.mcp._listing_bounds import (
    MAX_TOOLS_PER_SERVER,
    SelfLoadBudget,
    listing_cut,
    schema_too_large,
)
from shellrt.tools.mcp.config import McpServerConfig, parse_servers
from shellrt.tools.mcp.connection import McpServerConnection, McpServerError
from shellrt.tools.mcp.proxy import McpProxyTool

__all__ = ["McpConnections"]


class McpConnections:
    """Connection manager for the ``mcpServers`` of one session (an async context manager)."""

    def __init__(
        self,
        servers: Mapping[str, Any] | None,
        *,
        log_dir: Path | None = None,
        workspace: Path | None = None,
        writable_roots: Sequence[Path] = (),
        tree_guard: TreeGuard | None = None,
    ) -> None:
        self.configs: dict[str, McpServerConfig]
        self.configs, self.diagnostics = parse_servers(servers)
        self._log_dir = log_dir
        #: A stdio server whose command line runs a workspace file is not restarted once it changed.
        self._workspace = workspace
        #: Every root the session's commands write (besides the workspace): checked the same way,
        #: and never a server's inherited working directory (`_launch`).
        self._writable_roots = tuple(writable_roots)
        self.connections: dict[str, McpServerConnection] = {}
        self._tools: list[Tool[Any, Any]] | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        #: The session's record of the workspace tree, for a server loading it whole (round 24),
        #: shared with its hooks (round 25); None: this manager's own, ended when it is left.
        self._tree_guard = tree_guard
        self._own_guard: TreeGuard | None = None

    async def __aenter__(self) -> McpConnections:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        for name, config in self.configs.items():
            self.connections[name] = McpServerConnection(
                name,
                config,
                self._tg,
                log_dir=self._log_dir,
                workspace=self._workspace,
                writable_roots=self._writable_roots,
            )
        await self._guard_whole_workspace()
        return self

    async def _guard_whole_workspace(self) -> None:
        """Record what every stdio server runs before any command; when one loads the workspace
        whole, record the tree for the session and refuse such servers when an earlier session
        left it changed (`shellrt.permissions.tree_writes`, red team round 24)."""
        whole = [c for c in self.connections.values() if await c.baseline()]
        if not whole or self._workspace is None:
            return
        guard = self._tree_guard
        if guard is None:
            guard = self._own_guard = TreeGuard(self._workspace)
        why = await guard.begin()  # hashed once per session, in a worker thread
        if why is None:
            return
        ws = self._workspace
        message = (
            f"it loads the workspace {ws} whole (its \"cwd\" is there, or its env names it) on the host, "
            f"outside the sandbox, and {why}: a command may have planted code there. Review the "
            f"workspace's changes, then run `shellrt trust add {ws}` to start it again, or give it a "
            "\"cwd\" outside the workspace and name in its env only the directories it needs"
        )
        for connection in whole:
            connection.refuse(message)

    async def __aexit__(self, *exc_info: Any) -> None:
        assert self._tg is not None
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as closing:
                for connection in self.connections.values():
                    closing.start_soon(connection.close)
            if self._own_guard is not None:  # a shared guard is ended by its owner, after the hooks
                await self._own_guard.end()
        # Owner tasks have returned; cancel whatever is left and leave the group (same task, LIFO).
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)

    async def tools(self) -> list[Tool[Any, Any]]:
        """Proxy tools of every server that started (server order, then the server's tool order)."""
        if self._tools is not None:
            return list(self._tools)
        per_server: dict[str, list[Tool[Any, Any]]] = {}

        async def load(name: str, connection: McpServerConnection) -> None:
            try:
                specs = await connection.list_tools()
            except McpServerError as exc:
                self.diagnostics.append(str(exc))
                return
            always = connection.config.always_load
            tools: list[Tool[Any, Any]] = []
            seen: set[str] = set()
            claims = SelfLoadBudget(name)
            if (cut := listing_cut(name, len(specs))) is not None:
                self.diagnostics.append(cut)
            for spec in specs[:MAX_TOOLS_PER_SERVER]:
                if (too_large := schema_too_large(name, spec)) is not None:
                    self.diagnostics.append(too_large)
                    continue
                # The operator's alwaysLoad loads all: the server's claims are not charged (nor named)
                may_load = always or claims.admit(spec)
                tool = McpProxyTool(name, spec, connection, always_load=always, server_may_load=may_load)
                if tool.name in seen:
                    self.diagnostics.append(
                        f"MCP server '{name}': tool {spec.name!r} clashes with another tool's name "
                        f"({tool.name}) after sanitising; skipped"
                    )
                    continue
                seen.add(tool.name)
                tools.append(tool)
            if (refused := claims.diagnostic()) is not None:
                self.diagnostics.append(refused)
            per_server[name] = tools

        async with anyio.create_task_group() as tg:
            for name, connection in self.connections.items():
                tg.start_soon(load, name, connection)
        self._tools = [t for name in self.connections for t in per_server.get(name, [])]
        return list(self._tools)
