"""The Bash tool: a command through the analysis, the supervisor and the sandbox.

Classification (read-only, concurrency-safe, destructive) and the git hardening
environment come from `shellrt.analysis.analyze`; execution, timeouts, cwd and
output spooling from the session's `Supervisor` (``ctx.service(Supervisor)``).
The tool's own permission check allows read-only commands that stay inside the
allowed roots and asks for everything else; the rules engine decides the rest.

`ShellTool` holds what Bash and PowerShell share; `PowerShell` lives in
``shellrt.tools.powershell``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from sandbox.confine import normalize
from shellrt.analysis import CommandAnalysis, analyze
from shellrt.permissions.call_approval import operator_approved
from shellrt.permissions.interfaces import CommandPart
from shellrt.permissions.shown import model_claim
from shellrt.protocol import (
    PermissionResult,
    PermissionSubject,
    Tool,
    ToolContext,
    ToolExecutionError,
    ToolOutput,
    ValidationResult,
)
from shellrt.protocol import ProgressEvent as ToolProgressEvent
from shellrt.protocol.control_escape import escape_controls
from shellrt.protocol.notes import (
    NOTE_MARK,
    OUTPUT_MARK,
    neutralize_output,
    neutralized_note,
    note,
    starts_mid_line_as_note,
)
from shellrt.protocol.trusted import trusted
from shellrt.supervisor import (
    CommandResult,
    ProgressEvent,
    Shell,
    ShellUnavailableError,
    Supervisor,
    exit_is_error,
    exit_meaning,
)
from shellrt.supervisor.tasks import max_background_tasks
from shellrt.supervisor.text import sendable, settled, shown_dir
from shellrt.tools._bashparts import command_parts as _command_parts
from shellrt.tools._bashparts import git_reads_only, runs_host_git
from shellrt.tools._configfiles import config_program
from shellrt.tools._pathfree import memoised_parts, names_no_path
from shellrt.tools._paths import is_sensitive, rule_path_resolver
from shellrt.tools._pwshparts import powershell_git_hazard, powershell_path_words
from shellrt.tools._readonly_path import with_read_only_path
from shellrt.tools._realdir import real_dir

__all__ = ["Bash", "BashInput", "BashOutput", "ShellTool", "bash_output", "format_output", "output_is_error"]

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
#: Longer commands are refused: write a script file instead.
MAX_COMMAND_CHARS = 100_000
#: Model-facing output is kept under this (the tool bounds itself; the spool holds everything).
MODEL_OUTPUT_CHARS = 28_000


class BashInput(BaseModel):
    """Input of the Bash (and PowerShell) tool."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1, description="The command to run.")
    timeout: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TIMEOUT_MS,
        description=f"Timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}).",
    )
    description: str | None = Field(
        default=None, description="A short description of what the command does, in 5-10 words."
    )

    run_in_background: bool = Field(
        default=False,
        description="Run as a background task and return its id at once; read output with TaskOutput.",
    )
    # What one permission decision saw of the machine for this very input object (the engine
    # and the tool's own check ask in turn within one decision; paths and git's configuration
    # are resolved once) is kept in ``__pydantic_private__`` by `Bash._judgement`, not in a
    # declared private attribute: pydantic then initialises private attributes in Python on
    # every parse and copy (~20 us of a ~27 us parse, on every call).

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout_in_range(cls, value: object) -> object:
        """One message with the range for every bad ``timeout`` (pydantic's own named none, and took
        ``true`` as 1 ms); a whole float or a string of digits is still taken."""
        return _timeout_ms(value)


def _timeout_ms(value: object) -> int | None:
    if value is None or (type(value) is int and 1 <= value <= MAX_TIMEOUT_MS):
        return value
    number: object = value
    if isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() and len(value) < 20:
        number = int(value.strip())
    if type(number) is int and 1 <= number <= MAX_TIMEOUT_MS:
        return number
    if isinstance(value, int) and not -(10**40) < value < 10**40:  # repr of 10**5000 raises
        given = "a number of over 40 digits"
    else:
        given = repr(value)
    raise PydanticCustomError(
        "timeout_range",
        "must be a whole number of milliseconds from 1 to {max} (got {given}); omit `timeout` for the "
        "default {default} ms, or use run_in_background for a longer command",
        {
            "max": MAX_TIMEOUT_MS,
            "default": DEFAULT_TIMEOUT_MS,
            "given": given if len(given) <= 40 else given[:37] + "...",
        },
    )


