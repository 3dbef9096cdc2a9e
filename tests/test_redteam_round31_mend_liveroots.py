"""Red team, round 31 (mend): another shellrt process's workspace, and a workspace over /tmp.

Round 30 refused a ``CC`` (and the compiler's tree, and ``PATH`` entries) inside a writable root
this process registered; another shellrt process's session (an MCP server and a CLI of one user,
two agents on one machine) was not this process's to know, so a ``CC`` planted in its workspace
was run on the host, unsandboxed, as the caller. And a session whose workspace was ``/tmp``,
``/dev/shm`` or ``$XDG_RUNTIME_DIR`` itself (or ``/``) was not refused, though the docker backend's
I/O directories (run with the executor's capabilities) go there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import _compiler, _hostpath, _liveroots
from sandbox.config import BwrapConfig
from sandbox.errors import SandboxPolicyError
from sandbox.factory import create_backend
from sandbox.policy import SandboxPolicy

_REPO = Path(__file__).resolve().parent.parent

#: Another shellrt process: builds a bwrap backend over ``argv[1]`` (registering its roots, as every
#: route that starts a sandbox does), says so, and lives until its stdin closes.
_OTHER = """
import sys
from pathlib import Path
from sandbox.config import BwrapConfig
from sandbox.factory import create_backend
from sandbox.policy import SandboxPolicy
backend = create_backend(BwrapConfig(), SandboxPolicy(workspace=Path(sys.argv[1])))
print("ready", flush=True)
sys.stdin.read()
"""


def test_another_processs_workspace_is_known_while_it_lives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (root 3 of 3: the other process's ``CC`` was accepted, its ``PATH`` entry kept,
    its workspace no writable place). Now all three are refused while that process lives, and
    accepted again once it is killed (its registration is dropped by the lock, no clean-up run)."""
    ws = tmp_path / "ws"
    cc = ws / "bin" / "cc"
    cc.parent.mkdir(parents=True)
    cc.write_text('#!/bin/sh\nexec /usr/bin/gcc "$@"\n')
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_REPO), *sys.path])}
    other = subprocess.Popen(
        [sys.executable, "-c", _OTHER, str(ws)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    try:
        assert other.stdout is not None and other.stdout.readline() == b"ready\n"
        with pytest.raises(_compiler.CompilerRefused, match="writable root"):
            _compiler.find_compiler()
        assert str(cc.parent) not in _hostpath.host_path(f"{cc.parent}:/usr/bin").split(":")
        assert _hostpath.registered_roots().count(str(ws)) == 1
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait()
        assert other.stdin is not None and other.stdout is not None
        other.stdin.close()
        other.stdout.close()
    monkeypatch.setattr(_liveroots, "_RECHECK_S", 0.0)  # a file read once is looked at again after 2 s
    assert _compiler.find_compiler() == str(cc)  # stale: dropped, and its file removed
    left = [n for n in os.listdir(_liveroots.registry_dir()) if f"-{other.pid}-" in n]
    assert left == [], left


def test_a_workspace_that_is_or_holds_a_system_temp_place_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (root 4 of 4: each backend was made). Now each bwrap (and docker) backend is
    refused saying what to use."""
    xdg = tmp_path / "xdg"  # the caller's own runtime dir; a workspace may hold it, not be it
    xdg.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(xdg))
    for workspace in ("/tmp", "/dev/shm", str(xdg), "/"):
        with pytest.raises(SandboxPolicyError, match="use a directory of its own as the workspace"):
            create_backend(BwrapConfig(), SandboxPolicy(workspace=Path(workspace)))
    create_backend(BwrapConfig(), SandboxPolicy(workspace=tmp_path))  # below /tmp, holding xdg: as any
    # The local backend confines nothing and may run over /tmp; its root is not shown to others
    # (it would refuse every temp place and host program to every other process).
    token = _hostpath.register_writable(["/tmp"])
    try:
        assert token not in _liveroots._mine
    finally:
        _hostpath.unregister_writable(token)
