"""The local reaper's start path against a direct start: same errors, same fds, same exit codes.

The reaper (`sandbox._reaper`) starts commands with CPython's vfork+exec itself, and the owner
reads an ended command's exit code from its zombie (`_zombie_code`) before the reaper's report
comes. Each test compares with the direct start (`sandbox._spawn`) or with ``waitpid``.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import SandboxPolicy, _reaper
from sandbox._reaper import ReapedChild, Reaper
from sandbox._spawn import start as start_direct
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from tests import _nonroot
from tests.conftest import require

ENV = {"PATH": "/usr/bin:/bin"}
#: Prints the fds above 2 open in the program (none for a clean start).
LIST_FDS = (
    "import os\n"
    "fds = []\n"
    "for fd in range(3, 256):\n"
    "    try:\n"
    "        os.fstat(fd)\n"
    "    except OSError:\n"
    "        continue\n"
    "    fds.append(fd)\n"
    "print(fds)"
)


@pytest.fixture
def reaper() -> Iterator[Reaper]:
    started = Reaper()
    started.wait_ready()
    try:
        yield started
    finally:
        started.close()


def _wait(child: ReapedChild) -> int:
    poller = select.poll()
    poller.register(child.pidfd, select.POLLIN)
    poller.poll(10_000)
    code = child.poll()
    assert code is not None, "the command should have ended"
    return code


def _run(reaper: Reaper, argv: list[str], *, cwd: str | None = None) -> tuple[int, bytes]:
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    try:
        child = reaper.spawn(argv, executable=None, env=ENV, cwd=cwd, stdin=null, stdout=out_w, stderr=None)
    except BaseException:
        os.close(out_r)
        raise
    finally:
        os.close(out_w)
        os.close(null)
    with os.fdopen(out_r, "rb") as out:
        output = out.read()
    return _wait(child), output


def _start_error(start: object) -> OSError:
    """The OSError ``start()`` raises (it must raise one)."""
    with pytest.raises(OSError) as caught:
        assert callable(start)
        start()
    return caught.value


@pytest.mark.parametrize("case", ["missing-path", "missing-name", "not-executable", "missing-cwd"])
def test_start_errors_are_the_direct_starts(reaper: Reaper, tmp_path: Path, case: str) -> None:
    """errno, message and filename as `sandbox._spawn` / Popen give them (the backend's error text)."""
    plain = tmp_path / "plain-file"
    plain.write_text("echo hi\n")
    plain.chmod(stat.S_IRUSR | stat.S_IWUSR)
    argv, executable, cwd = {
        "missing-path": (["/nonexistent/program"], "/nonexistent/program", None),
        "missing-name": (["no-such-program-anywhere"], None, None),
        "not-executable": ([str(plain)], str(plain), None),
        "missing-cwd": (["/bin/true"], "/bin/true", str(tmp_path / "gone")),
    }[case]
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    try:
        ours = _start_error(
            lambda: reaper.spawn(
                argv, executable=executable, env=ENV, cwd=cwd, stdin=null, stdout=null, stderr=None
            )
        )
        direct = _start_error(
            lambda: start_direct(
                argv, executable=executable, env=ENV, cwd=cwd, stdin=null, stdout=null, stderr=None
            )
        )
    finally:
        os.close(null)
    assert (ours.errno, ours.strerror, ours.filename) == (direct.errno, direct.strerror, direct.filename)
    assert str(ours) == str(direct)
    # The reaper is fine afterwards, and nothing is left of the failed start.
    assert _run(reaper, ["/bin/sh", "-c", "echo ok"]) == (0, b"ok\n")
    assert len(reaper._ended) + len(reaper._dropped) <= 1  # the last command's report may be in flight


def test_no_fd_of_the_owner_or_the_reaper_reaches_a_command() -> None:
    """A command has its stdio and nothing else: not an inheritable fd the owner had when the session
    started or has now, not the reaper's socket, not the copies of the fds it was sent."""
    leaked_early = os.pipe()  # inheritable on purpose: a careless owner's fds
    try:
        started = Reaper()
        started.wait_ready()
        leaked_late = os.pipe()
        try:
            code, output = _run(started, [sys.executable, "-I", "-c", LIST_FDS])
        finally:
            started.close()
            for fd in leaked_late:
                os.close(fd)
    finally:
        for fd in leaked_early:
            os.close(fd)
    assert (code, output.strip()) == (0, b"[]")


def test_exit_codes_from_the_zombie_and_from_the_report_agree(
    reaper: Reaper, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain codes, a signal, many commands ending in any order: once read from their zombies (the
    reaper stopped, so it can neither reap nor report), once from the reaper's reports (zombie read
    disabled). No code is kept once asked for."""
    scripts = {"exit 0": 0, "exit 7": 7, "exit 255": 255, "kill -TERM $$": -signal.SIGTERM}
    for label in ("zombie", "report"):
        if label == "report":
            monkeypatch.setattr(_reaper, "_zombie_code", lambda pid, pidfd: None)
        null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        try:
            children = [
                reaper.spawn(
                    ["/bin/sh", "-c", script],
                    executable=None,
                    env=ENV,
                    cwd=None,
                    stdin=null,
                    stdout=null,
                    stderr=None,
                )
                for script in [*scripts, *(f"sleep 0.0{n % 5}; exit {n}" for n in range(20))]
            ]
        finally:
            os.close(null)
        expected = [*scripts.values(), *range(20)]
        if label == "zombie":
            os.kill(reaper.pid, signal.SIGSTOP)
        try:
            codes = [_wait(child) for child in reversed(children)]
        finally:
            os.kill(reaper.pid, signal.SIGCONT)
        assert codes == list(reversed(expected)), label
    _run(reaper, ["/bin/true"])  # files every report still in flight
    assert len(reaper._ended) + len(reaper._dropped) <= 1, (reaper._ended, reaper._dropped)


def test_a_zombies_code_is_read_only_while_it_is_one() -> None:
    """`_zombie_code`: the code of an unreaped child; None once it is reaped (its pid may be anyone's)."""
    pid = os.fork()
    if pid == 0:
        os._exit(42)
    pidfd = os.pidfd_open(pid)
    try:
        select.select([pidfd], [], [], 10)
        assert _reaper._zombie_code(pid, pidfd) == 42
        os.waitpid(pid, 0)
        assert _reaper._zombie_code(pid, pidfd) is None
    finally:
        os.close(pidfd)


def test_a_zombie_the_kernel_hides_is_not_read_as_exit_0() -> None:
    """A reader may signal a zombie but not see its exit code (it ran a set-user-ID program: real uid
    the reader's, effective uid root): /proc shows code 0 then, which must not be taken."""
    require(os.geteuid() == 0, "making a zombie with a set-user-ID identity needs root")
    pid = os.fork()
    if pid == 0:
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 0, 0)
        os._exit(9)
    pidfd = os.pidfd_open(pid)
    try:
        select.select([pidfd], [], [], 10)
        reader = os.fork()
        if reader == 0:  # uid 65534 may signal that zombie (same real uid), not read its code
            try:
                os.setresgid(65534, 65534, 65534)
                os.setresuid(65534, 65534, 65534)
                signal.pidfd_send_signal(pidfd, 0)
                os._exit(0 if _reaper._zombie_code(pid, pidfd) is None else 1)
            except BaseException:
                os._exit(2)
        _, status = os.waitpid(reader, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "an unprivileged reader trusted a hidden exit code"
        assert _reaper._zombie_code(pid, pidfd) == 9
    finally:
        os.waitpid(pid, 0)
        os.close(pidfd)


@pytest.mark.anyio
async def test_a_killed_reaper_leaves_a_working_session(tmp_path: Path) -> None:
    """SIGKILL the session's reaper: the next command starts directly (the nets of `_proctree` only),
    with its own exit code, and close still works."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    backend = LocalBackend(policy=SandboxPolicy(workspace=workspace))
    backend.session_cgroup = False  # the reaper process even where a session cgroup could be made
    async with backend, Supervisor(backend, session_dir=tmp_path / "session") as sup:
        assert (await sup.run("exit 3", timeout_s=10)).exit_code == 3
        reaper = backend._runner.reaper
        assert reaper is not None
        os.kill(reaper.pid, signal.SIGKILL)
        reaper._proc.wait(10)
        assert (await sup.run("exit 4", timeout_s=10)).exit_code == 4
        assert (await sup.run("echo still", timeout_s=10)).preview.strip() == "still"
        assert reaper.closed


def test_the_owner_keeps_no_fd_of_a_session() -> None:
    """Started, used (a command, a failed start, a big environment in a memfd) and closed, a reaper
    leaves no fd open in the owner."""
    before = set(os.listdir("/proc/self/fd"))
    with tempfile.TemporaryDirectory() as tmp:
        started = Reaper()
        started.wait_ready()
        try:
            assert _run(started, ["/bin/true"], cwd=tmp) == (0, b"")
            with pytest.raises(FileNotFoundError):
                _run(started, ["/nonexistent/program"])
            big = {**ENV, **{f"BIG{n}": "x" * 2000 for n in range(100)}}
            null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
            try:
                child = started.spawn(
                    ["/bin/sh", "-c", 'test "${#BIG7}" = 2000'],
                    executable=None,
                    env=big,
                    cwd=None,
                    stdin=null,
                    stdout=null,
                    stderr=None,
                )
            finally:
                os.close(null)
            assert _wait(child) == 0
        finally:
            started.close()
    assert set(os.listdir("/proc/self/fd")) == before


def test_the_above_for_an_unprivileged_caller() -> None:
    """These tests again as uid 65534: an owner without root reads its commands' zombies too."""
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, the tests above are it)"
    )
    require(os.access(_nonroot.SYSTEM_PYTHON, os.X_OK), f"no system interpreter at {_nonroot.SYSTEM_PYTHON}")
    here = "tests/test_reaper_spawn.py"
    args = [here]
    for root_only in (
        "test_a_zombie_the_kernel_hides_is_not_read_as_exit_0",
        "test_the_above_for_an_unprivileged_caller",
    ):
        args += ["--deselect", f"{here}::{root_only}"]
    collected, outcome = _nonroot.run_as_nobody(args)
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and not (outcome.failures or outcome.errors), summary
    assert outcome.skipped == 0 and outcome.tests == collected.items, summary


