"""What hooks and rules see of a file tool call: its paths resolved, as Claude Code backfills them.

A hook guarding ``/abs/ws/a.txt`` must also catch ``./sub/../a.txt``, ``~/ws/a.txt``
and a symlink to it. Before PreToolUse hooks (and the permission gate) see a
file tool's input, its path fields are replaced by the resolved absolute path:
relative to the session cwd, ``~`` expanded, symlinks resolved (the logical host
path permission rules match, `shellrt.tools._paths.state_key`). Only the
observed copy changes; the tool runs with the input the model wrote, and the
transcript keeps both.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from shellrt.protocol import ToolContext
from shellrt.tools._paths import PathInput, resolve_path, state_key, view_for

__all__ = ["PATH_FIELDS", "resolve_observed_paths"]

#: Input fields that name a path (as in Claude Code's file tools).
PATH_FIELDS = ("file_path", "notebook_path", "path")

ModelT = TypeVar("ModelT", bound=BaseModel)


def resolve_observed_paths(observed: ModelT, ctx: ToolContext) -> ModelT:
    """``observed`` with every path field given replaced by its resolved absolute path.

    A file tool's ``validate`` already resolved its main path (``resolved``):
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
    view = None
    for name in fields:
        if name != "path" and observed.resolved:
            updates[name] = observed.resolved
            continue
        view = view or view_for(ctx)
        try:
            updates[name] = state_key(resolve_path(getattr(observed, name), ctx, view), ctx, view)
        except (OSError, ValueError):
            continue  # unresolvable: validation already refused what matters; keep what was written
    return observed.model_copy(update=updates) if updates else observed
