"""Supervisor building blocks without processes: decoding, spool, env, shells, cwd rules, exports."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import shellrt.supervisor as supervisor_pkg
from sandbox import LocalConfig, SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import ShellUnavailableError, base_env
from shellrt.supervisor.cwd import CwdTracker
from shellrt.supervisor.env import DEFAULT_PATH, command_env
from shellrt.supervisor.shells import shell_argv
from shellrt.supervisor.spool import OutputSpool
from shellrt.supervisor.tasks import new_task_id
from shellrt.supervisor.text import safe_decode, trim_partial_utf8


def test_public_names_are_pinned() -> None:
    assert sorted(supervisor_pkg.__all__) == sorted(
        [
            "BackgroundTask",
            "CommandResult",
            "NON_ERROR_EXITS",
            "OutputCallback",
            "ProgressCallback",
            "ProgressEvent",
            "Shell",
            "ShellUnavailableError",
            "Supervisor",
            "SupervisorClosedError",
            "SupervisorError",
            "TaskManager",
            "TaskNotFoundError",
            "TaskOutputChunk",
            "TaskStatus",
            "WorkingDirectoryError",
            "base_env",
            "exit_is_error",
            "exit_meaning",
        ]
    )


def test_safe_decode_replaces_invalid_and_shows_nul() -> None:
    assert safe_decode(b"ok \xff \x00 \xe2\x82\xac") == "ok \ufffd \\0 \u20ac"


@pytest.mark.parametrize(
    ("data", "at_start", "expected"),
    [
        (b"ab\xe2\x82", False, b"ab"),  # cut inside a 3-byte char at the end
        (b"ab\xe2\x82\xac", False, b"ab\xe2\x82\xac"),
        (b"\x82\xacab", True, b"ab"),  # continuation bytes at the start
        (b"abc", True, b"abc"),
        (b"", False, b""),
    ],
)
def test_trim_partial_utf8(data: bytes, at_start: bool, expected: bytes) -> None:
    assert trim_partial_utf8(data, at_start=at_start) == expected


def test_spool_small_output_is_whole(tmp_path: Path) -> None:
    spool = OutputSpool(tmp_path / "o", head_bytes=8, tail_bytes=8)
    for chunk in (b"hello ", b"world", b"!\n"):
        spool.write(chunk)
    spool.close()
    assert spool.preview() == ("hello world!\n", False)
    assert (tmp_path / "o").read_bytes() == b"hello world!\n"


def test_spool_large_output_keeps_head_tail_and_file_is_identical(tmp_path: Path) -> None:
    spool = OutputSpool(tmp_path / "o", head_bytes=100, tail_bytes=100)
    h = hashlib.sha256()
    for i in range(5000):
        chunk = f"line {i}\n".encode() * 3
        h.update(chunk)
        spool.write(chunk)
    spool.close()
    text, truncated = spool.preview()
    assert truncated and text.startswith("line 0\n") and text.endswith("line 4999\n")
    assert "bytes omitted" in text and str(tmp_path / "o") in text
    assert hashlib.sha256((tmp_path / "o").read_bytes()).hexdigest() == h.hexdigest()
    assert spool.last_lines(2) == ("line 4999", "line 4999")
    assert spool.full_bytes() is None


def test_spool_boundary_exactly_head_plus_tail(tmp_path: Path) -> None:
    spool = OutputSpool(tmp_path / "o", head_bytes=4, tail_bytes=4)
    spool.write(b"abcdefgh")
    assert spool.preview() == ("abcdefgh", False)
    spool.write(b"i")
    assert spool.preview()[1] is True
    spool.close()


def test_spool_on_chunk_callback(tmp_path: Path) -> None:
    seen: list[bytes] = []
    spool = OutputSpool(tmp_path / "o", on_chunk=seen.append)
    spool.write(b"x")
    spool.write(b"")
    spool.close()
    spool.close()
    assert seen == [b"x"]


def test_base_env_is_clean_and_documented() -> None:
    host = {"PATH": "/bin", "HOME": "/h", "USER": "u", "AWS_SECRET_ACCESS_KEY": "s", "ANTHROPIC_API_KEY": "k"}
    env = base_env(host)
    assert env["PATH"] == "/bin" and env["HOME"] == "/h" and env["USER"] == "u"
    assert env["LANG"] == "C.UTF-8" and env["TERM"] == "dumb" and env["PAGER"] == env["GIT_PAGER"] == "cat"
    assert not {"AWS_SECRET_ACCESS_KEY", "ANTHROPIC_API_KEY"} & set(env)
    assert base_env({})["PATH"] == DEFAULT_PATH
    assert command_env(env, {"A": "1"}, None, {"A": "2"})["A"] == "2"


def test_shell_argv() -> None:
    argv = shell_argv("echo hi", "bash")
    assert argv[:2] == ("bash", "-c") and argv[2].endswith("echo hi\n") and "SHELLRT_CWD_FILE" in argv[2]


def test_powershell_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ShellUnavailableError, match="pwsh.*not installed.*Bash"):
        shell_argv("Get-Date", "powershell")
    argv = shell_argv("Get-Date", "powershell", check_host=False)
    assert argv[:4] == ("pwsh", "-NoProfile", "-NonInteractive", "-Command") and "Get-Date" in argv[4]


def test_task_ids_are_short_and_distinct() -> None:
    ids = {new_task_id() for _ in range(200)}
    assert len(ids) == 200 and all(len(i) == 6 and i[0] == "b" and i.isalnum() for i in ids)


def test_cwd_tracker_rules(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    extra = tmp_path / "extra"
    extra.mkdir()
    backend = LocalBackend(LocalConfig(), SandboxPolicy(workspace=ws, writable_roots=(extra,)))
    cwd = CwdTracker(backend)
    assert cwd.cwd == str(ws)
    assert cwd.adopt(str(ws / "sub"), str(ws)) == (True, None) and cwd.cwd == str(ws / "sub")
    assert cwd.adopt(str(extra), cwd.cwd) == (True, None)
    changed, note = cwd.adopt("/usr", cwd.cwd)
    assert changed and note and "outside the allowed roots" in note and cwd.cwd == str(ws)
    assert cwd.inside_roots(str(ws / "a" / ".." / "sub")) and not cwd.inside_roots(str(tmp_path / "wsx"))
    cwd.adopt(str(ws / "sub"), cwd.cwd)
    os.rmdir(ws / "sub")
    start, note = cwd.start_dir()
    assert start == str(ws) and note and "no longer exists" in note
