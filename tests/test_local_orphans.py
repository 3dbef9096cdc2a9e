"""On local, nothing a command started outlives its command (when the session is idle) or its session.

A process that double-forks, calls ``setsid`` and clears its environment leaves the
process group, drops the marker variable and is re-parented to init: the sweeps of
`sandbox._proctree` cannot find it, and it ran until the owner exited (as root, its
cgroup then; without root, on and on). Commands now start below a per-session
subreaper (`sandbox._reaper`) or, where the owner has a cgroup (root), in a
per-session cgroup (`sandbox._session_cgroup`): the tests run with each (`MODES`).
The lean ``shellrt run`` is a subreaper itself (`sandbox._subreaper`). Each
detaching trick below is a real process tree.

Run as root and, by `test_orphans_end_for_an_unprivileged_caller`, as uid 65534
(no owner cgroup there: the case that was open).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import SandboxExecError, SandboxPolicy, _hostproc
from sandbox._proctree import scan_markers
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from tests import _nonroot
from tests._proc_words import live_pids
from tests.conftest import require

ROOT = Path(__file__).resolve().parents[1]

#: Command templates, ``{t}`` a unique ``sleep`` argument: each leaves a process that escapes the
#: process group and the marker (``env -i``), by another route.
DETACHING = {
    "setsid-subshell": "(setsid env -i sleep {t} &) ; exit",
    "double-fork": "( ( env -i setsid sleep {t} & ) & ) ; exit 0",
    "nohup": "nohup env -i setsid sleep {t} >/dev/null 2>&1 &",
    "disown": "env -i setsid sleep {t} </dev/null >/dev/null 2>&1 & disown; exit 0",
    "daemon-closed-fds": (
        '{py} -c "import os,sys\n'
        "if os.fork(): os._exit(0)\n"
        "os.setsid()\n"
        "if os.fork(): os._exit(0)\n"
        "os.closerange(0, 1024)\n"
        "os.execve('/bin/sleep', ['sleep', sys.argv[1]], {{}})\" {t}"
    ),
}


def _token() -> str:
    """A ``sleep`` duration no other process on the machine has on its command line."""
    return f"{secrets.randbelow(9000) + 1000}.{secrets.randbelow(10**6):06d}"


def _running(token: str) -> list[int]:
    return live_pids(lambda argv: token.encode() in argv)


def _gone_within(token: str, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while _running(token):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def _started_within(token: str, seconds: float) -> bool:
    """The detached process may still be a forked copy of its shell when the command returns."""
    end = time.monotonic() + seconds
    while not _running(token):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def tokens() -> Iterator[list[str]]:
    """Tokens of the test's processes; any still running at the end are killed (they are ours)."""
    made: list[str] = []
    yield made
    for token in made:
        for pid in _running(token):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


#: How a session keeps its leftovers: a cgroup (root only; the reaper where none can be made), the reaper.
MODES = ["cgroup", "reaper"]


def _local(workspace: Path, mode: str) -> LocalBackend:
    """A local backend keeping leftovers the ``mode`` way (asserted: a silent fallback tests nothing)."""
    backend = LocalBackend(policy=SandboxPolicy(workspace=workspace))
    backend.session_cgroup = mode == "cgroup"
    return backend


def _check_mode(backend: LocalBackend, mode: str) -> None:
    if mode == "cgroup" and os.geteuid() == 0:
        assert backend._runner.session_cgroup is not None and backend._runner.reaper is None
    else:
        assert backend._runner.session_cgroup is None and backend._runner.reaper is not None


@pytest.fixture(params=MODES)
async def supervisor(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Supervisor]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    backend = _local(workspace, request.param)
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        _check_mode(backend, request.param)
        yield sup


@pytest.mark.anyio
@pytest.mark.parametrize("how", sorted(DETACHING))
async def test_a_detached_process_ends_with_its_command(
    supervisor: Supervisor, tokens: list[str], how: str
) -> None:
    token = _token()
    tokens.append(token)
    result = await supervisor.run(DETACHING[how].format(t=token, py=sys.executable), timeout_s=20)
    assert result.exit_code == 0, result
    assert _gone_within(token, 3.0), f"{how}: {_running(token)} still running after the command ended"


