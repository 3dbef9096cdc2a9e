"""Red team round 47, docker7: a SIGTERM while a container is being created left it behind.

`emergency_cleanup` is the owner's synchronous last word on a signal (the CLI calls it from its
handler; a SIGKILL may follow at once). It removed only the containers of backends in its live set,
and a backend joined that set only once its container ran. Two windows fell outside it (rounds 45
and 46 Left): the never-started container that shows the daemon's default masks (created, read,
removed: ``_masks``), and the main container between its create and its start (the create checks:
user database, mount points). A signal there left a ``Created`` container, with its host
directories, for the next start's reaper or ``shellrt sandbox gc``; a ``_replace`` (a container
recovered) had the same window.

The owner here is a real process with a real daemon: its handler calls `emergency_cleanup` and
exits at once (``os._exit``, what a SIGKILL after the SIGTERM leaves). Only the timing is arranged:
the create call is held, once it has returned, until the signal comes.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests._docker_support import BUSYBOX, require_docker

ROOT = Path(__file__).resolve().parents[1]

_OWNER = textwrap.dedent(
    """
    import asyncio, os, signal, sys, threading
    import docker.api.client as apic
    import sandbox.docker as sd
    from sandbox import DockerConfig, SandboxPolicy

    window, image, workspace = sys.argv[1:4]
    backend = sd.DockerBackend(DockerConfig(image=image), SandboxPolicy(workspace=workspace))
    probe = f"shellrt-{backend.session_id}-999999"
    main = f"shellrt-{backend.session_id}"
    held = threading.Event()
    real_create = apic.APIClient.create_container

    def create_container(self, *args, **kwargs):
        answer = real_create(self, *args, **kwargs)
        if kwargs.get("name") == (probe if window == "probe" else main):
            print("window", backend.session_id, backend._host_dir, backend._io_dir, flush=True)
            held.wait(60)
        return answer

    apic.APIClient.create_container = create_container

    def last_word(signum, frame):
        sd.emergency_cleanup()
        os._exit(143)

    signal.signal(signal.SIGTERM, last_word)
    asyncio.run(backend.start())
    print("started: the window was never reached", flush=True)
    """
)


def _names(session: str) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"name=shellrt-{session}", "--format", "{{.Names}} {{.Status}}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return out.stdout.split("\n")[:-1]


@pytest.mark.parametrize("window", ["probe", "main"])
def test_a_sigterm_while_a_container_is_created_removes_it_at_once(tmp_path: Path, window: str) -> None:
    require_docker()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, window, BUSYBOX, str(workspace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(tmp_path),
        env=env,
    )
    session = ""
    try:
        assert owner.stdout is not None
        ready, _, _ = select.select([owner.stdout], [], [], 90)
        line = owner.stdout.readline() if ready else ""
        assert line.startswith("window "), (line, owner.poll())
        session, *host_dirs = line.split()[1:]
        assert _names(session), "the container being created is not there: the window was not reached"
        owner.send_signal(signal.SIGTERM)
        assert owner.wait(timeout=60) == 143, owner.stderr.read() if owner.stderr else ""
        left = _names(session)
        assert left == [], f"{window}: a SIGTERM in the create window left {left} for a later reaper"
        assert [d for d in host_dirs if os.path.exists(d)] == [], "its host directories stayed"
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait(timeout=30)
        if session:
            for entry in _names(session):
                subprocess.run(["docker", "rm", "-f", entry.split()[0]], capture_output=True, timeout=30)
