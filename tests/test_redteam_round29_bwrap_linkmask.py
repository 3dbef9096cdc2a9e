"""Red team, round 29 (bwrap): a read-denied path with a symlink on its way.

bwrap mounts a mask at the path as written. A command that made an absolute link at a denied name
that was missing (``Read(./.env)``, then ``ln -s $PWD/real .env``) stopped every later command of
its session: bwrap followed the link inside its own set-up root ("Can't create file at ..."), and
the error blamed user namespaces. The mask now lands where the path leads
(`sandbox._bwrap_linkmask`); `tests/test_redteam_round29_bwrap_layouts.py` has the other form (a
link below /tmp whose target was shown). Root and uid 65534, session and per command.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import BackendUnavailableError, BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.bwrap


@pytest.mark.parametrize("persistent", [False, True])
def test_a_link_made_at_a_denied_name_neither_stops_nor_shows(tmp_path: Path, persistent: bool) -> None:
    """Failed before (root 2 of 2): the next command's sandbox did not start."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "real").write_text("REAL-CONTENT\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "f").write_text("SUB-CONTENT\n")
    policy = SandboxPolicy(workspace=ws, read_denied=(ws / ".env", ws / "conf"))

    async def main() -> list[str]:
        backend = BwrapBackend(BwrapConfig(persistent=persistent), policy)
        said = []
        async with supervised(backend, tmp_path / "s") as sup:
            plant = f"ln -s {ws}/real {ws}/.env && ln -s {ws}/sub {ws}/conf && echo planted"
            for command in (plant, f"cat {ws}/.env {ws}/real {ws}/conf/f {ws}/sub/f 2>&1; echo ran"):
                try:
                    result = await sup.run(command, timeout_s=60)
                except BackendUnavailableError as exc:
                    said.append(f"UNAVAILABLE {exc}")
                    continue
                said.append(f"{result.exit_code} {result.sandbox_failure} {result.preview}")
        return said

    planted, after = anyio.run(main)
    assert planted.startswith("0 None planted"), planted
    assert after.startswith("0 None ") and after.endswith("ran\n"), after
    assert "CONTENT" not in after, after  # the denied names lead to masked files


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_link_made_at_a_denied_name_neither_stops_nor_shows")
