"""What hooks and rules see of a file tool call: its paths resolved, as Claude Code backfills them.

A hook guarding ``/abs/ws/a.txt`` must also catch ``./sub/../a.txt``, ``~/ws/a.txt``
and a symlink to it. Before PreToolUse hooks (and the permission gate) see a
file tool's input, its path fields are replaced by the resolved absolute path:
relative to the session cwd, ``~`` expanded, symlinks resolved, named as the
sandbox's commands see it (the canonical sandbox path: ``/workspace/a.txt`` on
docker, never a host temp path). Only the observed copy changes: the tool, and
its own permission check and messages, work with the input the model wrote
(rules match the resolution it remembered), and the transcript keeps both.
"""

from __future__ import annotations

import os
from typing import TypeVar

from pydantic import BaseModel

from sandbox import SandboxBackend
from shellrt.protocol import ToolContext
from shellrt.tools._paths import PathInput, resolve_path, sandbox_path, view_for

__all__ = ["PATH_FIELDS", "resolve_observed_paths"]

#: Input fields that name a path (as in Claude Code's file tools).
PATH_FIELDS = ("file_path", "notebook_path", "path")

ModelT = TypeVar("ModelT", bound=BaseModel)


def resolve_observed_paths(observed: ModelT, ctx: ToolContext) -> ModelT:
    """``observed`` with every path field given replaced by its resolved absolute path.

    A file tool's ``validate`` already resolved its main path (``canonical``):
    that one resolution is reused, so hooks and rules judge the same path. A
    field that was not given stays absent (Glob and Grep without ``path``).
    """
    if not isinstance(observed, PathInput):
        return observed
    fields = [
        f for f in PATH_FIELDS if f in type(observed).model_fields and isinstance(getattr(observed, f), str)
    ]
    if not fields:
        return observed
    updates: dict[str, str] = {}
    for name in fields:
        if name != "path" and observed.canonical:
            updates[name] = observed.canonical
            continue
        # ``path`` (Glob, Grep) is not always what validate resolved (Glob resolves the
        # pattern's base directory): resolve it on its own.
        try:
            updates[name] = _resolve(getattr(observed, name), ctx)
        except (OSError, ValueError):
            continue  # unresolvable: validation already refused what matters; keep what was written
    return observed.model_copy(update=updates) if updates else observed


def _resolve(raw: str, ctx: ToolContext) -> str:
    """The resolved absolute path of ``raw``: the host's realpath where commands see host paths
    (cheap), else through the sandbox's view of its filesystem (docker: the container's path)."""
    backend = ctx.service(SandboxBackend) if ctx.has_service(SandboxBackend) else None  # type: ignore[type-abstract]
    if backend is None or backend.host_view:
        return os.path.realpath(sandbox_path(raw, ctx))
    return resolve_path(raw, ctx, view_for(ctx))
