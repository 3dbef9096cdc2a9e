"""`Runtime`: one agent session — sandbox, supervisor, tools, governance and context.

    async with shellrt.Runtime(workspace="repo", sandbox="bwrap") as rt:
        tools = rt.tools_for_anthropic()
        user_msg = await rt.run(assistant_msg)

Everything the session started (commands, background tasks, containers) is
stopped when the context exits.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, aclosing, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.lowlevel
from pydantic import BaseModel, ValidationError

from sandbox import SandboxBackend, SandboxConfig, SandboxPolicy
from shellrt.permissions import Approver, BasicGate, HookRunner, NoHooks, PermissionGate
from shellrt.permissions.shown import for_person
from shellrt.protocol import (
    FileReadRecord,
    ProgressSink,
    ResultEnvelope,
    Tool,
    ToolCatalog,
    ToolContext,
    ToolResultBlock,
    ToolUseBlock,
    error_envelope,
)
from shellrt.protocol.results import DEFAULT_MESSAGE_BUDGET_CHARS, model_chars
from shellrt.runtime.append_log import AppendLog
from shellrt.runtime.execution import CallExecutor, CallOutcome, RunSlot
from shellrt.runtime.input_size import bounded_input, input_chars, sized_block
from shellrt.runtime.interrupts import InterruptWatch
from shellrt.runtime.message_fit import fit_message
from shellrt.runtime.messages import (
    MISSING_RESULT,
    HistoryRepair,
    MessageFormatError,
    checked_block,
    parse_tool_uses,
    repair_history,
)
from shellrt.runtime.option_lists import refuse_bare_strings
from shellrt.runtime.orchestration import StreamingExecution, run_single
from shellrt.runtime.registry import ToolRegistry
from shellrt.runtime.sandbox_choice import SandboxChoice, resolve_sandbox
from shellrt.supervisor._inflight import session_root
from shellrt.tools.tool_search import discovery_order

if TYPE_CHECKING:
    from shellrt.runtime.task_registry import TaskRegistry
    from shellrt.supervisor import Supervisor

__all__ = [
    "SESSION_RETENTION_DAYS",
    "STATE_FILE",
    "TRANSCRIPT_FILE",
    "RestoreResult",
    "Runtime",
    "SandboxChoice",
    "prune_sessions",
    "resolve_sandbox",
    "session_root",
]

log = logging.getLogger("shellrt")


#: The session's transcript, one JSON line per call, in the session directory (hooks get its path).
TRANSCRIPT_FILE = "transcript.jsonl"
#: Session state a conversation cannot carry (cwd, read hashes/mtimes, discovery order, todos), rewritten as it changes.
STATE_FILE = "state.json"
#: Why a bypassPermissions session does not start when ``auto`` finds no bubblewrap (round 17).
NO_FALLBACK_IN_BYPASS = (
    "permission mode bypassPermissions runs every command unasked, so the sandbox is its only "
    "boundary and shellrt will not drop it silently: make bubblewrap work, use --sandbox docker, "
    "or choose --sandbox local (sandbox='local') to run commands on this host without isolation"
)
#: Why bypassPermissions is refused later in a session that ``auto`` started without a sandbox.
NO_BYPASS_UNCONFINED = (
    "this session runs without isolation (bubblewrap was not usable, so 'auto' chose local): "
    "bypassPermissions would run every command unasked on this host; start a session with "
    "--sandbox bwrap or docker, or choose --sandbox local explicitly"
)
#: How much of a reopened session's transcript is read back for recorded results.
MAX_TRANSCRIPT_REPLAY_BYTES = 64 * 1024 * 1024
#: How many recorded results a session keeps for answering a resent tool_use (oldest dropped first).
MAX_RECORDED_RESULTS = 2000
#: `_record` was given no kept form of the input: it works it out (`_kept_input`).
_UNKEPT: Any = object()
#: Calls of one message scheduled together (`Runtime.stream`); the rest wait for their group.
MAX_CALLS_SCHEDULED = 64
#: A read-state record no file matches: the file counts as read but stale, so Edit asks for a fresh Read.
STALE_READ = FileReadRecord(sha256="", mtime_ns=-1, size=-1)


@dataclass
class RestoreResult:
    """What `Runtime.restore` made of a conversation."""

    #: The conversation with legal tool_use/tool_result pairing (send this to the model).
    messages: list[dict[str, Any]]
    #: Every change the repair made, in order.
    changes: list[HistoryRepair] = field(default_factory=list)
    #: Deferred tools the conversation discovered, in discovery order (now in ``tools[]``).
    discovered_tools: list[str] = field(default_factory=list)
    #: The todo list as of the conversation's last TodoWrite.
    todos: int = 0
    #: Host paths the conversation read; they count as stale until read again.
    stale_reads: list[str] = field(default_factory=list)
    #: tool_use ids whose results are recorded (a resent call is answered from them).
    recorded: int = 0


#: Sessions under the default root untouched for this long are removed when a new session starts.
SESSION_RETENTION_DAYS = 30


def prune_sessions(root: Path, *, max_age_days: float = SESSION_RETENTION_DAYS, keep: str = "") -> list[Path]:
    """Remove session directories under ``root`` not modified for ``max_age_days``; return what went.

    Only directories that look like sessions (a ``state.json`` or ``transcript.jsonl``
    inside) are touched; ``keep`` (the starting session's id) never is. A live session
    rewrites its state after every message, which keeps its directory fresh; one idle longer
    is kept while it holds its in-use lock (`shellrt.runtime.session_dir.lock_for_removal`).
    """
    import shutil

    from shellrt.runtime.session_dir import lock_for_removal

    removed: list[Path] = []
    cutoff = time.time() - max_age_days * 86400
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    for entry in entries:
        try:
            if entry.name == keep or entry.is_symlink() or not entry.is_dir():
                continue
            if not ((entry / STATE_FILE).exists() or (entry / TRANSCRIPT_FILE).exists()):
                continue
            if entry.stat().st_mtime >= cutoff:
                continue
            held = lock_for_removal(entry)  # a live session idle that long is kept (round 26)
            if isinstance(held, str):
                continue
            try:
                shutil.rmtree(entry)
            finally:
                os.close(held)
            removed.append(entry)
        except OSError as exc:
            log.warning("could not remove the old session %s: %s", entry, exc)
    return removed


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
        trust_workspace: bool = False,
        session_dir: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
        progress: ProgressSink | None = None,
        message_budget_chars: int = DEFAULT_MESSAGE_BUDGET_CHARS,
        masked_paths: Sequence[str | os.PathLike[str]] = (),
        mask_defaults: bool | None = None,
        allowed_domains: Sequence[str] = (),
        denied_domains: Sequence[str] = (),
    ) -> None:
        refuse_bare_strings(  # deny="Bash" was the rules B, a, s, h (round 35)
            settings_files=settings_files,
            allow=allow,
            deny=deny,
            masked_paths=masked_paths,
            allowed_domains=allowed_domains,
            denied_domains=denied_domains,
        )
        self.workspace = Path(workspace).resolve()
        if not self.workspace.is_dir():
            raise FileNotFoundError(
                f"workspace {self.workspace} does not exist or is not a directory; create it or pass another --workspace"
            )
        self.session_id = secrets.token_hex(6) if session_id is None else _checked_session_id(session_id)
        #: A caller-chosen session id reopens that session's persisted state (`STATE_FILE`).
        self._reopen = session_id is not None
        self._saved_state = ""  # the text last written to state.json: an unchanged state is not rewritten
        #: id(envelope) -> (envelope, its model block as JSON data), from `_finish` for `run`.
        self._dumped: dict[int, tuple[ResultEnvelope, dict[str, Any]]] = {}
        #: What that text was made from (see `_save_state`): None until the first write.
        self._saved_inputs: tuple[Any, ...] | None = None
        self._default_session_dir = session_dir is None
        self.session_dir = Path(session_dir).absolute() if session_dir else session_root() / self.session_id
        self._sandbox = sandbox
        self._tools = tools
        if approver is not None:  # a prompt names paths and input: no lone surrogate reaches a client
            from shellrt.permissions.approvers import one_ask_at_a_time
            from shellrt.tools._sendable import sendable_approver

            # Calls that run side by side ask at once: a person answers one at a time (round 20).
            # Each answer is validated again by the gate that takes it (`RulesGate`, round 35).
            approver = sendable_approver(one_ask_at_a_time(approver))
        self.approver = approver
        self.diagnostics: list[str] = []
        self._settings = dict(settings or {})
        extra_roots: tuple[Path, ...] = ()
        self._given_settings = [Path(p) for p in settings_files]
        self.governance: Any = None
        from shellrt.permissions.tree_guard import TreeGuard

        #: The workspace tree's record that hooks and MCP servers loading it whole share (round 25:
        #: one hash at the start, in `start`, off the event loop; one at the end, in `close`); the
        #: records the session takes before its first command share its digests (round 26).
        self.tree_guard = TreeGuard(self.workspace)
        if gate is None and hooks is None and use_settings:
            from shellrt.permissions import build_governance

            with self.tree_guard.recording():
                governance = build_governance(
                    self.workspace,
                    settings_files=[Path(p) for p in settings_files],
                    mode=mode,
                    approver=approver,
                    allow=allow,
                    deny=deny,
                    trust_workspace=trust_workspace,
                )
            gate, hooks = governance.gate, governance.hooks
            self.diagnostics.extend(governance.diagnostics)
            self.governance = governance
            self._settings = {**governance.settings.model_dump(by_alias=True), **self._settings}
            # permissions.additionalDirectories: allowed for the file tools and writable in the sandbox
            extra_roots = tuple(r for r in governance.allowed_roots() if r != self.workspace)
        # Masked paths (default secrets + every Read deny rule): derived in one place.
        from shellrt.protocol.revalidated import revalidated
        from shellrt.runtime.sandbox_policy import derive_policy, fixed_sandbox_ids
        from shellrt.runtime.session_mask import own_state_masks

        base = (  # built by model_construct or model_copy(update=...)? validated again (round 35)
            SandboxPolicy(workspace=self.workspace, writable_roots=extra_roots)
            if policy is None
            else revalidated(policy, (SandboxPolicy,), "sandbox policy")
        )
        if allowed_domains and self.governance is not None and not self.governance.settings.may_widen("cli"):
            self.diagnostics.append(
                f"--allow-domain {', '.join(allowed_domains)} ignored: managed policy "
                "(allowManagedPermissionRulesOnly) lets only managed settings widen the sandbox"
            )
            allowed_domains = ()
        if allowed_domains or denied_domains:  # network 'proxied' (docs/network.md): the operator's list
            base = SandboxPolicy.model_validate(
                {
                    **base.model_dump(),
                    "allowed_domains": (*base.allowed_domains, *allowed_domains),
                    "denied_domains": (*base.denied_domains, *denied_domains),
                }
            )
        #: The deny rules the sandbox policy is compiled from (masks, read-only paths): one added
        #: later is the engine's only, so every call is refused until a new session (round 37, lead).
        self._compiled_denies = _sandbox_denies(
            self.governance.settings.rules.rules if self.governance else ()
        )
        self.policy, policy_notes = derive_policy(
            base,
            rules=self.governance.settings.rules.rules if self.governance is not None else (),
            settings_files=self.governance.settings.files if self.governance is not None else (),
            # shellrt's own state (the record later sessions trust, every session and in-flight
            # record): masked, and refused as a root (round 26)
            masked_paths=(*masked_paths, *own_state_masks(base, self.session_dir)),
            mask_defaults=mask_defaults,
            trusted=(  # network allow-list: a trusted workspace's files count, an untrusted one's not
                _widening_check(self.governance.settings, self.workspace)
                if self.governance is not None
                else None
            ),
            sandbox_ids=fixed_sandbox_ids(sandbox),  # what a fixed uid owns is not "closed" to it (round 43)
        )
        self.diagnostics.extend(policy_notes)
        # Read-only for commands: this session's results shown again, a home's protected names.
        from shellrt.runtime.read_only_binds import read_only_for_commands

        shown = read_only_for_commands(self.session_dir, self.policy)
        self.policy = self.policy.model_copy(update={"read_only": (*self.policy.read_only, *shown)})
        self.gate: PermissionGate = gate or BasicGate(approver)
        self.hooks: HookRunner = hooks or NoHooks()
        with self.tree_guard.recording():
            if hasattr(self.hooks, "watch_writable_roots"):  # hooks run on the host: not what commands wrote
                self.hooks.watch_writable_roots(self.policy.allowed_roots())
            #: What hooks and MCP servers run from a writable root: protected (round 17).
            self._run_files = self._hook_run_files()
        if self.governance is not None:  # the file tools ask before writing them
            self.governance.engine.hook_run_files = frozenset(os.path.realpath(p) for p in self._run_files)
            from shellrt.permissions.trust_paths import later_session_files, link_targets

            # Where a link leads them (the files themselves: the after-command check, round 17).
            targets = link_targets([*self._given_settings, *later_session_files()])
            self.governance.engine.later_session_files = frozenset(str(p) for p in targets)
        self._progress = progress
        self.message_budget_chars = message_budget_chars
        self.warnings: list[str] = []
        self.backend: SandboxBackend | None = None
        self.supervisor: Supervisor | None = None
        self.registry = ToolRegistry()
        self._ctx: ToolContext | None = None
        self._executor: _RecordingExecutor | None = None
        self._stack = AsyncExitStack()
        self._transcript = AppendLog(self.session_dir / TRANSCRIPT_FILE)
        self._state_path = self.session_dir / STATE_FILE
        self._state_name = os.fspath(self._state_path)
        #: tool_use id -> (name, input, envelope): a resent call is answered from here, never run again.
        self._recorded: dict[str, tuple[str, _InputText | _InputDigest, ResultEnvelope]] = {}
        #: tool_use id -> (name, input) of every call started here, run or refused (bounded like
        #: ``_recorded``), and the ids running now: one id names one call (red team round 19).
        self._started: dict[str, tuple[str, _InputText | _InputDigest]] = {}
        #: id -> (the input it started with, what `_started` keeps of it): its record reuses that.
        self._running: dict[str, tuple[Any, _InputText | _InputDigest]] = {}
        self._task_registry: TaskRegistry | None = None
        self._task_watchers: anyio.abc.TaskGroup | None = None
        self._interrupts: InterruptWatch | None = None
        self._watched_tasks: set[str] = set()
        self._leftovers: Any = None
        #: Closes the session directory's in-use lock (`hold_session_dir`): at close, or when collected.
        self._dir_hold: weakref.finalize[Any, Any] | None = None

    # --- lifecycle ------------------------------------------------------------------
    async def __aenter__(self) -> Runtime:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.close()

    def _hook_run_files(self) -> list[Path]:
        """What the settings' hooks and stdio MCP servers run from a writable root: a command's
        rewrite is reverted, so no later session runs it on the host (red team round 17)."""
        files = getattr(self.hooks, "host_run_files", None)
        found = list(files()) if callable(files) else []
        if self._settings.get("mcpServers"):  # so do the operator's stdio MCP servers
            from shellrt.tools.mcp._restart_guard import server_run_files

            roots = self.policy.allowed_roots()
            found += server_run_files(self._settings["mcpServers"], self.workspace, roots)
        return found

    def _write_deny(self) -> Any:
        """The session's write-deny globs for the post-command check (None without governance)."""
        if self.governance is None or self.backend is None:
            return None
        from shellrt.runtime.write_deny_globs import WriteDenyGlobs

        try:  # docker's copy mode: the check walks a private copy; rules are anchored at the workspace
            view = self.backend.to_host_path(self.backend.workspace)
        except Exception:
            view = None
        views = {str(view): str(self.workspace)} if view is not None else None
        # A backend that confines the file system binds the existing matches read-only (bwrap,
        # docker): nothing to snapshot. Local binds nothing: a changed match is put back.
        confined = "filesystem" in self.backend.enforces()
        return WriteDenyGlobs(self.governance.engine.rules, views, keeps_content=not confined)

    async def start(self) -> None:
        """Start the sandbox and supervisor and register the tools."""
        from shellrt.runtime.session_dir import hold_session_dir, refuse_linked_session_dir
        from shellrt.supervisor import Supervisor

        # 0700, the caller's own, in a parent no one else can swap it in: transcripts and persisted
        # results hold secrets, and a reopened session trusts the results recorded there. Held
        # (shared lock) until close, so `shellrt sessions rm` and the prune keep it (round 26).
        self._dir_hold = weakref.finalize(self, os.close, hold_session_dir(self.session_dir))
        refuse_linked_session_dir(self.session_dir, self.policy.allowed_roots())
        start_hooks = getattr(self.hooks, "start_session", None)
        if callable(start_hooks):  # before any command: a hook loading the workspace whole (round 24)
            with self.tree_guard.recording():
                await start_hooks(self.tree_guard)
        if self._default_session_dir:
            prune_sessions(self.session_dir.parent, keep=self.session_id)
        if self.governance is not None:  # workspace trust: one record per session (audit.jsonl)
            from shellrt.permissions.trust import audit_session_trust

            audit_session_trust(self.session_dir, self.governance.settings)
        # Host-side programs (git queries, hook launchers) are never looked up where commands write.
        from shellrt.permissions.host_path import register_writable, unregister_writable
        from shellrt.permissions.trust_paths import later_session_files, with_link_targets

        self._stack.callback(unregister_writable, register_writable(self.policy.allowed_roots()))
        # bypassPermissions asks nothing: the sandbox is its only boundary, so `auto` may not drop it.
        unasked = self.governance is not None and self.governance.mode == "bypassPermissions"
        self.backend, warnings = await resolve_sandbox(
            self._sandbox, self.policy, refuse_fallback=NO_FALLBACK_IN_BYPASS if unasked else None
        )
        if self.governance is not None and self._sandbox == "auto" and warnings:  # fell back to local
            self.governance.unconfined = NO_BYPASS_UNCONFINED
        self._stack.push_async_callback(_shielded(self.backend.close))
        bwrap = type(self.backend).__module__ == "sandbox.bwrap"
        if bwrap and not self._default_session_dir and os.geteuid() != 0:
            from sandbox.bwrap import private_places
            from shellrt.runtime.session_dir import SessionDirError, shown_to_other_sessions

            why = shown_to_other_sessions(self.session_dir, ["/tmp", *private_places()])
            if why is not None:  # round 20: another session's commands read its spools there
                await self.close()
                raise SessionDirError(why)
        self.warnings.extend(warnings)
        for warning in warnings:
            log.warning("%s", warning)
        self.supervisor = await self._stack.enter_async_context(
            Supervisor(
                self.backend,
                session_dir=self.session_dir,
                # --settings files, the trust store, a managed file in a writable root: protected
                # like the workspace's own (a later session obeys them; round 17).
                settings_files=[
                    *with_link_targets(self._given_settings),
                    *later_session_files(),
                    *self._run_files,
                ],
                # A new file an Edit/Write deny glob names: reverted after the command.
                write_deny=self._write_deny(),
                tree_session=self.tree_guard.session,  # its own mark does not refuse its guard (round 25)
            )
        )
        # Background tasks persist in tasks.json as they change; a watcher notes each one's end.
        from shellrt.runtime.task_registry import TaskRegistry

        self._task_registry = TaskRegistry(self.session_dir, self.supervisor.tasks)
        self._task_watchers = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(self._task_watchers.cancel_scope.cancel)
        from shellrt.runtime.leftovers import LeftoverTasks, weakly

        self.supervisor.tasks.on_change = weakly(self._tasks_changed)  # nothing holds a dropped Runtime
        self._leftovers = LeftoverTasks(self)  # its background tasks die with it, closed or not
        if hasattr(self.gate, "on_saved"):  # a remembered project rule is not a planted settings file
            self.gate.on_saved = self.supervisor.accept_protected
        tools = self._tools if self._tools is not None else _builtin_tools()
        for tool in tools:
            self.registry.register(tool)
        # --- MCP servers from settings (mcpServers), owned by shellrt.tools.mcp --------------
        self.mcp_diagnostics: list[str] = []
        if self._settings.get("mcpServers"):
            from shellrt.tools.mcp import McpConnections

            with self.tree_guard.recording():  # the servers' records of the start (not their first checks)
                mcp = await self._stack.enter_async_context(
                    McpConnections(
                        self._settings["mcpServers"],
                        log_dir=self.session_dir,
                        workspace=self.workspace,
                        writable_roots=self.policy.allowed_roots(),
                        tree_guard=self.tree_guard,
                    )
                )
            self.tree_guard.seal()
            # Sorted by server and name: servers list their tools in any order, and a prompt
            # cache keyed on tools[] needs the same order on every run.
            for tool in sorted(await mcp.tools(), key=_mcp_sort_key):
                if self.registry.get(tool.name) is None:
                    self.registry.register(tool)
            self.mcp_diagnostics = list(mcp.diagnostics)
            self.diagnostics.extend(self.mcp_diagnostics)
            for line in self.mcp_diagnostics:  # they quote servers' stderr: escaped for a terminal
                log.warning("mcpServers: %s", for_person(line))
        # --- end MCP ---------------------------------------------------------------------------
        if self.governance is not None:
            from shellrt.permissions.unmatched_denies import denies_naming_no_tool

            for note in denies_naming_no_tool(self.governance.settings.rules.rules, self.registry.names()):
                self.diagnostics.append(note)
                log.warning("%s", for_person(note))
        self.tree_guard.seal()  # commands may run from now on: every digest is taken afresh
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
        self._interrupts = InterruptWatch(self._ctx)
        self._task_watchers.start_soon(self._interrupts.run)
        self._executor = _RecordingExecutor(self.registry, self.gate, self.hooks, is_loaded=self._is_loaded)
        if self.governance is not None:
            self._executor.policy_gap = self._policy_gap
        backend = self.backend
        if getattr(backend, "network_refusals", None) is not None:  # network 'proxied' (docs/network.md)
            self._executor.network_refusals = lambda: list(backend.network_refusals)
        if self._reopen:
            self._load_state()
        self._save_state()

    def _policy_gap(self) -> str | None:
        """Why no call may run: a deny rule the sandbox policy was not compiled from (None: none)."""
        rules = self.governance.settings.rules.rules
        if not rules:
            return None
        late = [
            r.text
            for r in rules
            if _compiles_as_deny(r) and (r.tool, r.specifier) not in self._compiled_denies
        ]
        if not late:
            return None
        return (
            f"Not run: the deny rule(s) {', '.join(late[:5])} were added after this session's sandbox was "
            "built from its rules, so commands and file tools could still reach what they deny. Start a new "
            "session (a new Runtime) with the rule to apply it; every call of this one is refused until then."
        )

    async def close(self) -> None:
        """Stop every process of the session and release the sandbox. Idempotent."""
        # Kill everything first under a shield (a cancelled caller must not leave processes
        # behind); the stack itself is unwound unshielded because the supervisor's task group
        # must be exited in the cancel scope it was entered in (anyio).
        if self.supervisor is not None:
            with anyio.CancelScope(shield=True):
                await self.supervisor.close()
            if self._leftovers is not None:
                self._leftovers.closed()
            if self._task_registry is not None:
                self._task_registry.save()
        self._transcript.close()
        await self._stack.aclose()
        await self.tree_guard.end()  # after the servers stopped: their hooks' and theirs, once (round 25)
        if self._dir_hold is not None:
            self._dir_hold()  # the directory is removable again

    # --- the model's view ----------------------------------------------------------------
    @property
    def context(self) -> ToolContext:
        if self._ctx is None:
            raise RuntimeError("the runtime is not started; use `async with Runtime(...)`")
        return self._ctx

    def visible_tools(self) -> list[Tool[Any, Any]]:
        """Tools the model may see now: loaded ones in a fixed order, then discovered ones in discovery order."""
        return self.registry.visible(discovery_order(self.context), self.gate.is_visible)

    def tools_for_anthropic(
        self, *, defer_loading: bool = False, strict: bool = False
    ) -> list[dict[str, Any]]:
        """Anthropic ``tools[]``.

        ``defer_loading=True`` is for the API's own tool search: every visible tool is
        sent, deferred ones marked ``"defer_loading": true``. ``strict=True`` marks the
        tools whose schemas allow strict input validation.
        """
        # Every visible tool for the API's search (a tool whose own code raises is left out, not the listing).
        tools = self.registry.shown(self.gate.is_visible) if defer_loading else self.visible_tools()
        return self.registry.for_anthropic(tools, defer_loading=defer_loading, strict=strict)

    def tools_for_openai(self, *, strict: bool = False) -> list[dict[str, Any]]:
        """OpenAI ``tools[]``; ``strict=True`` marks the tools whose schemas allow strict mode."""
        return self.registry.for_openai(self.visible_tools(), strict=strict)

    def _is_loaded(self, tool: Tool[Any, Any], ctx: ToolContext) -> bool:
        if not self.gate.is_visible(tool):
            return True  # let the gate deny it with its reason
        return not tool.is_deferred() or tool.name in ctx.discovered_tools

    # --- history ----------------------------------------------------------------------------
    def restore(self, messages: Sequence[Any]) -> RestoreResult:
        """Load a whole conversation: repair its pairing and rebuild the session state it implies.

        Returns the repaired messages (send these to the model) and what changed.
        Rebuilt: discovered tools (in discovery order), the todo list, the results
        of every tool_use (a resent call is answered from them, never run again),
        and which files were read — those count as stale, because a conversation
        cannot carry their contents' hashes: Edit asks for a fresh Read (the files read
        last, up to `MAX_RESTORED_READS`). A history past `MAX_HISTORY_ITEMS` is refused
        (`MessageFormatError`).
        """
        from shellrt.tools._history import MAX_RESTORED_READS, read_paths, tool_calls
        from shellrt.tools._paths import resolve_paths
        from shellrt.tools.read import RANGES_KEY as READ_RANGES_KEY
        from shellrt.tools.todo_write import STATE_KEY as TODO_KEY
        from shellrt.tools.todo_write import rebuild_todos
        from shellrt.tools.tool_search import ORDER_KEY, rebuild_discovery_order

        ctx = self.context
        repaired, changes = repair_history(list(messages))
        results: dict[str, dict[str, Any]] = {
            str(b.get("tool_use_id")): b
            for m in repaired
            if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        }
        answered = [call for call in tool_calls(repaired) if call.id in results]
        # Only the newest MAX_RECORDED_RESULTS are kept (`_record`): the rest would be built and dropped.
        # Checked before anything changes: a malformed result left a half-restored session.
        kept = [(call, _result_model(results[call.id])) for call in answered[-MAX_RECORDED_RESULTS:]]
        # The model may no longer hold earlier Read results (compaction): never answer "unchanged".
        ctx.tool_state.pop(READ_RANGES_KEY, None)
        order = rebuild_discovery_order(repaired)
        ctx.discovered_tools = set(order)
        ctx.tool_state[ORDER_KEY] = list(order)
        todos = rebuild_todos(repaired)
        ctx.tool_state[TODO_KEY] = todos
        stale: list[str] = []
        for key in resolve_paths(read_paths(repaired, newest=MAX_RESTORED_READS), ctx):
            if key not in ctx.read_state:
                ctx.read_state[key] = STALE_READ
                stale.append(key)
        for call, model in kept:
            text = model.text()
            self._record(
                call.id,
                call.name,
                bounded_input(call.input),  # as a resend of it is bounded (round 39)
                ResultEnvelope(
                    tool_use_id=call.id,
                    tool_name=call.name,
                    model=model,
                    ui=text,
                    audit=text,
                    total_chars=len(text),
                ),
            )
        self._save_state()
        self._transcribe(
            {
                "type": "restore",
                "messages": len(repaired),
                "changes": [c.describe() for c in changes],
                "discovered_tools": list(order),
                "stale_reads": stale,
            }
        )
        return RestoreResult(repaired, changes, list(order), len(todos), stale, len(answered))

    def _record(
        self, tool_use_id: str, name: str, tool_input: Any, envelope: ResultEnvelope, kept: Any = _UNKEPT
    ) -> None:
        """``kept``: what `_starting` kept of this very input (a large one's digest: made once a call)."""
        self._recorded.pop(tool_use_id, None)
        self._recorded[tool_use_id] = (name, _kept_input(tool_input) if kept is _UNKEPT else kept, envelope)
        while len(self._recorded) > MAX_RECORDED_RESULTS:
            self._recorded.pop(next(iter(self._recorded)))

    def _replay(self, block: ToolUseBlock) -> ResultEnvelope | None:
        """The recorded result of this exact call (same id, name and input), if there is one; a
        refusal when the id is running or named another call; None: run it.

        An id reused for another call ran under it: its result, transcript and a hook's
        ``tool_use_id`` named two calls (an answer keyed by id carried over), a resend of the first
        ran again, and one call sent twice at once ran twice (red team round 19)."""
        found = self._recorded.get(block.id)
        digested: list[bytes] = []  # the given input's digest, made at most once
        if found is not None and found[0] == block.name and _same_input(found[1], block.input, digested):
            return found[2]
        why = None
        earlier = self._started.get(block.id) or (found[:2] if found is not None else None)
        if block.id in self._running:
            why = "is running now: wait for its result"
        elif earlier is not None and (
            earlier[0] != block.name or not _same_input(earlier[1], block.input, digested)
        ):
            why = f"named another {earlier[0]} call"
        return None if why is None else error_envelope(block.id, block.name, _id_reused(block.id, why))

    def _starting(self, block: ToolUseBlock, size: int | None = None) -> None:
        """Remember that ``block`` runs under its id (see `_replay`); ``size``: its input's
        `input_chars`, when `sized_block` counted it a moment ago."""
        kept = _kept_input(block.input, size)
        self._started.pop(block.id, None)
        self._started[block.id] = (block.name, kept)
        while len(self._started) > MAX_RECORDED_RESULTS:
            self._started.pop(next(iter(self._started)))
        self._running[block.id] = (block.input, kept)

    # --- running -------------------------------------------------------------------------
    async def run(self, message: Any, *, interrupted: bool = False) -> dict[str, Any]:
        """Run every tool_use of an assistant message; return the user message with the results.

        A tool_use whose id already has a recorded result (run earlier in this
        session, or loaded by `restore`) is answered from that result, not run again.
        A user message or a whole conversation is refused: load those with `restore`.
        ``interrupted``: the user interrupted this message before it started
        (a queued JSONL line): no call runs; each is answered "not run".
        """
        envelopes = await self.run_envelopes(parse_tool_uses(message), interrupted=interrupted)
        # Each block was dumped for its transcript line a moment ago: reuse that dump (the
        # message budget may have replaced an envelope since: that one is dumped afresh).
        dumped, self._dumped = self._dumped, {}
        return {"role": "user", "content": [_block_of(e, dumped) for e in envelopes]}

    async def run_envelopes(
        self, blocks: Sequence[ToolUseBlock], *, interrupted: bool = False, run_slot: RunSlot | None = None
    ) -> list[ResultEnvelope]:
        """Run blocks; return full envelopes (model, UI and audit faces).

        ``run_slot``: for a single block, the caller's say over its final input (the MCP server's
        `CallSlots`, shared across requests); a message of several blocks has its own slots."""
        # Built by model_construct? (round 35). Too large to keep or write? (round 39)
        sized = _sized_blocks(blocks)
        replays = [self._replay(block) for block, _size in sized]
        if len(sized) == 1 and replays[0] is None:
            block, size = sized[0]
            results = [await self._run_alone(block, size, interrupted=interrupted, run_slot=run_slot)]
        else:
            async with aclosing(self._stream_sized(sized, replays, interrupted=interrupted)) as stream:
                results = [e async for e in stream]
        if sum(model_chars(e) for e in results) <= self.message_budget_chars:
            return results  # within budget: nothing to persist (and no need to ask every tool)
        return fit_message(  # many calls: exempt results and previews too (round 52)
            results,
            self.session_dir,
            self.message_budget_chars,
            exempt=self._persistence_exempt(),
            seen_by_commands=self.registry.names_where(lambda t: t.results_seen_by_commands),
        )

    async def stream(
        self, blocks: Sequence[ToolUseBlock], *, interrupted: bool = False
    ) -> AsyncIterator[ResultEnvelope]:
        """Yield envelopes in tool_use order as they complete (without the message budget).

        Calls with a recorded result are answered from it; the others run
        (none does when ``interrupted``: the message was interrupted before it started).
        """
        # Built by model_construct? (round 35). Too large to keep or write? (round 39)
        sized = _sized_blocks(blocks)
        replays = [self._replay(block) for block, _size in sized]
        async with aclosing(self._stream_sized(sized, replays, interrupted=interrupted)) as stream:
            async for envelope in stream:
                yield envelope

    async def _stream_sized(
        self,
        sized: Sequence[tuple[ToolUseBlock, int]],
        replays: list[ResultEnvelope | None],
        *,
        interrupted: bool,
    ) -> AsyncGenerator[ResultEnvelope, None]:
        """`stream` of blocks `sized_block` bounded and counted, with their `_replay` answers, each
        worked out once (`run_envelopes` had them already; with no await since, none changed)."""
        blocks = [block for block, _size in sized]
        if len(blocks) == 1 and replays[0] is None:
            yield await self._run_alone(blocks[0], sized[0][1], interrupted=interrupted)
            return
        ctx = self._fresh_context()
        if interrupted:
            ctx.abort.set()
        assert self._executor is not None and self._interrupts is not None
        for (block, size), replay in zip(sized, replays, strict=True):
            if replay is None:
                # Written before the call runs: after a crash, a reopened session knows this call
                # may have run, and answers a resend with an error result instead of running it twice.
                self._transcribe_start(block, size)
        if all(replay is not None for replay in replays):
            # Nothing runs: still a checkpoint, so a caller looping on resent calls can be
            # cancelled and lets the event loop's other tasks run.
            await anyio.lowlevel.checkpoint()
        # At most `MAX_CALLS_SCHEDULED` calls are scheduled together. Red team round 14 found a
        # message of n calls cost n² wake-ups (2,000 calls of an unknown tool in one 130 KB JSONL
        # line held the session for three minutes); the scheduler itself is linear since
        # (`StreamingExecution`: each call waits on the one before it), so the groups now only
        # bound how many calls one execution holds (2,000 such calls: 0.77 s grouped, 0.81 s in
        # one execution). A group starts once the one before it finished, which keeps the
        # message's order (a call never ran ahead of earlier ones anyway, unless both are
        # read-only); an interrupt reaches the groups not yet started through ``ctx.abort``.
        to_run = [index for index, replay in enumerate(replays) if replay is None]
        started = time.monotonic()
        position = 0
        try:
            for first in range(0, len(to_run), MAX_CALLS_SCHEDULED):
                group = to_run[first : first + MAX_CALLS_SCHEDULED]
                async with StreamingExecution(self._executor, ctx, interrupts=self._interrupts) as stream:
                    for index in group:
                        stream.add(blocks[index])
                    stream.close()
                    # Closed here, not left to the garbage collector: asyncio finalizes an unfinished
                    # async generator through call_soon_threadsafe (a self-pipe write and an extra wake-up).
                    async with aclosing(stream.results()) as fresh:
                        while position <= group[-1]:
                            block, replay = blocks[position], replays[position]
                            if replay is not None:
                                envelope = self._finish(block, replay, started, replayed=True)
                            else:
                                envelope = self._finish(block, await anext(fresh), started, replayed=False)
                            position += 1  # its call line is written: it ended
                            yield envelope
        except BaseException as exc:  # cancelled, or the caller stopped reading: say which never ended
            unended = [b for b, r in zip(blocks[position:], replays[position:], strict=True) if r is None]
            self._transcribe_cut_short(unended, started, exc)
            raise
        for block, replay in zip(blocks[position:], replays[position:], strict=True):
            assert replay is not None  # every call to run was in a group
            yield self._finish(block, replay, started, replayed=True)
        self._save_state()

    async def _run_alone(
        self, block: ToolUseBlock, size: int, *, interrupted: bool, run_slot: RunSlot | None = None
    ) -> ResultEnvelope:
        """The common message: one call with no recorded result, run in this task -- what
        `stream` does for it (no scheduling to do), as one coroutine: `run_envelopes` then
        makes no async generator per message."""
        ctx = self._fresh_context()
        if interrupted:
            ctx.abort.set()
        assert self._executor is not None and self._interrupts is not None
        # Written before the call runs (see `stream`): a reopened session knows it may have run.
        call = self._transcribe_start(block, size)
        started = time.monotonic()
        try:
            envelope = await run_single(self._executor, ctx, block, self._interrupts, run_slot)
        except BaseException as exc:
            self._transcribe_cut_short([block], started, exc)
            raise
        finished = self._finish(block, envelope, started, replayed=False, call=call)
        self._save_state()
        return finished

    def _fresh_context(self) -> ToolContext:
        """The session context for a new message: an abort event an earlier interrupt set is replaced."""
        ctx = self.context
        if ctx.abort.is_set():
            ctx.abort = anyio.Event()
        if self._interrupts is not None:
            self._interrupts.rearm()  # also follows a set event someone else replaced meanwhile
        return ctx

    def _finish(
        self,
        block: ToolUseBlock,
        envelope: ResultEnvelope,
        started: float,
        *,
        replayed: bool,
        call: str | None = None,
    ) -> ResultEnvelope:
        """Record a call that ran (a resend is answered from it) and write its transcript line.

        ``call``: the call's fields as its start line wrote them (`_transcribe_start`).
        """
        assert self._executor is not None
        model = _result_dump(envelope.model)
        if len(self._dumped) >= 256:  # bounded: callers of `stream` never collect theirs
            self._dumped.clear()
        self._dumped[id(envelope)] = (envelope, model)
        running = None if replayed else self._running.pop(block.id, None)
        ran = not replayed and block.id in self._executor.executed
        if ran:
            # Only calls that ran are recorded: re-running a refused or invalid call is harmless.
            self._executor.executed.discard(block.id)
            kept = running[1] if running is not None and running[0] is block.input else _UNKEPT
            self._record(block.id, block.name, block.input, envelope, kept)
        facts = self._executor.facts.pop(block.id, {}) if not replayed else {}
        if not facts.keys().isdisjoint(_CALL_LINE_KEYS):  # a fact named like a field: as a dict merges it
            self._transcribe(
                {
                    "type": "call",
                    "tool_use_id": block.id,
                    "tool_name": block.name,
                    "input": block.input,
                    "ran": ran,
                    "replayed": replayed,
                    "is_error": envelope.is_error,
                    **facts,
                    "elapsed_s": round(time.monotonic() - started, 3),
                    "total_chars": envelope.total_chars,
                    "persisted_path": envelope.persisted_path,
                    "model": model,
                    "ui": envelope.ui,
                    "audit": envelope.audit,
                }
            )
            return envelope
        ui = _json_str(envelope.ui)
        path = envelope.persisted_path
        self._append_line(
            '{"ts": '
            + repr(time.time())
            + _CALL_TYPE
            + (call if call is not None else _call_fields(block))
            + (_RAN if ran else _NOT_RAN)
            + (_REPLAYED if replayed else _NOT_REPLAYED)
            + (_IS_ERROR if envelope.is_error else _NO_ERROR)
            + (", " + _facts_json(facts) if facts else "")
            + ', "elapsed_s": '
            + repr(round(time.monotonic() - started, 3))
            + ', "total_chars": '
            + repr(envelope.total_chars)
            + ', "persisted_path": '
            + ("null" if path is None else _json_str(path))
            + ', "model": '
            + _result_json(model)
            + ', "ui": '
            + ui
            + ', "audit": '
            + (ui if envelope.audit is envelope.ui else _json_str(envelope.audit))
            + "}\n"
        )
        return envelope

    # --- persisted session state ----------------------------------------------------------
    def _save_state(self) -> None:
        """Write what a conversation cannot carry to ``<session_dir>/state.json`` (atomically, mode 0600)."""
        ctx = self.context
        path = self._state_path
        # No tool discovered (the common session): the order is empty without building it.
        order = discovery_order(ctx) if ctx.discovered_tools else []
        todos = ctx.tool_state.get(_todo_key(), [])
        # The state is made of frozen records (read records, todo items) and strings: when the
        # same ones are there, the text is the same. Compared before dumping, as most calls
        # change nothing, and dumping every read record on every call grew with the session.
        inputs = (ctx.cwd, tuple(ctx.read_state.items()), tuple(order), tuple(todos))
        # The file is looked for on every call (one `stat` of its name as a str): one removed
        # meanwhile is written again.
        if inputs == self._saved_inputs and os.path.exists(self._state_name):
            return
        state = {
            "version": 1,
            "session_id": self.session_id,
            "cwd": ctx.cwd,
            "read_state": {k: v.model_dump() for k, v in ctx.read_state.items() if v != STALE_READ},
            "discovered_tools": order,
            "todos": [t.model_dump() for t in todos],
        }
        text = json.dumps(state)
        if text == self._saved_state and os.path.exists(self._state_name):
            self._saved_inputs = inputs
            return  # most calls change nothing here; the atomic rename costs more than the call itself
        tmp = path.with_name(f".{STATE_FILE}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            os.replace(tmp, path)
            self._saved_state = text
            self._saved_inputs = inputs
        except OSError as exc:  # never fail a call over bookkeeping; say so
            log.warning("could not save the session state to %s: %s", path, exc)
            with suppress(OSError):
                tmp.unlink()

    def _load_state(self) -> None:
        """Reopen a session: adopt its persisted cwd, read state, discovered tools and todos."""
        from shellrt.tools.todo_write import STATE_KEY as TODO_KEY
        from shellrt.tools.todo_write import TodoItem
        from shellrt.tools.tool_search import ORDER_KEY

        path = self.session_dir / STATE_FILE
        if not path.is_file():
            return
        try:
            state = json.loads(path.read_text())
            if state.get("session_id") != self.session_id:
                return
            ctx = self.context
            for key, record in dict(state.get("read_state", {})).items():
                ctx.read_state[str(key)] = FileReadRecord.model_validate(record)
            order = [str(n) for n in state.get("discovered_tools", [])]
            ctx.discovered_tools.update(order)
            ctx.tool_state[ORDER_KEY] = order
            ctx.tool_state[TODO_KEY] = [TodoItem.model_validate(t) for t in state.get("todos", [])]
            self._load_transcript()
            if self._task_registry is not None:  # tasks an earlier owner started: dead ones said so
                self.diagnostics.extend(self._task_registry.reopen())
            cwd = state.get("cwd")
            # A directory that vanished meanwhile is handled by the supervisor (back to the workspace).
            if isinstance(cwd, str) and self.supervisor is not None:
                self.supervisor.set_cwd(cwd)
                ctx.cwd = self.supervisor.cwd
        except (OSError, ValueError) as exc:
            note = f"session state {path} is unreadable ({exc}); starting this session afresh"
            self.diagnostics.append(note)
            log.warning("%s", note)

    def _load_transcript(self) -> None:
        """Recorded results of a reopened session: calls that ran, and calls a crash cut short."""
        path = self.transcript_path
        if not path.is_file():
            return
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - MAX_TRANSCRIPT_REPLAY_BYTES))
            data = fh.read()
        if size > MAX_TRANSCRIPT_REPLAY_BYTES:
            data = data.split(b"\n", 1)[-1]  # drop the partial first line
        unfinished: dict[str, tuple[str, Any]] = {}
        for raw in data.splitlines():
            try:
                entry = json.loads(raw)
            except ValueError:
                continue  # a line cut by the crash
            if not isinstance(entry, dict):
                continue
            use_id, name = str(entry.get("tool_use_id", "")), str(entry.get("tool_name", ""))
            if entry.get("type") == "start":
                unfinished[use_id] = (name, bounded_input(entry.get("input")))  # an older line (round 39)
            elif entry.get("type") == "call":
                unfinished.pop(use_id, None)
                if entry.get("ran") and isinstance(entry.get("model"), dict):
                    try:
                        model = ToolResultBlock.model_validate(entry["model"])
                    except ValueError:
                        continue
                    text = model.text()
                    envelope = ResultEnvelope(
                        tool_use_id=use_id,
                        tool_name=name,
                        model=model,
                        ui=text,
                        audit=text,
                        total_chars=len(text),
                    )
                    self._record(use_id, name, bounded_input(entry.get("input")), envelope)
        for use_id, (name, tool_input) in unfinished.items():
            self._record(use_id, name, tool_input, error_envelope(use_id, name, MISSING_RESULT))

    def _tasks_changed(self) -> None:
        """A background task was added, read or stopped: persist the registry, watch new tasks end."""
        from shellrt.runtime.leftovers import watch_task_end
        from shellrt.supervisor import TaskStatus

        assert self._task_registry is not None and self.supervisor is not None
        self._task_registry.save()
        tasks = self.supervisor.tasks
        if self._leftovers is not None:
            self._leftovers.note(tasks)
        try:
            for task in tasks.list():
                if task.id in self._watched_tasks or task.status is not TaskStatus.RUNNING:
                    continue
                if tasks.execution(task.id) is not None and self._task_watchers is not None:
                    self._task_watchers.start_soon(watch_task_end, tasks, self._task_registry, task.id)
                    self._watched_tasks.add(task.id)
        except RuntimeError as exc:  # the session is closing: its final save records the end
            log.warning("could not watch a background task's end: %s", exc)

    @property
    def transcript_path(self) -> Path:
        """This session's transcript: one JSON line per call (mode 0600: results may hold secrets)."""
        return self.session_dir / TRANSCRIPT_FILE

    def _transcribe(self, entry: dict[str, Any]) -> None:
        # ASCII: a lone surrogate (a file name that is not UTF-8) is escaped, never an encode error.
        self._append_line(_TRANSCRIPT_LINE({"ts": time.time(), **entry}) + "\n")

    def _transcribe_start(self, block: ToolUseBlock, size: int | None = None) -> str:
        """Write a call's start line; return its fields as JSON text (its call line repeats them).

        The line is what `_transcribe` makes of ``{"type": "start", "tool_use_id": …,
        "tool_name": …, "input": …}``, put together from its encoded pieces.
        """
        call = _call_fields(block)  # first: nothing is noted "running" for a call that never starts
        self._starting(block, size)
        self._append_line('{"ts": ' + repr(time.time()) + ', "type": "start", ' + call + "}\n")
        return call

    def _transcribe_cut_short(
        self, blocks: Sequence[ToolUseBlock], started: float, exc: BaseException
    ) -> None:
        """A line for each started call that never got its result (the caller cancelled, or
        stopped reading): without it the audit showed a start line only, the same as a crash,
        and a resend that ran the call again looked like its first run (red team round 16).
        A reopened session still answers such a call's resend with an error (no call line)."""
        for block in blocks:
            self._running.pop(block.id, None)
            self._transcribe(
                {
                    "type": "cut_short",
                    "tool_use_id": block.id,
                    "tool_name": block.name,
                    "why": type(exc).__name__,
                    "elapsed_s": round(time.monotonic() - started, 3),
                }
            )

    def _append_line(self, line: str) -> None:
        """Append one finished JSON line (ASCII) to the transcript; a failure is logged, not raised."""
        try:
            self._transcript.append(line.encode())
        except OSError as exc:  # a full disk must not fail the call; say so once per failure
            log.warning("could not append to the transcript %s: %s", self.transcript_path, exc)

    def streaming(self) -> StreamingExecution:
        """A streaming executor: ``add()`` blocks as they arrive, iterate ``results()``."""
        assert self._executor is not None, "the runtime is not started"
        return StreamingExecution(self._executor, self._fresh_context(), interrupts=self._interrupts)

    def interrupt(self) -> None:
        """Interrupt the running message: cancel-type tools stop, block-type tools finish."""
        self.context.abort.set()

    def _persistence_exempt(self) -> frozenset[str]:
        # Registered names, each tool asked guardedly: the calls have run, their results must stand.
        return self.registry.names_where(lambda t: t.max_result_chars is None)