class BashOutput(BaseModel):
    """What a Bash call produced (the model sees `ShellTool.to_model_content` of it)."""

    model_config = ConfigDict(extra="forbid")

    command: str
    exit_code: int | None = None
    #: Output for the model: the whole output, or a head+tail preview when ``truncated``.
    output: str = ""
    stderr: str | None = None
    truncated: bool = False
    #: Which preview the spool cut (its lines are marked there, beside its omitted-bytes note).
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    total_bytes: int = 0
    #: Host path of the full spooled output.
    output_path: str | None = None
    timed_out: bool = False
    timeout_s: float | None = None
    interrupted: bool = False
    #: Set when the command runs (or continues) as a background task.
    task_id: str | None = None
    moved_to_background: bool = False
    cwd: str | None = None
    cwd_changed: bool = False
    cwd_note: str | None = None
    duration_s: float = 0.0
    notes: list[str] = Field(default_factory=list)
    #: Set when output could not be captured whole (e.g. the disk filled): what was lost and why.
    output_lost: str | None = None
    #: Bytes saved on disk (less than ``total_bytes`` when output was lost).
    saved_bytes: int | None = None
    #: Set when the sandbox failed under the command (container died or was killed): what happened.
    sandbox_failure: str | None = None


#: The analysis' dialect: the tool's shell, or ``sh`` where a POSIX sh that is not bash runs it.
Dialect = Literal["bash", "sh", "powershell"]


@functools.lru_cache(maxsize=256)
def _analyze(command: str, shell: Dialect) -> CommandAnalysis:
    return analyze(command, shell)


def backend_dialect(ctx: ToolContext) -> Literal["bash", "sh"]:
    """Which shell runs a Bash command in this session: ``bash``, or ``sh`` when the backend's
    shell is another (a docker image without bash: busybox ash, dash), which reads bash's own
    syntax otherwise (`shellrt.analysis.analyze`). The supervisor starts commands with that very
    shell (`SandboxBackend.shell_path`); a backend not started yet says ``/bin/sh`` (fail closed)."""
    if not ctx.has_service(Supervisor):
        return "bash"
    shell = ctx.service(Supervisor).backend.shell_path
    return "bash" if os.path.basename(shell) == "bash" else "sh"


#: Where `ShellTool.validate` keeps the dialect on the input (``__pydantic_private__``; see `BashInput`).
_DIALECT_KEY = "_dialect"


def _subject(a: CommandAnalysis, command: str) -> PermissionSubject:
    """What rules match for ``command``: the subcommands of its analysis ``a``. Made once per
    analysis (itself made once per command text); the subject is frozen, so calls share it."""
    found = _subjects.get(id(a))
    if found is not None and found[0] is a and found[1] == command:
        return found[2]
    commands = tuple(s.text for s in a.subcommands) or (command,)
    subject = PermissionSubject(commands=commands, access="execute", incomplete=not a.parse_ok)
    if len(_subjects) >= 256:
        _subjects.clear()
    _subjects[id(a)] = (a, command, subject)
    return subject


#: id(analysis) -> (the analysis, the command, its subject); the analysis is kept, so its id
#: cannot be reused by another object while the entry lives.
_subjects: dict[int, tuple[CommandAnalysis, str, PermissionSubject]] = {}


#: The tool's own allow for a read-only command inside the workspace (frozen: one for every call).
_READ_ONLY_INSIDE = PermissionResult.allow("read-only command inside the workspace")


