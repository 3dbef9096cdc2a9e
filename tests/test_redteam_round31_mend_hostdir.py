"""Red team, round 31 (mend): a bwrap command replaced a docker session's workspace copy in TMPDIR.

Besides its I/O directory (round 30), a docker session keeps a host directory for the workspace
copy (copy mode: what the container mounts as its workspace) and the empty sources of its read
masks. It was ``mkdtemp`` below ``TMPDIR``; with ``TMPDIR`` inside a bwrap session's writable root (a
later process's ``TMPDIR`` in a workspace), that session's command renamed the directory away and
put its own at the name, so the path the backend mounts named the command's files. Reproduced with
a real bwrap command as a root caller (its commands write as root through the idmapped root).
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest

from sandbox import _hostpath
from sandbox._scratch import OwnedDir
from sandbox.docker import _gc
from sandbox.docker._hostdir import PrivateHostDir
from tests._bwrap_session import probe_lines, require_bwrap
from tests._rename_plant import rename_and_plant

pytestmark = pytest.mark.bwrap

GENUINE, HOSTILE = b"the caller's file\n", b"a command's file\n"

#: The command: every docker host directory in the workspace's tmp/ renamed away, one of its own in place.
_ATTACKER = rename_and_plant(_gc.IO_PREFIX, "workspace/file", HOSTILE)


def _host_dir() -> OwnedDir:
    """The docker backend's host directory, made as its start makes it."""
    return PrivateHostDir(_gc.IO_PREFIX)


def test_no_command_replaces_the_docker_sessions_workspace_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (root 1 of 1): the directory was made in ``TMPDIR`` in the workspace and its
    path named the command's copy. Round 31 refused that ``TMPDIR`` (or a link into the root); since
    round 40 (tenants2) the directory is made below /tmp whatever ``TMPDIR`` says: the caller's own
    0700 one, out of the root, sweepable."""
    require_bwrap()
    ws = tmp_path / "ws"
    (ws / "tmp").mkdir(parents=True)
    own_tmp = tempfile.gettempdir()
    monkeypatch.setattr(tempfile, "tempdir", str(ws / "tmp"))  # this process's TMPDIR: in a workspace
    token = _hostpath.register_writable([ws])  # a live bwrap session over ws
    owned: OwnedDir | None = None
    try:
        owned = _host_dir()
        assert owned.path.parent == Path(os.path.realpath("/tmp")), owned.path
        if owned is not None:
            copy = owned.path / "workspace"
            copy.mkdir(mode=0o700)
            (copy / "file").write_bytes(GENUINE)
            # The session is another process's (its TMPDIR is its own; a session masks its own temp dir).
            monkeypatch.setattr(tempfile, "tempdir", own_tmp)
            fields, out = probe_lines(ws, tmp_path / "s", _ATTACKER, persistent=True)
            assert "REPLACED" in fields, out
            assert (copy / "file").read_bytes() == GENUINE, out  # what the container would mount

        (tmp_path / "link").symlink_to(ws / "tmp")  # a clean-looking TMPDIR that leads into the root
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "link"))
        linked = _host_dir()
        linked.remove()
        assert linked.path.parent == Path(os.path.realpath("/tmp")), linked.path
    finally:
        _hostpath.unregister_writable(token)
        if owned is not None:
            owned.remove()
    clean = tmp_path / "clean"
    clean.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(clean))
    made = _host_dir()
    try:
        st = os.lstat(made.path)
        assert made.path.parent == Path(os.path.realpath("/tmp"))
        assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
        os.utime(made.path, (0, 0))  # old enough to sweep, but locked: its owner lives
        assert made.path not in _gc.sweep_orphans(_gc.IO_PREFIX, Path("/tmp"))
    finally:
        made.remove()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
