"""What the daemon kept of the container shellrt asked for (round 40).

dockerd drops some settings instead of refusing the container, where the host lacks what they need:
``MemorySwap`` becomes -1 without swap accounting (commands swap past their memory limit),
``PidsLimit`` goes without the pids controller (a fork bomb takes the host's pids), CFS quotas,
``OomKillDisable``... It says so only in the create answer's ``Warnings``. A session must not run
with less isolation than its policy asked, silently: the created container's ``HostConfig`` is
compared with the request, field by field, and any warning refuses too (a newer daemon's dropped
setting this list does not name).
"""

from __future__ import annotations

from typing import Any

__all__ = ["CHECKED_FIELDS", "dropped_settings"]

#: The ``HostConfig`` fields shellrt sets for isolation or limits: each must come back as asked.
CHECKED_FIELDS = (
    "Memory",
    "MemorySwap",
    "PidsLimit",
    "NanoCpus",
    "CapAdd",
    "CapDrop",
    "SecurityOpt",
    "ReadonlyRootfs",
    "NetworkMode",
    "Sysctls",
    "Tmpfs",
    "Ulimits",
    "Init",
    "AutoRemove",
    "Privileged",
)


def _same(asked: Any, kept: Any) -> bool:
    """Equal, an absent value and an empty one alike (the daemon writes ``[]`` for ``None``)."""
    if asked in (None, [], {}, False, 0) and kept in (None, [], {}, False, 0):
        return asked == kept or not asked
    return bool(asked == kept)


def dropped_settings(asked: dict[str, Any], kept: dict[str, Any], warnings: list[str] | None) -> list[str]:
    """Each of `CHECKED_FIELDS` the daemon did not keep as ``asked`` (``kept``: the created
    container's ``HostConfig``), then each of its ``warnings``; empty when all is as asked."""
    problems = [
        f"{name} {asked.get(name)!r} became {kept.get(name)!r}"
        for name in CHECKED_FIELDS
        if not _same(asked.get(name), kept.get(name))
    ]
    problems += [f"the daemon warned: {str(w).strip().rstrip('.')[:300]}" for w in warnings or [] if str(w).strip()]
    return problems
