"""Command hooks (``PreToolUse``, ``PostToolUse``, ``PostToolUseFailure``, ``PermissionRequest``).

Same shapes as Claude Code, so a team's hook scripts work unchanged: a JSON
object on stdin (``session_id``, ``cwd``, ``hook_event_name``, ``tool_name``,
``tool_input``, ``tool_response`` for post hooks, ``permission_mode``), and an
answer by exit code (0 ok, 2 block with stderr shown to the model, anything
else a non-blocking error) or by JSON on stdout:
``hookSpecificOutput.permissionDecision`` (allow/deny/ask) with
``permissionDecisionReason``, ``updatedInput``, ``additionalContext``,
``updatedMCPToolOutput`` (PostToolUse: replaces an MCP tool's output), the
older top-level ``decision: "block"`` / ``"approve"`` with ``reason``, and
``continue: false`` with ``stopReason`` (treated as a block).

Matching hooks run in parallel; the most restrictive answer wins
(block/deny > ask > allow). A hook's allow is only a verdict handed to the
engine, where it comes after every deny and ask rule. A hook that fails to
start, exits with another code, times out or prints something that is not a
valid answer yields a `HookNotice`, and the call proceeds as if that hook had
not answered — never as if it had allowed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import BaseModel

from shellrt.permissions.hook_env import hook_env
from shellrt.permissions.hook_files import WHOLE_WORKSPACE, HookFiles, compare_hook_files, hook_files
from shellrt.permissions.hook_matchers import NAMES_ONLY, matcher_problem
from shellrt.permissions.hook_rewrites import observed
from shellrt.permissions.hookproc import MAX_HOOK_OUTPUT, run_hook_process
from shellrt.permissions.interfaces import (
    HookNotice,
    HookRunner,
    PermissionDecision,
    PermissionRequestOutcome,
    PostToolUseOutcome,
    PreToolUseOutcome,
)
from shellrt.permissions.rules import mcp_name_parts
from shellrt.permissions.settings import GUARD_EVENTS, HookEvent, HookSpec
from shellrt.permissions.start_digests import StartDigests
from shellrt.permissions.start_digests import active as active_digests
from shellrt.permissions.strict_json import StrictJsonError, strict_loads
from shellrt.permissions.tool_names import names_of
from shellrt.permissions.tree_guard import TreeGuard
from shellrt.permissions.writable_files import RootsFiles, root_file_paths, roots_changed, roots_files
from shellrt.protocol import ToolContext

__all__ = ["DEFAULT_HOOK_TIMEOUT_S", "CommandHookRunner", "matcher_matches"]

DEFAULT_HOOK_TIMEOUT_S = 60.0
_NAMES_ONLY = NAMES_ONLY
_RANK = {"allow": 1, "ask": 2, "deny": 3}
#: Events whose hooks decide whether a call runs (``onFailure: "block"`` applies to them).
_GUARD_EVENTS = GUARD_EVENTS
#: Rewrites of one input by PreToolUse hooks before it must settle (each runs every hook again).
_MAX_PRE_REWRITES = 3
#: Longest tool name a regex matcher is run on (model APIs take 64 characters; MCP names are the
#: server's choice). Longer names match every regex matcher.
_MAX_REGEX_MATCHED_NAME = 256


def matcher_matches(matcher: str, tool_name: str) -> bool:
    """Exact name, ``A|B`` names, or a regex (full match); empty or ``*`` matches every tool.
    ``mcp__<server>`` and ``mcp__<server>__*`` name every tool of the server, as in rules.

    Raises `re.error` for an invalid regex (the runner reports and drops such hooks at load).
    """
    m = matcher.strip()
    if m in ("", "*"):
        return True
    names = names_of(tool_name)  # a guard on ``KillShell`` guards TaskStop (round 12)
    if m.endswith("__*") and _NAMES_ONLY.match(m[:-3]):
        return _names_server(m, tool_name)  # the rule form mcp__server__*; as a regex it named no tool
    if _NAMES_ONLY.match(m):
        words = m.split("|")
        return any(name in words for name in names) or any(_names_server(w, tool_name) for w in words)
    if len(tool_name) > _MAX_REGEX_MATCHED_NAME:
        # Python's backtracking ``re`` on the event loop: ``mcp__.*__.*_write`` (two repeats, not
        # refused at load) costs the square of the name's length, and an MCP server names its tools
        # (300,000 characters: minutes, every call). No model API takes such a name; the hook runs
        # and judges the call itself, which is the safe side for a guard (red team round 33).
        return True
    return any(re.fullmatch(m, name) is not None for name in names)


def _names_server(word: str, tool_name: str) -> bool:
    """Whether ``word`` is ``mcp__<server>`` (or ``mcp__<server>__*``) naming ``tool_name``'s server.

    No tool is named ``mcp__<server>``: written as rules write it, a guard matched nothing and the
    server's tools ran unguarded (round 15). Split as rules split names (`mcp_name_parts`)."""
    if not (word.startswith("mcp__") and tool_name.startswith("mcp__")):
        return False
    server, tool = mcp_name_parts(word)
    return bool(server) and tool in (None, "*") and mcp_name_parts(tool_name)[0] == server


