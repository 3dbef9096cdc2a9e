"""Finding and removing leftover shellrt containers (``shellrt sandbox gc`` and every start's reap).

Containers carry owner labels (`sandbox.docker._labels`); whoever removes a
container also removes the host I/O directory its label names, whatever that
process's TMPDIR.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors

from sandbox._scratch import remove_tree, sweep_orphans
from sandbox.docker._client import _clients_lock, connect, daemon_url
from sandbox.docker._hostpid import is_container_process
from sandbox.docker._iobase import io_base, io_bases
from sandbox.docker._isolation import recorded_isolation
from sandbox.docker._labels import (
    LABEL_CREATED,
    LABEL_HOST_DIR,
    LABEL_IO_DIR,
    LABEL_MANAGED,
    LABEL_OWNER_HOST,
    LABEL_OWNER_PID,
    LABEL_OWNER_TICKS,
    LABEL_SESSION,
    ReapVerdict,
    judge,
    start_ticks,
)

__all__ = [
    "IO_PREFIX",
    "SandboxInfo",
    "gc_sandboxes",
    "io_base",
    "list_sandboxes",
    "made_by_shellrt",
    "reap_orphans",
    "remove_io_dir",
    "sweep_host_dirs",
]

_log = logging.getLogger("sandbox.docker")
#: Name prefix of every session's host directory (the reaper removes only such directories).
IO_PREFIX = "shellrt-docker-"


def sweep_host_dirs() -> None:
    """Remove the host directories (the temp dir and every usable I/O place) of owners that died."""
    sweep_orphans(IO_PREFIX)
    for base in io_bases():
        sweep_orphans(IO_PREFIX, base)


@dataclass(frozen=True, slots=True)
class SandboxInfo:
    """One shellrt container as `list_sandboxes` / `gc_sandboxes` see it."""

    id: str
    name: str
    session: str
    image: str
    status: str
    created: float
    owner_pid: str
    owner_host: str
    verdict: ReapVerdict
    #: The command isolation its executor announced (`_isolation.CommandIsolation`; ``?``: not
    #: known here, e.g. not started yet or another user's session).
    isolation: str = "?"


#: The name the backend gives its containers (``shellrt-<session>``, ``-<n>`` once replaced).
_NAME = re.compile(r"/shellrt-(?P<session>[0-9a-f]{12})(?:-[0-9]+)?")


def made_by_shellrt(name: str, labels: Mapping[str, str]) -> bool:
    """Whether shellrt made a container of this name (``/shellrt-<session>``) and labels: its name,
    which no image can set, is the one the backend gives and matches its session label. docker
    copies an image's labels onto every container made from it, so labels alone prove nothing
    (red team round 9)."""
    match = _NAME.fullmatch(name)
    return (
        match is not None
        and labels.get(LABEL_MANAGED) == "1"
        and match["session"] == labels.get(LABEL_SESSION)
    )


def _ours(summary: dict[str, Any]) -> bool:
    """`made_by_shellrt` for a container list entry (a single name)."""
    names = summary.get("Names") or []
    return len(names) == 1 and made_by_shellrt(str(names[0]), summary.get("Labels") or {})


def _managed(client: docker.DockerClient) -> list[dict[str, Any]]:
    """Summaries of every shellrt container (one list call: no per-container inspect that could race a removal)."""
    found = client.api.containers(all=True, filters={"label": f"{LABEL_MANAGED}=1"})
    return [summary for summary in found if _ours(summary)]


def _info(summary: dict[str, Any], verdict: ReapVerdict) -> SandboxInfo:
    labels: dict[str, str] = summary.get("Labels") or {}
    try:
        created = float(labels.get(LABEL_CREATED, "0"))
    except ValueError:
        created = 0.0
    names = summary.get("Names") or ["?"]
    return SandboxInfo(
        id=str(summary.get("Id", "?"))[:12],
        name=str(names[0]).lstrip("/"),
        session=labels.get(LABEL_SESSION, "?"),
        image=str(summary.get("Image", "?")),
        status=str(summary.get("State", "?")),
        created=created,
        owner_pid=labels.get(LABEL_OWNER_PID, "?"),
        owner_host=labels.get(LABEL_OWNER_HOST, "?"),
        verdict=verdict,
        isolation=recorded_isolation(labels.get(LABEL_HOST_DIR)),
    )


def remove_io_dir(path: str | None) -> None:
    """Remove a session's host directory, but only one that is plainly ours (any TMPDIR).

    Plainly ours: an absolute path whose name has shellrt's prefix, a real
    directory (not a link) owned by this user or root.
    """
    if not path or not os.path.isabs(path):
        return
    p = Path(path)
    if not p.name.startswith(IO_PREFIX):
        return
    try:
        st = os.lstat(p)
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (0, os.geteuid()):
        return
    remove_tree(p)  # however deep a command made its workspace (round 11)


def _remove_container(client: docker.DockerClient, summary: dict[str, Any]) -> None:
    with contextlib.suppress(docker.errors.NotFound):
        client.api.remove_container(summary["Id"], v=True, force=True)
    labels = summary.get("Labels") or {}
    remove_io_dir(labels.get(LABEL_IO_DIR))
    remove_io_dir(labels.get(LABEL_HOST_DIR))


def _anchor_ticks(client: docker.DockerClient, cid: str) -> int | None:
    """The start in clock ticks of container ``cid``'s first process (docker-init), verified as that
    container's process 1 now; None when it does not run or that cannot be told. Asked only for an
    older shellrt's containers (no ``shellrt.owner-ticks``): one inspect each (`owner_alive`)."""
    try:
        pid = int(client.api.inspect_container(cid)["State"]["Pid"] or 0)
        if pid <= 0 or not is_container_process(pid, cid, 1):
            return None
        return start_ticks(pid)
    except (docker.errors.APIError, OSError, ValueError, IndexError, KeyError, TypeError):
        return None


