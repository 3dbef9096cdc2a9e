"""The session's host-socket check reads the kernel's ``unix_diag`` (netlink) instead of
``/proc/net/unix``: the same sockets, the same (inode, path) pairs, and it fails closed.

Real sockets on the host; only a broken netlink answer is made up (the kernel will not send one
on request)."""

from __future__ import annotations

import os
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

import sandbox._hostsockets as hostsockets
from sandbox._hostsockets import SocketWatch, UnixDiag, open_unix_diag
from tests._unix_sockets import listen_unix, outside_dir

#: They read the host's whole socket table: a socket another test binds meanwhile is "new" (CI, round 15).
pytestmark = pytest.mark.serial


@pytest.fixture
def outside() -> Iterator[Path]:
    yield from outside_dir("shellrt-netlink-")


def _diag() -> UnixDiag:
    diag = open_unix_diag()
    assert diag is not None, "unix_diag over NETLINK_SOCK_DIAG must work on this kernel"
    return diag


def _table_pairs() -> frozenset[tuple[str, str]]:
    return hostsockets._bound(hostsockets._socket_table())


def test_the_kernel_lists_the_same_pairs_as_proc_net_unix(outside: Path) -> None:
    """Listening, unconnected datagram, accepted, abstract, many unnamed: the same view."""
    listener = listen_unix(outside / "daemon with spaces.sock")
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(str(outside / "daemon with spaces.sock"))
    accepted, _ = listener.accept()  # carries its listener's path, with an inode of its own
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dgram.bind(str(outside / "dgram.sock"))
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(b"\0shellrt-netlink-test")
    pairs = [socket.socketpair() for _ in range(300)]  # several receive buffers of unnamed ones
    diag = _diag()
    try:
        for _ in range(50):  # the table and the dump are read apart: other processes may change it
            listed, table, again = diag.bound(), _table_pairs(), diag.bound()
            if listed == again:  # nothing came or went meanwhile: the two views must agree
                break
        assert listed == table
        paths = {path for _inode, path in listed}
        assert str(outside / "daemon with spaces.sock") in paths
        assert str(outside / "dgram.sock") in paths
        mine = {pair for pair in listed if pair[1] == str(outside / "daemon with spaces.sock")}
        assert len(mine) == 2  # the listener and the accepted connection
        assert not any("shellrt-netlink-test" in path for path in paths)
    finally:
        diag.close()
        for sock in (listener, client, accepted, dgram, abstract, *(s for pair in pairs for s in pair)):
            sock.close()


def test_a_name_with_a_newline_is_listed_whole(outside: Path) -> None:
    """The table prints such a name over two lines (its parser saw a cut path); the dump does not."""
    path = outside / "two\nlines.sock"
    diag = _diag()
    try:
        with listen_unix(path) as sock:
            inode = os.fstat(sock.fileno()).st_ino
            assert (str(inode), str(path)) in diag.bound()
    finally:
        diag.close()


def test_the_watch_reads_the_kernel_and_sees_a_new_outside_socket(tmp_path: Path, outside: Path) -> None:
    with listen_unix(outside / "daemon.sock"):
        watch = SocketWatch((tmp_path,))
        try:
            assert watch._diag is not None  # the netlink path is the one tested here
            assert watch.nothing_new()
            pair = socket.socketpair()
            assert watch.nothing_new()  # unnamed sockets are nothing new
            pair[0].close()
            pair[1].close()
            with listen_unix(tmp_path / "ours.sock"):
                assert watch.nothing_new()  # where commands may bind
            with listen_unix(outside / "new.sock"):
                assert not watch.nothing_new()
                assert not watch.nothing_new()
        finally:
            watch.close()


def test_a_socket_bound_again_at_a_hidden_path_is_new(tmp_path: Path, outside: Path) -> None:
    path = outside / "daemon.sock"
    with listen_unix(path):
        watch = SocketWatch((tmp_path,))
        assert watch.nothing_new()
    path.unlink()
    try:
        with listen_unix(path):
            assert not watch.nothing_new()
    finally:
        watch.close()


