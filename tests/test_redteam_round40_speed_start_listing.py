"""Red team round 40 (speed): a bwrap session's start lists the other namespaces' sockets once.

A zygote start made a `SocketWatch` (the sockets there at the start, to tell a new one before each
command) and then asked `IpcMasks.args` for the masks: each walked ``/proc`` and read every other
network namespace's table (`sandbox._netns_sockets.namespace_lines`), twice a start (round 39
sockets' Left). Now the start's masks are worked out from the listing the watch was made from: one
listing a start, and what the watch takes as "there at the start" is exactly what was masked (a
socket bound between two listings was masked but not in the watch's start set, or the other way
round). Root and uid 65534.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _hostsockets
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = [pytest.mark.bwrap]


def test_a_session_start_lists_the_sockets_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: 2 listings a zygote start (root: 2 for 1 and 4 for 2; uid 65534 likewise)."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    starting: list[bool] = []
    calls: list[int] = []
    starts: list[int] = []  # a busy host's new socket can replace the zygote: each start counts
    real_lines = _hostsockets.namespace_lines
    real_start = BwrapBackend._start_zygote

    def counted() -> tuple[bytes, bytes]:
        if starting:
            calls.append(1)
        return real_lines()

    async def start(self: BwrapBackend) -> None:
        starting.append(True)
        starts.append(1)
        try:
            await real_start(self)
        finally:
            starting.clear()

    monkeypatch.setattr(_hostsockets, "namespace_lines", counted)
    monkeypatch.setattr(BwrapBackend, "_start_zygote", start)

    async def main() -> str:
        backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            assert backend._zygote is not None, "the session must run under its zygote here"
            return (await sup.run("echo started", timeout_s=60)).preview

    out = anyio.run(main)
    assert "started" in out, out
    assert len(calls) == len(starts), f"{len(calls)} listings for {len(starts)} zygote start(s)"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_session_start_lists_the_sockets_once")