@dataclass
class _Answer:
    """One hook's parsed answer; all fields empty means "did not answer"."""

    hook: str
    decision: Literal["allow", "deny", "ask"] | None = None
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    context: str | None = None
    notice: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: ``updatedMCPToolOutput`` (PostToolUse only; None when not given).
    mcp_output: Any = None


class CommandHookRunner(HookRunner):
    """Runs the command hooks from settings. ``specs`` in source-precedence order."""

    def __init__(
        self,
        specs: Sequence[HookSpec],
        *,
        workspace: Path,
        mode: str = "default",
        default_timeout: float = DEFAULT_HOOK_TIMEOUT_S,
        diagnostics: list[str] | None = None,
        workspace_hooks: Mapping[str, HookFiles] | None = None,
    ) -> None:
        self.workspace = workspace
        #: Hook commands of trusted workspace settings -> the workspace files they run, as
        #: trusted: checked before each run, and run from the workspace root (relative paths in
        #: them must name the files that were trusted, wherever the session's cwd is).
        self.workspace_hooks = dict(workspace_hooks or {})
        self.mode = mode
        self.default_timeout = default_timeout
        self.diagnostics = diagnostics if diagnostics is not None else []
        self.specs: list[HookSpec] = []
        #: A PreToolUse or PermissionRequest hook was dropped for a matcher that matches no tool as
        #: written: it may be the guard that mattered, so the session is degraded (round 28).
        self.lost_guard = False
        for spec in specs:
            problem = matcher_problem(spec.matcher)
            if problem is not None:
                guard = spec.event in _GUARD_EVENTS
                self.lost_guard = self.lost_guard or guard
                self.diagnostics.append(
                    f"{spec.origin.describe()}: {problem}; hook ignored"
                    + ("; allow rules, hook allows and bypass mode are disabled until it is fixed" if guard else "")
                )
                continue
            self.specs.append(spec)
        #: Every other hook command (the operator's own: user, ``--settings``, managed) -> the
        #: workspace files it runs, as the session found them. It runs on the host, so a file a
        #: sandboxed command rewrote (``scripts/fmt.sh`` of ``"$CLAUDE_PROJECT_DIR"/scripts/fmt.sh``)
        #: must not run through it: checked before each run, as trusted workspace hooks are.
        # Both records below are taken now, before any command: one hash of each path serves
        # both (a hook's node_modules was hashed once for each, round 45), unless records are
        # already being taken under a shared memo (the session start's).
        with contextlib.nullcontext() if active_digests() is not None else StartDigests().recording():
            self.session_hooks: dict[str, HookFiles] = {
                command: hook_files(workspace, [command])
                for command in dict.fromkeys(spec.command for spec in self.specs)
                if command not in self.workspace_hooks
            }
            #: Every hook command -> what it runs from each root a sandboxed command may write (the
            #: workspace until `watch_writable_roots` names them all), as the session found it.
            self.writable_found: dict[str, RootsFiles] = {}
            self.watch_writable_roots([workspace])
        #: Hooks refused because they load a workspace an earlier session left changed.
        self._whole_refused: dict[str, str] = {}

    def watch_writable_roots(self, roots: Sequence[Path]) -> None:
        """Hash, as they are now, the files every hook runs from ``roots`` (all the roots the
        session's commands may write; the runtime calls this before any command runs): a hook
        whose files there change is not run (`shellrt.permissions.writable_files`)."""
        commands = dict.fromkeys(spec.command for spec in self.specs)
        self.writable_roots: list[Path] = [self.workspace, *roots]
        self.writable_found = {
            command: roots_files([self.workspace, *roots], [command], base=self.workspace)
            for command in commands
        }

    def whole_workspace_hooks(self) -> list[str]:
        """The operator's hook commands that load the workspace whole (an assignment naming it,
        ``PYTHONPATH=<ws>``): what the session's `TreeGuard` decides on (round 24)."""
        return [c for c, found in self.session_hooks.items() if WHOLE_WORKSPACE in {*found.files, *found.dirs}]

    async def start_session(self, guard: TreeGuard) -> None:
        """Before any command: when a hook loads the workspace whole, join the session's
        ``guard`` (shared with its MCP servers: one hash, in a worker thread; round 25) and refuse
        such hooks when an earlier session left the tree changed (red team round 24: the check
        before each run compares with this session's start only, so the next session ran a
        command's plant). The guard's owner (the `Runtime`) ends it."""
        self._whole_refused = {}
        whole = self.whole_workspace_hooks()
        if whole:
            self._refuse_whole(whole, await guard.begin())

    def _refuse_whole(self, whole: list[str], why: str | None) -> None:
        if why is not None:
            why = (
                f"it loads the workspace {self.workspace} whole on the host, outside the sandbox, and {why}: "
                f"a command may have planted code there; review the workspace's changes, then run "
                f"`shellrt trust add {self.workspace}` to run it again, or name in it only the directories it needs"
            )
            self._whole_refused = dict.fromkeys(whole, why)

    def host_run_files(self) -> list[Path]:
        """The files the hooks run from a writable root (found by `watch_writable_roots`).

        Why: the check before each run compares them with the session's start, so a command's
        rewrite was only caught in this session; the next one hashed the rewrite as it found it
        and ran it (red team round 17). The runtime makes them protected files: reverted."""
        found = {p: None for in_roots in self.writable_found.values() for p in root_file_paths(in_roots)}
        return [Path(p) for p in found]

    def matching(self, event: HookEvent, tool_name: str) -> list[HookSpec]:
        """Hooks for this event and tool, config order, duplicates (same command) run once —
        as a guard (``onFailure: "block"``) when any of its entries says so."""
        found: dict[str, HookSpec] = {}
        for spec in self.specs:
            if spec.event != event or not matcher_matches(spec.matcher, tool_name):
                continue
            first = found.setdefault(spec.command, spec)
            if spec.on_failure == "block" and first.on_failure != "block":
                found[spec.command] = replace(first, on_failure="block")
        return list(found.values())

    def runs_for(self, event: str, tool_name: str) -> bool:
        return any(spec.event == event and matcher_matches(spec.matcher, tool_name) for spec in self.specs)

    # --- the three entry points ----------------------------------------------------
    async def pre_tool_use(
        self, tool_name: str, tool_input: dict[str, Any], ctx: ToolContext
    ) -> PreToolUseOutcome:
        """Every matching hook's verdict on the input that will run.

        Hooks run in parallel, so when one rewrote the input the others had judged the old one: an
        operator's guard never saw the command that ran, and an approving hook's allow carried over
        to the rewrite (red team round 28). Now the other hooks run again on the rewrite (the
        rewriting hook's verdict is on its own output), until no hook rewrites; an input still
        changing after `_MAX_PRE_REWRITES` rewrites is blocked."""
        current, rewritten = tool_input, False
        seen: dict[str, Any] = tool_input  # ``current`` as the hooks judge it: paths resolved
        kept: list[_Answer] = []  # the rewriting hook's answer: its verdict is on ``current``
        skip: frozenset[str] = frozenset()
        notices: list[HookNotice] = []
        for _ in range(_MAX_PRE_REWRITES + 1):
            pairs = await self._run_pairs("PreToolUse", tool_name, {"tool_input": seen}, ctx, skip)
            answers = [*kept, *(a for _, a in pairs)]
            changed = [
                (spec, a) for spec, a in pairs
                if a.notice is None and a.updated_input is not None and a.updated_input not in (current, seen)
            ]
            outcome = _pre_outcome(answers)
            if not changed or outcome.blocked_reason is not None:
                outcome.notices = [*notices, *(n for n in outcome.notices if n not in notices)]
                outcome.updated_input = current if rewritten else None
                return outcome
            notices.extend(n for n in outcome.notices if n not in notices)
            first = _first_given(
                [a for _, a in changed],
                lambda a: a.updated_input,
                "several PreToolUse hooks rewrote the input differently",
                notices,
            )
            spec, answer = next((sp, a) for sp, a in changed if a is first)
            current, rewritten = answer.updated_input or {}, True
            view = await observed(current)  # resolved as the model's input was (round 29)
            if isinstance(view, str):
                return _blocked(f"hook `{answer.hook}` rewrote the input badly: {view}", notices)
            seen = view
            kept, skip = [answer], frozenset({spec.command})
        return _blocked(
            f"PreToolUse hooks rewrote the {tool_name} input {_MAX_PRE_REWRITES} times and would rewrite it "
            "again, so no verdict is on the input that would run; make each rewriting hook leave an input "
            "another hook rewrote unchanged",
            notices,
        )

    async def post_tool_use(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        tool_response: Any,
        ctx: ToolContext,
        *,
        failed: bool,
    ) -> PostToolUseOutcome:
        event: HookEvent = "PostToolUseFailure" if failed else "PostToolUse"
        extra = {"tool_input": tool_input, "tool_response": _jsonable(tool_response)}
        if failed:
            extra["error"] = _jsonable(tool_response)
        answers = await self._run(event, tool_name, extra, ctx)
        outcome = PostToolUseOutcome()
        outcome.notices = [HookNotice(hook=a.hook, message=a.notice) for a in answers if a.notice]
        answered = [a for a in answers if a.notice is None]
        outcome.additional_context = [a.context for a in answered if a.context]
        feedback = [
            a.reason or f"hook `{a.hook}` flagged the result" for a in answered if a.decision == "deny"
        ]
        if feedback:
            outcome.feedback = "\n".join(feedback)
        if failed:
            replacing = next((a for a in answered if a.mcp_output is not None), None)
            if replacing is not None:
                outcome.notices.append(
                    HookNotice(
                        hook=replacing.hook,
                        message="updatedMCPToolOutput is honoured for PostToolUse only, not PostToolUseFailure; "
                        "ignored",
                    )
                )
        else:
            first = _first_given(
                answered,
                lambda a: a.mcp_output,
                "several PostToolUse hooks replaced the MCP output differently",
                outcome.notices,
            )
            if first is not None:
                outcome.updated_mcp_tool_output = first.mcp_output
                outcome.updated_mcp_tool_output_by = first.hook
        return outcome

    async def permission_request(
        self, tool_name: str, tool_input: dict[str, Any], ctx: ToolContext, *, reason: str = ""
    ) -> PermissionRequestOutcome:
        answers = await self._run(
            "PermissionRequest", tool_name, {"tool_input": tool_input, "reason": reason}, ctx
        )
        outcome = PermissionRequestOutcome()
        outcome.notices = [HookNotice(hook=a.hook, message=a.notice) for a in answers if a.notice]
        answered = [a for a in answers if a.notice is None and a.decision in ("allow", "deny")]
        denies = [a for a in answered if a.decision == "deny"]
        if denies:
            outcome.behavior = "deny"
            outcome.message = "; ".join(a.reason or f"denied by hook `{a.hook}`" for a in denies)
        elif answered:
            outcome.behavior = "allow"
            outcome.message = "; ".join(a.reason or f"allowed by hook `{a.hook}`" for a in answered)
            outcome.updated_input = next((a.updated_input for a in answered if a.updated_input), None)
        return outcome

    # --- running and parsing ----------------------------------------------------------
    async def _run(
        self, event: HookEvent, tool_name: str, extra: dict[str, Any], ctx: ToolContext
    ) -> list[_Answer]:
        return [answer for _, answer in await self._run_pairs(event, tool_name, extra, ctx)]

    async def _run_pairs(
        self,
        event: HookEvent,
        tool_name: str,
        extra: dict[str, Any],
        ctx: ToolContext,
        skip: frozenset[str] = frozenset(),
    ) -> list[tuple[HookSpec, _Answer]]:
        """Each matching hook (but those whose command is in ``skip``) with its answer."""
        specs = [spec for spec in self.matching(event, tool_name) if spec.command not in skip]
        if not specs:
            return []
        async with _quiet_for_host(ctx) as unpaused:
            if unpaused is not None:  # a command may write what the hook's programs obey: not run
                why = (
                    f"{event} hook not run: the session's running commands could not be paused ({unpaused}), "
                    "and a hook runs on the host, outside the sandbox; stop background tasks with TaskStop"
                )
                return [(spec, _unrun(spec, event, why)) for spec in specs]
            return await self._run_paused(event, tool_name, extra, ctx, specs, _paused_hint(ctx))

    async def _run_paused(
        self,
        event: HookEvent,
        tool_name: str,
        extra: dict[str, Any],
        ctx: ToolContext,
        specs: list[HookSpec],
        paused: str = "",
    ) -> list[tuple[HookSpec, _Answer]]:
        """Run ``specs`` (the session's commands paused and the protected files swept; ``paused``:
        what a timed-out hook's notice adds, as one may have waited on a paused command)."""
        payload: dict[str, Any] = {
            "session_id": ctx.session_id,
            "transcript_path": str(
                Path(ctx.session_dir) / "transcript.jsonl"
            ),  # runtime.session.TRANSCRIPT_FILE
            "cwd": ctx.cwd,
            "hook_event_name": event,
            "permission_mode": self.mode,
            "tool_name": tool_name,
            "tool_use_id": ctx.tool_use_id,
            **extra,
        }
        data = json.dumps(
            payload, ensure_ascii=True, default=str
        ).encode()  # ASCII: a lone surrogate is escaped, never an encode error
        answers: list[_Answer | None] = [None] * len(specs)
        # A hook runs on the host and looks its own programs up (``jq`` in a guard script,
        # ``python3``): never through a PATH entry commands write (round 16).
        env = hook_env(os.environ, self.writable_roots)  # and PYTHONPATH, LD_LIBRARY_PATH… (round 33)
        env.update(
            SHELLRT_PROJECT_DIR=str(self.workspace),
            CLAUDE_PROJECT_DIR=str(self.workspace),
            SHELLRT_HOOK_EVENT=event,
        )
        # Hooks run on the host in the session's cwd, a directory commands write: Python would put it
        # first on sys.path for ``python3 -c``/``-m``, so a planted ``json.py`` ran on the host.
        # (The operator's own PYTHONSAFEPATH, even empty, is kept.)
        env.setdefault("PYTHONSAFEPATH", "1")
        # A Python hook's imports would write __pycache__ beside its modules: that directory is
        # hashed whole (hook_loads_python), so the hook's own first run untrusted it for the next.
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        cwd = _hook_cwd(self.workspace)

        async def one(index: int, spec: HookSpec) -> None:
            answers[index] = await self._run_one(event, spec, data, cwd, env, paused)

        async with anyio.create_task_group() as tg:
            for index, spec in enumerate(specs):
                tg.start_soon(one, index, spec)
        return [(spec, a) for spec, a in zip(specs, answers, strict=True) if a is not None]

    async def _run_one(
        self, event: HookEvent, spec: HookSpec, data: bytes, cwd: Path, env: dict[str, str], paused: str = ""
    ) -> _Answer:
        timeout = spec.timeout or self.default_timeout
        label = spec.command if len(spec.command) <= 80 else spec.command[:77] + "..."
        try:
            answer = await self._answer(event, spec, label, data, cwd, env, timeout, paused)
        except Exception as exc:  # reading a hook's answer must never end the session
            # A hook's answer raised in shellrt (JSON nested past the parser's recursion limit:
            # RecursionError) and ended the whole batch, after the call had run for a post hook
            # (red team round 20). It is a hook that did not answer, like any other.
            answer = _Answer(label, notice=f"{event} hook answer could not be read ({type(exc).__name__}); ignored")
        if answer.notice is not None and spec.on_failure == "block" and event in _GUARD_EVENTS:
            # The operator marked this hook a guard: not hearing from it is not a pass.
            why = answer.notice.removeprefix(f"{event} hook ").removesuffix("; ignored")
            return _Answer(
                label,
                decision="deny",
                reason=f'hook `{label}` did not answer ({why}) and its onFailure is "block"; '
                "fix the hook, or the call stays blocked",
            )
        return answer

    async def _answer(
        self,
        event: HookEvent,
        spec: HookSpec,
        label: str,
        data: bytes,
        cwd: Path,
        env: dict[str, str],
        timeout: float,  # noqa: ASYNC109 - the hook process's own deadline
        paused: str = "",
    ) -> _Answer:
        refused = self._whole_refused.get(spec.command)
        if refused is not None:
            return _Answer(label, notice=f"{event} hook not run: {refused}")
        changed = await anyio.to_thread.run_sync(self._changed, spec.command)
        if changed is not None:
            return _Answer(label, notice=f"{event} hook not run: {changed}")
        if spec.command in self.workspace_hooks:
            cwd = self.workspace
        result = await run_hook_process(spec.command, data, cwd=cwd, env=env, timeout=timeout)
        if result.error is not None:
            return _Answer(label, notice=f"{event} hook could not run ({result.error}); ignored")
        if result.timed_out:
            return _Answer(
                label, notice=f"{event} hook timed out after {timeout:g}s and was killed{paused}; ignored"
            )
        stderr = result.stderr.strip()
        if result.exit_code == 2:
            return _Answer(label, decision="deny", reason=stderr or f"blocked by hook `{label}`")
        if result.exit_code != 0:
            tail = f": {stderr[-500:]}" if stderr else ""
            if result.exit_code == 127:  # a program not found: maybe only on a PATH entry we leave out
                tail += (
                    " (hooks run with PATH minus relative entries and entries inside the session's"
                    " writable roots; name such a program by its absolute path)"
                )
            return _Answer(label, notice=f"{event} hook exited with status {result.exit_code}{tail}; ignored")
        if result.stdout_cut:
            # Cut by us, not malformed by the hook: it may have been a deny naming a large input the
            # model chose (a 2 MB Write passed a guard hook so). Blocked, never taken as no answer.
            limit = MAX_HOOK_OUTPUT >> 20
            return _Answer(
                label,
                decision="deny",
                reason=f"hook `{label}` answered with more than {limit} MiB, too long to read; blocked "
                "(make the hook print less)",
            )
        return _parse_stdout(label, event, result.stdout)

    def _changed(self, command: str) -> str | None:
        """Why ``command`` must not run now (None: what it runs is as trusted and as the session
        found it). The checks hash now, sharing one whole-tree digest among them (never the
        start's: `shellrt.permissions.start_digests`)."""
        with StartDigests().recording():
            trusted = self.workspace_hooks.get(command)
            why: str | None = None
            if trusted is not None:
                why = self._changed_since_trusted(command, trusted)
            elif (found := self.session_hooks.get(command)) is not None:
                why = self._changed_in_session(command, found)
            if why is None and (in_roots := self.writable_found.get(command)) is not None:
                why = self._changed_in_roots(command, in_roots)
            return why

    def _changed_since_trusted(self, command: str, trusted: HookFiles) -> str | None:
        """Why the workspace files ``command`` runs are no longer those trusted (None: they are)."""
        why = compare_hook_files(trusted, hook_files(self.workspace, [command]))
        if why is None:
            return None
        return (
            f"{why.replace('since the workspace was trusted', 'since the session started')}; "
            f"if you trust the change, run `shellrt trust add {self.workspace}` and start a new session"
        )

    def _changed_in_roots(self, command: str, found: RootsFiles) -> str | None:
        """Why what ``command`` runs from the writable roots is not as the session found it."""
        why = roots_changed(found, [command], base=self.workspace)
        if why is None:
            return None
        return (
            f"{why}; this hook runs on the host, outside the sandbox, and a sandboxed command may "
            "have written what it would run: review the file, then start a new session"
        )

    def _changed_in_session(self, command: str, found: HookFiles) -> str | None:
        """Why the workspace files the operator's hook ``command`` runs are not as the session
        found them (None: they are, or it runs none)."""
        why = compare_hook_files(found, hook_files(self.workspace, [command]))
        if why is None:
            return None
        why = why.replace("since the workspace was trusted", "since the session started").replace(
            "when the workspace was trusted", "when the session started"
        )
        return (
            f"{why}; this hook runs on the host, outside the sandbox, and a command may have written "
            "what it would run: review the workspace file, then start a new session"
        )


