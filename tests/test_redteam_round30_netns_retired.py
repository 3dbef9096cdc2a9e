"""Red team, round 30 (netns): a retired zygote's commands and a place that appears later.

Round 29 bounded what a running command sees of a read-denied path (or a shellrt place, or a host
socket in a writable root) that appears while it runs: the zygote replaced for it ends with its
commands, so the reach ends at the next command's start. A zygote replaced earlier for a host
socket elsewhere is only retired (its commands, dev servers, go on), and those commands run under
the masks of its start too: a background task there went on reading the denied file the host
wrote, for as long as it ran. Now a replacement for a place ends the retired zygotes' commands as
well. Root and uid 65534.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised
from tests.test_redteam_round29_bwrap_window import _WAITER, _ended
from tests.test_redteam_round30_netns_continuity import _host_socket

pytestmark = pytest.mark.bwrap


def test_a_retired_zygotes_commands_end_when_a_denied_path_appears(tmp_path: Path) -> None:
    """Failed before (root 1 of 1, uid 65534 1 of 1): the task, in the zygote retired for a host
    socket in /var/tmp, still ran 10 s after the next command, reading the file the host wrote."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = SandboxPolicy(workspace=ws, read_denied=(ws / ".env",))

    async def main() -> tuple[str, str]:
        backend = BwrapBackend(BwrapConfig(persistent=True), policy)
        async with supervised(backend, tmp_path / "s") as sup:
            task = await sup.start_background(_WAITER, description="waits for .env")
            await anyio.sleep(0.3)  # it runs in the first zygote
            first = backend._zygote
            with _host_socket():
                await sup.run("true", timeout_s=60)
            assert first is not None and backend._zygote is not first, "the host socket did not replace it"
            assert first.alive, "the first zygote (retired, its task running) is gone already"
            (ws / ".env").write_text("HOST-SECRET\n")  # the host writes a secret
            after = await sup.run("cat .env 2>&1; echo next", timeout_s=60)  # replaced for a place
            return after.preview, await _ended(sup, task.id, 10)

    after, ended = anyio.run(main)
    assert "HOST-SECRET" not in after and after.endswith("next\n"), after
    assert ended.startswith(("killed ", "failed ")) and "read-denied path" in ended, ended


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_retired_zygotes_commands_end_when_a_denied_path_appears")
