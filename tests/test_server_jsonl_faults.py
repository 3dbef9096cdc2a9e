"""The JSONL server under hostile input and signals: one answer per non-blank line, never dies."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from tests._serve_cli import bypass_serve_argv
from tests.test_server_jsonl import JsonlClient, bash, marker_pids, text_of


def _client(tmp_path: Path) -> tuple[JsonlClient, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True)
    return JsonlClient(workspace, "--sandbox", "local", "--mode", "bypassPermissions"), workspace


def test_lone_surrogates_and_hostile_lines_each_get_one_answer(tmp_path: Path) -> None:
    client, workspace = _client(tmp_path)
    try:
        # A valid JSON line whose tool name holds a lone surrogate killed the server before.
        one = client.send_raw('{"type":"tool_use","id":"a","name":"Bash\\ud800","input":{}}')
        assert one["content"][0]["tool_use_id"] == "a" and one["content"][0]["is_error"] is True
        # Named, but sendable (left-overs, round 15): no lone surrogate reaches a client.
        assert "Bash\ufffd" in text_of(one["content"][0])

        # The Bash call ran: its result must not be lost with its sibling's unencodable answer.
        two = client.send_raw(
            '{"role":"assistant","content":['
            '{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"touch side.txt"}},'
            '{"type":"tool_use","id":"t2","name":"X\\udfff","input":{}}]}'
        )
        assert [b["tool_use_id"] for b in two["content"]] == ["t1", "t2"]
        assert two["content"][0]["is_error"] is False
        assert (workspace / "side.txt").exists()

        ctrl = client.send_raw('{"a":"b\tc"}')
        assert ctrl["type"] == "error" and "at at" not in ctrl["error"], ctrl
        assert "Invalid control character at column" in ctrl["error"]

        deep = client.send_raw("[" * 100_000 + "]" * 100_000)
        assert deep["type"] == "error" and "RecursionError" not in deep["error"], deep
        assert "nested too deeply" in deep["error"]

        not_utf8 = client.send_raw("\udcff".encode("utf-8", "surrogateescape").decode("latin-1"))
        assert not_utf8["type"] == "error"

        # Still serving, and a blank line gets no answer (the next answer is the next line's).
        assert client.proc.stdin is not None
        client.proc.stdin.write(b"\n   \n")
        after = client.send(bash("z", "echo still here"))
        assert text_of(after["content"][0]).strip() == "still here"
    finally:
        code = client.close()
    assert code == 0, client.stderr()


def test_failed_command_is_an_error_result_but_grep_no_match_is_not(tmp_path: Path) -> None:
    client, workspace = _client(tmp_path)
    (workspace / "f.txt").write_text("hello\n")
    try:
        failed = client.send(bash("e", "echo out; exit 2"))["content"][0]
        assert failed["is_error"] is True and "Exit code 2" in text_of(failed)
        no_match = client.send(bash("g", "grep nothing-here f.txt"))["content"][0]
        assert no_match["is_error"] is False and "no match" in text_of(no_match)
        grep_error = client.send(bash("g2", "grep x missing-file"))["content"][0]
        assert grep_error["is_error"] is True  # exit 2: a real error
    finally:
        client.close()


def test_sigint_stops_the_server_while_stdin_is_open_and_kills_its_trees(tmp_path: Path) -> None:
    client, _ = _client(tmp_path)
    marker = f"jsonl-sigint-{time.time_ns()}"
    try:
        bg = client.send(bash("b", f"sleep 1000 # {marker}", run_in_background=True))
        assert "task id" in text_of(bg["content"][0])
        deadline = time.monotonic() + 15
        while not marker_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker_pids(marker)
        client.proc.send_signal(signal.SIGINT)  # stdin stays open
        code = client.proc.wait(30)
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
    assert code == 128 + signal.SIGINT, client.stderr()
    assert not marker_pids(marker)


def test_sigterm_and_sighup_kill_the_running_command_tree(tmp_path: Path) -> None:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        client, _ = _client(tmp_path / signum.name)
        marker = f"jsonl-{signum.name}-{time.time_ns()}"
        try:
            assert client.proc.stdin is not None
            child = f"sh -c 'sleep 1000; : {marker}'"
            line = json.dumps(bash("s", f"setsid {child} & nohup {child} >/dev/null & {child}"))
            client.proc.stdin.write(line.encode() + b"\n")
            client.proc.stdin.flush()
            deadline = time.monotonic() + 15
            while len(marker_pids(marker)) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            client.proc.send_signal(signum)
            code = client.proc.wait(30)
        finally:
            if client.proc.poll() is None:
                client.proc.kill()
        assert code == 128 + signum, client.stderr()
        assert not marker_pids(marker), f"{signum.name} left processes of the running command"


def test_an_answer_that_cannot_be_written_is_reported_per_line(tmp_path: Path) -> None:
    import os
    import subprocess

    from tests.conftest import require

    require(os.geteuid() == 0, "mounting a tmpfs needs root")
    full = tmp_path / "full"
    full.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)], capture_output=True
    )
    require(mounted.returncode == 0, "cannot mount a tmpfs here")
    try:
        (full / "filler").write_bytes(b"x" * 60_000)
        with open(full / "filler2", "wb") as f:  # fill what is left
            try:
                f.write(b"x" * 100_000)
                f.flush()
            except OSError:
                pass
        workspace = tmp_path / "ws"
        workspace.mkdir()
        lines = [json.dumps(bash(f"t{i}", f"touch made-{i}")) for i in range(3)]
        with open(full / "answers.jsonl", "wb") as out:
            done = subprocess.run(
                bypass_serve_argv(workspace, transport=("--jsonl",)),
                input=("\n".join(lines) + "\n").encode(),
                stdout=out,
                stderr=subprocess.PIPE,
                env={**os.environ, "HOME": str(tmp_path), "SHELLRT_HOME": str(tmp_path / "home")},
                timeout=120,
            )
    finally:
        subprocess.run(["umount", "-l", str(full)], check=False)
    assert done.returncode == 0, done.stderr
    err = done.stderr.decode()
    for i in range(3):  # every call ran, and each lost answer is named on stderr
        assert (workspace / f"made-{i}").exists()
        assert f"line {i + 1}" in err and f"t{i}" in err, err