def _blocked(reason: str, notices: list[HookNotice]) -> PreToolUseOutcome:
    """A PreToolUse outcome that blocks the call for ``reason`` (no verdict stands on the input)."""
    return PreToolUseOutcome(
        blocked_reason=reason,
        decision=PermissionDecision(behavior="deny", reason=reason, source="hook"),
        notices=notices,
    )


def _pre_outcome(answers: Sequence[_Answer]) -> PreToolUseOutcome:
    """PreToolUse answers combined (most restrictive wins); ``updated_input`` is the caller's."""
    outcome = PreToolUseOutcome()
    outcome.notices = [HookNotice(hook=a.hook, message=a.notice) for a in answers if a.notice]
    answered = [a for a in answers if a.notice is None]
    outcome.additional_context = [a.context for a in answered if a.context]
    worst = max(
        (a for a in answered if a.decision), key=lambda a: _RANK[a.decision or "allow"], default=None
    )
    if worst is not None and worst.decision is not None:
        same = [a for a in answered if a.decision == worst.decision]
        reason = "; ".join(f"{a.reason}" if a.reason else f"hook `{a.hook}`" for a in same)
        label = {"deny": "blocked", "ask": "asks", "allow": "allowed"}[worst.decision]
        outcome.decision = PermissionDecision(
            behavior=worst.decision,
            reason=f"PreToolUse hook {label}: {reason}",
            source="hook",
            chain=tuple(
                f"PreToolUse `{a.hook}`: {a.decision} {a.reason}".rstrip() for a in answered if a.decision
            ),
        )
        if worst.decision == "deny":
            outcome.blocked_reason = reason
    return outcome


