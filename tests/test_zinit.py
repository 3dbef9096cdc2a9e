"""The bwrap session's C init (`sandbox/zinit.c`, built by `sandbox._zinit`).

A command's init in C must confine the command exactly as the zygote's Python init does
(same uid, capabilities, no_new_privs, seccomp filter, /proc masks, core limit, pid 1 out
of its reach), refuse to run a command when its set-up fails (fail closed), come to the
zygote as a program nothing can change, and give way to the Python init where it cannot be
built. FAILS, not skips, under CI=true (bwrap; the direct runs need root, which CI has).
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from sandbox import _seccomp, _static_build, _zinit
from sandbox._bwrap_scope import landlock_abi
from sandbox._zygote_main import (
    _CALL_GROUP_END,
    _CALL_GROUP_HEAD,
    _CALL_OUTER,
    _CALL_REST,
    _CALL_UMOUNT,
    _MS_MOVE,
    _MS_RDONLY,
    _c_clone,
    _mount_call,
    _start_c_server,
)
from sandbox.errors import SandboxExecError
from shellrt.supervisor import Supervisor
from tests._bwrap_session import zygote_session
from tests.conftest import require
from tests.test_sandbox_bwrap import _is_init

if TYPE_CHECKING:
    from sandbox._zygote_main import MountCall

pytestmark = [pytest.mark.anyio]

#: What a command prints about its confinement (namespace ids differ per command: not printed).
_PROBE = (
    "id; echo pid=$$; grep -E '^(Cap|NoNewPrivs|Seccomp)' /proc/self/status; ulimit -c; ulimit -Hc;"
    " grep -E ' /proc[/ ]' /proc/self/mountinfo | cut -d' ' -f5,6 | sort;"
    " kill -INT 1; kill -TERM 1; kill -KILL 1; test -r /proc/1/stat && echo init=alive;"
    " ls /proc/1/fd >/dev/null 2>&1; echo fds=$?; unshare -U true 2>/dev/null; echo userns=$?;"
    " unshare -m true 2>/dev/null; echo mountns=$?"
)


@pytest.fixture
def fresh_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    """`sandbox._zinit` decides once per process: undecided again for this test (and after it)."""
    monkeypatch.setattr(_zinit, "_program", None)
    monkeypatch.setattr(_static_build, "_built", {})


async def _probe(tmp_path: Path, want_c: bool) -> str:
    tmp_path.mkdir()
    async with zygote_session(tmp_path) as (backend, sup):
        assert backend._zygote is not None and backend._zygote.c_init is want_c
        first = (await sup.run(_PROBE, timeout_s=20)).preview
        again = (await sup.run(_PROBE, timeout_s=20)).preview  # a pooled init made after a command
        assert first == again
        return re.sub(r"uid=\d+\S*|gid=\d+\S*|groups=\d+\S*", "", first)  # a leased uid differs per session


@pytest.mark.bwrap
async def test_both_inits_confine_a_command_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_choice: None
) -> None:
    c_said = await _probe(tmp_path / "c", want_c=True)
    monkeypatch.setenv(_zinit.INIT_ENV, "python")
    monkeypatch.setattr(_zinit, "_program", None)
    python_said = await _probe(tmp_path / "py", want_c=False)
    assert c_said == python_said
    assert "pid=2" in c_said and "NoNewPrivs:\t1" in c_said and "Seccomp:\t2" in c_said, c_said
    assert "CapEff:\t0000000000000000" in c_said and "CapBnd:\t0000000000000000" in c_said, c_said
    assert "init=alive" in c_said and "fds=0" not in c_said, c_said
    assert "userns=0" not in c_said and "mountns=0" not in c_said, c_said


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Supervisor]:
    async with zygote_session(tmp_path) as (backend, sup):
        assert backend._zygote is not None and backend._zygote.c_init, "a compiler is here: the C init runs"
        yield sup


@pytest.mark.bwrap
async def test_the_c_init_runs_commands_as_the_python_one_did(session: Supervisor) -> None:
    sup = session
    assert (await sup.run("exit 3", timeout_s=10)).exit_code == 3
    assert (await sup.run("kill -TERM $$", timeout_s=10)).exit_code == 128 + 15
    missing = await sup.run("cd /nonexistent-dir-zinit 2>/dev/null || exec /nonexistent-zinit", timeout_s=10)
    assert missing.exit_code == 127
    left = await sup.run(
        "(setsid sleep 3017 &); nohup sleep 3018 >/dev/null 2>&1 & echo started", timeout_s=10
    )
    assert left.exit_code == 0 and "started" in left.preview
    assert _host_pids("sleep 301[78]") == [], "the init reports only once nothing of its command is left"
    out = await sup.run("head -c 3; echo; echo err >&2", timeout_s=10, stdin=b"abcdef")
    assert out.exit_code == 0 and "abc" in out.preview and "err" in out.preview


@pytest.mark.bwrap
@pytest.mark.parametrize("init", ["c", "python"])
async def test_a_long_command_line_of_distinct_words_reaches_either_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_choice: None, init: str
) -> None:
    """1.5 MiB of distinct arguments (under ARG_MAX). The C init's request spells every byte out,
    so a 1 MiB argv failed with "too large" where the Python init's marshal had shared 16 equal
    chunks (the conformance test's argv): one message must fit the sockets' send buffers and both
    inboxes. Pooled and freshly made inits both (the second command takes a pooled one)."""
    monkeypatch.setenv(_zinit.INIT_ENV, init)
    words = [f"{i:02d}" + "x" * (96 * 1024 - 2) for i in range(16)]
    async with zygote_session(tmp_path) as (backend, sup):
        assert backend._zygote is not None and backend._zygote.c_init is (init == "c")
        for _ in range(2):
            result = await sup.run(["printf", "%s", *words], timeout_s=60, merge_stderr=False)
            assert result.exit_code == 0, result.stderr
            assert result.output_path.read_bytes() == "".join(words).encode()


@pytest.mark.bwrap
@pytest.mark.parametrize("init", ["c", "python"])
async def test_a_command_line_past_the_inboxes_is_refused_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_choice: None, init: str
) -> None:
    """5 MiB of arguments: refused as too large before any init is used (the send failed ENOBUFS
    and read as "the zygote went away" once buffers grew), and the session goes on."""
    monkeypatch.setenv(_zinit.INIT_ENV, init)
    words = [f"{i:02d}" + "x" * (100 * 1024) for i in range(50)]
    async with zygote_session(tmp_path) as (backend, sup):
        for _ in range(2):  # a pooled init first, then none left unused
            with pytest.raises(SandboxExecError, match="too large"):
                await sup.run(["printf", "%s", *words], timeout_s=30)
        assert (await sup.run("echo still", timeout_s=10)).preview == "still\n"


@pytest.mark.bwrap
async def test_a_killed_fork_server_is_started_again(tmp_path: Path) -> None:
    """Killed (the OOM killer, an operator): the next init comes from a new server; no command is
    refused and none runs without its init's set-up."""
    require(os.geteuid() == 0, "killing the sandbox's server from the host needs root (CI runs as root)")
    async with zygote_session(tmp_path) as (backend, sup):
        # A host socket appearing where the sandbox could see it (another test's) replaces the
        # zygote, and its new server proves nothing: again until one zygote ran the whole scenario
        # (failed 5 of 5 beside a churn of host sockets, each try looking at the old zygote).
        for _ in range(_TRIES):
            await sup.run("true", timeout_s=10)  # a replacement already due happens now
            zygote = backend._zygote
            assert zygote is not None and zygote.c_init and zygote.host_pid is not None
            servers = _servers_below(zygote.host_pid)
            assert len(servers) == 1, servers
            os.kill(servers[0], 9)
            for _ in range(backend.warm_pool + 3):  # the pooled inits, then inits the new server made
                result = await sup.run("echo $$; grep Seccomp: /proc/self/status", timeout_s=10)
                assert result.exit_code == 0 and result.preview.split() == ["2", "Seccomp:", "2"], (
                    result.preview
                )
            if backend._zygote is zygote:
                again = _servers_below(zygote.host_pid)
                assert len(again) == 1 and again != servers, again
                return
        pytest.fail(f"the zygote was replaced during each of {_TRIES} tries (host sockets churning)")


#: Tries at the killed-server scenario in one zygote before the test gives up on a churning host.
_TRIES = 30


def _servers_below(pid: int) -> list[int]:
    """Host pids of the C init servers among ``pid``'s descendants (not their inits)."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = {}
    for line in out.splitlines():
        child, parent = map(int, line.split())
        children.setdefault(parent, []).append(child)
    found, frontier = [], [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            frontier.append(child)
            try:
                server = Path(f"/proc/{child}/cmdline").read_bytes().startswith(b"shellrt-init\0server\0")
                if server and not _is_init(child):  # its inits are its clones (pid 1 of their own namespace)
                    found.append(child)
            except OSError:
                pass
    return found


def _host_pids(pattern: str) -> list[str]:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()


@pytest.mark.bwrap
async def test_without_a_compiler_the_zygote_keeps_its_python_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_choice: None, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nothing built before
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with caplog.at_level(logging.INFO, logger="sandbox._zinit"):
        assert _zinit.init_program_fd() is None
        assert _zinit.init_kind() == "python"
    assert "bwrap session inits: Python" in caplog.text and "no C compiler" in caplog.text, caplog.text
    async with zygote_session(tmp_path) as (backend, sup):
        assert backend._zygote is not None and not backend._zygote.c_init
        result = await sup.run("echo $$; grep NoNewPrivs /proc/self/status", timeout_s=10)
        assert result.exit_code == 0 and result.preview.split() == ["2", "NoNewPrivs:", "1"], result.preview


@pytest.mark.bwrap
async def test_a_c_init_that_cannot_start_in_the_sandbox_leaves_the_python_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def not_a_program() -> int:
        fd = os.memfd_create("shellrt-init", os.MFD_CLOEXEC)
        os.write(fd, b"not a program")
        return fd

    monkeypatch.setattr("sandbox._bwrap_zygote.init_program_fd", not_a_program)
    with caplog.at_level(logging.WARNING, logger="sandbox._bwrap_zygote"):
        async with zygote_session(tmp_path) as (backend, sup):
            assert backend._zygote is not None and not backend._zygote.c_init
            for _ in range(4):  # pooled inits, then inits made since
                result = await sup.run("echo $$; grep NoNewPrivs /proc/self/status", timeout_s=10)
                assert result.preview.split() == ["2", "NoNewPrivs:", "1"], result.preview
    assert "bwrap session inits: Python, the C init cannot start" in caplog.text, caplog.text


def test_the_program_handed_to_the_zygote_cannot_be_changed() -> None:
    fd = _zinit.init_program_fd()
    require(fd is not None, "no C compiler here (install gcc and libc6-dev)")
    assert fd is not None
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        for seal in (fcntl.F_SEAL_WRITE, fcntl.F_SEAL_SHRINK, fcntl.F_SEAL_GROW, fcntl.F_SEAL_SEAL):
            assert seals & seal
        with pytest.raises(PermissionError):
            os.pwrite(fd, b"\0", 0)
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 0)
        assert os.pread(fd, 4, 0) == b"\x7fELF"
        assert not os.get_inheritable(fd)
    finally:
        os.close(fd)


def test_a_request_is_its_fields_each_nul_terminated() -> None:
    encoded = _zinit.encode_request(["bash", "-c", "echo é"], "/w s", {"A": "1", "B": "x=y"})
    assert encoded == "/w s\0003\0bash\0-c\0echo é\0A=1\0B=x=y\0".encode()
    with pytest.raises(ValueError, match="NUL"):
        _zinit.encode_request(["bash", "-c", "a\0b"], "/", {})


def _config(seccomp: bytes, mounts: tuple[MountCall, ...] = ()) -> bytes:
    """A C init configuration (see `zinit.c`'s ``read_config``): uid and gid kept, no slice,
    ``mounts`` only (run on the host, its /proc is left alone), the bounding set left as it is;
    Landlock's signal and abstract-socket scopes (round 29) where the kernel has them."""
    scopes = "3" if landlock_abi() >= 6 else "0"
    calls = [
        (field or b"").decode() if i != 3 else str(field.value)  # type: ignore[union-attr]
        for call in mounts
        for i, field in enumerate(call)
    ]
    fields = ["-1", "-1", "0", "0", "100000", "", "no process", scopes, "0", str(len(mounts)), *calls]
    return b"".join(field.encode() + b"\0" for field in [*fields, seccomp.hex()])


def _run_directly(tmp_path: Path, config: bytes, script: str) -> tuple[str, str]:
    """The C init started as the zygote starts it, on the host (root): (its command's stdout and
    stderr, its status line)."""
    require(os.geteuid() == 0, "starting the C init outside bwrap needs root (CI runs as root)")
    program = _zinit.init_program_fd()
    require(program is not None, "no C compiler here (install gcc and libc6-dev)")
    assert program is not None
    high = fcntl.fcntl(program, fcntl.F_DUPFD_CLOEXEC, 64)
    os.close(program)
    config_fd = os.memfd_create("config", os.MFD_CLOEXEC)
    os.write(config_fd, config)
    server = _start_c_server(high, config_fd)
    os.close(high)
    os.close(config_fd)
    ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    report_r, report_w = os.pipe2(os.O_CLOEXEC)
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    init = _c_clone(server, [theirs.fileno(), report_w, status_w])
    theirs.close()
    for fd in (report_w, status_w):
        os.close(fd)
    server.close()  # the server ends on that EOF; the init is this process's own child
    assert init > 0
    request = _zinit.encode_request(["/bin/sh", "-c", script], str(tmp_path), {"PATH": "/usr/bin:/bin"})
    with open(os.devnull, "rb") as devnull:
        socket.send_fds(ctl, [request], [devnull.fileno(), out_w, out_w])
    os.close(out_w)
    ctl.close()
    output = b""
    while chunk := os.read(out_r, 65536):
        output += chunk
    status = os.read(status_r, 64).decode()
    os.waitpid(init, 0)
    os.waitpid(-1, 0)  # the server
    for fd in (out_r, status_r, report_r):
        os.close(fd)
    return output.decode(), status


@pytest.mark.parametrize("config", [b"garbage\0", _config(b"")], ids=["malformed", "no seccomp program"])
def test_a_set_up_failure_refuses_the_command(tmp_path: Path, config: bytes) -> None:
    said, status = _run_directly(tmp_path, config, "touch ran")
    assert "cannot start the command" in said and "configuration" in said, said
    assert status == "s 256\n"
    assert not (tmp_path / "ran").exists(), "the command ran without its set-up"


def test_the_c_init_alone_confines_its_command(tmp_path: Path) -> None:
    """Outside bwrap too: pid 2 of a fresh pid namespace, no capabilities, no_new_privs, the filter."""
    script = (
        "echo $$; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; echo fds $(ls /proc/self/fd);"
        " ulimit -Hc; exit 7"
    )
    said, status = _run_directly(tmp_path, _config(_seccomp.filter_bytes()), script)
    assert status == f"s {7 << 8}\n"
    lines = said.split("\n")
    assert lines[0] == "2", said  # its own pid namespace's (getpid; /proc is still the host's here)
    assert "CapEff:\t0000000000000000" in said and "NoNewPrivs:\t1" in said and "Seccomp:\t2" in said, said
    assert "fds 0 1 2 3\n" in said, f"stdio only (3: ls's own): {said}"
    assert lines[-2] == "0", said


def _vanished_groups(scratch: Path) -> tuple[MountCall, ...]:
    """Lock-view groups on the same assembly point ``h`` whose directory went away after the plan:
    a shared overlay's, then a directory's own (`_zygote_main._lock_view_calls`) after its overlay
    was made (the move over it finds no name); then one whose directory is there."""
    hold, lower, empty = (str(scratch / n) for n in ("h", "lower", "e"))
    head = _MS_RDONLY | _CALL_GROUP_HEAD
    overlay = f"lowerdir={lower}:{empty}"
    # A shared overlay's group (`_shared_view_calls`) whose mount's directory went away: its
    # uncovered entries are bound (`_cover_rest`) from a directory that is no longer there.
    shared = (
        _mount_call("overlay", hold, "overlay", head | _CALL_OUTER, overlay),
        _mount_call(hold, str(scratch / "gone"), None, _CALL_REST, ""),
        _mount_call(None, hold, None, _CALL_UMOUNT | _CALL_GROUP_END | _CALL_OUTER),
    )
    return shared + tuple(
        call
        for target in ("gone", "kept")
        for call in (
            _mount_call("overlay", hold, "overlay", head, overlay),
            _mount_call(hold, str(scratch / target), None, _MS_MOVE | _CALL_GROUP_END),
        )
    )


def _private_scratch(tmp_path: Path) -> Path:
    """A tmpfs of its own, private (nothing mounted below it propagates back to the host), with
    ``lower/f``, the empty ``e``, the assembly point ``h`` and the group targets (``kept`` only)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(scratch)], check=True)
    subprocess.run(["mount", "--make-private", str(scratch)], check=True)
    for name in ("lower", "e", "h", "kept"):
        (scratch / name).mkdir()
    (scratch / "lower" / "f").write_text("covered\n")
    return scratch


_CHECK = 'cat {s}/kept/f; grep -c " {s}/h " /proc/self/mountinfo; grep -c " {s}/kept " /proc/self/mountinfo'


@pytest.mark.parametrize("init", ["c", "python"])
def test_a_directory_gone_mid_group_is_skipped_and_its_assembly_emptied(tmp_path: Path, init: str) -> None:
    """Failed before (CI, stop 60's landing: another test removed its directory while an init
    replayed the lock view): "cannot start the command: mount <dir>: No such file or directory",
    the session sandbox could not be started again. Now the group is undone (``h`` detached with
    what was moved into it) and the next group finds ``h`` empty; any other failure still closes."""
    require(os.geteuid() == 0, "mounting a private tmpfs and an overlay needs root")
    scratch = _private_scratch(tmp_path)
    try:
        calls = _vanished_groups(scratch)
        if init == "c":
            said, status = _run_directly(tmp_path, _config(_seccomp.filter_bytes(), calls), _CHECK.format(s=scratch))
            assert status == "s 0\n", said
        else:
            script = (
                "import subprocess, sys\n"
                "from pathlib import Path\n"
                "from sandbox._zygote_main import _replay\n"
                "from tests.test_zinit import _vanished_groups, _CHECK\n"
                "_replay(list(_vanished_groups(Path(sys.argv[1]))))\n"
                "print(subprocess.run(['sh', '-c', _CHECK.format(s=sys.argv[1])], capture_output=True, text=True).stdout)\n"
            )
            done = subprocess.run(
                ["unshare", "-m", "--propagation", "private", sys.executable, "-c", script, str(scratch)],
                capture_output=True, text=True, cwd=Path(__file__).parent.parent, timeout=60,
            )  # fmt: skip
            said = done.stdout + done.stderr
            assert done.returncode == 0, said
        assert said.split() == ["covered", "0", "1"], said
    finally:
        subprocess.run(["umount", "-l", str(scratch)], check=False)
