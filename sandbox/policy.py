"""What a sandboxed process may touch: files, network and resources.

A `SandboxPolicy` is backend-neutral; each backend enforces what it can and
reports (through `SandboxBackend.enforces`) what it cannot, so callers never
mistake the local backend for isolation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["NetworkMode", "ResourceLimits", "SandboxPolicy"]

#: ``none``: no network at all; ``host``: the host's network (local/bwrap);
#: ``bridge``: a container bridge network (docker only).
NetworkMode = Literal["none", "host", "bridge"]


class ResourceLimits(BaseModel):
    """Per-sandbox resource ceilings; ``None`` means no limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_bytes: int | None = Field(default=None, gt=0, description="Memory ceiling in bytes.")
    pids: int | None = Field(default=None, gt=0, description="Maximum number of processes/threads.")
    cpus: float | None = Field(default=None, gt=0, description="CPU share, in cores.")
    tmp_bytes: int | None = Field(
        default=None, gt=0, description="Size of the private /tmp, where a backend makes one."
    )


class SandboxPolicy(BaseModel):
    """Filesystem, network and resource rules for every process of a session.

    Paths are host paths. ``workspace`` is always writable; ``writable_roots``
    adds more. ``read_denied`` paths are hidden from the sandbox entirely.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    workspace: Path
    writable_roots: tuple[Path, ...] = ()
    read_denied: tuple[Path, ...] = ()
    network: NetworkMode = "none"
    limits: ResourceLimits = ResourceLimits()

    def allowed_roots(self) -> tuple[Path, ...]:
        """Every root a command may write in (workspace first)."""
        return (self.workspace, *self.writable_roots)