def _first_given(
    answered: Sequence[_Answer], value: Callable[[_Answer], object], conflict: str, notices: list[HookNotice]
) -> _Answer | None:
    """The first configured hook that gave a ``value``; when a later one gave another, a notice says so."""
    given = [a for a in answered if value(a) is not None]
    if not given:
        return None
    if any(value(a) != value(given[0]) for a in given[1:]):
        notices.append(
            HookNotice(hook=given[0].hook, message=f"{conflict}; the first configured one was used")
        )
    return given[0]


@contextlib.asynccontextmanager
async def _quiet_for_host(ctx: ToolContext) -> AsyncIterator[str | None]:
    """Hooks run on the host: the session's commands are paused and what they planted for host
    programs (git config, rc files) is reverted first, not at the next command's check, and nothing
    plants again before the hook's programs read it (a looping background task did: round 37).
    Yields why the commands could not be paused (None: paused or none running)."""
    from shellrt.supervisor import Supervisor

    if not ctx.has_service(Supervisor):
        yield None
        return
    async with ctx.service(Supervisor).quiet_for_host() as unpaused:
        yield unpaused


def _paused_hint(ctx: ToolContext) -> str:
    """What a timed-out hook's notice adds when the session's processes were paused for it: a hook
    that reads a FIFO a task feeds, or asks a server a task runs, waits for its whole timeout (and
    commands started meanwhile with it), and said only "timed out" (round 39)."""
    from shellrt.supervisor import Supervisor

    held = ctx.service(Supervisor).host_paused() if ctx.has_service(Supervisor) else 0
    if not held:
        return ""
    return (
        f" (while hooks run, the session's running commands and background tasks are paused: {held} "
        "processes were; a hook that waits on one of them, a FIFO it feeds or a server it runs, waits "
        "until its timeout, and commands started meanwhile wait with it; have the hook not depend on "
        "them, or stop that task with TaskStop first)"
    )


