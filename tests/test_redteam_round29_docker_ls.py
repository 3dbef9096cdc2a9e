"""Red team round 29, docker: ``shellrt sandbox ls`` did not show a session's command isolation.

Round 28 (docker2) made the executor announce how far its commands are isolated from each other
(``none``, ``proc``, ``proc+signals``, ``unknown``), but only the running backend knew it: the
person listing a daemon's sessions could not see which ones run with one trust domain per session.
The backend now records the level in the session's host directory (never mounted in the
container) and ``ls`` shows it; a record that is no plain file of a known word shows ``?``.
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend, list_sandboxes
from sandbox.docker._isolation import record_isolation, recorded_isolation
from shellrt.cli.sandbox import _print
from tests._docker_support import DEBIAN, config, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


async def test_ls_shows_the_isolation_the_executor_announced(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as backend:
        cid = backend.container_id
        assert cid is not None and backend.command_isolation is not None
        mine = [i for i in list_sandboxes() if cid.startswith(i.id)]
        assert len(mine) == 1 and mine[0].isolation == backend.command_isolation, mine
        shown = io.StringIO()
        with contextlib.redirect_stdout(shown):
            _print(mine, False, "")
        header, row = shown.getvalue().splitlines()
        assert "ISOLATION" in header and f" {backend.command_isolation} " in row, shown.getvalue()


def test_a_record_that_is_not_a_known_word_in_a_plain_file_shows_unknown(tmp_path: Path) -> None:
    record_isolation(str(tmp_path), "proc")
    assert recorded_isolation(str(tmp_path)) == "proc"
    (tmp_path / "isolation").write_text("proc+signals; rm -rf /")
    assert recorded_isolation(str(tmp_path)) == "?"
    os.unlink(tmp_path / "isolation")
    (tmp_path / "elsewhere").write_text("none")
    os.symlink(tmp_path / "elsewhere", tmp_path / "isolation")
    assert recorded_isolation(str(tmp_path)) == "?"
    assert recorded_isolation(str(tmp_path / "missing")) == "?" and recorded_isolation(None) == "?"
