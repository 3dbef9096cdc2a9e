"""Red team, round 10 (part 2): nothing a command leaves behind outlives its Supervisor.

A foreground command and a background task each leave processes that detach in every
way a process can without privilege: a new session with the environment cleared (the
local backend's kill marker gone), signals ignored, a process group of its own, a move
to another cgroup, a pid namespace of its own. The background task is still running when
the Supervisor closes; after ``close()`` no process carrying the run's token is left on
the host. The local backend's root case, where the command can leave by root's own
means, is in docs/security.md.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import anyio
import pytest

from sandbox import BackendUnavailableError, BwrapConfig, LocalConfig, SandboxPolicy
from sandbox.base import SandboxBackend
from sandbox.bwrap import BwrapBackend
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from tests._bwrap_session import require_bwrap
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.bwrap]


def _detaching(token: str, *, move_cgroup: bool) -> str:
    """A shell command that leaves ``sleep`` processes named ``token-*`` behind, each detached."""
    parts = [
        f"(setsid env -i bash -c 'exec -a {token}-session sleep 1000' &)",
        f"(trap '' TERM HUP INT; bash -c 'exec -a {token}-ignoring sleep 1000' &)",
        f"bash -c 'set -m; (exec -a {token}-pgroup sleep 1000) & disown'",
        f"(unshare --pid --fork bash -c 'exec -a {token}-pidns sleep 1000' 2>/dev/null &)",
    ]
    if move_cgroup:
        parts.append(
            "(bash -c 'for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/*/cgroup.procs; do "
            "echo $BASHPID 2>/dev/null >$f; done; "
            f'setsid env -i bash -c "exec -a {token}-cgroup sleep 1000" &\' 2>/dev/null &)'
        )
    return "; ".join(parts) + "; sleep 0.3"


def _names(token: str, *, kill: bool = False) -> list[str]:
    """Names of host processes whose argv[0] starts with ``token`` (``kill``: SIGKILL them too)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        if argv0.startswith(token):
            found.append(argv0)
            if kill:  # a failing test leaves nothing either
                os.kill(int(pid), 9)
    return found


@pytest.mark.parametrize("kind", ["bwrap-session", "bwrap-per-command", "local"])
async def test_nothing_a_command_detaches_outlives_the_supervisor(tmp_path: Path, kind: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    backend: SandboxBackend
    if kind == "local":
        # As root, a local command is root: it can leave the session cgroup and be gone (documented).
        move_cgroup = os.geteuid() != 0
        backend = LocalBackend(LocalConfig(), SandboxPolicy(workspace=ws))
    else:
        require_bwrap()
        move_cgroup = True
        backend = BwrapBackend(BwrapConfig(persistent=kind == "bwrap-session"), SandboxPolicy(workspace=ws))
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        require(False, f"{kind} unusable here: {exc}")
    token = f"shellrt-rt10b-{uuid.uuid4().hex[:12]}"
    sup = Supervisor(backend, session_dir=tmp_path / "session")
    try:
        result = await sup.run(_detaching(token, move_cgroup=move_cgroup), timeout_s=30)
        assert result.exit_code == 0, result.preview
        await sup.start_background(_detaching(token, move_cgroup=move_cgroup) + "; exec sleep 1000")
        wanted = {f"{token}-session", f"{token}-ignoring", f"{token}-pgroup"}
        running: list[str] = []
        with anyio.move_on_after(10):  # the detached ones start in any order (CI103: cgroup's first)
            while not wanted <= set(running := _names(token)):
                await anyio.sleep(0.05)
        assert wanted <= set(running), running
    finally:
        await sup.close()
        await backend.close()
    time.sleep(0.2)
    assert _names(token, kill=True) == []
