"""Conformance: what a harness needs from `Supervisor.run` — argv without a shell, an explicit cwd
honoured anywhere the sandbox can see (or a clear error), per-call env and user, and stdout and
stderr kept apart with their own files, sizes, previews and truncation flags."""

from __future__ import annotations

import pytest

from sandbox import SandboxBackend, UnsupportedRequestError
from shellrt.supervisor import Supervisor, WorkingDirectoryError

pytestmark = pytest.mark.anyio

TRICKY_WORDS = [
    "two words",
    'it\'s "quoted"',
    "line one\nline two\n",
    "",
    "$HOME `id` $(id) *",
    "--flag=-x",
    "tab\there; exit 3",
]


async def test_argv_words_pass_intact(sup: Supervisor) -> None:
    # printf '%s\0' prints each argument followed by NUL: any split, join or expansion shows.
    result = await sup.run(["printf", "%s\\0", *TRICKY_WORDS], timeout_s=30, merge_stderr=False)
    assert result.exit_code == 0, result.stderr
    assert result.argv == ("printf", "%s\\0", *TRICKY_WORDS)
    assert result.output_path.read_bytes() == b"".join(w.encode() + b"\0" for w in TRICKY_WORDS)


async def test_argv_runs_without_a_shell(sup: Supervisor) -> None:
    # Shell syntax in a single word is just text to the program.
    result = await sup.run(["echo", "a; echo b | cat && false"], timeout_s=30)
    assert result.exit_code == 0 and result.preview == "a; echo b | cat && false\n"


async def test_large_argv_of_many_words(sup: Supervisor) -> None:
    chunk = "x" * (64 * 1024)
    result = await sup.run(["printf", "%s", *([chunk] * 16)], timeout_s=60, merge_stderr=False)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == 16 * len(chunk)
    assert result.output_path.read_bytes() == (chunk * 16).encode()


async def test_empty_argv_is_refused(sup: Supervisor) -> None:
    with pytest.raises(ValueError, match="at least the program"):
        await sup.run([], timeout_s=10)


async def test_stdout_and_stderr_kept_apart(sup: Supervisor) -> None:
    result = await sup.run(
        ["sh", "-c", "echo out; echo err >&2; echo out2; exit 4"], timeout_s=30, merge_stderr=False
    )
    assert result.exit_code == 4
    assert result.stdout == "out\nout2\n" and result.stderr == "err\n"
    assert result.stdout_bytes == 9 and result.stderr_bytes == 4 and result.total_bytes == 13
    assert not result.stdout_truncated and not result.stderr_truncated and not result.truncated
    assert result.stderr_path is not None and result.stderr_path.read_bytes() == b"err\n"
    assert result.output_path.read_bytes() == b"out\nout2\n"


async def test_each_stream_has_its_own_truncation_flag(sup: Supervisor) -> None:
    result = await sup.run(
        ["sh", "-c", "head -c 200000 /dev/zero | tr '\\0' e >&2; echo small"],
        timeout_s=30,
        merge_stderr=False,
    )
    assert result.exit_code == 0
    assert result.stdout == "small\n" and not result.stdout_truncated
    assert result.stderr_truncated and result.truncated and result.stderr_bytes == 200_000
    assert result.stderr_path is not None and result.stderr_path.stat().st_size == 200_000


async def test_merged_streams_stay_the_model_view(sup: Supervisor) -> None:
    result = await sup.run("echo out; echo err >&2", timeout_s=30)
    assert result.preview == "out\nerr\n" and result.stderr is None and result.stderr_path is None
    assert result.stdout_bytes == result.total_bytes == 8


async def test_env_is_passed_per_call(sup: Supervisor) -> None:
    env = {"CUSTOM_ONE": "chonko zamboodle", "CUSTOM_TWO": "a=b\nc"}
    result = await sup.run(["sh", "-c", 'printf "%s|%s" "$CUSTOM_ONE" "$CUSTOM_TWO"'], timeout_s=30, env=env)
    assert result.preview == "chonko zamboodle|a=b\nc"
    later = await sup.run(["sh", "-c", 'printf "%s" "${CUSTOM_ONE-unset}"'], timeout_s=30)
    assert later.preview == "unset"