#: A transcript line's JSON (what ``json.dumps(..., ensure_ascii=True, default=str)`` makes),
#: with one encoder for the session instead of a new one per line (two lines per call).
_TRANSCRIPT_LINE = json.JSONEncoder(ensure_ascii=True, default=str).encode
#: A string as `_TRANSCRIPT_LINE` encodes it (the encoder's own function for ``str``).
_json_str: Callable[[str], str] = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]

# A call line is the JSON `_transcribe` makes of its fields, in their order; the fixed pieces
# are written out once here (the encoder's separators: ", " and ": "; floats as ``repr``).
_CALL_TYPE = ', "type": "call", '
_RAN, _NOT_RAN = ', "ran": true', ', "ran": false'
_REPLAYED, _NOT_REPLAYED = ', "replayed": true', ', "replayed": false'
_IS_ERROR, _NO_ERROR = ', "is_error": true', ', "is_error": false'
#: The call line's own fields: a fact of the same name replaces one in place (a dict merge).
_CALL_LINE_KEYS = frozenset(
    (
        "ts", "type", "tool_use_id", "tool_name", "input", "ran", "replayed", "is_error",
        "elapsed_s", "total_chars", "persisted_path", "model", "ui", "audit",
    )
)  # fmt: skip


#: A text result block's dump, in its fields' order (`ToolResultBlock` with ``str`` content).
_TEXT_RESULT_KEYS = ("type", "tool_use_id", "content", "is_error")


