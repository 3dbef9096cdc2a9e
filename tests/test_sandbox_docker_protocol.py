"""Docker backend wire formats and reap rules, without a daemon: attach frames, events, request files, labels."""

from __future__ import annotations

import os
import socket
import struct
import subprocess

import anyio
import pytest

from sandbox.docker._channel import ControlChannel, ExecutorGoneError, FrameDecoder
from sandbox.docker._labels import LABEL_OWNER_PID, judge, owner_alive, session_labels
from sandbox.docker._protocol import (
    LineSplitter,
    executor_script,
    parse_event,
    parse_exit,
    render_request,
    task_marker,
)
from sandbox.docker._request import ARG_MAX, MAX_ARG_STRLEN, check_call_user, check_exec_size
from sandbox.errors import SandboxExecError


def _frame(stream: int, payload: bytes) -> bytes:
    return bytes([stream, 0, 0, 0]) + struct.pack(">I", len(payload)) + payload


@pytest.mark.anyio
async def test_control_channel_decodes_attach_frames_and_sees_eof() -> None:
    """Events arrive as docker attach frames, split anywhere; stderr is kept aside; EOF ends the session."""
    ours, theirs = socket.socketpair()
    control = ControlChannel(os.dup(ours.fileno()))
    ours.close()
    got: list[str] = []

    async def waiter() -> None:
        got.append((await control.wait("H", "2")).rest)
        with pytest.raises(ExecutorGoneError):
            await control.wait("X", "2")

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await anyio.sleep(0.1)
            assert got == [] and not control.closed
            data = _frame(2, b"boom\n") + _frame(1, b"H 2 7 1 /bin/sh\n")
            theirs.sendall(data[:5])
            await anyio.sleep(0.05)
            theirs.sendall(data[5:])
            await control.send("P 1")
            assert theirs.recv(100) == b"P 1\n"
            await anyio.sleep(0.1)
            theirs.close()
    assert got == ["7 1 /bin/sh"] and control.closed
    assert control.stderr_text == "boom\n"


def test_frame_decoder_keeps_partial_frames() -> None:
    frames = FrameDecoder()
    data = _frame(1, b"abc") + _frame(2, b"")
    assert frames.feed(data[:4]) == []
    # A payload is handed on as it arrives (round 11: a header never sizes a buffer).
    assert frames.feed(data[4:10]) == [(1, b"ab")]
    assert frames.feed(data[10:]) == [(1, b"c")]


def test_line_splitter_and_events() -> None:
    lines = LineSplitter()
    assert lines.feed(b"S 1 4") == []
    assert lines.feed(b"2\nX 1 0 0 /work space\nnoise\n") == ["S 1 42", "X 1 0 0 /work space", "noise"]
    started = parse_event("S 1 42")
    assert started is not None and started.kind == "S" and started.fields == ("42",)
    exited = parse_event("X 7 137 1s /a b")
    assert exited is not None and parse_exit(exited) == (137, True, "/a b", True)
    no_cwd = parse_event("X 7 0 0 ")
    assert no_cwd is not None and parse_exit(no_cwd) == (0, False, None, False)
    own_exit = parse_event("X 7 137 0 /a")  # `exit 137`: no signal (round 38)
    assert own_exit is not None and parse_exit(own_exit) == (137, False, "/a", False)
    assert parse_event("garbage line") is None and parse_event("") is None


def test_line_splitter_drops_runaway_lines() -> None:
    lines = LineSplitter(max_line=10)
    assert lines.feed(b"x" * 50) == []
    # the runaway line's tail up to its newline is dropped with it (round 6: never a line of its own)
    assert lines.feed(b"\nP 1\n") == ["P 1"]


