"""How far a docker session's commands are isolated from each other, as the executor found at start.

Every command of a session runs as the same uid in the container's one pid namespace. ``priv.c``
puts each in a Landlock domain of its own (``isolate_command``: ptrace and ``/proc/<pid>/mem``,
``environ``, ``fd``... closed between commands from ABI 2, Linux 5.19; signals and abstract unix
sockets too from ABI 6, Linux 6.12: round 28 docker3). Where the kernel is older, Landlock is off or the daemon's seccomp profile refuses it,
no domain can be made: that was silent until red team round 28 (docker2). The executor now probes
once at start (``probe_isolation``) and names the level in its hello; this module turns that word
into the level the backend reports, the warning the session shows once, and the refusal
``DockerConfig.require_command_isolation`` asks for. The word comes from the executor script the
image's ``/bin/sh`` interprets: a hostile image can claim any level, as it could skip ``priv``
altogether; the level describes the kernel and daemon for an honest image.
"""

from __future__ import annotations

import os
from typing import Literal

from sandbox.errors import BackendUnavailableError

__all__ = [
    "CommandIsolation",
    "hello_word",
    "isolation_from_hello",
    "isolation_warning",
    "record_isolation",
    "recorded_isolation",
    "require_isolation",
]

#: The file in a session's host directory (label ``shellrt.host-dir``, never mounted in the
#: container) where the backend records the level its container announced, for ``shellrt sandbox
#: ls`` (red team round 29: the level is known only after the start, labels are set before it).
_RECORD = "isolation"

#: ``none``: one trust domain per session; ``proc``: ptrace and ``/proc`` closed between commands,
#: not signals; ``proc+signals``: both, and abstract unix sockets (the same ABI 6; the name predates
#: that scope and is kept for callers); ``unknown``: the probe itself failed.
CommandIsolation = Literal["none", "proc", "proc+signals", "unknown"]

_LEVELS: dict[str, CommandIsolation] = {"0": "none", "1": "proc", "2": "proc+signals", "e": "unknown"}


def isolation_from_hello(word: str) -> CommandIsolation | None:
    """The level the hello's last field names; None for any other word (a forged hello)."""
    return _LEVELS.get(word)


def hello_word(level: CommandIsolation | None) -> str | None:
    """The word the executor announced ``level`` with (its ``SHELLRT_ISO``); None before a start."""
    return None if level is None else next(word for word, named in _LEVELS.items() if named == level)


def isolation_warning(level: CommandIsolation) -> str | None:
    """What the person running the session must know about ``level`` (None at the full level)."""
    fix = (
        "DockerConfig.require_command_isolation refuses such hosts; Landlock needs Linux 5.19+ (signals "
        "6.12+), 'landlock' in the kernel's lsm= list and a daemon seccomp profile that allows "
        "landlock_create_ruleset, landlock_add_rule and landlock_restrict_self"
    )
    if level == "proc+signals":
        return None
    if level == "proc":
        return (
            "docker: the kernel has no Landlock signal scope (ABI < 6, Linux < 6.12): a command of this "
            f"session (a background task) can still signal another one and answer its abstract unix sockets; ptrace "
            f"and /proc are closed between them. {fix}"
        )
    if level == "unknown":
        return (
            "docker: the executor's Landlock probe failed in this container: its commands may not be isolated "
            f"from each other, and each may fail to start ('shellrt-priv: landlock: ...'). {fix}"
        )
    return (
        "docker: Landlock is unavailable in this container, so its commands are NOT isolated from each other: "
        "a background task can read another command's memory and environment (/proc/<pid>/mem, environ) "
        f"and signal it, as the same uid. {fix}"
    )


def require_isolation(level: CommandIsolation, image: str) -> None:
    """``DockerConfig.require_command_isolation``: refuse a container whose commands get no domain
    (``none``) or whose probe failed (``unknown``: fail closed)."""
    if level in ("proc", "proc+signals"):
        return
    why = "the probe for it failed" if level == "unknown" else "Landlock is unavailable there"
    raise BackendUnavailableError(
        f"DockerConfig.require_command_isolation is set but a container of {image!r} cannot isolate its "
        f"commands from each other ({why}). Run on Linux 5.19+ with Landlock enabled (lsm=...,landlock) "
        "and a docker seccomp profile that allows the landlock_* calls (docker 20.10's default does), "
        "or unset require_command_isolation to accept one trust domain per session"
    )


def record_isolation(host_dir: str | None, level: CommandIsolation) -> None:
    """Write ``level`` to ``host_dir``'s record (replaced whole: a reader never sees half of it);
    best effort (a listing then shows ``?``)."""
    if host_dir is None:
        return
    path = os.path.join(host_dir, _RECORD)
    try:
        with open(path + ".new", "w", encoding="ascii") as fh:
            fh.write(level)
        os.replace(path + ".new", path)
    except OSError:
        pass


def recorded_isolation(host_dir: str | None) -> str:
    """The level recorded in ``host_dir`` (a label's path: read without following a final link, a
    few bytes, only a known word), ``?`` when there is none to read (not started yet, another
    user's session, no such directory)."""
    if not host_dir:
        return "?"
    try:
        fd = os.open(
            os.path.join(host_dir, _RECORD), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        )
    except OSError:
        return "?"
    try:
        word = os.read(fd, 32).decode("ascii", errors="replace")
    except OSError:
        return "?"
    finally:
        os.close(fd)
    return word if word in _LEVELS.values() else "?"