@pytest.mark.anyio
async def test_a_timeouts_tree_kill_ends_detached_processes(
    supervisor: Supervisor, tokens: list[str]
) -> None:
    token = _token()
    tokens.append(token)
    result = await supervisor.run(f"(setsid env -i sleep {token} &) ; sleep 60", timeout_s=1)
    assert result.timed_out, result
    assert _gone_within(token, 3.0), _running(token)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_leftovers_end_at_close_while_another_command_of_the_session_runs(
    tmp_path: Path, tokens: list[str], mode: str
) -> None:
    """A background task keeps the session busy: the leftover waits for it, at the latest for close."""
    token = _token()
    tokens.append(token)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    backend = _local(workspace, mode)
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        _check_mode(backend, mode)
        await sup.start_background("sleep 60")
        # The command ends once its leftover runs: a subshell not yet past ``setsid`` when the
        # command ended was still in the run's tree and went with it (CI61 at load 10).
        wait = f'until ps -eo args= | grep -qx "sleep {token}"; do sleep 0.01; done'
        result = await sup.run(f"(setsid env -i sleep {token} &) ; {wait}; exit", timeout_s=20)
        assert result.exit_code == 0, result  # the leftover ran (the command waits for it)
        if mode == "cgroup" and os.geteuid() == 0:  # a cgroup per command: gone at its end (round 45)
            assert _gone_within(token, 3.0), _running(token)
    assert _gone_within(token, 3.0), _running(token)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_marked_leftover_ends_with_its_command_while_the_session_is_busy(
    tmp_path: Path, tokens: list[str], mode: str
) -> None:
    """The janitor's marker sweep still runs when a run left something below the reaper.

    Another command of the session runs meanwhile (the reaper's idle sweep waits for it),
    the leftover keeps the run's marker (no ``env -i``) and leads its own session (out of
    the group kill's reach), and the descendant poller is off: only the marker sweep after
    its command ends can end it before the other command does.
    """
    token, busy = _token(), _token()
    tokens += [token, busy]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    backend = _local(workspace, mode)
    backend._runner.poll_descendants = False  # the other net, which may or may not catch it in time
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as supervisor:
        _check_mode(backend, mode)
        await _busy_leftover(supervisor, token, busy)


async def _busy_leftover(supervisor: Supervisor, token: str, busy: str) -> None:
    command = f"setsid sleep {token} </dev/null >/dev/null 2>&1 & p=$!; until [ \"$(cut -d' ' -f6 /proc/$p/stat)\" = $p ]; do :; done"

    async def busy_command() -> None:
        await supervisor.run(f"sleep 4 # {busy}", timeout_s=20)

    async with anyio.create_task_group() as tg:
        tg.start_soon(busy_command)
        await anyio.sleep(0.2)
        result = await supervisor.run(command, timeout_s=20)
        assert result.exit_code == 0, result
        assert _gone_within(token, 2.0), f"{_running(token)} outlived its command while the session was busy"
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_run_that_left_nothing_costs_no_proc_sweep(
    supervisor: Supervisor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing below the reaper but running roots: the janitor's /proc scan is skipped."""
    scans: list[int] = []
    real = scan_markers

    def counted(*args: object, **kwargs: object) -> dict[int, str]:
        scans.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_hostproc, "scan_markers", counted)
    for _ in range(10):
        assert (await supervisor.run("true", timeout_s=20)).exit_code == 0
    await anyio.sleep(0.3)  # past the janitor's coalescing window
    assert scans == [], f"{len(scans)} /proc sweeps for 10 runs that left nothing"