class ShellTool(Tool[BashInput, BashOutput]):
    """Shared body of Bash and PowerShell: validation, execution and the model result."""

    results_seen_by_commands = True  # what commands see anyway (`Tool.results_seen_by_commands`)

    input_model = BashInput
    interrupt_behavior = "cancel"
    cancels_siblings_on_error = True
    shell: ClassVar[Shell] = "bash"

    # --- classification -----------------------------------------------------------
    def analysis(self, tool_input: BashInput) -> CommandAnalysis | None:
        """The command analysis (None for shells the analysis does not cover), in the dialect of
        the shell that runs it (recorded by `validate`; bash when the input was never validated)."""
        return _analyze(tool_input.command, self._dialect(tool_input))

    def _dialect(self, tool_input: BashInput) -> Dialect:
        if self.shell != "bash":
            return self.shell
        private = tool_input.__pydantic_private__
        return "sh" if private is not None and private.get(_DIALECT_KEY) == "sh" else "bash"

    def is_read_only(self, tool_input: BashInput) -> bool:
        a = self.analysis(tool_input)
        return bool(a and a.read_only)

    def is_concurrency_safe(self, tool_input: BashInput) -> bool:
        a = self.analysis(tool_input)
        return bool(a and a.concurrency_safe and not tool_input.run_in_background)

    def is_destructive(self, tool_input: BashInput) -> bool:
        a = self.analysis(tool_input)
        return True if a is None else a.destructive

    def is_open_world(self, tool_input: BashInput) -> bool:
        return not self.is_read_only(tool_input)

    def permission_subject(self, tool_input: BashInput) -> PermissionSubject:
        a = self.analysis(tool_input)
        if a is None:
            return PermissionSubject(commands=(tool_input.command,), access="execute", incomplete=True)
        return _subject(a, tool_input.command)

    def classifier_input(self, tool_input: BashInput) -> str:
        return tool_input.command

    def describe(self, tool_input: BashInput) -> str:
        """The command first, then the model's ``description`` as its claim (round 18): on the
        same line, escaped to one line and cut, so it can neither pass for shellrt's judgement
        ("read-only") nor start lines that read as the command's own, nor push it off a screen."""
        what = model_claim(tool_input.description) if tool_input.description else ""
        bg = " (in background)" if tool_input.run_in_background else ""
        return f"{self.user_facing_name()}: {tool_input.command}{bg}{what}"

    # --- validation and permission ------------------------------------------------
    async def validate(self, tool_input: BashInput, ctx: ToolContext) -> ValidationResult:
        command = tool_input.command
        if not command.strip():
            return ValidationResult.failure("The command is empty; pass the shell command to run.")
        if len(command) > MAX_COMMAND_CHARS:
            return ValidationResult.failure(
                f"The command is {len(command):,} characters long (limit {MAX_COMMAND_CHARS:,}). "
                "Write the script to a file with the Write tool and run that file instead."
            )
        if "\x00" in command:
            return ValidationResult.failure("The command contains a NUL byte; remove it.")
        if self.shell == "bash" and backend_dialect(ctx) == "sh":
            # Read as the shell that runs it: every later question about this input (read-only?
            # its parts?) asks `analysis`, which reads this; a rewritten input is validated anew.
            private = tool_input.__pydantic_private__
            if private is not None:
                private[_DIALECT_KEY] = "sh"
            else:
                object.__setattr__(tool_input, "__pydantic_private__", {_DIALECT_KEY: "sh"})
        return ValidationResult.success()

    def command_parts_may_block(self, tool_input: BashInput) -> bool:
        """Whether `command_parts` runs git on the host (the engine then calls it off the event
        loop: a repository can make that git block until its timeout)."""
        a = self.analysis(tool_input)
        return a is not None and self.shell == "bash" and runs_host_git(a)

    @staticmethod
    def _judged(tool_input: BashInput, ctx: ToolContext) -> _Judgement | None:
        """This decision's judgement when it was already made (by the engine, a moment ago)."""
        private = (
            tool_input.__pydantic_private__ or {}
        )  # not `tool_input._judged`: pydantic's slow __getattr__
        cached = private.get("_judged")
        if isinstance(cached, _Judgement) and cached.key == (ctx.cwd, ctx.workspace, ctx.allowed_roots):
            return cached
        return None

    def _judgement(self, tool_input: BashInput, ctx: ToolContext) -> _Judgement:
        """The allowed roots, the cwd and the command's parts as the host sees them now.

        Resolved once per decision: the input object lives for one call, and the
        engine's part-by-part check and the tool's own check judge the same moment.
        """
        cached = self._judged(tool_input, ctx)
        if cached is not None:
            return cached
        key = (ctx.cwd, ctx.workspace, ctx.allowed_roots)
        roots = _roots(ctx)
        to_host = _rule_view(ctx)
        # The host's own resolution (local, bwrap): asked of the kernel, not walked in Python.
        cwd = real_dir(ctx.cwd) if to_host is os.path.realpath else to_host(ctx.cwd)
        parts: list[CommandPart] | None = []  # other shells: the analysis names no parts
        if self.shell == "bash":
            a = self.analysis(tool_input)
            parts = None
            if a is not None and a.parse_ok:
                analysed = a
                parts = memoised_parts(
                    a,
                    lambda: _command_parts(analysed, cwd, lambda p: _inside(p, roots), to_host=to_host),
                    cwd,
                )
        judged = _Judgement(key, roots, to_host, cwd, parts)
        private = tool_input.__pydantic_private__
        if private is not None:
            private["_judged"] = judged  # what `_judged` reads, without pydantic's __setattr__ (~4 µs)
        else:  # the slot pydantic copies along (`model_copy`) and compares (``==``) with the fields
            object.__setattr__(tool_input, "__pydantic_private__", {"_judged": judged})
        return judged

    def decision_key(self, tool_input: BashInput, ctx: ToolContext) -> Hashable | None:
        """For a bash command that names no path (`names_no_path`: no reads, writes, ``cd``, git
        or jq; no path-like argument), the decision follows from its text and dialect, the
        session cwd (as given and as the host resolves it now) and the allowed roots (likewise):
        the key is those, all looked at afresh for this call. Any other command: None."""
        if self.shell != "bash":
            return None
        a = self.analysis(tool_input)
        if a is None or not a.parse_ok or runs_host_git(a):
            return None
        judged = self._judgement(tool_input, ctx)
        parts = judged.parts
        if parts is None or not names_no_path(a, parts) or _paths_mentioned(a, judged.cwd):
            return None
        return (
            tool_input.command,
            self._dialect(tool_input),
            ctx.cwd,
            judged.cwd,
            ctx.workspace,
            ctx.allowed_roots,
            judged.roots,
        )

    async def check_permissions(self, tool_input: BashInput, ctx: ToolContext) -> PermissionResult:
        a = self.analysis(tool_input)
        if a is None:
            return PermissionResult.ask(f"{self.name} commands are not analysed; confirm this one.")
        judged = self._judged(tool_input, ctx)
        if judged is None:
            if self.command_parts_may_block(tool_input):  # splitting it runs git on the host
                judged = await anyio.to_thread.run_sync(self._judgement, tool_input, ctx)
            else:
                judged = self._judgement(tool_input, ctx)
        parts = judged.parts or []
        for part in parts:
            for target in part.writes:
                reason = is_sensitive(Path(target)) if target else None
                if reason:
                    return PermissionResult.ask(
                        f"{part.text!r} writes {target}: {reason}.", safety_check=True
                    )
            reads = part.name == "git" and git_reads_only(part.argv)
            dialect = self._dialect(tool_input)
            if part.hazard and (reads or a.read_only or _analyze(part.text, dialect).read_only):
                # No mode may skip this: the repository, not the person, chose the program.
                return PermissionResult.ask(f"{part.text!r}: {part.hazard}.", safety_check=True)
        if self.shell == "powershell":
            # Reading the repository's configuration runs git on the host: off the event loop.
            hazard = await anyio.to_thread.run_sync(powershell_git_hazard, a, judged.cwd)
            if hazard:  # no mode may skip this, as for Bash's parts above
                return PermissionResult.ask(f"{tool_input.command!r}: {hazard}.", safety_check=True)
        if not a.read_only:
            why = "; ".join(a.reasons[:3]) or "it may change the system"
            # A file the program obeys names code (round 50): the person is asked with that file named.
            found = next((p for p in parts if p.hazard and config_program(p.name, p.argv)), None)
            named = f" {found.text!r}: {found.hazard}." if found is not None else ""
            return PermissionResult.ask(f"This command is not read-only ({why}).{named}")
        roots, to_host, cwd = judged.roots, judged.to_host, judged.cwd
        pwsh = self.shell == "powershell"
        outside = [p for p in _paths_mentioned(a, cwd, pwsh) if not _inside(to_host(p), roots)]
        if pwsh:
            outside.extend(_pwsh_unresolved(a))
        if not _inside(cwd, roots):
            outside.insert(0, ctx.cwd)
        if outside:
            return PermissionResult.ask(
                f"Read-only, but it reaches outside the workspace: {', '.join(outside[:3])}."
            )
        blocked = [p for p in parts if not p.read_only]
        if blocked:
            return PermissionResult.ask(f"Read-only, but {blocked[0].text!r}: {blocked[0].why_not}.")
        return _READ_ONLY_INSIDE

    # --- execution --------------------------------------------------------------------
    def may_change_cwd(self, tool_input: BashInput) -> bool:
        """False only when the analysis proves the command cannot leave its directory.

        A parsed, read-only command without ``cd`` runs only known programs with
        static words (no ``source``, ``eval``, ``pushd``), so its shell ends where
        it started; skipping the cwd report saves a file write per command.
        """
        a = self.analysis(tool_input)
        return a is None or not (a.parse_ok and a.read_only and not a.cd_targets)

    def env_for(self, tool_input: BashInput) -> dict[str, str]:
        """Hardening variables the analysis asks for (git config overrides, …).

        A read-only git command (the analysis gave it the override environment) reads no global
        configuration but the operator's own file, the one the code-key check trusted: the
        sandbox's HOME may be another directory (``/tmp`` for a root caller's bwrap session,
        kept across calls), where an earlier command could leave a ``.gitconfig`` whose filter
        or textconv driver the repository's attributes select."""
        a = self.analysis(tool_input)
        env = dict(a.env) if a is not None else {}
        if "GIT_CONFIG_COUNT" in env:
            env["GIT_CONFIG_GLOBAL"] = _operator_gitconfig()
        return env

    async def call(self, tool_input: BashInput, ctx: ToolContext) -> ToolOutput[BashOutput]:
        sup = ctx.service(Supervisor)
        env = with_read_only_path(
            self.env_for(tool_input),
            self.analysis(tool_input),
            sup,
            ctx.allowed_roots,
            operator_approved=operator_approved(self.name, tool_input.command),
        )
        try:
            if tool_input.run_in_background:
                task = await sup.start_background(
                    tool_input.command,
                    env=env,
                    shell=self.shell,
                    description=tool_input.description or "",
                    session_cwd=ctx.cwd,
                )
                return ToolOutput(
                    BashOutput(
                        command=tool_input.command,
                        task_id=task.id,
                        output_path=str(task.output_path),
                        cwd=sup.cwd,
                    )
                )
            timeout_s = (tool_input.timeout or DEFAULT_TIMEOUT_MS) / 1000
            to_background = bool(ctx.settings.get("bash_background_on_timeout", False))
            result = await sup.run(
                tool_input.command,
                timeout_s=timeout_s,
                env=env,
                shell=self.shell,
                background_on_timeout=to_background,
                # Only a call that may move to the background has a cap to obey (the supervisor
                # reads it for nothing else): the environment is not read for every call.
                background_cap=_background_cap() if to_background else None,
                on_progress=functools.partial(self._progress, ctx),
                abort=ctx.abort,
                track_cwd=self.may_change_cwd(tool_input),
                description=tool_input.description or "",
                session_cwd=ctx.cwd,
            )
        except ShellUnavailableError as exc:
            raise ToolExecutionError(str(exc)) from exc
        output = bash_output(result, timeout_s)
        modifier = None
        if result.cwd_changed:
            new_cwd = result.cwd

            def _set_cwd(c: ToolContext) -> None:
                # Applied in tool_use order after a parallel batch: the session and the
                # supervisor end on the last change, whatever order the commands finished in.
                c.cwd = new_cwd
                if c.has_service(Supervisor):
                    c.service(Supervisor).set_cwd(new_cwd)

            modifier = _set_cwd
        return ToolOutput(output, is_error=output_is_error(output), context_modifier=modifier)

    def _progress(self, ctx: ToolContext, event: ProgressEvent) -> None:
        ctx.progress(
            ToolProgressEvent(
                tool_use_id=ctx.tool_use_id,
                tool_name=self.name,
                message=f"running for {event.elapsed_s:.0f}s",
                elapsed_s=event.elapsed_s,
                bytes_so_far=event.total_bytes,
                last_lines=list(event.last_lines),
            )
        )

    # --- results ------------------------------------------------------------------------
    def to_model_content(self, output: BashOutput) -> str:
        return format_output(output, self.name)

    def render_use(self, tool_input: BashInput) -> str:
        return escape_controls(f"$ {tool_input.command}")  # the model's command: inert (round 39)


