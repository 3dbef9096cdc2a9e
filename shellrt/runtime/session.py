"""`Runtime`: one agent session — sandbox, supervisor, tools, governance and context.

    async with shellrt.Runtime(workspace="repo", sandbox="bwrap") as rt:
        tools = rt.tools_for_anthropic()
        user_msg = await rt.run(assistant_msg)

Everything the session started (commands, background tasks, containers) is
stopped when the context exits.
"""

from __future__ import annotations

import logging
import os
import secrets
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from sandbox import (
    BackendUnavailableError,
    BwrapConfig,
    LocalConfig,
    SandboxBackend,
    SandboxConfig,
    SandboxPolicy,
)
from sandbox.factory import create_backend
from shellrt.permissions import Approver, BasicGate, HookRunner, NoHooks, PermissionGate
from shellrt.protocol import (
    ProgressSink,
    ResultEnvelope,
    Tool,
    ToolCatalog,
    ToolContext,
    ToolUseBlock,
    apply_message_budget,
)
from shellrt.protocol.results import DEFAULT_MESSAGE_BUDGET_CHARS
from shellrt.runtime.execution import CallExecutor
from shellrt.runtime.messages import parse_tool_uses
from shellrt.runtime.orchestration import StreamingExecution
from shellrt.runtime.registry import ToolRegistry
from shellrt.tools.tool_search import discovery_order

if TYPE_CHECKING:
    from shellrt.supervisor import Supervisor

__all__ = ["Runtime", "SandboxChoice", "resolve_sandbox"]

log = logging.getLogger("shellrt")

SandboxChoice = Literal["auto", "local", "none", "bwrap", "docker"]


def _session_root() -> Path:
    base = os.environ.get("SHELLRT_HOME")
    if base:
        return Path(base) / "sessions"
    # Not ``/tmp/shellrt``: a directory of the package's name would shadow the package
    # (as a namespace package) for any script run from the temp directory.
    return Path(tempfile.gettempdir()) / "shellrt-sessions"


async def resolve_sandbox(
    sandbox: SandboxConfig | str, policy: SandboxPolicy, *, one_shot: bool = False
) -> tuple[SandboxBackend, list[str]]:
    """Start the backend for ``sandbox``; ``auto`` means bwrap where it works, else local (with a warning).

    ``one_shot``: the sandbox will run a single command (``shellrt run``), so a
    bwrap chosen by name runs it without a session zygote that could not pay off.
    """
    warnings: list[str] = []
    bwrap = BwrapConfig(persistent=not one_shot)
    if isinstance(sandbox, str):
        if sandbox == "auto":
            backend = create_backend(bwrap, policy)
            try:
                await backend.start()
                return backend, warnings
            except BackendUnavailableError as exc:
                warnings.append(
                    f"bubblewrap is not usable here ({exc}); running without isolation (local backend)"
                )
                sandbox = "local"
        if sandbox in ("local", "none"):
            config: SandboxConfig = LocalConfig()
        elif sandbox == "bwrap":
            config = bwrap
        elif sandbox == "docker":
            from sandbox import DockerConfig

            config = DockerConfig()
        else:
            raise ValueError(f"unknown sandbox {sandbox!r}; use one of auto, local, none, bwrap, docker")
    else:
        config = sandbox
    backend = create_backend(config, policy)
    await backend.start()
    return backend, warnings