def _result_dump(block: ToolResultBlock) -> dict[str, Any]:
    """``block.model_dump(mode="json")``: a text result's (every shell call's) made directly from
    its four fields (~1 us against pydantic's ~3-5 us); a subclass, content of another type or
    a field of a type validation would not have left goes through pydantic."""
    content, use_id, is_error = block.content, block.tool_use_id, block.is_error
    if (
        type(block) is ToolResultBlock
        and type(content) is str
        and type(use_id) is str
        and type(is_error) is bool
        and block.type == "tool_result"
    ):
        return {"type": "tool_result", "tool_use_id": use_id, "content": content, "is_error": is_error}
    return block.model_dump(mode="json")


def _result_json(model: dict[str, Any]) -> str:
    """`_TRANSCRIPT_LINE` of a result block's dump: a text result's (every shell call's) put
    together from its encoded pieces (~3 us against the encoder's ~14 us at load); any other
    shape goes through the encoder."""
    use_id, content, is_error = model.get("tool_use_id"), model.get("content"), model.get("is_error")
    if (
        type(content) is str
        and type(use_id) is str
        and type(is_error) is bool
        and model.get("type") == "tool_result"
        and tuple(model) == _TEXT_RESULT_KEYS
    ):
        return (
            '{"type": "tool_result", "tool_use_id": '
            + _json_str(use_id)
            + ', "content": '
            + _json_str(content)
            + (', "is_error": true}' if is_error else ', "is_error": false}')
        )
    return _TRANSCRIPT_LINE(model)