class Bash(ShellTool):
    """Run a bash command in the session's sandbox."""

    name = "Bash"
    shell = "bash"
    search_hint = "shell command terminal run execute script"

    def command_parts(self, tool_input: BashInput, ctx: ToolContext) -> list[CommandPart] | None:
        """The parts the rules engine judges one by one (`shellrt.permissions.interfaces.CommandPart`):
        resolved reads and redirection writes, the variables set, a read-only verdict that
        includes "inside the allowed reads" and "git runs nothing the repository names"."""
        return self._judgement(tool_input, ctx).parts

    def prompt(self) -> str:
        return (
            "Run a bash command in the workspace sandbox and return its output.\n"
            "- Each call runs in a fresh shell; the working directory carries over between calls "
            "(a `cd` is remembered), shell variables and functions do not.\n"
            f"- `timeout` is in milliseconds (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}); "
            "on timeout the command and every process it started are killed.\n"
            "- Processes a command leaves running are killed when it exits. For servers, watchers and "
            "long builds set `run_in_background: true`; you get a task id at once, read new output "
            "with TaskOutput and stop it with TaskStop.\n"
            "- Large output is saved to a file; you get the head and tail and the file's path "
            "(read it with Read, or search it with Grep).\n"
            "- Prefer the dedicated Read/Edit/Write/Glob/Grep tools for files; use Bash for "
            "builds, tests, git and other programs. Quote paths that contain spaces.\n"
            "- stdin is empty and there is no terminal: pass non-interactive flags (e.g. `-y`).\n"
            f"- Lines starting with `{NOTE_MARK}` after the output are shellrt's own notes (exit code, "
            "truncation, timeout, working directory, reverted files, hooks' context); a line of the command's output "
            f"that starts like one is shown prefixed with `{OUTPUT_MARK.strip()}`."
        )


