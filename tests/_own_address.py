"""A non-loopback IPv4 address of this machine, for probes that need an allowed local address
while every loopback address is denied (a deny naming one covers all, round 28 net2)."""

from __future__ import annotations

import os
import socket

import pytest


def own_ipv4() -> str:
    """The address this machine's default route leaves from (no packet is sent); fails under CI,
    skips elsewhere, when there is none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: only picks the route's source address
            address = str(s.getsockname()[0])
        except OSError:
            address = ""
    if not address or address.startswith("127.") or address == "0.0.0.0":
        message = "this probe needs a non-loopback IPv4 address on the machine (none has a route)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return address