def _call_fields(block: ToolUseBlock) -> str:
    """``"tool_use_id": …, "tool_name": …, "input": …`` of a call, as its transcript lines hold them."""
    return (
        '"tool_use_id": '
        + _json_str(block.id)
        + ', "tool_name": '
        + _json_str(block.name)
        + ', "input": '
        + _carried_input_json(block.input)
    )


def _carried_input_json(value: Any) -> str:
    """`_input_json`, or a JSON string naming why no JSON can carry ``value`` (nested past the
    recursion limit, cyclic, a key that is not a scalar, an int past 4,300 digits): the start line
    encoded it before the executor refused the one call, and the whole message ended (round 35)."""
    try:
        return _input_json(value)
    except (ValueError, TypeError, RecursionError) as exc:
        return _json_str(f"<an input no JSON can carry: {type(exc).__name__}>")


#: How `_TRANSCRIPT_LINE` writes a value of exactly this type (a subclass may override ``repr``).
_SCALAR_JSON: dict[type, Callable[[Any], str]] = {
    str: _json_str,
    int: int.__repr__,
    bool: lambda v: "true" if v else "false",
    type(None): lambda v: "null",
}

#: id -> (the tuple of ``str``, its JSON): a memoised decision hands every call the same chain
#: tuple, encoded once. Sound by identity: the entry holds the tuple (its id cannot be reused)
#: and a tuple of ``str`` cannot change. Bounded (cleared when full).
_TUPLE_JSON: dict[int, tuple[tuple[str, ...], str]] = {}
_TUPLE_JSON_MAX = 64