# --- helpers ------------------------------------------------------------------------------


def _background_cap() -> int:
    """The running-task cap a timed-out call moves to the background under (0 for a bad setting:
    then no task may start, as `background_refusal` says for ``run_in_background``)."""
    try:
        return max_background_tasks()
    except ValueError:
        return 0


def bash_output(result: CommandResult, timeout_s: float | None) -> BashOutput:
    """The Bash tool's output model for a supervisor result (also used by ``shellrt run --json``)."""
    # Every field, in field order: the supervisor's own typed values, not validated again (`trusted`).
    return trusted(
        BashOutput,
        {
            "command": result.command,
            "exit_code": result.exit_code,
            "output": result.preview,
            "stderr": result.stderr,
            "truncated": result.truncated,
            "stdout_truncated": result.stdout_truncated if result.stderr is not None else result.truncated,
            "stderr_truncated": result.stderr_truncated,
            "total_bytes": result.total_bytes,
            "output_path": str(result.output_path),
            "timed_out": result.timed_out,
            "timeout_s": None if timeout_s is None else float(timeout_s),  # as validation made it
            "interrupted": result.interrupted,
            "task_id": result.backgrounded_task_id,
            "moved_to_background": result.backgrounded_task_id is not None,
            "cwd": result.cwd,
            "cwd_changed": result.cwd_changed,
            "cwd_note": result.cwd_note,
            "duration_s": result.duration_s,
            "notes": list(result.notes),
            "output_lost": result.output_lost,
            "saved_bytes": result.saved_bytes,
            "sandbox_failure": result.sandbox_failure,
        },
    )


