"""The state and counters of a container's network namespace: what one task could leave the next.

A recycled container keeps its network namespace, and with it counters no reset can zero: the
loopback's packets and bytes (``/proc/net/dev``, ``/sys/class/net/lo/statistics``) and the
namespace's protocol statistics (``/proc/net/snmp``, ``snmp6``, ``netstat``). Every command
reads them, and a task sets them exactly: 1,234 datagrams to the loopback and the next task reads
1,234 (red team round 36, docker2). A fresh container's namespace starts them again; the
executor never uses the network. So a container whose counters moved during a task (the task
used a socket, or its network saw traffic) is not reused: the host reads them from outside
(``/proc/<pid>/net``), once before anything of the image runs and again at each reset.

Round 45 (docker6): state that outlives its socket and moves no counter was not read: an IPv6
flow label (``IPV6_FLOWLABEL_MGR``, any uid) lingers up to 150 s in ``/proc/net/ip6_flowlabel``
with 148 bits of the task's choosing, and the next task listed it. Now every file of the
namespace's ``/proc/net`` is compared (lines sorted: some list a hash table in its order), save
`UNCOMPARED`: files that show the host's counters, which move without the task and which it
cannot set for one namespace alone, and the TCP tables the reset reads anyway. A file that
appears or goes counts as moved.
"""

from __future__ import annotations

import os

__all__ = ["UNCOMPARED", "NetCounters", "counter_problems", "read_counters"]

#: Files and directories of ``/proc/net`` that show host-wide numbers (never compared): the
#: per-CPU packet and route-cache statistics, socket memory and allocation totals (``sockstat``,
#: ``protocols``), and the registries of loaded netfilter extensions (a module the host loads).
#: What is per namespace (sockets, routes, addresses, flow labels, the counters) is compared, but
#: ``tcp`` and ``tcp6``: the kernel walks the host's whole connection table for them (10-20 ms
#: each here), and the reset's `open_sockets` already refuses any entry there.
UNCOMPARED = frozenset(
    {
        "tcp",
        "tcp6",
        "softnet_stat",
        "stat",
        "sockstat",
        "sockstat6",
        "protocols",
        "ip_tables_matches",
        "ip_tables_targets",
        "ip6_tables_matches",
        "ip6_tables_targets",
        "arp_tables_matches",
        "arp_tables_targets",
    }
)
#: Bytes read of one file at most (a namespace's tables are small; a huge one is itself a change).
_MAX_FILE = 1 << 20

#: What the counters read: file name -> text.
NetCounters = dict[str, str]


def read_counters(proc: str) -> NetCounters:
    """Every file of the network namespace of the process whose ``/proc`` directory is ``proc``
    (`PidRef.proc_dir`: that process's alone), read on the host (`OSError` on failure), save
    `UNCOMPARED`; a directory's files one level down (``dev_snmp6/lo``). Lines sorted."""
    base = f"{proc}/net"
    seen: NetCounters = {}

    def take(rel: str) -> None:
        with open(f"{base}/{rel}", "rb") as fh:
            raw = fh.read(_MAX_FILE + 1)
        text = raw.decode("utf-8", errors="replace")
        seen[rel] = "\n".join(sorted(text.splitlines())) + ("\n(cut)" if len(raw) > _MAX_FILE else "")

    for name in sorted(os.listdir(base)):
        if name in UNCOMPARED:
            continue
        path = f"{base}/{name}"
        if os.path.isdir(path):
            for sub in sorted(os.listdir(path)):
                if os.path.isfile(f"{path}/{sub}"):
                    take(f"{name}/{sub}")
        elif os.path.isfile(path):
            take(name)
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
        "task would read them or the state left there (a task that uses sockets or flow labels, or a "
        "network with traffic, gets a fresh container)"
    ]
