"""Container labels that mark a container as shellrt's, and who may reap it.

Every container the docker backend creates carries labels naming its session,
creation time and owner (host, pid and the pid's start time). A client that dies
without ``close()`` (SIGKILL, OOM, power loss) leaves its container running;
the next backend start on the same host, or ``shellrt sandbox gc``, finds it
by these labels and removes it once the owner process is gone. The owner's start
time guards against pid reuse: a recycled pid belongs to a different process. It is
compared in clock ticks since boot (``/proc/<pid>/stat``), which no wall-clock step
moves: compared in seconds since the epoch, a clock step made every live owner on the
host look dead to the next start's reap (red team round 51).

Pure logic, no docker SDK: the SDK is confined to ``sandbox/docker.py``.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass

import psutil

__all__ = [
    "LABEL_CREATED",
    "LABEL_HOST_DIR",
    "LABEL_IO_DIR",
    "LABEL_MANAGED",
    "LABEL_OWNER_HOST",
    "LABEL_OWNER_PID",
    "LABEL_OWNER_START",
    "LABEL_OWNER_TICKS",
    "LABEL_SESSION",
    "ReapVerdict",
    "judge",
    "owner_alive",
    "session_labels",
    "start_ticks",
]

LABEL_MANAGED = "shellrt.managed"
LABEL_SESSION = "shellrt.session"
LABEL_CREATED = "shellrt.created"
LABEL_OWNER_PID = "shellrt.owner-pid"
LABEL_OWNER_HOST = "shellrt.owner-host"
LABEL_OWNER_START = "shellrt.owner-start"
#: The owner's start in clock ticks since boot (field 22 of ``/proc/<pid>/stat``): exact, and moved
#: by no clock step. ``LABEL_OWNER_START`` (seconds since the epoch, from the kernel's ``btime``,
#: which a step of the wall clock moves) is kept for the containers of an older shellrt.
LABEL_OWNER_TICKS = "shellrt.owner-ticks"
#: The owner's boot and PID namespace: its pid means something only where both are ours (two
#: containers may share a hostname and the daemon, never a PID namespace: red team round 10).
LABEL_OWNER_NS = "shellrt.owner-ns"
#: Host directory holding the session's FIFOs (removed with the container).
LABEL_IO_DIR = "shellrt.io-dir"
#: Host directory holding the session's workspace copy and masks (removed with the container).
LABEL_HOST_DIR = "shellrt.host-dir"


def _kernel_says_gone(pid: int) -> bool:
    """Whether no process has ``pid`` (``kill(pid, 0)``: ESRCH; nothing is sent). A missing
    ``/proc/<pid>`` alone proves nothing: a ``/proc`` mounted ``hidepid=2`` (systemd's
    ``ProtectProc=invisible``) hides every other user's process from a caller without root, whose
    reap then removed every other user's live session's container (red team round 52)."""
    if pid <= 0:
        return True  # no owner's pid (a forged label): nothing to ask about
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # EPERM: it runs, under another user
        return False
    return False


def _process_start(pid: int) -> float | None:
    """The process's start in seconds since the epoch; None when it is gone (a zombie too: it has
    ended). Raises `psutil.AccessDenied` when this process may not tell (then nothing is known)."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return float(process.create_time())
    except psutil.NoSuchProcess:
        if _kernel_says_gone(pid):
            return None
        raise psutil.AccessDenied(pid) from None  # it runs, hidden from this reader


def start_ticks(pid: int) -> int | None:
    """The process's start in clock ticks since boot (``/proc/<pid>/stat`` field 22); None when
    it is gone (a zombie too: it has ended). Raises `OSError` or `ValueError` when ``/proc`` cannot
    tell (nothing is known): a process it hides (``hidepid``) among them."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except (FileNotFoundError, ProcessLookupError):
        if _kernel_says_gone(pid):
            return None
        raise PermissionError(f"process {pid} runs but /proc does not show it here") from None
    # The name (field 2) is the process's own to write, ")" included: the fields follow the last.
    fields = data[data.rindex(b")") + 2 :].split()
    if fields[0] in (b"Z", b"X", b"x"):
        return None
    return int(fields[19])


def owner_namespace() -> str:
    """``<boot id>/<pid namespace inode>`` of this process ("" where /proc cannot tell)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            boot = fh.read().strip()
        return f"{boot}/{os.stat('/proc/self/ns/pid').st_ino}"
    except OSError:
        return ""


