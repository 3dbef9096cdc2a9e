"""Red team, round 30 (mend): a bwrap command replaced the docker helper's ``priv`` in a shared temp dir.

The docker backend writes what its container runs with the executor's capabilities (``priv``,
``executor.sh``, each command's request file) to an I/O directory on /dev/shm, and fell back to the
temp dir when /dev/shm is unusable (`sandbox.docker._iobase.io_base`). A temp dir inside a bwrap
session's writable root (``TMPDIR`` in a workspace) lets that session's command rename the
directory away and put its own ``priv`` at its name: the container's start (a bind mount by path)
then runs the command's program as container root. Reproduced here with a real bwrap command as
a root caller (its commands write as root through the idmapped root); a non-root caller's commands
are the caller's own uid and need no idmap. The I/O directory now goes only where no command writes.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

from sandbox import _hostpath
from sandbox._scratch import OwnedDir
from sandbox.docker import _gc, _iobase
from sandbox.errors import BackendUnavailableError
from tests._bwrap_session import probe_lines, require_bwrap
from tests._rename_plant import rename_and_plant

pytestmark = pytest.mark.bwrap

GENUINE, HOSTILE = b"genuine priv of shellrt\n", b"hostile priv of a command\n"

#: The command: every docker I/O directory in the workspace's tmp/ renamed away, one of its own in place.
_ATTACKER = rename_and_plant(_gc.IO_PREFIX, "io/priv", HOSTILE)


def test_no_command_replaces_the_docker_helpers_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (root 1 of 1): the I/O directory went to ``TMPDIR`` in the workspace and the
    path named the command's ``priv``. Now that place is refused, another is taken (``/tmp``, here),
    and with none left the start is refused saying what to do."""
    require_bwrap()
    ws = tmp_path / "ws"
    (ws / "tmp").mkdir(parents=True)
    monkeypatch.setattr(_iobase, "_TMPFS", tmp_path / "no-shm")  # /dev/shm unusable (a full one)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    own_tmp = tempfile.gettempdir()
    monkeypatch.setattr(tempfile, "tempdir", str(ws / "tmp"))  # this process's TMPDIR: in a workspace
    token = _hostpath.register_writable([ws])  # a live bwrap session over ws
    owned: OwnedDir | None = None
    try:
        owned = OwnedDir(_gc.IO_PREFIX, _gc.io_base())  # as the backend's start makes it
        io = owned.path / "io"
        io.mkdir(mode=0o700)
        (io / "priv").write_bytes(GENUINE)
        # The session is another process's (its TMPDIR is its own; a session masks its own temp dir).
        monkeypatch.setattr(tempfile, "tempdir", own_tmp)
        fields, out = probe_lines(ws, tmp_path / "s", _ATTACKER, persistent=True)
        assert "REPLACED" in fields, out
        assert (io / "priv").read_bytes() == GENUINE, out  # what a container's bind mount would run

        monkeypatch.setattr(tempfile, "tempdir", str(ws / "tmp"))
        monkeypatch.setattr(_iobase, "_candidates", lambda: [ws / "tmp", tmp_path])  # no system place
        with pytest.raises(BackendUnavailableError) as refused:
            _gc.io_base()
        assert "XDG_RUNTIME_DIR" in str(refused.value) and "writable root" in str(refused.value)
    finally:
        _hostpath.unregister_writable(token)
        if owned is not None:
            owned.remove()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
