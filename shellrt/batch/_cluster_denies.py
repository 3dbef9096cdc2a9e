"""The addresses a Ray task's proxy must never reach: the node's own and the cluster's nodes'.

A Ray node's loopback and addresses carry the cluster's control plane (the GCS, the raylet, the
dashboard's job API: code on every node). Round 17 refused ``network: host``/``bridge`` there; a
``proxied`` task still listed ``127.0.0.1`` or ``localhost`` (or a node's address) in its
``allowed_domains`` and the node's proxy connected it (red team round 39, novel4). Denies, not a
refusal of names: the proxy judges a deny on the address a connection reaches (deny beats allow),
so no name that resolves there, now or after a rebinding, gets through.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

__all__ = ["node_addresses", "with_cluster_denies"]

#: Every loopback address (an entry naming one covers all of it: `sandbox._addrdeny`) and the name.
_LOOPBACK = ("127.0.0.0/8", "::1", "localhost")


def node_addresses() -> tuple[str, ...]:
    """This machine's interface addresses (no scope suffix), where its Ray services may listen."""
    import psutil

    found: list[str] = []
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            text = str(entry.address).split("%", 1)[0]
            try:
                ipaddress.ip_address(text)
            except ValueError:
                continue  # a MAC address
            found.append(text)
    return tuple(dict.fromkeys(found))


def with_cluster_denies(task_data: dict[str, Any], cluster: Iterable[str]) -> dict[str, Any]:
    """``task_data`` (a task as JSON) whose proxy also denies loopback, this node's addresses and
    ``cluster`` (the other nodes'); unchanged when the task has no proxy (no allowed domain)."""
    sandbox = task_data.get("sandbox") or {}
    if not sandbox.get("allowed_domains"):
        return task_data  # no proxy (a tool_use task's WebFetch refuses non-public hosts itself)
    own = [str(d) for d in sandbox.get("denied_domains") or ()]
    added = [*_LOOPBACK, *node_addresses(), *(str(a) for a in cluster if a)]
    denied = list(dict.fromkeys([*own, *added]))
    return {**task_data, "sandbox": {**sandbox, "denied_domains": denied}}
