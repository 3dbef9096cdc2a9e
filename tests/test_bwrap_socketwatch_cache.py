"""`SocketWatch` judges each (inode, path) once: the table changes with every command (its own
unnamed socket pairs), so re-judging every listed path per command was most of the check's cost.
What it remembers must never let a new host socket through."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

import sandbox._hostsockets as hostsockets
from sandbox._hostsockets import SocketWatch
from tests._unix_sockets import listen_unix, outside_dir

#: They read the host's whole socket table: a socket another test binds meanwhile is "new" (CI, round 15).
pytestmark = pytest.mark.serial


@pytest.fixture
def outside() -> Iterator[Path]:
    yield from outside_dir("shellrt-watchcache-")


def test_a_table_changed_only_by_unnamed_sockets_is_not_judged_path_by_path(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with listen_unix(outside / "daemon.sock"):
        watch = SocketWatch((tmp_path,))
        judged: list[bytes] = []
        real = SocketWatch._outside_bound

        def spy(self: SocketWatch, table: bytes) -> frozenset[tuple[str, str]]:
            judged.append(table)
            return real(self, table)

        monkeypatch.setattr(SocketWatch, "_outside_bound", spy)
        for _ in range(3):
            pair = socket.socketpair()  # what each command's init costs the host's table
            assert watch.nothing_new()
            pair[0].close()
            pair[1].close()
        assert judged == []  # fails on the old code: each changed table was judged in full


def test_what_the_watch_remembers_never_lets_a_new_outside_socket_through(
    tmp_path: Path, outside: Path
) -> None:
    kept = tmp_path / "ours.sock"
    with listen_unix(outside / "daemon.sock"):
        watch = SocketWatch((tmp_path,))
        with listen_unix(kept):  # where commands may bind: fine, and remembered
            assert watch.nothing_new()
        kept.unlink()
        assert watch.nothing_new()
        with listen_unix(kept):  # the same path, a new inode, still where commands may bind
            assert watch.nothing_new()
        with listen_unix(outside / "new.sock"):
            assert not watch.nothing_new()
            assert not watch.nothing_new()  # asked again: still new (nothing remembered it)


def test_the_remembered_pairs_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hostsockets, "_FINE_MAX", 2)
    watch = SocketWatch((tmp_path,))
    for i in range(6):
        with listen_unix(tmp_path / f"s{i}.sock"):
            assert watch.nothing_new()
    assert len(watch._fine) <= len(hostsockets._bound(hostsockets._socket_table())) + 3