def _unrun(spec: HookSpec, event: HookEvent, why: str) -> _Answer:
    """A hook not run for ``why``: a guard event's hook blocks the call (fail closed), others say so."""
    label = spec.command if len(spec.command) <= 80 else spec.command[:77] + "..."
    if event in _GUARD_EVENTS:
        return _Answer(label, decision="deny", reason=f"hook `{label}`: {why}")
    return _Answer(label, notice=why)


def _hook_cwd(workspace: Path) -> Path:
    """The workspace when it exists on this host, else ``/``; never the session's cwd (``cwd`` in
    the payload says it): a command chooses that one, and outside the workspace (an extra writable
    root, ``/tmp`` on local) nothing reverts what it planted there for the hook's programs (a
    ``.git/config`` naming a program that the hook's ``git status`` ran on the host)."""
    return workspace if os.path.isdir(workspace) else Path("/")


def _parse_stdout(label: str, event: HookEvent, stdout: str) -> _Answer:
    text = stdout.strip()
    if not text:
        return _Answer(label)
    try:
        data = strict_loads(text)
    except StrictJsonError as exc:  # readers disagree on it: maybe a deny the input made an allow
        return _Answer(
            label,
            decision="deny",
            reason=f"hook `{label}` answered with JSON readers disagree on ({exc}); blocked "
            "(make the hook escape what it prints, e.g. with json.dumps or jq)",
        )
    except json.JSONDecodeError:
        return _Answer(label, notice=f"{event} hook printed output that is not JSON ({text[:80]!r}); ignored")
    except RecursionError:  # the parser's limit, not the hook's bug alone: say which
        return _Answer(label, notice=f"{event} hook printed JSON nested too deeply to read; ignored")
    if not isinstance(data, dict):
        return _Answer(label, notice=f"{event} hook printed JSON that is not an object; ignored")
    try:
        return _interpret(label, event, data)
    except _BadAnswer as exc:
        return _Answer(label, notice=f"{event} hook answer ignored: {exc}")