def output_is_error(output: BashOutput) -> bool:
    """Whether a shell call failed: timed out (and killed), interrupted, output lost, or a failing exit.

    A non-zero exit is a failure except the documented non-error meanings
    (``grep`` 1 = no match, …) listed in `shellrt.supervisor.exit_meaning`.
    """
    if output.task_id and not output.moved_to_background:
        return False  # started in the background: nothing has failed yet
    if output.interrupted or (output.timed_out and not output.moved_to_background):
        return True
    if output.output_lost or output.sandbox_failure or _cut_short(output):
        return True
    return exit_is_error(output.command, output.exit_code)


def _cut_short(output: BashOutput) -> bool:
    """A foreground command that ended with no exit status and no reason of ours (timeout, interrupt,
    sandbox failure): its session closed under it (``serve --http`` shutting down lets the call
    answer while the session's tasks, its output pump among them, are cancelled). Round 47: it was
    answered as a success with the output so far; it had been cut off half-way."""
    return output.exit_code is None and not (
        output.task_id or output.timed_out or output.interrupted or output.sandbox_failure
    )


def format_output(output: BashOutput, tool_name: str) -> str:
    """The compact text the model sees for one shell call."""
    if output.task_id and not output.moved_to_background:
        return (
            f"Command started in the background with task id {output.task_id}. "
            f"Read its new output with TaskOutput(task_id={output.task_id!r}); "
            f"stop it with TaskStop(task_id={output.task_id!r}). Output file: {output.output_path}"
        )
    parts: list[str] = []
    # A preview the spool cut is marked already, beside its own note on the cut.
    body, forged = (output.output, 0) if output.stdout_truncated else neutralize_output(output.output)
    if output.stderr:
        err, err_forged = (output.stderr, 0) if output.stderr_truncated else neutralize_output(output.stderr)
        forged += err_forged
        # A note of ours: stdout printing the label is marked like any forged note.
        # No sequence the output left open may take in what we write after it (round 33).
        body = settled(body)
        body = (body + "\n" if body and not body.endswith("\n") else body) + _STDERR_LABEL + err
    body, cut_forged = _bound(body, MODEL_OUTPUT_CHARS)
    body = settled(body)
    forged += cut_forged
    if body.strip():
        parts.append(body.rstrip("\n"))
    elif not (output.timed_out or output.interrupted or output.output_lost or output.sandbox_failure or _cut_short(output)):
        parts.append(f"({tool_name} completed with no output)")
    # A note may quote names a command chose (its cwd, a reverted file): their controls, bidi and
    # zero-width characters are shown as escapes, never run by a terminal (round 33).
    parts.extend(note(escape_controls(sendable(text))) for text in _notes(output))
    if forged:
        parts.append(neutralized_note(forged))
    return "\n".join(parts)


