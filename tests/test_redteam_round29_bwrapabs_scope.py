"""Red team, round 29 (bwrapabs): one bwrap session command reaching another through the session.

A session's commands share its network namespace, so a background task that bound an abstract
unix socket (``\\0shellrt-squat``) answered a later command's connect in its stead (one bwrap per
command: each its own namespace, refused). Each command's init now puts itself -- and so the
command -- in a Landlock domain of its own scoped for abstract unix sockets and signals (ABI 6),
like the docker backend's commands (round 28, docker3). A command still reaches its own abstract
sockets and signals its own jobs. Signals: pids are per command (its own pid namespace), so a
background task does not even see a later command (held before too). Path sockets in the
session's /tmp are shared by design (docs/security.md). Under ``network: host``, which promises the
host's abstract sockets, only signals are scoped. Both inits (C, Python); root and uid
65534. Needs Landlock ABI 6 (fails under CI without).
"""

from __future__ import annotations

import base64
import logging
import os
import socket
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _bwrap_scope, _static_build, _zinit
from sandbox._bwrap_scope import landlock_abi
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from shellrt.supervisor.models import TaskStatus
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised
from tests.conftest import require

pytestmark = pytest.mark.bwrap


def require_scopes() -> None:
    """bubblewrap, and a kernel with Landlock's scopes (ABI 6, Linux 6.12): fails under CI without."""
    require_bwrap()
    require(landlock_abi() >= 6, "this kernel has no Landlock ABI 6 (Linux 6.12): nothing is scoped")


#: Listens on the address given (``@name``: abstract), says so in the file given, answers who it is.
_SQUAT = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind("\\0" + sys.argv[1][1:] if sys.argv[1].startswith("@") else sys.argv[1]); s.listen(8)
open(sys.argv[2], "a").close()
while True:
    c, _ = s.accept(); c.sendall(b"squatter"); c.close()
"""

#: Looks for a later command (its marker in a cmdline, spelt in two halves) and signals it; writes
#: what it did to the file given.
_HUNT = """
import os, sys, time
mark = "HUNTED" + "-r29"
with open(sys.argv[1], "w") as out:
    for _ in range(60):
        for pid in os.listdir("/proc"):
            if pid.isdigit() and int(pid) != os.getpid():
                try:
                    if mark.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                        os.kill(int(pid), 9); out.write(f"killed {pid}\\n"); out.flush()
                except OSError:
                    pass
        time.sleep(0.02)
"""

#: Connects to the address given (``@name``: abstract) and says whether it could.
_ASK = """
import socket, sys
addr = "\\0" + sys.argv[1][1:] if sys.argv[1].startswith("@") else sys.argv[1]
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(addr); print("connected")
except OSError as e:
    print(type(e).__name__, e.errno)
"""

#: A later command: connects to the squatter's abstract name (given), then its own abstract socket,
#: then its own job control.
_PROBE = """
import socket, subprocess, sys
def ask(addr):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(addr); return s.recv(64).decode()
    except OSError as e:
        return f"refused {e.errno}"