def session_labels(session_id: str, io_dir: str, host_dir: str) -> dict[str, str]:
    """Labels for a new container owned by this process."""
    pid = os.getpid()
    start = _process_start(pid)
    ticks = start_ticks(pid)
    return {
        LABEL_MANAGED: "1",
        LABEL_SESSION: session_id,
        LABEL_CREATED: str(int(time.time())),
        LABEL_OWNER_PID: str(pid),
        LABEL_OWNER_HOST: socket.gethostname(),
        LABEL_OWNER_START: f"{start:.2f}" if start is not None else "",
        LABEL_OWNER_TICKS: str(ticks) if ticks is not None else "",
        LABEL_OWNER_NS: owner_namespace(),
        LABEL_IO_DIR: io_dir,
        LABEL_HOST_DIR: host_dir,
    }


def owner_alive(labels: Mapping[str, str], anchor_ticks: int | None = None) -> bool | None:
    """Whether the container's owner process still runs; None when that cannot be told from here
    (then no reap takes it: a live session's container is never removed on a guess).

    ``anchor_ticks``: the start, in clock ticks since boot, of the container's own first process
    (docker-init, verified as that container's), when known. Its owner started it, so held its pid
    from before that start until after it: a process at that pid now that started before it is the
    owner itself, one that started after it is another (the pid was reused). Used for an older
    shellrt's labels (seconds since the epoch, no ticks) when the seconds disagree: a clock step
    since moved them (red team round 51's Left), and no clock step moves ticks."""
    if labels.get(LABEL_OWNER_HOST) != socket.gethostname():
        return None
    ns = labels.get(LABEL_OWNER_NS)
    if ns is not None and ns != owner_namespace():
        return None  # another PID namespace (or boot): its pid is not ours to look up
    try:
        pid = int(labels.get(LABEL_OWNER_PID, ""))
    except ValueError:
        return False
    ticks = labels.get(LABEL_OWNER_TICKS, "")
    if ticks:
        try:
            want = int(ticks)
            have = start_ticks(pid)
        except (OSError, ValueError, IndexError):
            return None
        return have == want
    try:
        start = _process_start(pid)
    except (psutil.Error, OSError, ValueError):  # denied (or no pid psutil takes): no proof it is gone
        return None
    if start is None:
        return False
    recorded = labels.get(LABEL_OWNER_START, "")
    if recorded:
        try:
            if abs(float(recorded) - start) < 1.0:
                return True
        except ValueError:
            return True
        if anchor_ticks is None:
            return False  # no anchor (the container does not run): judged by the seconds, as before
        try:
            have = start_ticks(pid)
        except (OSError, ValueError, IndexError):
            return None
        return have is not None and have < anchor_ticks
    return True


@dataclass(frozen=True, slots=True)
class ReapVerdict:
    """Whether to remove a container, and why (shown by ``shellrt sandbox gc``)."""

    reap: bool
    reason: str


def judge(
    labels: Mapping[str, str],
    *,
    now: float | None = None,
    older_than: float | None = None,
    reap_all: bool = False,
    anchor_ticks: int | None = None,
) -> ReapVerdict:
    """Decide whether a shellrt container may be removed.

    Default: only orphans (owner process on this host is gone). ``older_than``
    also reaps containers older than that many seconds whatever their owner
    (leaks of long-lived processes, containers of other hosts); ``reap_all``
    reaps every shellrt container. ``anchor_ticks``: see `owner_alive`.
    """
    if labels.get(LABEL_MANAGED) != "1":
        return ReapVerdict(False, "not managed by shellrt")
    if reap_all:
        return ReapVerdict(True, "--all")
    alive = owner_alive(labels, anchor_ticks)
    if alive is False:
        return ReapVerdict(True, f"owner pid {labels.get(LABEL_OWNER_PID, '?')} is gone")
    if older_than is not None:
        try:
            age = (time.time() if now is None else now) - float(labels.get(LABEL_CREATED, "0"))
        except ValueError:
            age = float("inf")
        if age > older_than:
            return ReapVerdict(True, f"older than {older_than:g}s")
    if alive is None:
        return ReapVerdict(
            False,
            f"owned by another host or PID namespace ({labels.get(LABEL_OWNER_HOST, '?')}), or an owner "
            "this process may not look at",
        )
    return ReapVerdict(False, "owner is alive")
