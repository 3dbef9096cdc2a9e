"""A host socket that vanishes before bwrap covers it: the pieces, without bwrap.

`StartMasks` keeps one start's masks across its attempts and drops only those
whose socket is gone; `RetryingBwrapProcess` retries such a start without a
bound of its own (each retry has fewer masks) and judges bwrap's whole message,
which bwrap writes in pieces; `SocketWatch` sees a socket bound again at a
hidden path as new (its mask went with the old file).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from sandbox._bwrap_retry import MAX_RETRIES, REPLAY_MAX, RetryingBwrapProcess
from sandbox._hostsockets import IpcMasks, SocketWatch, StartMasks
from tests._bwrap_fakes import fake_attempt as _attempt
from tests._bwrap_fakes import read_all as _read_all
from tests._unix_sockets import listen_unix as _listen
from tests._unix_sockets import outside_dir

#: They read the host's whole socket table: a socket another test binds meanwhile is "new" (CI, round 15).
pytestmark = [pytest.mark.anyio, pytest.mark.serial]


@pytest.fixture
def outside() -> Iterator[Path]:
    yield from outside_dir("shellrt-vanish-")


def _mask(path: Path) -> list[str]:
    return ["--ro-bind", "/dev/null", str(path)]


def _has(args: list[str], part: list[str]) -> bool:
    return any(args[i : i + len(part)] == part for i in range(len(args)))


def test_a_retry_keeps_the_masks_less_those_whose_socket_is_gone(tmp_path: Path, outside: Path) -> None:
    staying, going, later = outside / "staying.sock", outside / "sub" / "going.sock", outside / "later.sock"
    going.parent.mkdir()
    with _listen(staying), _listen(going):
        start = StartMasks()
        first = start.args(IpcMasks((tmp_path,)))
        assert _has(first, _mask(staying)) and _has(first, _mask(going))
        assert not start.drop_vanished()  # nothing gone: nothing to drop, the retry is not free
        going.unlink()
        going.parent.rmdir()
        with _listen(later):  # bound after the first listing: the next command's business
            assert start.drop_vanished()
            again = start.args(IpcMasks((tmp_path,)))
        assert _has(again, _mask(staying))
        assert not _has(again, _mask(going)) and not _has(again, _mask(later))
        cut = next(i for i in range(len(first)) if first[i : i + 3] == _mask(going))
        assert again == first[:cut] + first[cut + 3 :]  # all else as at the first attempt


def test_a_socket_bound_again_at_a_hidden_path_is_new_to_the_session_watch(
    tmp_path: Path, outside: Path
) -> None:
    path = outside / "daemon.sock"
    with _listen(path):
        watch = SocketWatch((tmp_path,))
        assert watch.nothing_new()
    path.unlink()
    with _listen(path):
        assert not watch.nothing_new()


#: How bwrap writes a fatal error: ``bwrap: ``, the text, then ``: <strerror>``, each a write.
_PIECES = [b"bwrap: ", b"Can't mkdir parents for /var/tmp/x/agent.sock", b": Read-only file system\n"]


async def test_vanished_masks_are_retried_past_max_retries_while_masks_can_be_dropped() -> None:
    masks_left = [MAX_RETRIES + 3]
    spawned: list[int] = []

    def drop_vanished() -> bool:
        if masks_left[0] == 0:
            return False
        masks_left[0] -= 1
        return True

    async def spawn() -> Any:
        spawned.append(1)
        if len(spawned) < MAX_RETRIES + 3:
            return _attempt(list(_PIECES), 1, b"")
        return _attempt([b"ran\n"], 0, b'{"exit-code": 0}')

    proc = RetryingBwrapProcess(
        spawn, _attempt(list(_PIECES), 1, b""), may_retry=True, drop_vanished=drop_vanished
    )
    assert await _read_all(proc) == b"ran\n"
    assert (await proc.wait()).exit_code == 0 and len(spawned) == MAX_RETRIES + 3


async def test_a_mount_race_written_in_pieces_is_recognised() -> None:
    """The first chunk alone (``bwrap: ``) says nothing: the rest of the message is read first."""
    race = [b"bwrap: ", b"Can't bind mount /oldroot/ on /newroot/", b": Unable to apply mount flags\n"]

    async def spawn() -> Any:
        return _attempt([b"ran\n"], 0, b'{"exit-code": 0}')

    proc = RetryingBwrapProcess(spawn, _attempt(race, 1, b""), may_retry=True)
    assert await _read_all(proc) == b"ran\n"


async def test_a_final_failure_is_handed_out_whole() -> None:
    said = [b"bwrap: ", b"Can't chdir to /nowhere", b": No such file or directory\n"]
    proc = RetryingBwrapProcess(
        _no_spawn, _attempt(said, 1, b""), may_retry=True, drop_vanished=lambda: False
    )
    assert await _read_all(proc) == b"".join(said)
    assert (await proc.wait()).exit_code == 1


async def _no_spawn() -> Any:
    raise AssertionError("not a race and no mask dropped: no retry")


class _Stdin:
    """A command's stdin pipe: records what reached it; ``broken``: its reader is gone."""

    def __init__(self, broken: bool) -> None:
        self.broken = broken
        self.got = b""
        self.closed = False

    async def send(self, item: bytes) -> None:
        if self.broken:
            raise anyio.BrokenResourceError
        self.got += item

    async def aclose(self) -> None:
        self.closed = True


async def test_stdin_sent_to_a_failed_attempt_is_written_again_to_the_next() -> None:
    failed, ran = _attempt(list(_PIECES), 1, b""), _attempt([b"ran\n"], 0, b'{"exit-code": 0}')
    failed[0].stdin, ran[0].stdin = _Stdin(broken=True), _Stdin(broken=False)
    dropped = [False]

    def drop_vanished() -> bool:
        dropped[0], was = True, dropped[0]
        return not was

    async def spawn() -> Any:
        return ran

    proc = RetryingBwrapProcess(spawn, failed, may_retry=True, drop_vanished=drop_vanished)
    assert proc.stdin is not None
    await proc.stdin.send(b"one ")
    await proc.stdin.send(b"two")
    await proc.stdin.aclose()  # before the failure is known: the next attempt still gets the EOF
    assert await _read_all(proc) == b"ran\n"
    assert (await proc.wait()).exit_code == 0
    assert (ran[0].stdin.got, ran[0].stdin.closed) == (b"one two", True)
    assert failed[0].stdin.closed


async def test_more_stdin_than_a_pipe_holds_is_not_replayed_nor_retried() -> None:
    failed = _attempt(list(_PIECES), 1, b"")
    failed[0].stdin = _Stdin(broken=False)
    proc = RetryingBwrapProcess(_no_spawn, failed, may_retry=True, drop_vanished=lambda: True)
    assert proc.stdin is not None
    await proc.stdin.send(b"x" * (REPLAY_MAX + 1))
    await proc.stdin.aclose()
    assert await _read_all(proc) == b"".join(_PIECES)
    assert (await proc.wait()).exit_code == 1
