"""Red team, round 41 (bwrap4): a root caller's session command heard the host's device events.

The filter let a command open a ``NETLINK_KOBJECT_UEVENT`` socket ("udev monitors"), on the word of
rounds 14 and 38 that it hears nothing: the sandbox's network namespace belonged to a user namespace
of its own. The kernel sends a device's events (one without a network namespace: block, loop, USB,
memory, CPU...) to every network namespace the host's own user namespace owns; a root caller's
session namespace is one of those since round 30 (kept across zygote replacements), and so is a
non-root caller's under ``network: host``. The command heard every host event: here each ``change``
written to a host device's ``uevent`` -- loop devices set up by other tenants' containers, disks,
hot-plugged devices: activity across tenants, with device names and ids. Now the socket fails with
EPROTONOSUPPORT (`sandbox._seccomp.NETLINK_PROTOCOLS`) whoever owns the namespace.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap

pytestmark = pytest.mark.bwrap

_PROBE = r"""
import errno, select, socket, time
try:
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15)
    s.bind((0, 1))
except OSError as exc:
    print("OPEN", errno.errorcode[exc.errno])
    print("HEARD 0")
else:
    print("OPEN ok")
    heard, end = 0, time.monotonic() + 3
    while time.monotonic() < end:
        if select.select([s], [], [], 0.2)[0]:
            s.recv(65536)
            heard += 1
    print("HEARD", heard)
"""

#: A harmless host event: a synthetic ``change`` of /dev/null's device (root only).
_EVENT = "/sys/devices/virtual/mem/null/uevent"


def _stir(stop: threading.Event) -> None:
    while not stop.wait(0.2):
        try:
            with open(_EVENT, "w") as f:
                f.write("change")
        except OSError:
            return  # not root: nothing to stir


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_hears_no_host_device_events(tmp_path: Path, persistent: bool) -> None:
    """Failed before as root in a session (``OPEN ok``, ``HEARD 14``) and per command (``OPEN ok``,
    heard none), and as uid 65534 both ways (``OPEN ok``): 4 of 4."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    stop = threading.Event()
    stirrer = threading.Thread(target=_stir, args=(stop,), daemon=True)
    if os.geteuid() == 0:
        stirrer.start()
    try:
        said, out = probe_lines(ws, tmp_path / "s", _PROBE, persistent=persistent)
    finally:
        stop.set()
        if stirrer.is_alive():
            stirrer.join()
    assert said.get("HEARD") == "0", out
    assert said.get("OPEN") == "EPROTONOSUPPORT", out


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_command_hears_no_host_device_events")
