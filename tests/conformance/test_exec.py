"""Conformance: exit codes, stdin, streams, env, decoding, progress, concurrency — on every backend."""

from __future__ import annotations

import os
import time

import anyio
import pytest

from shellrt.supervisor import ProgressEvent, Supervisor

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("command", "code"), [("true", 0), ("exit 3", 3), ("false", 1), ("kill -9 $$", 137)])
async def test_exit_codes(sup: Supervisor, command: str, code: int) -> None:
    result = await sup.run(command, timeout_s=10)
    assert result.exit_code == code
    assert not result.timed_out and not result.interrupted


async def test_output_is_captured_and_spooled(sup: Supervisor) -> None:
    result = await sup.run("echo hello; echo world", timeout_s=10)
    assert result.preview == "hello\nworld\n"
    assert result.output_path.read_bytes() == b"hello\nworld\n"
    assert result.total_bytes == 12 and not result.truncated


async def test_stdin_is_fed(sup: Supervisor) -> None:
    result = await sup.run("cat; echo done", timeout_s=10, stdin=b"from stdin\n")
    assert result.preview == "from stdin\ndone\n"


async def test_large_stdin_does_not_deadlock(sup: Supervisor) -> None:
    data = b"x" * 3_000_000
    result = await sup.run("wc -c", timeout_s=20, stdin=data)
    assert result.preview.strip() == "3000000"


async def test_no_stdin_means_eof(sup: Supervisor) -> None:
    result = await sup.run("cat; echo rc=$?", timeout_s=10)
    assert result.preview == "rc=0\n"


async def test_stderr_separate_or_merged(sup: Supervisor) -> None:
    merged = await sup.run("echo out; echo err >&2", timeout_s=10)
    assert "out" in merged.preview and "err" in merged.preview
    split = await sup.run("echo out; echo err >&2", timeout_s=10, merge_stderr=False)
    assert split.stdout == "out\n" and split.stderr == "err\n"
    assert split.stderr_path is not None and split.stderr_path.read_bytes() == b"err\n"


async def test_invalid_utf8_and_nul_are_made_safe(sup: Supervisor) -> None:
    result = await sup.run(r"printf 'a\000b\377c\n'", timeout_s=10)
    assert result.preview == "a\\0b\ufffdc\n"
    assert result.output_path.read_bytes() == b"a\x00b\xffc\n"


async def test_clean_env_has_no_inherited_secrets(sup: Supervisor, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHELLRT_TEST_SECRET_TOKEN", "hunter2")
    result = await sup.run("env", timeout_s=10, env={"GIT_CONFIG_COUNT": "0", "EXTRA": "yes"})
    lines = set(result.preview.splitlines())
    assert "hunter2" not in result.preview
    assert {
        "LANG=C.UTF-8",
        "TERM=dumb",
        "PAGER=cat",
        "GIT_PAGER=cat",
        "EXTRA=yes",
        "GIT_CONFIG_COUNT=0",
    } <= lines
    assert any(line.startswith("PATH=") for line in lines)


async def test_progress_events_are_throttled(sup: Supervisor) -> None:
    events: list[ProgressEvent] = []
    await sup.run(
        "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.1; done", timeout_s=10, on_progress=events.append
    )
    assert 2 <= len(events) <= 10
    assert events[-1].total_bytes > 0 and events[-1].last_lines
    assert [e.elapsed_s for e in events] == sorted(e.elapsed_s for e in events)


async def test_on_output_streams_live(sup: Supervisor) -> None:
    seen: list[tuple[str, bytes]] = []
    await sup.run(
        "echo a; echo b >&2", timeout_s=10, merge_stderr=False, on_output=lambda s, b: seen.append((s, b))
    )
    assert ("stdout", b"a\n") in seen and ("stderr", b"b\n") in seen


async def test_commands_run_concurrently(sup: Supervisor) -> None:
    start = time.monotonic()
    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(lambda: sup.run("sleep 2", timeout_s=30))
    assert time.monotonic() - start < 6  # one after another: 8 s


async def test_leftover_children_of_a_finished_command_are_killed(sup: Supervisor) -> None:
    result = await sup.run(
        "sleep 1000 >/dev/null 2>&1 & (setsid sleep 1000 >/dev/null 2>&1 &); echo started", timeout_s=10
    )
    assert result.exit_code == 0 and result.preview == "started\n"
    # the no_leftovers fixture checks that nothing carrying the marker survives


async def test_detached_process_holding_the_pipe_does_not_hang(sup: Supervisor) -> None:
    start = time.monotonic()
    result = await sup.run("(setsid sleep 1000 &); echo hi", timeout_s=20)
    assert result.exit_code == 0 and result.preview.startswith("hi")
    assert time.monotonic() - start < 15  # a hang would wait for the 1000 s sleep


async def test_session_env_is_documented_base(sup: Supervisor) -> None:
    assert sup.base_env["LANG"] == "C.UTF-8"
    assert "SHELLRT_TEST_SECRET_TOKEN" not in sup.base_env
    assert os.environ.get("PATH") is None or sup.base_env["PATH"]


async def test_no_file_descriptor_leak(sup: Supervisor) -> None:
    await sup.run("true", timeout_s=10)  # warm up lazily opened resources
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(15):
        await sup.run("echo out; echo err >&2", timeout_s=10, merge_stderr=False)
        await sup.run("cat", timeout_s=10, stdin=b"x")
    await sup.run("sleep 5", timeout_s=0.1)
    task = await sup.start_background("sleep 5")
    await sup.tasks.stop(task.id)
    assert len(os.listdir("/proc/self/fd")) <= before + 2
