"""Find the host pid of a process running inside a container.

The daemon is local (the docker backend requires it), so container processes
are ordinary host processes in a child pid namespace. A process's
``/proc/<pid>/status`` lists its pid in every namespace (``NSpid``); the last
entry is the pid the container sees. The cgroup path (which holds the
container id) tells containers apart, since every container has a pid 7.
"""

from __future__ import annotations

import os

__all__ = ["host_pid", "is_container_process"]


def _ns_pids(pid: str) -> list[str]:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    return line.split()[1:]
    except OSError:
        pass
    return []


def _in_container(pid: str, container_id: str) -> bool:
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as fh:
            return container_id in fh.read()
    except OSError:
        return False


def host_pid(container_id: str, container_pid: int) -> int | None:
    """Host pid of ``container_pid`` in the container ``container_id`` (None when not found)."""
    want = str(container_pid)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        ns = _ns_pids(entry)
        if len(ns) >= 2 and ns[-1] == want and _in_container(entry, container_id):
            return int(entry)
    return None


def is_container_process(pid: int, container_id: str, container_pid: int) -> bool:
    """Host pid ``pid`` is the process ``container_pid`` of the container ``container_id`` now."""
    ns = _ns_pids(str(pid))
    return len(ns) >= 2 and ns[-1] == str(container_pid) and _in_container(str(pid), container_id)