@pytest.mark.parametrize("bad", ["env-name", "nul-in-argv"])
def test_a_request_the_kernel_cannot_take_is_an_error_not_a_dead_reaper(reaper: Reaper, bad: str) -> None:
    """An environment name with '=' or a NUL byte in argv: an OSError (EINVAL) for this start, and the
    reaper goes on (such a request made its `Popen` raise ValueError, which ended the reaper)."""
    argv, env = {
        "env-name": (["/bin/true"], {**ENV, "A=B": "x"}),
        "nul-in-argv": (["/bin/echo", "a\0b"], ENV),
    }[bad]
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    try:
        with pytest.raises(OSError) as caught:
            reaper.spawn(argv, executable=None, env=env, cwd=None, stdin=null, stdout=null, stderr=None)
    finally:
        os.close(null)
    assert caught.value.errno == errno.EINVAL, caught.value
    assert not reaper.closed
    assert _run(reaper, ["/bin/sh", "-c", "echo ok"]) == (0, b"ok\n")


def test_the_popen_start_of_other_python_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ``fork_exec``'s signature is not the one known (not CPython 3.11) the reaper starts with
    Popen: the same output, exit codes (from the reports: zombie read off) and start errors."""
    script = _reaper._REAPER.replace("sys.version_info[:2] == (3, 11)", "False")
    assert script != _reaper._REAPER
    monkeypatch.setattr(_reaper, "_REAPER", script)
    monkeypatch.setattr(_reaper, "_zombie_code", lambda pid, pidfd: None)
    started = Reaper()
    started.wait_ready()
    try:
        for _ in range(3):  # a later Popen must not reap an earlier command behind the reaper's back
            assert _run(started, ["/bin/sh", "-c", "echo hi; exit 5"]) == (5, b"hi\n")
        with pytest.raises(FileNotFoundError, match="/nonexistent/program"):
            _run(started, ["/nonexistent/program"])
        assert _run(started, ["/bin/sh", "-c", "kill -TERM $$"])[0] == -signal.SIGTERM
    finally:
        started.close()
