"""`sandbox._spawn.start`: what Popen guaranteed for a host process, without Popen (issue 22)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox import _spawn
from sandbox._spawn import Child, start

BASH = "/bin/bash" if os.path.exists("/bin/bash") else "/usr/bin/bash"


def _run(
    argv: list[str],
    *,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> tuple[int, bytes, Child | subprocess.Popen[bytes]]:
    """Start ``argv`` (bash), read its merged output to EOF, reap it: (returncode, output, handle)."""
    read, write = os.pipe2(os.O_CLOEXEC)
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    try:
        child = start(
            argv,
            executable=BASH,
            stdin=null,
            stdout=write,
            stderr=None,
            cwd=cwd,
            env={"A": "1"} if env is None else env,
            pass_fds=pass_fds,
        )
    finally:
        os.close(write)
        os.close(null)
    out = b""
    while chunk := os.read(read, 65536):
        out += chunk
    os.close(read)
    while child.poll() is None:
        time.sleep(0.001)
    assert child.returncode is not None
    return child.returncode, out, child


def test_the_direct_path_is_taken_on_the_version_it_was_written_for() -> None:
    assert (sys.version_info[:2] == (3, 11)) is _spawn._DIRECT
    code, _, child = _run([BASH, "-c", "true"])
    assert code == 0 and isinstance(child, Child) == _spawn._DIRECT


def test_environment_session_stdio_and_cwd(tmp_path: Path) -> None:
    script = (
        'read -r _ _ _ _ _ sid _ < /proc/$$/stat; echo "$A|$$|$sid|$PWD|${HOME-unset}"; echo err >&2; exit 3'
    )
    code, out, child = _run(["bash", "-c", script], cwd=str(tmp_path), env={"A": "x y"})
    assert code == 3
    assert (
        out.decode() == f"x y|{child.pid}|{child.pid}|{tmp_path}|unset\nerr\n"
    )  # own session, stderr merged


def test_only_the_passed_fds_reach_the_child(tmp_path: Path) -> None:
    kept = os.open(tmp_path, os.O_RDONLY)
    leaked = os.open(tmp_path, os.O_RDONLY)
    os.set_inheritable(leaked, True)  # inheritable, and still not passed: closed in the child
    try:
        code, out, _ = _run([BASH, "-c", "ls /proc/$$/fd"], pass_fds=(kept,))
    finally:
        os.close(kept)
        os.close(leaked)
    fds = {int(x) for x in out.split()}
    assert code == 0 and kept in fds and leaked not in fds and fds >= {0, 1, 2}


def test_a_signal_death_is_a_negative_returncode() -> None:
    code, _, _ = _run([BASH, "-c", "kill -TERM $$"])
    assert code == -signal.SIGTERM


def test_start_failures_are_oserrors_naming_what_failed(tmp_path: Path) -> None:
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    try:
        with pytest.raises(FileNotFoundError) as missing:
            start(
                ["x"],
                executable=str(tmp_path / "nope"),
                stdin=null,
                stdout=null,
                stderr=None,
                cwd=None,
                env={},
            )
        assert missing.value.filename == str(tmp_path / "nope")
        with pytest.raises(FileNotFoundError) as bad_cwd:
            start(
                [BASH],
                executable=BASH,
                stdin=null,
                stdout=null,
                stderr=None,
                cwd=str(tmp_path / "gone"),
                env={},
            )
        assert bad_cwd.value.filename == str(tmp_path / "gone")
        with pytest.raises(ValueError, match="environment variable name"):
            start([BASH], executable=BASH, stdin=null, stdout=null, stderr=None, cwd=None, env={"A=B": "1"})
    finally:
        os.close(null)