def test_a_netlink_error_after_the_start_fails_closed(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the netlink socket fails, every check says "something new" (the session then starts
    a new sandbox, whose new watch opens a new listing): never a stale "nothing new"."""
    watch = SocketWatch((tmp_path,))
    assert watch._diag is not None and watch.nothing_new()

    def broken(self: UnixDiag, sock: socket.socket) -> tuple[bytes, frozenset[tuple[str, str]]]:
        raise OSError(105, "No buffer space available")

    monkeypatch.setattr(UnixDiag, "_dump", broken)
    assert not watch.nothing_new()
    monkeypatch.undo()
    assert not watch.nothing_new()  # closed with the error: it does not come back by itself
    assert watch._diag._sock is None


def _message(kind: int, flags: int, seq: int, body: bytes) -> bytes:
    data = struct.pack("=IHHII", 16 + len(body), kind, flags, seq, 0) + body
    return data + b"\0" * (-len(data) % 4)


def _named_message(inode: int, name: bytes) -> bytes:
    diag = struct.pack("=BBBBIQ", socket.AF_UNIX, socket.SOCK_STREAM, 10, 0, inode, 1)
    attr = struct.pack("=HH", 4 + len(name), 0) + name
    attr += b"\0" * (-len(attr) % 4)
    return _message(20, 2, hostsockets._SEQ, diag + attr)


_DONE = _message(3, 2, hostsockets._SEQ, b"\0\0\0\0")


def test_the_walk_reads_a_well_formed_answer() -> None:
    end, pairs = hostsockets._walk(_named_message(7, b"/var/tmp/a.sock\0") + _DONE)
    assert end > 0 and pairs == (("7", "/var/tmp/a.sock"),)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(_message(2, 0, hostsockets._SEQ, struct.pack("=i", -105) + b"\0" * 16), id="error"),
        pytest.param(_message(20, 2 | 0x10, hostsockets._SEQ, b"\0" * 16) + _DONE, id="interrupted"),
        pytest.param(_message(20, 2, hostsockets._SEQ + 1, b"\0" * 16) + _DONE, id="another request"),
        pytest.param(_named_message(7, b"/var/tmp/a.sock\0")[:-8], id="cut short"),
        pytest.param(_message(21, 2, hostsockets._SEQ, b"\0" * 16) + _DONE, id="unexpected kind"),
        pytest.param(_message(20, 2, hostsockets._SEQ, b"\0" * 8) + _DONE, id="too short"),
        pytest.param(
            _message(20, 2, hostsockets._SEQ, b"\0" * 16 + struct.pack("=HH", 64, 0) + b"/x\0\0") + _DONE,
            id="attribute past its message",
        ),
    ],
)
def test_a_malformed_answer_raises(answer: bytes) -> None:
    with pytest.raises(OSError):
        hostsockets._walk(answer)


def test_without_netlink_the_table_is_read_and_new_sockets_still_seen(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*_args: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(UnixDiag, "__init__", refused)
    assert open_unix_diag() is None
    watch = SocketWatch((tmp_path,))
    assert watch._diag is None
    assert watch.nothing_new()
    with listen_unix(outside / "new.sock"):
        assert not watch.nothing_new()


def test_an_unreadable_table_fails_closed(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without netlink, a table that cannot be read was "no sockets" (b""), and an empty table
    holds nothing new: a check that could not look said yes. Fails on the old code."""
    monkeypatch.setattr(hostsockets, "open_unix_diag", lambda: None)
    watch = SocketWatch((tmp_path,))
    real_open = os.open

    def no_proc_net(path: object, *args: object, **kwargs: object) -> int:
        if path == "/proc/net/unix":
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", no_proc_net)
    assert not watch.nothing_new()


def test_messages_read_before_give_the_same_pairs(outside: Path) -> None:
    """The memo of named sockets' messages (by their exact bytes) changes nothing listed: a
    socket bound again at the same path (a new inode) is a new pair, a closed one is gone."""
    diag = _diag()
    path = outside / "again.sock"
    try:
        with listen_unix(path) as first:
            before = diag.bound()
            assert (str(os.fstat(first.fileno()).st_ino), str(path)) in before
            again = diag.bound()  # served from the memo
            raw, _pairs = diag.dump()
            assert hostsockets._walk(raw + _DONE)[1] == hostsockets._walk(raw + _DONE, {})[1]
        path.unlink()
        with listen_unix(path) as second:
            now = diag.bound()
            assert (str(os.fstat(second.fileno()).st_ino), str(path)) in now
        assert not any(pair[1] == str(path) for pair in diag.bound())
        assert {pair for pair in again if pair[1] == str(path)} == {
            pair for pair in before if pair[1] == str(path)
        }
    finally:
        diag.close()


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch, outside: Path) -> None:
    monkeypatch.setattr(hostsockets, "_SEEN_MAX", 2)
    diag = _diag()
    try:
        for i in range(4):
            with listen_unix(outside / f"s{i}.sock"):
                listed = diag.bound()
                assert str(outside / f"s{i}.sock") in {path for _inode, path in listed}
                assert len(diag._seen) <= 2 + len(listed)
    finally:
        diag.close()


def test_masks_are_refused_when_the_table_cannot_be_read(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start masks come from the table: an unreadable one listed no socket, so a sandbox
    started with no socket hidden. Fails on the old code (it returned the masks without them)."""
    from sandbox._hostsockets import IpcMasks
    from sandbox.errors import SandboxExecError

    real_open = os.open

    def no_proc_net(path: object, *args: object, **kwargs: object) -> int:
        if path == "/proc/net/unix":
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    with listen_unix(outside / "daemon.sock"):
        masks = IpcMasks((tmp_path,))
        assert str(outside / "daemon.sock") in masks.args()  # readable: hidden
        monkeypatch.setattr(os, "open", no_proc_net)
        with pytest.raises(SandboxExecError, match="/proc/net/unix"):
            IpcMasks((tmp_path,)).args()