@pytest.mark.anyio
async def test_commands_keep_their_exit_status_signals_and_errors(supervisor: Supervisor) -> None:
    """Started by the reaper, a command still reports its own status, its signal, and a start error."""
    assert (await supervisor.run("exit 7", timeout_s=10)).exit_code == 7
    killed = await supervisor.run("kill -TERM $$", timeout_s=10)
    assert killed.exit_code == 128 + signal.SIGTERM, killed
    # No signal disposition of the reaper leaks into commands (an ignored one would survive exec).
    ignored = await supervisor.run("grep SigIgn /proc/$$/status", timeout_s=10)
    assert ignored.preview.strip() == await _ignored_without_reaper(), ignored.preview
    echoed = await supervisor.run("printf 'a%.0s' $(seq 1 100000) | wc -c; echo err >&2", timeout_s=10)
    assert "100000" in echoed.preview and "err" in echoed.preview, echoed
    with_stdin = await supervisor.run("cat", timeout_s=10, stdin=b"from stdin")
    assert with_stdin.preview.strip() == "from stdin", with_stdin
    big = {f"BIG{n}": "x" * 2000 for n in range(100)}  # 200 kB: the request travels in a memfd
    big_env = await supervisor.run("echo ${#BIG7}${BIG99:0:3}", timeout_s=10, env=big)
    assert big_env.preview.strip() == "2000xxx", big_env
    with pytest.raises(SandboxExecError, match="No such file or directory: '/nonexistent/program'"):
        await supervisor.run(["/nonexistent/program"], timeout_s=10)
    assert (await supervisor.run("echo still-fine", timeout_s=10)).preview.strip() == "still-fine"


async def _ignored_without_reaper() -> str:
    """The ignored-signal mask of a command started without the reaper (the baseline)."""

    class Direct(LocalBackend):
        reap_orphans = False

    with tempfile.TemporaryDirectory() as tmp:
        backend = Direct(policy=SandboxPolicy(workspace=Path(tmp)))
        async with backend, Supervisor(backend, session_dir=Path(tmp) / "s") as sup:
            return (await sup.run("grep SigIgn /proc/$$/status", timeout_s=10)).preview.strip()


#: An owner that starts a busy background task and a detaching command, says so, then waits to be killed.
_OWNER = """
import anyio, sys
from pathlib import Path
from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor

async def main() -> None:
    ws = Path(sys.argv[1])
    backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
    async with backend, Supervisor(backend, session_dir=ws / "session") as sup:
        await sup.start_background(f"sleep {sys.argv[3]}")
        await sup.run(f"(setsid env -i sleep {sys.argv[2]} &) ; exit", timeout_s=20)
        print("ready", flush=True)
        await anyio.sleep(120)

anyio.run(main)
"""


def test_leftovers_end_when_the_owner_is_killed(tmp_path: Path, tokens: list[str]) -> None:
    """SIGKILL of the process that holds the session: its reaper reads the end of its socket and kills
    everything below it (without root no owner cgroup exists, and the marker was scrubbed)."""
    token, busy = _token(), _token()
    tokens += [token, busy]
    pythonpath = os.pathsep.join([str(ROOT), *os.environ.get("PYTHONPATH", "").split(os.pathsep)])
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(tmp_path), token, busy],
        env={**os.environ, "PYTHONPATH": pythonpath},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "ready"
        assert _started_within(token, 5.0), "the leftover should run while the session is busy"
    finally:
        owner.kill()
        owner.wait()
    assert _gone_within(token, 5.0) and _gone_within(busy, 5.0), (_running(token), _running(busy))


@pytest.mark.parametrize("how", ["setsid-subshell", "daemon-closed-fds"])
def test_the_lean_cli_ends_detached_processes(tmp_path: Path, tokens: list[str], how: str) -> None:
    token = _token()
    tokens.append(token)
    done = subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "local", "--workspace", str(tmp_path), "--"]
        + [DETACHING[how].format(t=token, py=sys.executable)],
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert _gone_within(token, 1.0), f"{how}: {_running(token)} outlived `shellrt run`"