class Runtime:
    """An agent session. Use as ``async with``; not reusable after close."""

    def __init__(
        self,
        workspace: str | os.PathLike[str] = ".",
        sandbox: SandboxConfig | SandboxChoice = "auto",
        *,
        policy: SandboxPolicy | None = None,
        tools: Sequence[Tool[Any, Any]] | None = None,
        gate: PermissionGate | None = None,
        hooks: HookRunner | None = None,
        approver: Approver | None = None,
        settings: Mapping[str, Any] | None = None,
        settings_files: Sequence[str | os.PathLike[str]] = (),
        mode: str | None = None,
        allow: Sequence[str] = (),
        deny: Sequence[str] = (),
        use_settings: bool = True,
        session_dir: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
        progress: ProgressSink | None = None,
        message_budget_chars: int = DEFAULT_MESSAGE_BUDGET_CHARS,
    ) -> None:
        self.workspace = Path(workspace).resolve()
        if not self.workspace.is_dir():
            raise FileNotFoundError(
                f"workspace {self.workspace} does not exist or is not a directory; create it or pass another --workspace"
            )
        self.session_id = session_id or secrets.token_hex(6)
        self.session_dir = Path(session_dir) if session_dir else _session_root() / self.session_id
        self._sandbox = sandbox
        self._tools = tools
        self.approver = approver
        self.diagnostics: list[str] = []
        self._settings = dict(settings or {})
        extra_roots: tuple[Path, ...] = ()
        self.governance: Any = None
        if gate is None and hooks is None and use_settings:
            from shellrt.permissions import build_governance

            governance = build_governance(
                self.workspace,
                settings_files=[Path(p) for p in settings_files],
                mode=mode,
                approver=approver,
                allow=allow,
                deny=deny,
            )
            gate, hooks = governance.gate, governance.hooks
            self.diagnostics.extend(governance.diagnostics)
            self.governance = governance
            self._settings = {**governance.settings.model_dump(by_alias=True), **self._settings}
            # permissions.additionalDirectories: allowed for the file tools and writable in the sandbox
            extra_roots = tuple(r for r in governance.allowed_roots() if r != self.workspace)
        self.policy = policy or SandboxPolicy(workspace=self.workspace, writable_roots=extra_roots)
        self.gate: PermissionGate = gate or BasicGate(approver)
        self.hooks: HookRunner = hooks or NoHooks()
        self._progress = progress
        self.message_budget_chars = message_budget_chars
        self.warnings: list[str] = []
        self.backend: SandboxBackend | None = None
        self.supervisor: Supervisor | None = None
        self.registry = ToolRegistry()
        self._ctx: ToolContext | None = None
        self._executor: CallExecutor | None = None
        self._stack = AsyncExitStack()

    # --- lifecycle ------------------------------------------------------------------
    async def __aenter__(self) -> Runtime:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    async def start(self) -> None:
        """Start the sandbox and supervisor and register the tools."""
        from shellrt.supervisor import Supervisor

        self.session_dir.mkdir(parents=True, exist_ok=True)
        self.backend, warnings = await resolve_sandbox(self._sandbox, self.policy)
        self._stack.push_async_callback(_shielded(self.backend.close))
        self.warnings.extend(warnings)
        for warning in warnings:
            log.warning("%s", warning)
        self.supervisor = await self._stack.enter_async_context(
            Supervisor(self.backend, session_dir=self.session_dir)
        )
        tools = self._tools if self._tools is not None else _builtin_tools()
        for tool in tools:
            self.registry.register(tool)
        # --- MCP servers from settings (mcpServers), owned by shellrt.tools.mcp --------------
        self.mcp_diagnostics: list[str] = []
        if self._settings.get("mcpServers"):
            from shellrt.tools.mcp import McpConnections

            mcp = await self._stack.enter_async_context(
                McpConnections(self._settings["mcpServers"], log_dir=self.session_dir)
            )
            # Sorted by server and name: servers list their tools in any order, and a prompt
            # cache keyed on tools[] needs the same order on every run.
            for tool in sorted(await mcp.tools(), key=_mcp_sort_key):
                if self.registry.get(tool.name) is None:
                    self.registry.register(tool)
            self.mcp_diagnostics = list(mcp.diagnostics)
            self.diagnostics.extend(self.mcp_diagnostics)
            for line in self.mcp_diagnostics:
                log.warning("mcpServers: %s", line)
        # --- end MCP ---------------------------------------------------------------------------
        self._ctx = ToolContext(
            session_id=self.session_id,
            session_dir=self.session_dir,
            workspace=self.workspace,
            cwd=self.supervisor.cwd,
            allowed_roots=(*self.policy.allowed_roots(), self.session_dir),
            read_denied=self.policy.read_denied,
            settings=self._settings,
            services={
                ToolRegistry: self.registry,
                ToolCatalog: self.registry,
                Supervisor: self.supervisor,
                SandboxBackend: self.backend,
                PermissionGate: self.gate,
            },
        )
        if self._progress is not None:
            self._ctx.progress = self._progress
        self._executor = CallExecutor(self.registry, self.gate, self.hooks, is_loaded=self._is_loaded)

    async def close(self) -> None:
        """Stop every process of the session and release the sandbox. Idempotent."""
        # Kill everything first under a shield (a cancelled caller must not leave processes
        # behind); the stack itself is unwound unshielded because the supervisor's task group
        # must be exited in the cancel scope it was entered in (anyio).
        if self.supervisor is not None:
            with anyio.CancelScope(shield=True):
                await self.supervisor.close()
        await self._stack.aclose()

    # --- the model's view ----------------------------------------------------------------
    @property
    def context(self) -> ToolContext:
        if self._ctx is None:
            raise RuntimeError("the runtime is not started; use `async with Runtime(...)`")
        return self._ctx

    def visible_tools(self) -> list[Tool[Any, Any]]:
        """Tools the model may see now: loaded ones in a fixed order, then discovered ones in discovery order."""
        return self.registry.visible(discovery_order(self.context), self.gate.is_visible)

    def tools_for_anthropic(self, *, defer_loading: bool = False, strict: bool = False) -> list[dict[str, Any]]:
        """Anthropic ``tools[]``.

        ``defer_loading=True`` is for the API's own tool search: every visible tool is
        sent, deferred ones marked ``"defer_loading": true``. ``strict=True`` marks the
        tools whose schemas allow strict input validation.
        """
        if defer_loading:
            tools = [t for t in self.registry.all_tools() if self.gate.is_visible(t)]
        else:
            tools = self.visible_tools()
        return self.registry.for_anthropic(tools, defer_loading=defer_loading, strict=strict)

    def tools_for_openai(self, *, strict: bool = False) -> list[dict[str, Any]]:
        """OpenAI ``tools[]``; ``strict=True`` marks the tools whose schemas allow strict mode."""
        return self.registry.for_openai(self.visible_tools(), strict=strict)

    def _is_loaded(self, tool: Tool[Any, Any], ctx: ToolContext) -> bool:
        if not self.gate.is_visible(tool):
            return True  # let the gate deny it with its reason
        return not tool.is_deferred() or tool.name in ctx.discovered_tools

    # --- running -------------------------------------------------------------------------
    async def run(self, message: Any) -> dict[str, Any]:
        """Run every tool_use of an assistant message; return the user message with the results."""
        envelopes = await self.run_envelopes(parse_tool_uses(message))
        return {"role": "user", "content": [e.model.model_dump(mode="json") for e in envelopes]}

    async def run_envelopes(self, blocks: Sequence[ToolUseBlock]) -> list[ResultEnvelope]:
        """Run blocks; return full envelopes (model, UI and audit faces)."""
        results = [e async for e in self.stream(blocks)]
        return apply_message_budget(
            results, self.session_dir, self.message_budget_chars, exempt=self._persistence_exempt()
        )

    async def stream(self, blocks: Sequence[ToolUseBlock]) -> AsyncIterator[ResultEnvelope]:
        """Yield envelopes in tool_use order as they complete (without the message budget)."""
        ctx = self.context
        if ctx.abort.is_set():
            ctx.abort = anyio.Event()
        assert self._executor is not None
        async with StreamingExecution(self._executor, ctx) as stream:
            for block in blocks:
                stream.add(block)
            stream.close()
            async for envelope in stream.results():
                yield envelope

    def streaming(self) -> StreamingExecution:
        """A streaming executor: ``add()`` blocks as they arrive, iterate ``results()``."""
        assert self._executor is not None, "the runtime is not started"
        if self.context.abort.is_set():
            self.context.abort = anyio.Event()
        return StreamingExecution(self._executor, self.context)

    def interrupt(self) -> None:
        """Interrupt the running message: cancel-type tools stop, block-type tools finish."""
        self.context.abort.set()

    def _persistence_exempt(self) -> frozenset[str]:
        return frozenset(t.name for t in self.registry.all_tools() if t.max_result_chars is None)


def _shielded(close: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        with anyio.CancelScope(shield=True):
            await close()

    return run


def _mcp_sort_key(tool: Tool[Any, Any]) -> tuple[str, str]:
    return (str(getattr(tool, "server", "")), str(getattr(tool, "remote_name", tool.name)))


def _builtin_tools() -> list[Tool[Any, Any]]:
    from shellrt.tools import builtin_tools

    return builtin_tools()