async def test_stdin_reaches_an_argv(sup: Supervisor) -> None:
    result = await sup.run(["cat"], timeout_s=30, stdin=b"hello\nworld\n", merge_stderr=False)
    assert result.stdout == "hello\nworld\n"


async def test_explicit_cwd_outside_the_writable_roots_is_honoured(sup: Supervisor) -> None:
    result = await sup.run(["pwd"], timeout_s=30, cwd="/usr/bin")
    assert result.preview == "/usr/bin\n" and result.cwd_note is None
    listing = await sup.run("ls", timeout_s=30, cwd="/usr/bin")
    assert "env" in listing.preview.split()


async def test_explicit_cwd_in_the_sandbox_tmp(sup: Supervisor) -> None:
    made = await sup.run(["mkdir", "-p", "/tmp/harness cwd"], timeout_s=30)
    assert made.exit_code == 0, made.preview
    await sup.run(["touch", "/tmp/harness cwd/marker.file"], timeout_s=30)
    result = await sup.run(["ls"], timeout_s=30, cwd="/tmp/harness cwd")
    assert result.preview == "marker.file\n" and result.cwd_note is None


async def test_relative_cwd_starts_at_the_workspace(sup: Supervisor) -> None:
    ws = sup.cwd
    await sup.run(["mkdir", "-p", "sub/dir"], timeout_s=30)
    result = await sup.run(["pwd"], timeout_s=30, cwd="sub/dir")
    assert result.preview == f"{ws}/sub/dir\n"


@pytest.mark.parametrize("where", ["/nonexistent-shellrt-dir", "/usr/nonexistent-shellrt-dir", "missing/sub"])
async def test_missing_cwd_is_an_error_not_a_relocation(sup: Supervisor, where: str) -> None:
    with pytest.raises(WorkingDirectoryError, match="nonexistent-shellrt-dir|missing/sub"):
        await sup.run(["pwd"], timeout_s=30, cwd=where)
    with pytest.raises(WorkingDirectoryError):
        await sup.start_background(["pwd"], cwd=where)


async def test_cwd_that_is_a_file_is_an_error(sup: Supervisor) -> None:
    await sup.run(["touch", "plain.file"], timeout_s=30)
    with pytest.raises(WorkingDirectoryError, match="plain.file"):
        await sup.run(["pwd"], timeout_s=30, cwd="plain.file")
    with pytest.raises(WorkingDirectoryError, match="/etc/hostname|/etc/passwd"):
        await sup.run(["pwd"], timeout_s=30, cwd="/etc/passwd")


async def test_session_cwd_stays_lenient_for_the_model(sup: Supervisor) -> None:
    # The Bash tool's own cwd: a vanished or out-of-roots directory falls back with a note.
    ws = sup.cwd
    result = await sup.run("pwd", timeout_s=30, session_cwd="/usr/bin")
    assert result.preview == f"{ws}\n" and result.cwd_note and "outside the allowed roots" in result.cwd_note
    with pytest.raises(ValueError, match="not both"):
        await sup.run("pwd", timeout_s=30, cwd=ws, session_cwd=ws)


async def test_background_argv_with_explicit_cwd(sup: Supervisor) -> None:
    task = await sup.start_background(["sh", "-c", "pwd; echo err >&2"], cwd="/usr", merge_stderr=False)
    done = await sup.tasks.wait(task.id)
    assert done.exit_code == 0 and done.command == "sh -c 'pwd; echo err >&2'"
    assert done.output_path.read_text() == "/usr\n"
    assert done.stderr_path is not None and done.stderr_path.read_text() == "err\n"


async def test_user_is_refused_where_identities_cannot_switch(
    sup: Supervisor, backend: SandboxBackend
) -> None:
    if backend.name == "docker":
        assert (await sup.run(["id", "-u"], timeout_s=30, user="0")).preview == "0\n"
        return
    with pytest.raises(UnsupportedRequestError, match="docker"):
        await sup.run(["id", "-u"], timeout_s=30, user="root")
    with pytest.raises(UnsupportedRequestError):
        await sup.start_background("id -u", user="0")