#: Between a command's stdout and its stderr.
_STDERR_LABEL = note("stderr:") + "\n"


def _notes(output: BashOutput) -> list[str]:
    """shellrt's notes on a finished shell call (each becomes a `note`, after the output)."""
    parts: list[str] = []
    if output.output_lost:
        # Say exactly what is missing, never the usual "full output is saved" line.
        parts.append(f"Output incomplete: {output.output_lost}")
    elif output.truncated:
        parts.append(
            f"Output truncated: {output.total_bytes:,} bytes in total; the full output is saved at "
            f"{output.output_path} — read it with Read (offset/limit) or search it with Grep."
        )
    if output.moved_to_background:
        parts.append(
            f"Command exceeded its {output.timeout_s:g}s timeout and was moved to the background as task "
            f"{output.task_id}. Use TaskOutput(task_id={output.task_id!r}) for new output, "
            f"TaskStop(task_id={output.task_id!r}) to stop it."
        )
    elif output.timed_out:
        parts.append(
            f"Command timed out after {output.timeout_s:g}s; it and every process it started were killed. "
            "Raise `timeout` (max 600000 ms) or use run_in_background for long-running commands."
        )
    if output.interrupted:
        parts.append("Command was interrupted; it and every process it started were killed.")
    if output.sandbox_failure:
        # The exit code is the sandbox's, not the command's: never show it as one.
        parts.append(
            f"The sandbox container died or was killed: {output.sandbox_failure}. The command's own "
            "exit status is unknown and its processes are gone; the next command runs in a fresh container."
        )
    elif _cut_short(output):
        parts.append(
            "The command was stopped before it finished: shellrt's session closed under it (the server "
            "shutting down). Its exit status is unknown and its processes are killed; run it again."
        )
    elif output.exit_code not in (0, None) and not output.timed_out and not output.interrupted:
        meaning = exit_meaning(output.command, output.exit_code)
        parts.append(f"Exit code {output.exit_code}" + (f" ({meaning}; not an error)" if meaning else ""))
    if output.cwd_changed and output.cwd:
        parts.append(f"Working directory is now {shown_dir(output.cwd)}")
    if output.cwd_note:
        parts.append(output.cwd_note)
    parts.extend(output.notes)
    return parts


_NOTE_LINE = "\n" + NOTE_MARK


def _bound(text: str, limit: int) -> tuple[str, int]:
    """Head and tail of ``text`` (marked output) around a note of ours; the tail's first line
    is a partial one, marked when it reads like a note; and how many lines that marked (0, 1)."""
    if len(text) <= limit:
        return text, 0
    half = limit // 2
    end = len(text) - half
    # Notes of ours in the dropped middle (the spool's on its own cut) stay: every line of
    # output that reads like one is marked by now, so a line starting with the mark is ours.
    kept = []
    at = text.find(_NOTE_LINE, half - 1, end)
    while at >= 0:
        stop = text.find("\n", at + 1)
        kept.append(text[at + 1 : stop if stop >= 0 else len(text)])
        at = text.find(_NOTE_LINE, at + 1, end)
    omitted = note(f"... {end - half:,} characters omitted ...")
    tail = text[end:]
    # The tail starts mid-line: a partial line that reads like a note is output, marked (a blank
    # before it is no line start: round 31).
    marked = starts_mid_line_as_note(text, end)
    if marked:
        tail = OUTPUT_MARK + tail
    return "\n".join([settled(text[:half]), *kept, omitted, tail]), int(marked)