def _strings_json(value: tuple[Any, ...] | list[Any]) -> str | None:
    """A tuple or list of ``str`` as `_TRANSCRIPT_LINE` writes it (None: another element type)."""
    if type(value) is tuple:
        hit = _TUPLE_JSON.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
    if not all(type(item) is str for item in value):
        return None
    text = "[" + ", ".join([_json_str(item) for item in value]) + "]"
    if type(value) is tuple:
        if len(_TUPLE_JSON) >= _TUPLE_JSON_MAX:
            _TUPLE_JSON.clear()
        _TUPLE_JSON[id(value)] = (value, text)
    return text


def _facts_json(facts: dict[str, Any]) -> str:
    """`_TRANSCRIPT_LINE` of a call's recorded facts without its braces (the call line's middle):
    scalars, flat inputs (`_input_json`) and lists or tuples of ``str`` (the decision's chain)
    from their pieces; any other value sends the whole through the encoder."""
    parts = []
    for key, value in facts.items():
        kind = type(value)
        encode = _SCALAR_JSON.get(kind)
        if type(key) is not str:
            text = None
        elif encode is not None:
            text = encode(value)
        elif kind is dict:
            text = _input_json(value)
        elif kind is tuple or kind is list:
            text = _strings_json(value)
        else:
            text = None
        if text is None:
            return _TRANSCRIPT_LINE(facts)[1:-1]
        parts.append(_json_str(key) + ": " + text)
    return ", ".join(parts)


