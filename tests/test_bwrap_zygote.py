"""The session zygote's command path: what crosses between host, zygote and init per command.

A quick command handed to a pooled init must not involve the zygote at all (one
wake-up fewer), its status must be there when its output ends (the host wakes
once), a long one must still get the next init made while it runs, and a host
socket that vanishes while the sandbox is set up must not cost the session its
zygote (FAILS, not skips, under CI=true).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from sandbox import BackendUnavailableError, BwrapConfig, ExecRequest, SandboxPolicy
from sandbox import _bwrap_zygote as zygote_module
from sandbox._proctree import pids_with_marker
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor
from tests.conftest import require

# Serial: a host socket any parallel test binds meanwhile retires the zygote (by design: it is
# masked only at a zygote's start), and these tests follow one zygote's messages, pool and timers.
pytestmark = [pytest.mark.anyio, pytest.mark.bwrap, pytest.mark.serial]


async def _started(ws: Path) -> BwrapBackend:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        require(False, f"bwrap unusable here: {exc}")
    return backend


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[tuple[BwrapBackend, Supervisor]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = await _started(ws)
    assert backend._zygote is not None, "the session sandbox must run under its zygote here"
    sup = Supervisor(backend, session_dir=tmp_path / "session")
    try:
        yield backend, sup
    finally:
        await sup.close()
        await backend.close()


async def _pool_ready(backend: BwrapBackend, count: int = 1) -> None:
    """Until the host holds ``count`` ready inits (the zygote makes them asynchronously)."""
    zygote = backend._zygote
    assert zygote is not None
    with anyio.fail_after(5):
        while True:
            zygote._collect()
            if len(zygote._pool) >= count:
                return
            await anyio.sleep(0.01)


#: Tries of a scenario a host event spoiled before it counts as a failure (see `_sent_while`).
_TRIES = 5


@asynccontextmanager
async def _sent_while(backend: BwrapBackend) -> AsyncIterator[list[str]]:
    """The ops the host sends to any zygote inside; emptied to ``["replaced"]`` when the zygote
    was replaced meanwhile: a host socket made by any process on the machine, even with this
    file serial (CI41's serial lane: ``['retire']``), retires it by design, and its replacement
    starts with an empty pool. Such a try proves nothing either way; the caller tries again."""
    zygote = backend._zygote
    sent: list[str] = []
    original = zygote_module.Zygote._send

    async def recording(self: zygote_module.Zygote, message: dict[str, object], fds: list[int]) -> None:
        sent.append(str(message["op"]))
        await original(self, message, fds)

    zygote_module.Zygote._send = recording  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        zygote_module.Zygote._send = original  # type: ignore[method-assign]
    if backend._zygote is not zygote or "retire" in sent:
        sent[:] = ["replaced"]


async def test_a_quick_command_never_involves_the_zygote(session: tuple[BwrapBackend, Supervisor]) -> None:
    backend, sup = session
    for _ in range(_TRIES):
        assert (await sup.run("true", timeout_s=10)).exit_code == 0
        await _pool_ready(backend)
        async with _sent_while(backend) as sent:
            result = await sup.run("echo quick; exit 3", timeout_s=10)
        assert (result.exit_code, result.preview) == (3, "quick\n")
        if sent != ["replaced"]:
            break
    assert sent == [], "the host handed the command to a ready init and told the zygote nothing"


async def test_the_status_is_there_when_the_output_ends(session: tuple[BwrapBackend, Supervisor]) -> None:
    """The init keeps its copy of the output pipe until it has written the status line."""
    backend, sup = session
    assert (await sup.run("true", timeout_s=10)).exit_code == 0
    await _pool_ready(backend)
    # The shell's background child ends after the shell: the init kills and reaps it first.
    request = ExecRequest(
        argv=("bash", "-c", "echo out; sleep 30 & exit 5"), cwd="/", env={}, merge_stderr=True
    )
    process = await backend.exec(request)
    chunks = []
    with anyio.fail_after(10):
        try:
            while True:
                chunks.append(await process.stdout.receive())
        except anyio.EndOfStream:
            pass
    assert b"".join(chunks) == b"out\n"
    # A root caller's session has a memory cgroup by default (round 25): its processes come wrapped.
    process = getattr(process, "_inner", process)
    status_fd = process._status_fd  # type: ignore[attr-defined]
    assert status_fd is not None
    assert os.read(status_fd, 256).startswith(b"s "), "the status line came before the output's end"
    process._status_fd = None  # type: ignore[attr-defined]
    os.close(status_fd)
    marker = process._marker  # type: ignore[attr-defined]
    assert pids_with_marker(marker) == [], "what the command left was killed before it was reported"


async def test_a_long_command_gets_the_next_init_made_while_it_runs(
    session: tuple[BwrapBackend, Supervisor],
) -> None:
    backend, sup = session
    for _ in range(_TRIES):
        assert (await sup.run("true", timeout_s=10)).exit_code == 0
        await _pool_ready(backend)
        task = await sup.start_background("sleep 1097")
        try:
            async with _sent_while(backend) as sent:
                # Told 'taken' ~50 ms in, the zygote made another: the pool is full again while it runs.
                await _pool_ready(backend, backend.warm_pool)
                assert (await sup.run("echo next", timeout_s=10)).preview == "next\n"
        finally:
            await sup.tasks.stop(task.id)
        if sent != ["replaced"]:
            break
    assert sent == [], "the next command found a ready init"


@pytest.mark.parametrize("what_is_gone", ["directory", "socket"])
async def test_a_zygote_starts_when_a_masked_socket_vanishes_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what_is_gone: str
) -> None:
    """A host socket listed for masking, gone (with its directory, or alone) before bwrap mounts
    over it: the start is tried again with a fresh list instead of falling back to one sandbox
    per command (or failing the command that found a new socket and so restarted the zygote)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    # Never made: as if removed right after listing. Under /var/tmp, read-only in the sandbox,
    # so bwrap can make neither the mount point's parents nor the mount point itself.
    parent = Path(f"/var/tmp/shellrt-test-gone-{os.getpid()}-{what_is_gone}")
    gone = f"{parent}/agent.sock"
    original = BwrapBackend.bwrap_args
    calls = 0

    def listing_a_vanished_socket(self: BwrapBackend, **kwargs: object) -> list[str]:
        nonlocal calls
        args = original(self, **kwargs)  # type: ignore[arg-type]
        calls += 1
        if calls == 1 and kwargs.get("zygote"):
            at = args.index("--chdir")  # after `--ro-bind / /` and the other masks
            args[at:at] = ["--ro-bind", "/dev/null", gone]
        return args

    monkeypatch.setattr(BwrapBackend, "bwrap_args", listing_a_vanished_socket)
    if what_is_gone == "socket":
        parent.mkdir()
    try:
        backend = await _started(ws)
        try:
            assert backend._zygote is not None and backend.persistent, "fell back to one sandbox per command"
            sup = Supervisor(backend, session_dir=tmp_path / "session")
            try:
                assert (await sup.run("echo ok", timeout_s=10)).preview == "ok\n"
            finally:
                await sup.close()
        finally:
            await backend.close()
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def _program_file(tmp_path: Path) -> Path:
    """`ZYGOTE_CODE` in a file a probe reads (in argv, as hex, it outgrew one argument's 128 KiB)."""
    path = tmp_path / "zygote.marshal"
    path.write_bytes(zygote_module.ZYGOTE_CODE)
    return path


def test_the_zygote_imports_no_python_source_beyond_what_os_and_ctypes_need(tmp_path: Path) -> None:
    """Every init is a clone of the zygote: each module of Python source it holds is memory every
    clone copies the page tables of and each init faults in (``typing`` alone pulled in ``re``,
    ``enum``, ``functools`` and ``collections``; ``array`` pulls in ``collections.abc``)."""
    probe = (
        "import sys;before=set(sys.modules);"
        "exec(marshal.loads(open(sys.argv[1],'rb').read()),{'__name__':'probe'});"
        "print(' '.join(sorted(set(sys.modules)-before)))"
    )
    code = "import marshal;" + probe
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", code, str(_program_file(tmp_path))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    allowed = {"__future__", "_collections_abc", "genericpath", "os", "os.path", "posixpath", "stat"}
    allowed |= {"ctypes", "ctypes._endian", "struct", "types"}  # what `import ctypes` brings
    source = {name for name in out if not _is_c_module(name)}
    assert source <= allowed, f"the zygote imports Python source it does not need: {sorted(source - allowed)}"


def test_each_init_receives_into_a_buffer_of_its_own(tmp_path: Path) -> None:
    """Every init is a clone of the zygote: a receive buffer shared across the clone (an anonymous
    MAP_SHARED mmap) let one process read the message another one received at the same moment."""
    probe = (
        "import marshal,os,sys;g={'__name__':'probe'};"
        "exec(marshal.loads(open(sys.argv[1],'rb').read()),g);inbox=g['_INBOX'];inbox[:6]=b'zygote';"
        "pid=os.fork()\n"
        "if pid==0:\n inbox[:6]=b'init  ';os._exit(0)\n"
        "os.waitpid(pid,0);print(bytes(inbox[:6]).decode())"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", probe, str(_program_file(tmp_path))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == "zygote\n", "a clone's receive buffer is the zygote's own memory"


def test_every_c_function_an_init_calls_is_looked_up_once_in_the_zygote(tmp_path: Path) -> None:
    """ctypes looks a C function up (dlsym, a new function object) on its first use and only then
    keeps it: one first used in an init was looked up again by every init, as ``capset`` was
    (~0.2 ms of each init's CPU). Every ``_libc.<name>`` of the program is resolved when it loads."""
    called = set(
        re.findall(r"\b_libc\.(\w+)\(", (Path(zygote_module.__file__).parent / "_zygote_main.py").read_text())
    )
    probe = (
        "import marshal,sys;g={'__name__':'probe'};"
        "exec(marshal.loads(open(sys.argv[1],'rb').read()),g);"
        "print(' '.join(sorted(k for k in vars(g['_libc']) if not k.startswith('_'))))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", probe, str(_program_file(tmp_path))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert {"capset", "mount", "prctl", "syscall"} <= called, "the program's C calls were not found"
    assert called <= set(out), f"looked up in each init instead: {sorted(called - set(out))}"


def _is_c_module(name: str) -> bool:
    if name in sys.builtin_module_names:
        return True
    spec = importlib.util.find_spec(name)
    return spec is not None and spec.origin is not None and spec.origin.endswith(".so")


async def test_a_root_callers_command_starts_without_a_user_database_lookup(
    session: tuple[BwrapBackend, Supervisor],
) -> None:
    """The sandbox uid has no /etc/passwd entry: a bash without $SHELL looked it up through every
    NSS source (libnss_systemd dlopen'd, ~1.5 ms of each command's start); the zygote gives it the
    value bash would then assume."""
    require(os.geteuid() == 0, "only a root caller's commands run under the sandbox uid (CI runs as root)")
    _, sup = session
    result = await sup.run('echo "$SHELL"; grep -c libnss_ /proc/$$/maps', timeout_s=10)
    assert result.preview.split() == ["/bin/sh", "0"], result.preview


def test_the_zygote_program_is_compact() -> None:
    """The program goes over in a sealed memfd (round 15; it was a pipe whose 64 KiB buffer it had
    to fit), so any size starts; the bound notices growth, and the docstrings stay out. 104 KiB since
    round 38 (the lock view's shared overlay, its cover of the rest, the pool's early refill: 88 -> 98 KiB);
    112 KiB since round 49 (the lock view's groups anchored at fds: 102 -> 111 KiB); 124 KiB since
    round 50 (the anchors' walk without openat2, the group plans worked out once, `_cover_rest`
    anchored, the check for mounts renamed below a group: 110.7 -> 118.6 KiB)."""
    assert len(zygote_module.ZYGOTE_CODE) < 124 * 1024
    assert b"The zygote: the one long-lived process" not in zygote_module.ZYGOTE_CODE, "docstrings dropped"