class _BadAnswer(ValueError):
    """A hook's JSON has a field of the wrong type or an unknown value."""


def _interpret(label: str, event: HookEvent, data: dict[str, Any]) -> _Answer:
    answer = _Answer(label)
    specific = data.get("hookSpecificOutput") or {}
    if not isinstance(specific, dict):
        raise _BadAnswer("hookSpecificOutput must be an object")
    top_decision = data.get("decision")
    if top_decision not in (None, "block", "approve"):
        raise _BadAnswer(f"decision must be 'block' or 'approve', got {top_decision!r}")
    cont = data.get("continue", True)
    if not isinstance(cont, bool):
        raise _BadAnswer("continue must be true or false")
    reason = _str_field(data, "reason")
    decision = specific.get("permissionDecision")
    if decision not in (None, "allow", "deny", "ask"):
        raise _BadAnswer(f"permissionDecision must be allow, deny or ask, got {decision!r}")
    perm = specific.get(
        "decision"
    )  # PermissionRequest: {"behavior": ..., "message": ..., "updatedInput": ...}
    if perm is not None:
        if not isinstance(perm, dict) or perm.get("behavior") not in ("allow", "deny"):
            raise _BadAnswer("hookSpecificOutput.decision.behavior must be allow or deny")
        decision = perm["behavior"]
        reason = _str_field(perm, "message") or reason
        if perm.get("updatedInput") is not None:
            answer.updated_input = _dict_field(perm, "updatedInput")
    if decision is not None:
        answer.decision = decision
        answer.reason = _str_field(specific, "permissionDecisionReason") or reason
    if top_decision == "block":
        answer.decision, answer.reason = "deny", reason or f"blocked by hook `{label}`"
    elif top_decision == "approve" and answer.decision is None:
        answer.decision, answer.reason = "allow", reason
    if cont is False:
        answer.decision = "deny"
        answer.reason = _str_field(data, "stopReason") or answer.reason or f"hook `{label}` stopped the call"
    for source in (specific, data):
        if source.get("updatedInput") is not None and answer.updated_input is None:
            answer.updated_input = _dict_field(source, "updatedInput")
    context = specific.get("additionalContext")
    if context is not None:
        if not isinstance(context, str):
            raise _BadAnswer("additionalContext must be a string")
        answer.context = context
    # Read for every event, used by PostToolUse only (never a reason to drop another event's verdict).
    answer.mcp_output = specific.get("updatedMCPToolOutput")
    if event == "PermissionRequest" and answer.decision == "ask":
        answer.decision = None  # "ask" is what is already happening: no answer
    return answer


def _str_field(data: dict[str, Any], key: str) -> str:
    value = data.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _BadAnswer(f"{key} must be a string")
    return value


def _dict_field(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise _BadAnswer(f"{key} must be an object")
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return str(value)
