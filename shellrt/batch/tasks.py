"""The task file's schema: one `Task` per JSONL line, validated with pydantic.

A task is a fresh sandbox, an optional workspace copied into it, and a list of
commands run one after another. Commands are shell strings (run through the
supervisor), per-command objects (``{"run": ...}`` shell text or ``{"argv":
[...]}`` words run without a shell, each with its own ``timeout``, ``env``,
``cwd`` and ``user``) or ``tool_use`` blocks (run through a `shellrt.Runtime`,
i.e. the full governed lifecycle). Every model forbids unknown keys so a typo in a 10 000-line task
file is reported on its line instead of being silently ignored.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sandbox import LocalConfig, NetworkMode, ResourceLimits, SandboxConfig
from sandbox.policy import normalize_deny_list, normalize_domain
from shellrt.batch.pool import ReuseMode
from shellrt.protocol import ToolUseBlock

__all__ = [
    "DEFAULT_COMMAND_TIMEOUT_S",
    "MAX_COLLECT_FILES",
    "MAX_COMMANDS",
    "MAX_DOMAINS",
    "MAX_ENV_ENTRIES",
    "CollectSpec",
    "CommandSpec",
    "Task",
    "TaskSandbox",
]

#: Commands one task may list: each leaves an outcome in the harness's memory and the task's
#: results line until the task ends (red team round 23: no bound let a task line hold ~780,000).
MAX_COMMANDS = 10_000

#: Entries of an ``env`` (the task's, a command's): ~11 us each to check (a million: 11 s).
MAX_ENV_ENTRIES = 10_000
#: ``collect.files`` patterns: ~38 us each to check (a million: 38 s), and each is a walk later.
MAX_COLLECT_FILES = 1_000
#: ``allowed_domains`` / ``denied_domains`` entries: ~33 us each to normalise (a million: 33 s).
MAX_DOMAINS = 10_000


def _at_most(field: str, value: Any, most: int, hint: str) -> Any:
    """``value`` unchanged, or ValueError when it is a list or object of more than ``most`` items
    (counted before pydantic builds them: its ``max_length`` counts after)."""
    if isinstance(value, list | tuple | dict) and len(value) > most:
        raise ValueError(f"{field} has {len(value):,} entries; at most {most:,}: {hint}")
    return value


#: Per-command timeout when neither the command nor the task sets one.
DEFAULT_COMMAND_TIMEOUT_S = 600.0

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,199}$")


_ENV_HINT = "set the rest in a file the commands source, or in the workspace"


def _refuse_nul(field: str, *texts: str | Path | None) -> None:
    """ValueError naming ``field`` when a text the host hands to the OS (a path, an environment entry,
    a command) holds a NUL byte: no system call takes one, and the task failed only while it ran,
    its earlier commands run, or (a workspace) it stopped the whole run (red team round 37)."""
    for text in texts:
        if text is not None and "\0" in str(text):
            raise ValueError(f"{field} holds a NUL byte (\\u0000), which no path, environment entry or "
                             "command can hold: remove it from the task")


class TaskSandbox(BaseModel):
    """Which backend runs the task, and its network and resource limits.

    In the task file this is written flat — the backend config's own keys plus
    ``network`` and ``limits``::

        "sandbox": {"type": "docker", "image": "python:3.12-slim", "network": "none",
                    "limits": {"memory_bytes": 536870912, "pids": 256}}

    or as a bare backend name: ``"sandbox": "bwrap"``.

    ``reuse`` (docker): ``auto`` lets the run recycle a container between
    tasks with identical sandboxes after a verified reset (see
    `shellrt.batch.pool`); ``never`` gives this task a brand-new container.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: SandboxConfig = Field(default_factory=LocalConfig)
    network: NetworkMode = "none"
    #: Network ``proxied`` (docs/network.md): the names commands may reach; any turns ``none`` into ``proxied``.
    allowed_domains: tuple[str, ...] = ()
    denied_domains: tuple[str, ...] = ()
    limits: ResourceLimits = Field(default_factory=ResourceLimits)
    reuse: ReuseMode = "auto"

    @field_validator("allowed_domains", "denied_domains", mode="before")
    @classmethod
    def _few_domains(cls, value: Any, info: ValidationInfo) -> Any:
        return _at_most(str(info.field_name), value, MAX_DOMAINS, "name a parent domain (*.example.org) instead")

    @field_validator("allowed_domains")
    @classmethod
    def _domains(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(normalize_domain(v) for v in value)  # a typo fails the task file, not the task

    @field_validator("denied_domains")
    @classmethod
    def _denied(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return normalize_deny_list(value)  # names, addresses and ranges, as every deny-list

    @model_validator(mode="before")
    @classmethod
    def _accept_flat(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"backend": {"type": data}}
        if isinstance(data, dict) and "backend" not in data:
            rest = dict(data)
            out: dict[str, Any] = {}
            for key in ("network", "allowed_domains", "denied_domains", "limits", "reuse"):
                if key in rest:
                    out[key] = rest.pop(key)
            if rest:  # no key of the backend's: left unset, so an operator's floor can choose it
                out["backend"] = rest
            return out
        return data


class CommandSpec(BaseModel):
    """One command — shell text (``run``) or an argv (``argv``) — with its own timeout, env, cwd and user."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run: str | None = Field(default=None, min_length=1, description="Shell command text (bash).")
    argv: tuple[str, ...] | None = Field(
        default=None,
        min_length=1,
        description="Program and arguments, run without a shell: every word reaches it intact.",
    )
    timeout: float | None = Field(default=None, gt=0, description="Seconds; the task's timeout when None.")
    env: dict[str, str] = Field(default_factory=dict, description="Added to the task's env for this command.")
    cwd: str | None = Field(
        default=None,
        min_length=1,
        description="Start here (a sandbox path; relative: from the workspace root); the task's cwd when "
        "None. A directory the sandbox cannot enter fails the command before it runs.",
    )
    user: str | None = Field(
        default=None, min_length=1, description="Run as this user (docker); the task's user when None."
    )

    @field_validator("env", mode="before")
    @classmethod
    def _few_env(cls, value: Any) -> Any:
        return _at_most("env", value, MAX_ENV_ENTRIES, _ENV_HINT)

    @model_validator(mode="after")
    def _one_command(self) -> CommandSpec:
        if (self.run is None) == (self.argv is None):
            raise ValueError('a command object needs exactly one of "run" (shell text) or "argv" (a list)')
        _refuse_nul("run", self.run)
        _refuse_nul("argv", *(self.argv or ()))
        _refuse_nul("cwd", self.cwd)
        _refuse_nul("user", self.user)
        _refuse_nul("env", *self.env, *self.env.values())
        return self

    @property
    def label(self) -> str:
        """The command as results show it: its text, or its argv shell-quoted."""
        return self.run if self.run is not None else shlex.join(self.argv or ())


class CollectSpec(BaseModel):
    """What a result carries back.

    ``output``: ``preview`` (default) keeps a head+tail preview of each command's
    output in the result and deletes the rest with the sandbox; ``full`` also
    keeps every command's whole output file in the task's artifacts directory
    (on the machine that ran it — with Ray, on that node's disk); ``none``
    keeps only sizes and exit codes. ``files`` are workspace-relative paths or
    glob patterns exported after the last command into the artifacts directory
    (with Ray they are shipped back to the driver: that is the "export"), at most
    ``max_bytes`` in all (more is an error naming it).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    exit_codes: bool = True
    output: Literal["preview", "full", "none"] = "preview"
    preview_bytes: int = Field(default=2_000, ge=0, le=1_000_000)
    files: tuple[str, ...] = ()
    #: The most bytes ``files`` may copy to the host: the task's commands choose those files (a
    #: sparse ``truncate -s 1T`` or a hundred hard links cost them nothing, the host their size).
    max_bytes: int = Field(default=1 << 30, ge=0)

    @field_validator("files", mode="before")
    @classmethod
    def _few_files(cls, value: Any) -> Any:
        return _at_most("collect.files", value, MAX_COLLECT_FILES, "collect a directory, or a glob pattern")

    @field_validator("files")
    @classmethod
    def _relative(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            _refuse_nul("collect.files", pattern)
            parts = Path(pattern).parts
            if not pattern or Path(pattern).is_absolute() or ".." in parts:
                raise ValueError(
                    f"collect.files entry {pattern!r} must be a relative path inside the workspace"
                )
        return value


class Task(BaseModel):
    """One line of the task file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="Unique id; results and --resume are keyed by it.")
    sandbox: TaskSandbox = Field(default_factory=TaskSandbox)
    workspace: Path | None = Field(
        default=None, description="Directory copied into the task's private workspace (never modified)."
    )
    commands: tuple[str | CommandSpec | ToolUseBlock, ...] = Field(min_length=1, max_length=MAX_COMMANDS)
    timeout: float = Field(
        default=DEFAULT_COMMAND_TIMEOUT_S, gt=0, description="Default per-command timeout (s)."
    )
    deadline: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="Seconds for all the commands together; None: only each command's timeout. "
        "Under a floor, at most the operator's --task-deadline (and that when None).",
    )
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = Field(
        default=None,
        min_length=1,
        description="Where commands start (a sandbox path; relative: from the workspace root); the "
        "workspace root when None. Commands may set their own.",
    )
    user: str | None = Field(
        default=None,
        min_length=1,
        description="Run commands as this user inside the sandbox (docker; local and bwrap refuse any).",
    )
    stop_on_failure: bool = Field(
        default=False, description="Skip the remaining commands after one fails, times out or errors."
    )
    permission_mode: str = Field(
        default="bypassPermissions",
        description="Permission mode for tool_use commands (the task file is the operator's own job).",
    )
    allow: tuple[str, ...] = Field(default=(), description="Extra allow rules for tool_use commands.")
    trust_workspace: bool = Field(
        default=False,
        description="Obey the workspace's own settings files (hooks, allow rules, modes, MCP servers) "
        "for tool_use commands; otherwise only their deny/ask rules apply.",
    )
    collect: CollectSpec = Field(default_factory=CollectSpec)
    #: The directory of the task file this task was read from (set by `iter_tasks`; kept by
    #: ``model_copy``, not serialised): the operator chose where it lies, so `TaskFloor` does not
    #: judge a workspace's parents at or above it (red team round 15).
    _task_dir: Path | None = PrivateAttr(default=None)
    #: The (device, inode) of ``workspace`` when `TaskFloor` judged what it holds (kept by
    #: ``model_copy``): the copy must open that directory, not what a swapped link names later.
    _source_identity: tuple[int, int] | None = PrivateAttr(default=None)

    @field_validator("env", mode="before")
    @classmethod
    def _few_env(cls, value: Any) -> Any:
        return _at_most("env", value, MAX_ENV_ENTRIES, _ENV_HINT)

    @field_validator("id")
    @classmethod
    def _safe_id(cls, value: str) -> str:
        if not _ID_RE.fullmatch(value):  # not match(): its "$" also matches before a final newline
            raise ValueError(
                "id must be 1-200 characters of letters, digits and ._:@+=- (starting with a letter or digit)"
            )
        return value

    @field_validator("commands", mode="before")
    @classmethod
    def _tool_use_dicts(cls, value: Any) -> Any:
        # A dict is a tool_use block only when it says so; otherwise it is a CommandSpec.
        if isinstance(value, list):
            return [
                ToolUseBlock.model_validate(c) if isinstance(c, dict) and c.get("type") == "tool_use" else c
                for c in value
            ]
        return value

    @model_validator(mode="after")
    def _user_needs_shell_commands(self) -> Task:
        if self.user is not None and self.uses_tools:
            raise ValueError(
                "user applies to shell commands (run/argv); tool_use blocks run as the sandbox's own "
                "command user: set user on each command object instead"
            )
        return self

    @model_validator(mode="after")
    def _unique_tool_use_ids(self) -> Task:
        # A session refuses a second call under a used id (round 19): say so before the task runs.
        seen: set[str] = set()
        for c in self.commands:
            if isinstance(c, ToolUseBlock):
                if c.id in seen:
                    raise ValueError(
                        f"tool_use id {c.id!r} is used twice in this task: give each tool_use its own id"
                    )
                seen.add(c.id)
        return self

    @model_validator(mode="after")
    def _os_can_take(self) -> Task:
        _refuse_nul("workspace", self.workspace)
        _refuse_nul("cwd", self.cwd)
        _refuse_nul("user", self.user)
        _refuse_nul("env", *self.env, *self.env.values())
        _refuse_nul("commands", *(c for c in self.commands if isinstance(c, str)))
        return self

    @model_validator(mode="after")
    def _encodable(self) -> Task:
        # JSON's "\ud800" decodes to a lone surrogate: no command, environment or result line
        # can hold it, and it failed only later, where it stopped the whole run.
        try:
            self.model_dump_json()
        except ValueError as exc:
            raise ValueError(
                f"the task holds text that is not valid Unicode (a lone surrogate?): {exc}"
            ) from exc
        return self

    @property
    def uses_tools(self) -> bool:
        """Whether any command is a tool_use block (those need a full Runtime)."""
        return any(isinstance(c, ToolUseBlock) for c in self.commands)

    def command_specs(self) -> list[CommandSpec | ToolUseBlock]:
        """Commands normalised: strings become `CommandSpec` with the task's defaults."""
        out: list[CommandSpec | ToolUseBlock] = []
        for command in self.commands:
            if isinstance(command, str):
                out.append(CommandSpec(run=command))
            else:
                out.append(command)
        return out
