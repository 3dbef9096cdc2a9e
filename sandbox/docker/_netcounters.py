"""The counters of a container's network namespace: what one task could leave the next to read.

A recycled container keeps its network namespace, and with it counters no reset can zero: the
loopback's packets and bytes (``/proc/net/dev``, ``/sys/class/net/lo/statistics``) and the
namespace's protocol statistics (``/proc/net/snmp``, ``snmp6``, ``netstat``). Every command
reads them, and a task sets them exactly: 1,234 datagrams to the loopback and the next task reads
1,234 (red team round 36, docker2). A fresh container's namespace starts them again; the
executor never uses the network. So a container whose counters moved during a task (the task
used a socket, or its network saw traffic) is not reused: the host reads them from outside
(``/proc/<pid>/net``), once before anything of the image runs and again at each reset.
"""

from __future__ import annotations

import os

__all__ = ["NetCounters", "counter_problems", "read_counters"]

#: The namespace's files of counters (``dev_snmp6`` holds one file per interface).
_FILES = ("dev", "snmp", "snmp6", "netstat")

#: What the counters read: file name -> text.
NetCounters = dict[str, str]


def read_counters(proc: str) -> NetCounters:
    """The counters of the network namespace of the process whose ``/proc`` directory is ``proc``
    (`PidRef.proc_dir`: that process's alone), read on the host (`OSError` on failure)."""
    base = f"{proc}/net"
    seen: NetCounters = {}
    for name in _FILES:
        if os.path.exists(f"{base}/{name}"):
            with open(f"{base}/{name}", encoding="utf-8", errors="replace") as fh:
                seen[name] = fh.read()
    if os.path.isdir(f"{base}/dev_snmp6"):
        for name in sorted(os.listdir(f"{base}/dev_snmp6")):
            with open(f"{base}/dev_snmp6/{name}", encoding="utf-8", errors="replace") as fh:
                seen[f"dev_snmp6/{name}"] = fh.read()
    return seen


def counter_problems(before: NetCounters | None, now: NetCounters) -> list[str]:
    """Why ``now`` is not ``before`` (empty: no counter moved; None before: never recorded)."""
    if before is None:
        return ["the network namespace's counters were not recorded before the task"]
    moved = sorted(name for name in before.keys() | now.keys() if before.get(name) != now.get(name))
    if not moved:
        return []
    return [
        f"the network namespace's counters moved during the task ({', '.join(moved[:5])}): the next "
        "task would read them (a task that uses sockets, or a network with traffic, gets a fresh container)"
    ]