def _input_json(value: Any) -> str:
    """`_TRANSCRIPT_LINE` of a call's input: a flat object of ``str`` keys and ``str``/``int``/
    ``bool``/``None`` values (a shell call's ``{"command": …, "timeout": …}``) from its encoded
    pieces (~2 us against the encoder's ~4-7 us); any other shape (nested, a float, a subclass,
    a key of another type) goes through the encoder."""
    if type(value) is dict:
        parts = []
        for key, item in value.items():
            encode = _SCALAR_JSON.get(type(item))
            if encode is None or type(key) is not str:
                break
            parts.append(_json_str(key) + ": " + encode(item))
        else:
            return "{" + ", ".join(parts) + "}"
    return _TRANSCRIPT_LINE(value)


def _widening_check(settings: Any, workspace: Path) -> Callable[[str, Path | None], bool]:
    """Who may open the sandbox's network: trusted sources, and under managed-only only managed ones."""
    from shellrt.runtime.sandbox_policy import workspace_trust_check

    trusted = workspace_trust_check(settings.trust, workspace)
    return lambda source, file: bool(settings.may_widen(source, file)) and trusted(source, file)


def _compiles_as_deny(rule: Any) -> bool:
    """A ``Read`` deny rule: `derive_policy` turns it into a masked path once, at the start. (An
    ``Edit``/``Write`` deny added later is live: the after-command check reverts what it names.)"""
    return bool(rule.kind == "deny" and rule.tool == "Read")