@dataclass(frozen=True)
class _Judgement:
    """What one permission decision of a shell call saw of the machine (see `ShellTool._judgement`)."""

    #: The context it was judged in: (cwd, workspace, allowed roots).
    key: tuple[str, Path, tuple[Path, ...]]
    #: The allowed roots as host paths, in their given and resolved forms.
    roots: tuple[str, ...]
    #: Resolves an absolute path as the sandbox sees it to the host path rules use.
    to_host: Callable[[str], str]
    #: The session cwd as a host path.
    cwd: str
    #: The command's parts (None: it could not be split; [] for shells without parts).
    parts: list[CommandPart] | None


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    """Whether the host path ``path`` is one of ``roots`` (normalised) or below one (lexically: it is
    resolved); `sandbox.confine.is_within` without normalising the roots again for every path."""
    p = normalize(path)
    return any(r == "/" or p == r or p.startswith(r + "/") for r in roots)


def _roots(ctx: ToolContext) -> tuple[str, ...]:
    """The allowed roots as host paths (the rule view), in their given and resolved forms
    (normalised: `_inside` compares them as they are)."""
    allowed = ctx.allowed_roots or (ctx.workspace,)
    given = _given_roots.get(allowed)
    if given is None:
        given = tuple(normalize(os.path.normpath(str(r))) for r in allowed)
        if len(_given_roots) >= 64:
            _given_roots.clear()
        _given_roots[allowed] = given
    identity = tuple(_identity(r) for r in given)
    if _plain_roots.get(given) == identity:
        return given
    roots = list(given)
    for r in given:
        real = normalize(real_dir(r))
        if real not in roots:
            roots.append(real)
    if len(roots) == len(given):
        if len(_plain_roots) >= 64:
            _plain_roots.clear()
        _plain_roots[given] = identity
    return tuple(roots)


_FileId = tuple[int, int]

#: Given roots that were their own real paths -> what each named then (device, inode). While
#: each still names the same directory they are given as they are: a root moved since (or an
#: ancestor swapped for a symlink) has only gained a resolved form, which the given one lacks,
#: so a stale answer judges fewer paths inside, never more. Roots that name a symlink are
#: resolved on every call (one kernel walk each): a remembered target could have been moved
#: and another directory put at its old name while the link follows it, keeping its identity.
_plain_roots: dict[tuple[str, ...], tuple[_FileId | None, ...]] = {}
#: The context's roots -> their normalised text (pure string work, done once per set of roots).
_given_roots: dict[tuple[Path, ...], tuple[str, ...]] = {}


def _identity(path: str) -> _FileId | None:
    """The file a root names now (device, inode); None when it is gone (then it is resolved afresh)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _rule_view(ctx: ToolContext) -> Callable[[str], str]:
    """Resolve an absolute path as the sandbox sees it to the host path rules and roots use
    (`shellrt.tools._paths.rule_path_resolver`: the one confinement view)."""
    return rule_path_resolver(ctx)


def _pwsh_unresolved(a: CommandAnalysis) -> list[str]:
    """PowerShell argument words whose path cannot be resolved here (`powershell_path_words`):
    never "inside the workspace"."""
    return [w for sub in a.subcommands for w in sub.argv[1:] if None in powershell_path_words(w)]


def _paths_mentioned(a: CommandAnalysis, cwd: str, powershell: bool = False) -> list[str]:
    """Absolute forms of cd targets and of path-like arguments (``/x``, ``~``, ``..``); PowerShell
    words as its providers read them (`powershell_path_words`)."""
    found: list[str] = []
    candidates = list(a.cd_targets)
    for sub in a.subcommands:
        if powershell:
            candidates.extend(i for w in sub.argv[1:] for i in powershell_path_words(w) if i)
            continue
        candidates.extend(w for w in sub.argv[1:] if w and not w.startswith("-"))
    for word in candidates:
        if word.startswith("~"):
            word = os.path.expanduser("~") + word[1:]
        if word.startswith("/") or word == ".." or word.startswith("../") or "/../" in word:
            found.append(os.path.normpath(word if word.startswith("/") else str(Path(cwd) / word)))
    return found


def _operator_gitconfig() -> str:
    """The operator's global git configuration file (``$GIT_CONFIG_GLOBAL``, else
    ``~/.gitconfig``, else the XDG one when only it exists): where the sandbox cannot read it
    or it is absent, git skips it, never another directory's file."""
    named = os.environ.get("GIT_CONFIG_GLOBAL")
    if named:
        return named
    home = os.path.expanduser("~")
    dotfile = os.path.join(home, ".gitconfig")
    xdg = os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "git", "config")
    return xdg if not os.path.exists(dotfile) and os.path.exists(xdg) else dotfile
