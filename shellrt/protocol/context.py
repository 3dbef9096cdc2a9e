"""Session state a tool sees during one call.

A `ToolContext` is created per session and *forked* per call (`for_call`): the
fork shares the session's mutable state (read state, services, abort signal)
but has its own ``tool_use_id``. Changes that must be ordered — a new cwd, a
discovered tool — are not written directly by a tool; the tool returns a
context modifier (`ToolOutput.context_modifier`) that the runtime applies in
tool_use order after a parallel batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
from pydantic import BaseModel, ConfigDict, Field

from shellrt.protocol.errors import ServiceNotAvailableError

__all__ = ["FileReadRecord", "ProgressEvent", "ProgressSink", "ToolContext"]

T = TypeVar("T")


class FileReadRecord(BaseModel):
    """What a Read saw, so Edit/Write can refuse to act on a stale view (optimistic concurrency)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sha256: str
    mtime_ns: int
    size: int
    #: Only part of the file was read (offset/limit); Edit still requires a full-file hash match.
    partial: bool = False


class ProgressEvent(BaseModel):
    """A progress notice from a running tool, for UIs (never sent to the model)."""

    model_config = ConfigDict(extra="forbid")

    tool_use_id: str
    tool_name: str
    message: str = ""
    elapsed_s: float = 0.0
    bytes_so_far: int | None = None
    last_lines: list[str] = Field(default_factory=list)
    data: dict[str, Any] = Field(default_factory=dict)


ProgressSink = Callable[[ProgressEvent], None]


def _discard(_event: ProgressEvent) -> None:
    return None


@dataclass
class ToolContext:
    """Everything a tool may know about its session and its call."""

    session_id: str
    #: Host directory for this session's spools and persisted results.
    session_dir: Path
    #: Host path of the workspace root.
    workspace: Path
    #: Current working directory, as the sandbox sees it.
    cwd: str
    #: Host roots file tools may touch without asking (workspace first).
    allowed_roots: tuple[Path, ...] = ()
    #: Host paths hidden from every tool (the sandbox policy's read-denied paths).
    read_denied: tuple[Path, ...] = ()
    #: Resolved host path -> what the last Read saw.
    read_state: dict[str, FileReadRecord] = field(default_factory=dict)
    #: Set when the user interrupts; long tools watch it.
    abort: anyio.Event = field(default_factory=anyio.Event)
    #: Effective settings (merged), read-only for tools.
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: Where progress events go.
    progress: ProgressSink = _discard
    #: Session services by type (supervisor, permission engine, tool registry, …).
    services: dict[type[Any], object] = field(default_factory=dict)
    #: Names of deferred tools the model has discovered through ToolSearch.
    discovered_tools: set[str] = field(default_factory=set)
    #: Free-form per-session state owned by individual tools (e.g. the todo list), keyed by tool name.
    tool_state: dict[str, Any] = field(default_factory=dict)
    #: The tool_use id of the current call ("" outside a call).
    tool_use_id: str = ""

    def service(self, kind: type[T]) -> T:
        """Return the session's service of type ``kind``; raises `ServiceNotAvailableError`."""
        found = self.services.get(kind)
        if found is None:
            for registered, obj in self.services.items():
                if issubclass(registered, kind):
                    found = obj
                    break
        if found is None:
            raise ServiceNotAvailableError(
                f"this session has no {kind.__name__}; start the runtime with one (see shellrt.Runtime)"
            )
        return cast(T, found)

    def has_service(self, kind: type[Any]) -> bool:
        """Whether a service of ``kind`` is registered."""
        return kind in self.services or any(issubclass(registered, kind) for registered in self.services)

    def for_call(self, tool_use_id: str) -> ToolContext:
        """A shallow fork for one call: shared mutable state, own id, frozen cwd snapshot."""
        # What copy.copy does for a plain dataclass, without its __reduce_ex__ round trip.
        forked = object.__new__(type(self))
        forked.__dict__.update(self.__dict__)
        forked.tool_use_id = tool_use_id
        return forked

    def report(self, tool_name: str, message: str = "", **data: Any) -> None:
        """Send a progress event for the current call."""
        self.progress(
            ProgressEvent(tool_use_id=self.tool_use_id, tool_name=tool_name, message=message, data=data)
        )