def _sandbox_denies(rules: Any) -> frozenset[tuple[str, str | None]]:
    return frozenset((r.tool, r.specifier) for r in rules if _compiles_as_deny(r))


class _RecordingExecutor(CallExecutor):
    """Notes which tool_use ids actually ran, so only their results are replayed for a resent call."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.executed: set[str] = set()
        #: tool_use id -> what the transcript records beyond the result (decision chain, executed input).
        self.facts: dict[str, dict[str, Any]] = {}
        #: The sandbox's network refusals so far (network 'proxied'); None: not that mode.
        self.network_refusals: Callable[[], list[Any]] | None = None
        #: Why no call may run now (a deny rule the sandbox was not built from), else None.
        self.policy_gap: Callable[[], str | None] | None = None

    def note(self, tool_use_id: str, **facts: Any) -> None:
        self.facts.setdefault(tool_use_id, {}).update(facts)
        while len(self.facts) > MAX_RECORDED_RESULTS:  # calls run outside `stream` are never collected
            self.facts.pop(next(iter(self.facts)))

    async def execute(
        self,
        block: ToolUseBlock,
        ctx: ToolContext,
        *,
        parsed: BaseModel | None = None,
        run_slot: RunSlot | None = None,
    ) -> CallOutcome:
        if self.policy_gap is not None and (gap := self.policy_gap()) is not None:
            return CallOutcome(error_envelope(block.id, block.name, gap), self.registry.get(block.name))
        seen = len(self.network_refusals()) if self.network_refusals is not None else 0
        outcome = await super().execute(block, ctx, parsed=parsed, run_slot=run_slot)
        if outcome.executed:
            self.executed.add(block.id)
        if self.network_refusals is not None and outcome.executed:
            new = self.network_refusals()[seen:]
            if new:  # the audit and UI faces say what the proxy refused while this call ran
                lines = "\n".join(
                    f"[network] blocked {r.host}:{r.port} ({r.reason}); {r.fix()}"
                    for r in new
                )
                env = outcome.envelope
                outcome.envelope = env.model_copy(
                    update={
                        "ui": f"{env.ui}\n{lines}" if env.ui else lines,
                        "audit": f"{env.audit}\n{lines}" if env.audit else lines,
                    }
                )
        return outcome


def _id_reused(tool_use_id: str, what: str) -> str:
    """The error for a call under an id this session already used."""
    return (
        f"Not run: tool_use id {tool_use_id!r} {what}; in a session an id names one call. Give every new "
        "tool_use a new id (a resend of the same call, same id and input, is answered from its record)."
    )


def _result_model(block: dict[str, Any]) -> ToolResultBlock:
    """A restored tool_result as the model it is recorded as; `MessageFormatError` when it is not one."""
    try:
        return ToolResultBlock.model_validate(
            {k: block[k] for k in ("tool_use_id", "content", "is_error") if k in block}
        )
    except ValidationError as exc:
        raise MessageFormatError(
            f"tool_result {block.get('tool_use_id')!r} is malformed ({exc.error_count()} problem(s), first: "
            f"{exc.errors(include_url=False)[0]['msg']}); its content must be a string or a list of text and "
            "image blocks. Nothing was restored"
        ) from None


#: An input counted past this (`input_chars`) is kept as a digest of its JSON, not whole (`_kept_input`).
KEPT_WHOLE_CHARS = 4096


@dataclass(frozen=True)
class _InputDigest:
    """What a session keeps of a large input: the SHA-256 of its canonical JSON (empty: it had none)."""

    sha256: bytes


@dataclass(frozen=True)
class _InputText:
    """What a session keeps of a small input: its canonical JSON (None: it had none). Text, never
    the caller's object: a dict changed in place after its start changed the record with it, and a
    new call sent under the old id was answered with the old call's result (round 40, review14)."""

    text: str | None