def _reap(
    client: docker.DockerClient,
    *,
    older_than: float | None = None,
    reap_all: bool = False,
    dry_run: bool = False,
    skip: Iterable[str] = (),
) -> list[SandboxInfo]:
    reaped: list[SandboxInfo] = []
    skipped = set(skip)
    for summary in _managed(client):
        if summary.get("Id") in skipped:
            continue
        labels = summary.get("Labels") or {}
        anchor = None if LABEL_OWNER_TICKS in labels or reap_all else _anchor_ticks(client, str(summary.get("Id")))
        verdict = judge(labels, older_than=older_than, reap_all=reap_all, anchor_ticks=anchor)
        if not verdict.reap:
            continue
        info = _info(summary, verdict)
        if not dry_run:
            try:
                _remove_container(client, summary)
            except docker.errors.APIError as exc:  # e.g. removal already in progress
                _log.debug("could not remove %s: %s", info.id, exc)
                continue
        reaped.append(info)
    return reaped


def list_sandboxes(docker_host: str | None = None) -> list[SandboxInfo]:
    """Every shellrt container on the daemon, with whether the default gc would reap it."""
    client = connect(docker_host)
    return [_info(c, judge(c.get("Labels") or {})) for c in _managed(client)]


def gc_sandboxes(
    docker_host: str | None = None,
    *,
    older_than: float | None = None,
    reap_all: bool = False,
    dry_run: bool = False,
) -> list[SandboxInfo]:
    """Remove leftover shellrt containers (see `sandbox.docker._labels.judge`); return what was reaped."""
    client = connect(docker_host)
    reaped = _reap(client, older_than=older_than, reap_all=reap_all, dry_run=dry_run)
    if not dry_run:
        sweep_host_dirs()  # host directories of owners that died (their containers went with them)
    return reaped


#: Daemons with a start-time reap in flight in this process (concurrent starts share it).
_reaps_running: set[tuple[int, str | None]] = set()


def reap_orphans(client: docker.DockerClient, config_host: str | None) -> None:
    """Remove the containers of dead owners; run beside every start, never twice at once per daemon.

    A start that finds a reap already running skips its own: that reap is
    seconds old at most and catches the same orphans. Failures are logged,
    never fatal (``shellrt sandbox gc`` is the explicit way).
    """
    key = (os.getpid(), daemon_url(config_host))
    with _clients_lock:
        if key in _reaps_running:
            return
        _reaps_running.add(key)
    try:
        reaped = _reap(client)
        if reaped:
            _log.info("reaped %d leftover shellrt container(s) of dead owners", len(reaped))
    except Exception as exc:
        _log.debug("reaping leftovers failed: %s", exc)
    finally:
        with _clients_lock:
            _reaps_running.discard(key)