print("abstract", ask("\\0" + sys.argv[1]))
own = socket.socket(socket.AF_UNIX); own.bind("\\0shellrt-own"); own.listen(1)
c = socket.socket(socket.AF_UNIX); c.connect("\\0shellrt-own"); print("own", "connected")
job = subprocess.run(["bash", "-c", "sleep 30 & kill -TERM %1; wait %1; echo job $?"], capture_output=True)
print(job.stdout.decode().strip())
"""


#: Tries at one squat-and-probe in a single zygote before the test gives up on a churning host.
_ATTEMPTS = 10


def _cmd(program: str, *argv: str) -> str:
    """``program`` run by python3 (each command is pid 2 of its own namespace: no ``$$`` file)."""
    encoded = base64.b64encode(program.encode()).decode()
    return f'exec python3 -c "$(echo {encoded} | base64 -d)" {" ".join(argv)}'


@pytest.mark.parametrize("init", ["c", "python"])
def test_a_background_task_cannot_answer_or_signal_a_later_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, init: str
) -> None:
    """Failed before (root 2 of 2, uid 65534 2 of 2): the later command's connect reached the
    squatter ("abstract squatter"). The signal hunt found nothing before either (0 of 4)."""
    require_scopes()
    monkeypatch.setenv(_zinit.INIT_ENV, init)
    monkeypatch.setattr(_zinit, "_program", None)  # decided again for this init
    monkeypatch.setattr(_static_build, "_built", {})
    ws = tmp_path / "ws"
    ws.mkdir()

    async def ready(sup: Supervisor, flag: str, task: str) -> None:
        for _ in range(200):
            if (await sup.run(f"test -e {flag} && echo up", timeout_s=30)).preview == "up\n":
                return
            await anyio.sleep(0.05)
        said = sup.tasks.get(task)
        pytest.fail(f"the squatter never listened: {said.status}, {said.output_path.read_text()[-2000:]!r}")

    async def main() -> tuple[str, str, str]:
        backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            assert backend._zygote is not None and backend._zygote.c_init is (init == "c")
            # A host socket appearing anywhere the sandbox could see (another test's, in /var/tmp)
            # replaces the zygote, and with it the network namespace later commands run in: the
            # squatter, the hunter and the probe must all have run in one zygote, each attempt
            # under names of its own (a squatter of an earlier attempt may share the current one).
            for attempt in range(_ATTEMPTS):
                flag, name, out = (
                    f"/tmp/squat-{attempt}.ready",
                    f"shellrt-squat-{attempt}",
                    f"/tmp/hunt-{attempt}",
                )
                squat = await sup.start_background(_cmd(_SQUAT, "@" + name, flag), description="squat")
                zygote = backend._zygote
                hunt = await sup.start_background(_cmd(_HUNT, out), description="hunt")
                await ready(sup, flag, squat.id)
                probe = await sup.run(_cmd(_PROBE, name, "HUNTED-r29"), timeout_s=30)
                if backend._zygote is zygote:
                    break
            else:
                pytest.fail(
                    f"the zygote was replaced during each of {_ATTEMPTS} attempts (host sockets churning)"
                )
            with anyio.fail_after(60):  # the hunter's whole search (60 rounds of 20 ms or more)
                while sup.tasks.get(hunt.id).status is TaskStatus.RUNNING:
                    await anyio.sleep(0.1)
            hunted = await sup.run(f"cat {out}; echo end", timeout_s=30)
            # A path socket in the session's /tmp: shared by design (every zygote of the session
            # shows the same /tmp).
            path_squat = await sup.start_background(
                _cmd(_SQUAT, "/tmp/squat.sock", "/tmp/path.ready"), description="path squat"
            )
            await ready(sup, "/tmp/path.ready", path_squat.id)
            path = await sup.run(_cmd(_ASK, "/tmp/squat.sock"), timeout_s=30)
            return probe.preview, hunted.preview, path.preview

    probe, hunted, path = anyio.run(main)
    lines = dict(line.split(" ", 1) for line in probe.splitlines())
    assert lines.get("abstract") == "refused 1", probe  # EPERM: outside the command's domain
    assert lines.get("own") == "connected", probe  # its own abstract socket
    assert lines.get("job") == "143", probe  # its own job, signalled
    assert hunted == "end\n", hunted  # no later command seen, none signalled
    assert path == "connected\n", path  # the session's /tmp: shared by design


def test_host_network_keeps_the_hosts_abstract_sockets(tmp_path: Path) -> None:
    """``network: host`` promises the host's abstract sockets (docs/security.md): a session command
    still reaches a host listener's abstract name there, as one bwrap per command does."""
    require_scopes()
    ws = tmp_path / "ws"
    ws.mkdir()
    name = f"shellrt-r29-host-{os.getpid()}"
    policy = SandboxPolicy(workspace=ws, network="host")

    async def main() -> str:
        backend = BwrapBackend(BwrapConfig(persistent=True), policy)
        async with supervised(backend, tmp_path / "s") as sup:
            assert backend._zygote is not None, "the session sandbox must run under its zygote"
            return (await sup.run(_cmd(_ASK, "@" + name), timeout_s=30)).preview

    with socket.socket(socket.AF_UNIX) as server:
        server.bind("\0" + name)
        server.listen(4)
        said = anyio.run(main)
    assert said == "connected\n", said


def test_a_kernel_without_the_scopes_is_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Before ABI 6 nothing is scoped: the operator is told once per process, not per session."""
    monkeypatch.setattr(_bwrap_scope, "_warned", False)
    monkeypatch.setattr(_bwrap_scope, "landlock_abi", lambda: 5)
    with caplog.at_level(logging.WARNING, logger="sandbox._bwrap_scope"):
        _bwrap_scope.warn_if_unscoped()
        _bwrap_scope.warn_if_unscoped()
    said = [r.getMessage() for r in caplog.records if r.name == "sandbox._bwrap_scope"]
    assert len(said) == 1 and "Landlock ABI 5" in said[0] and "abstract unix sockets" in said[0], said


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_background_task_cannot_answer_or_signal_a_later_command",
        "test_host_network_keeps_the_hosts_abstract_sockets",
    )