def _kept_input(value: Any, size: int | None = None) -> _InputText | _InputDigest:
    """``value``'s canonical JSON when small, else its `_InputDigest`: the session keeps the inputs of
    its last 2,000 calls to tell a resend from a reused id, and 48 refused calls of 1 Mi characters
    held 48 MiB for good (2,000 of 4 Mi characters, 8-32 GB; red team round 39, the lead: review9's
    Left). Either is a copy made now: what started, whatever the caller does with its object after.
    ``size``: the value's whole `input_chars` when already counted (past the bound whenever this
    count is: a count stops only beyond its limit)."""
    if (input_chars(value, KEPT_WHOLE_CHARS) if size is None else size) <= KEPT_WHOLE_CHARS:
        text = _canonical(value)
        if text is None or len(text) <= KEPT_WHOLE_CHARS:
            return _InputText(text)
        # \u escapes made it longer (up to 12 bytes a character): a digest of it, as a large input's
        return _InputDigest(hashlib.sha256(text.encode()).digest())
    return _InputDigest(_digest(value))


def _canonical(value: Any) -> str | None:
    try:
        return str(_CANONICAL(value))
    except (ValueError, TypeError, RecursionError):  # no JSON: never the same call as another
        return None


def _digest(value: Any) -> bytes:
    text = _canonical(value)
    return b"" if text is None else hashlib.sha256(text.encode()).digest()


def _same_input(recorded: Any, given: Any, digested: list[bytes] | None = None) -> bool:
    """Whether ``given`` is the same JSON as the input ``recorded`` kept (`_kept_input`): Python's
    ``1 == 1.0 == True`` is not (a server tells them apart). ``digested``: holds the given input's
    digest once made, for the next comparison of the same given input."""
    if isinstance(given, _InputDigest | _InputText):
        return False
    if isinstance(recorded, _InputText):
        if recorded.text is None:
            return False
        # A small input's count bounds a same one's: a large given is told apart without encoding it.
        return input_chars(given, KEPT_WHOLE_CHARS) <= KEPT_WHOLE_CHARS and _canonical(given) == recorded.text
    if not isinstance(recorded, _InputDigest) or not recorded.sha256:
        return False
    if digested is None:
        return _digest(given) == recorded.sha256
    if not digested:
        digested.append(_digest(given))
    return digested[0] == recorded.sha256


def _sized_blocks(blocks: Sequence[ToolUseBlock]) -> list[tuple[ToolUseBlock, int]]:
    """``blocks`` checked, bounded and counted (`sized_block`); `MessageFormatError` when two share an
    id, as `parse_tool_uses` refuses for `Runtime.run`: every `_replay` answer is worked out before
    any block starts, so both ran (round 40, review14: `run_envelopes` and `stream` ran it twice)."""
    sized = [sized_block(checked_block(block)) for block in blocks]
    seen: set[str] = set()
    for block, _size in sized:
        if block.id in seen:
            raise MessageFormatError(
                f"duplicate tool_use id {block.id!r}: every tool_use needs a unique id (none of this message ran)"
            )
        seen.add(block.id)
    return sized


#: Inputs as JSON text with sorted keys, for `_same_input` (``1``, ``1.0`` and ``true`` stay apart).
_CANONICAL = json.JSONEncoder(sort_keys=True, default=repr).encode

#: A session id is one path component: it names a directory under the session root.
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def _checked_session_id(session_id: str) -> str:
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise ValueError(
            f"session id {session_id!r} is not one plain name: use 1 to 128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (it names a directory under the session root)"
        )
    return session_id


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


def _block_of(
    envelope: ResultEnvelope, dumped: dict[int, tuple[ResultEnvelope, dict[str, Any]]]
) -> dict[str, Any]:
    """The envelope's model block as JSON data: the dump `_finish` made of this very envelope, or a new one."""
    found = dumped.get(id(envelope))
    if found is not None and found[0] is envelope:
        return found[1]
    return envelope.model.model_dump(mode="json")


_TODO_KEY: str | None = None


def _todo_key() -> str:
    """The todo list's key in ``tool_state``, imported once (not per call: `_save_state` runs
    after every message, and an import statement in its body cost that on each)."""
    global _TODO_KEY
    if _TODO_KEY is None:
        from shellrt.tools.todo_write import STATE_KEY

        _TODO_KEY = STATE_KEY
    return _TODO_KEY
