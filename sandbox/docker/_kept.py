"""What the daemon kept of the container shellrt asked for (round 40).

dockerd drops some settings instead of refusing the container, where the host lacks what they need:
``MemorySwap`` becomes -1 without swap accounting (commands swap past their memory limit),
``PidsLimit`` goes without the pids controller (a fork bomb takes the host's pids), CFS quotas,
``OomKillDisable``... It says so only in the create answer's ``Warnings``. A session must not run
with less isolation than its policy asked, silently: the created container's ``HostConfig`` is
compared with the request, field by field, and any warning refuses too (a newer daemon's dropped
setting this list does not name).

Round 40 review16: the mounts shellrt asks for (read-only I/O directory, read-denied masks,
protected binds) are compared too, and so are the isolation fields shellrt leaves to the daemon's
defaults (a host namespace, a device, docker's masked ``/proc`` files): a daemon, a compatible API
or a proxy that rewrites a request answers no warning when it widens one of them.

Round 41 (docker4): ``Runtime`` and ``CgroupnsMode`` are asked for (``runc``: the pidfd joins, the
host's ``/proc`` reads and ``priv.c`` assume it; ``private``: ``host``, docker's default on cgroup
v1, shows commands every host cgroup on v2) and compared; ``OomScoreAdj`` and ``Cgroup`` must stay
docker's default.

Round 45 (docker6): the masked paths checked are the ones asked (`_masks`: the daemon's own
default, shellrt's floor, the host's per-CPU thermal counters), the floor whatever was asked.
"""

from __future__ import annotations

from typing import Any

from sandbox.docker._masks import FLOOR

__all__ = [
    "CHECKED_FIELDS",
    "CONFIG_FIELDS",
    "changed_config",
    "dropped_settings",
]

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
    # Round 41 (docker4): asked for explicitly, so a daemon's default or a proxy cannot choose them.
    "Runtime",
    "CgroupnsMode",
)

#: The container ``Config`` fields shellrt sets (the main process, its user and cwd, no
#: HEALTHCHECK: an image's would be a ``docker exec`` as container root with the executor's
#: capabilities, outside ``priv drop``).
CONFIG_FIELDS = ("User", "Cmd", "Entrypoint", "WorkingDir", "Healthcheck")

#: Fields shellrt leaves to the daemon, and the values that keep the container's own namespaces,
#: no host device and no way in (anything else widens isolation: refused).
_PRIVATE: dict[str, tuple[Any, ...]] = {
    "PidMode": ("", "private"),
    "IpcMode": ("", "private", "shareable"),
    "UTSMode": ("", "private"),
    "UsernsMode": ("", "private"),
    "Devices": (),
    "DeviceCgroupRules": (),
    "DeviceRequests": (),
    "Binds": (),
    "VolumesFrom": (),
    "Links": (),
    "GroupAdd": (),
    "OomKillDisable": (),
    "PublishAllPorts": (),
    "PortBindings": (),
    # Round 41: another container's cgroup; a negative OOM score, which commands may lower theirs to.
    "Cgroup": ("",),
    "OomScoreAdj": (),
}


def _same(asked: Any, kept: Any) -> bool:
    """Equal, an absent value and an empty one alike (the daemon writes ``[]`` for ``None``)."""
    if asked in (None, [], {}, False, 0) and kept in (None, [], {}, False, 0):
        return asked == kept or not asked
    return bool(asked == kept)


def _mount_key(mount: Any) -> tuple[str, str, str, bool]:
    m = mount if isinstance(mount, dict) else {}
    return (str(m.get("Target")), str(m.get("Type")), str(m.get("Source")), bool(m.get("ReadOnly")))


def _mount_problems(asked: Any, kept: Any) -> list[str]:
    """Each mount asked but not kept as asked (its source, type or read-only flag) and each extra one."""
    want = {_mount_key(m) for m in asked or []}
    have = {_mount_key(m) for m in kept or []}
    return [f"mount {m} was not kept as asked" for m in sorted(want - have)] + [
        f"mount {m} was added" for m in sorted(have - want)
    ]


def _default_problems(kept: dict[str, Any], masked_asked: list[str]) -> list[str]:
    """Each isolation field left to the daemon that it set wider than docker's private default, and
    each path of ``masked_asked`` (with `_masks.FLOOR`, what every container masks) it does not mask."""
    problems = []
    for name, private in _PRIVATE.items():
        value = kept.get(name)
        if value in (None, [], {}, False, 0, *private):
            continue
        problems.append(f"{name} is {value!r}, not the container's own")
    masked = set(kept.get("MaskedPaths") or [])
    missing = [p for p in dict.fromkeys([*FLOOR, *masked_asked]) if p not in masked]
    if missing:
        problems.append(f"MaskedPaths lacks {missing}")
    return problems


def dropped_settings(asked: dict[str, Any], kept: dict[str, Any], warnings: list[str] | None) -> list[str]:
    """Each of `CHECKED_FIELDS` the daemon did not keep as ``asked`` (``kept``: the created
    container's ``HostConfig``), each mount, each isolation default it widened, then each of its
    ``warnings``; empty when all is as asked."""
    problems = [
        f"{name} {asked.get(name)!r} became {kept.get(name)!r}"
        for name in CHECKED_FIELDS
        if not _same(asked.get(name), kept.get(name))
    ]
    problems += _mount_problems(asked.get("Mounts"), kept.get("Mounts"))
    asked_masks = asked.get("MaskedPaths")
    problems += _default_problems(kept, [str(p) for p in asked_masks] if isinstance(asked_masks, list) else [])
    problems += [
        f"the daemon warned: {str(w).strip().rstrip('.')[:300]}" for w in warnings or [] if str(w).strip()
    ]
    return problems


def changed_config(asked: dict[str, Any], kept: dict[str, Any]) -> list[str]:
    """Each of `CONFIG_FIELDS` the daemon did not keep as ``asked`` (``kept``: the created
    container's ``Config``)."""

    def value(config: dict[str, Any], name: str) -> Any:
        got = config.get(name)
        # The daemon fills an image's HEALTHCHECK timings in beside a test of NONE: the test decides.
        return (got or {}).get("Test") if name == "Healthcheck" and isinstance(got, dict) else got

    return [
        f"{name} {value(asked, name)!r} became {value(kept, name)!r}"
        for name in CONFIG_FIELDS
        if not _same(value(asked, name), value(kept, name))
    ]