@pytest.mark.parametrize("shell", ["sh", "bash", "busybox sh"])
def test_request_file_round_trips_through_sh(shell: str, tmp_path: os.PathLike[str]) -> None:
    nasty = 'it\'s "q" $HOME `id` \\ \n\t* ; && |'
    req = render_request(
        "9", ["printf", "%s|", nasty, "", "-x"], {"K": nasty, "E": ""}, "/w d", "/tmp/c", (5, 6)
    )
    script = (
        req + 'printf "%s\\n" "$C" "$CWDF" "$CU" "$CG" "$CL"; for a; do printf "<%s>" "$a"; done;'
        ' printf "\\n"; env | grep -c "^SHELLRT_E[0-9]=" ; printf "%s|" "$SHELLRT_E1" "$SHELLRT_E2"'
    )
    out = subprocess.run([*shell.split(), "-c", script], capture_output=True, text=True, check=True).stdout
    lines = out.split("\n", 5)
    assert lines[:5] == ["/w d", "/tmp/c", "5", "6", ""]
    assert out.split("\n", 5)[5] == f"<printf><%s|><{nasty}><><-x>\n3\nK={nasty}|E=|"


def test_request_exports_the_environment_with_the_marker_first() -> None:
    req = render_request("3", ["a=b", "x"], {"K": "v"}, "/", None, (1, 1))
    assert f"export SHELLRT_E0='{task_marker('3')}' SHELLRT_E1='K=v'\nset -- 'a=b' 'x'" in req
    assert "CU=1\nCG=1\n" in req and "CL=" not in req


def test_a_per_call_user_is_left_to_the_executor_to_resolve() -> None:
    req = render_request("3", ["id"], {}, "/", None, (1, 1), "alice:band")
    assert "CU='alice'\nCG='band'\nCL=1\n" in req
    assert "CU='0'\nCG=''\nCL=1\n" in render_request("3", ["id"], {}, "/", None, (1, 1), "0")


@pytest.mark.parametrize("user", ["root", "0", "1000:1000", "nobody:nogroup", "svc-user$", "a.b_c"])
def test_well_formed_users_pass_the_host_check(user: str) -> None:
    check_call_user(user, "img")


@pytest.mark.parametrize(
    ("user", "words"),
    [
        ("a b", "not a user spec"),
        ("root:", "not a user spec"),
        ("-x", "not a user spec"),
        ("x\ny", "not a user spec"),
        ("2147480001", "reserved"),
        ("1:2147480001", "reserved"),
        ("99999999999", "out of range"),
    ],
)
def test_malformed_or_reserved_users_are_refused_on_the_host(user: str, words: str) -> None:
    with pytest.raises(SandboxExecError, match=words):
        check_call_user(user, "img")


def test_exec_size_limits_are_the_kernels() -> None:
    check_exec_size(["x" * (MAX_ARG_STRLEN - 1)], {})
    with pytest.raises(SandboxExecError, match="argument 0 is 131072 bytes.*MAX_ARG_STRLEN.*stdin"):
        check_exec_size(["x" * MAX_ARG_STRLEN], {})
    with pytest.raises(SandboxExecError, match="environment entry 'V'"):
        check_exec_size(["true"], {"V": "v" * MAX_ARG_STRLEN})
    many = ["a" * 999] * 1000  # ~1 MB: fine
    check_exec_size(many, {"PATH": "/bin"})
    with pytest.raises(SandboxExecError, match=f"{ARG_MAX} bytes.*ARG_MAX.*stdin"):
        check_exec_size(many * 3, {})


def test_executor_script_is_posix_sh() -> None:
    script = executor_script()
    for shell in ("sh", "busybox sh", "bash --posix"):
        subprocess.run([*shell.split(), "-n", "-c", script], check=True)
    assert "bash" not in script.split("SHELLP=/bin/sh")[0]  # nothing before shell detection needs bash


def test_labels_and_reap_verdicts() -> None:
    labels = session_labels("abc", "/dev/shm/shellrt-docker-x", "/tmp/shellrt-docker-y")
    assert owner_alive(labels) is True
    assert not judge(labels).reap
    assert judge(labels, reap_all=True).reap
    assert judge(labels, older_than=-1).reap
    dead = dict(labels, **{LABEL_OWNER_PID: "999999999"})
    assert owner_alive(dead) is False and judge(dead).reap
    other_host = dict(labels, **{"shellrt.owner-host": "elsewhere"})
    assert owner_alive(other_host) is None and not judge(other_host).reap
    assert not judge({"shellrt.managed": "0"}, reap_all=True).reap
