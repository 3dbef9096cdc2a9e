"""Red team, round 39 (sockets): one bwrap per command listed every network namespace's sockets twice.

Before each command, `BwrapBackend.exec` asked `IpcMasks.args` once for the host sockets its masks
cover in the writable roots (`_covered_sockets`: to end older runs started before one listened), and
the start asked it again for the masks themselves (`StartMasks`): the host's ``/proc/net/unix``, a
walk of ``/proc`` and every other namespace's table (`sandbox._netns_sockets`), read and filtered
twice a command (~140 us each here). The two answers could also differ (a socket bound between
them was masked but not recorded for the run). Now the start takes the listing the record was made
from: one listing a command. Root and uid 65534.
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


def test_one_bwrap_per_command_lists_the_sockets_once_a_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: 2 listings a command (6 for 3 commands)."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    calls: list[int] = []
    real = _hostsockets.namespace_lines

    def counted() -> tuple[bytes, bytes]:
        calls.append(1)
        return real()

    monkeypatch.setattr(_hostsockets, "namespace_lines", counted)

    async def main() -> list[str]:
        backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
        outs = []
        async with supervised(backend, tmp_path / "s") as sup:
            await sup.run("true", timeout_s=60)  # the first start: its one-off checks
            calls.clear()
            for n in range(3):
                outs.append((await sup.run(f"echo run-{n}", timeout_s=60)).preview)
        return outs

    outs = anyio.run(main)
    assert all(f"run-{n}" in out for n, out in enumerate(outs)), outs
    assert len(calls) == 3, f"{len(calls)} listings for 3 commands"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_one_bwrap_per_command_lists_the_sockets_once_a_command")