def test_orphans_end_for_an_unprivileged_caller() -> None:
    """The tests above as uid 65534: no owner cgroup, only the marker sweep was left (and it fails)."""
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, the tests above are it)"
    )
    require(os.access(_nonroot.SYSTEM_PYTHON, os.X_OK), f"no system interpreter at {_nonroot.SYSTEM_PYTHON}")
    args = [
        "tests/test_local_orphans.py",
        "--deselect",
        "tests/test_local_orphans.py::test_orphans_end_for_an_unprivileged_caller",
        "--deselect",  # root only: no cgroup for uid 65534 (its `cgroup` mode runs the reaper, asserted)
        "tests/test_local_orphans.py::test_commands_start_in_the_session_cgroup_and_the_owner_stays_out",
        "--deselect",
        "tests/test_local_orphans.py::test_a_session_whose_spawner_thread_is_gone_still_runs_commands",
    ]
    # For uid 65534 a `cgroup` session is a reaper session (`_check_mode` asserts the fallback): one
    # `cgroup` test keeps that assertion, the others would run their `reaper` twins again.
    for name in (
        *(f"test_a_detached_process_ends_with_its_command[cgroup-{how}]" for how in sorted(DETACHING)),
        "test_a_timeouts_tree_kill_ends_detached_processes[cgroup]",
        "test_leftovers_end_at_close_while_another_command_of_the_session_runs[cgroup]",
        "test_a_marked_leftover_ends_with_its_command_while_the_session_is_busy[cgroup]",
        "test_a_run_that_left_nothing_costs_no_proc_sweep[cgroup]",
    ):
        args += ["--deselect", f"tests/test_local_orphans.py::{name}"]
    collected, outcome = _nonroot.run_as_nobody(args)
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and not (outcome.failures or outcome.errors), summary
    assert outcome.skipped == 0 and outcome.tests == collected.items, summary


@pytest.mark.anyio
async def test_commands_start_in_the_session_cgroup_and_the_owner_stays_out(tmp_path: Path) -> None:
    """As root: a command (and what it starts) is in the session's cgroup from its first instruction;
    of the owner's threads only the spawner is in it, also after a failed start; close removes it."""
    require(os.geteuid() == 0, "the session cgroup needs root (without it the reaper process is used)")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    backend = _local(workspace, "cgroup")
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        cgroup = backend._runner.session_cgroup
        assert cgroup is not None
        where = "/" + str(cgroup.path.relative_to("/sys/fs/cgroup/pids"))
        result = await sup.run(
            "grep -h :pids: /proc/$$/cgroup; (grep -h :pids: /proc/self/cgroup)", timeout_s=10
        )
        lines = result.preview.split()
        # In a cgroup of its own below the session's (round 45), its descendants with it.
        assert len(lines) == 2 and lines[0] == lines[1] and f":pids:{where}/c" in lines[0], result.preview
        with pytest.raises(SandboxExecError):  # a failed start leaves the session usable
            await sup.run(["/nonexistent/program"], timeout_s=10)
        assert cgroup.empty() and not cgroup.closed
        assert (await sup.run("echo fine", timeout_s=10)).preview.strip() == "fine"
        spawner = cgroup._thread.native_id
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/cgroup") as f:
                pids_line = next(line for line in f if ":pids:" in line)
            inside = f":pids:{where}/" in pids_line
            assert inside == (int(tid) == spawner), f"owner thread {tid} (spawner {spawner}): {pids_line}"
        path = cgroup.path
    assert not path.exists(), f"{path} outlived its session"


@pytest.mark.anyio
async def test_a_session_whose_spawner_thread_is_gone_still_runs_commands(tmp_path: Path) -> None:
    """As in a forked copy of the owner (threads do not survive a fork): commands start directly,
    with their own status, and close still removes the cgroup."""
    require(os.geteuid() == 0, "the session cgroup needs root (without it the reaper process is used)")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    backend = _local(workspace, "cgroup")
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        cgroup = backend._runner.session_cgroup
        assert cgroup is not None
        cgroup._job = None
        cgroup._go.release()  # no job: the thread ends, as it does at close
        cgroup._thread.join(10)
        assert not cgroup.usable
        assert (await sup.run("exit 5", timeout_s=10)).exit_code == 5
        path = cgroup.path
    assert not path.exists()
