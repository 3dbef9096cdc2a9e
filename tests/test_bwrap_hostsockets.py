"""The host-socket masks of a bwrap sandbox, worked out once and again only when the host's sockets changed.

`sandbox._hostsockets.IpcMasks` keeps the flags of `ipc_mask_args` between
commands (one bwrap per command asks before each). Here real unix sockets are
bound on the host, in a directory every user may cross, and the flags are
asked for again: a socket bound since -- at a new path, or again at a path
already listed (a new inode) -- is masked by the next call, and nothing is
worked out again while the listed sockets stay the same.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import _hostsockets
from sandbox._hostsockets import IpcMasks, ipc_mask_args
from tests._unix_sockets import listen_unix as _listen
from tests._unix_sockets import outside_dir


@pytest.fixture
def outside() -> Iterator[Path]:
    yield from outside_dir("shellrt-ipcmask-")


def _masked(args: list[str], path: Path) -> bool:
    return any(args[i : i + 3] == ["--ro-bind", "/dev/null", str(path)] for i in range(len(args)))


def test_the_flags_are_those_of_ipc_mask_args(tmp_path: Path, outside: Path) -> None:
    with _listen(outside / "a.sock"):
        masks = IpcMasks((tmp_path,), reachable_only=True)
        assert masks.args() == ipc_mask_args((tmp_path,), reachable_only=True)
        assert _masked(masks.args(), outside / "a.sock")


def test_a_socket_bound_after_the_first_call_is_masked_by_the_next(tmp_path: Path, outside: Path) -> None:
    masks = IpcMasks((tmp_path,))
    assert not _masked(masks.args(), outside / "late.sock")
    with _listen(outside / "late.sock"):
        assert _masked(masks.args(), outside / "late.sock")


def test_a_socket_bound_again_at_a_listed_path_is_masked(tmp_path: Path, outside: Path) -> None:
    """Same listed paths, another inode: the first socket's file was gone (nothing to mask) and a
    second socket now listens there. A cache keyed on the listed paths alone would miss it."""
    path = outside / "again.sock"
    with _listen(path):
        path.unlink()  # still listening, still listed, but nothing on disk to reach or mask
        masks = IpcMasks((tmp_path,))
        assert not _masked(masks.args(), path)
        with _listen(path):
            assert _masked(masks.args(), path)


# Serial: any host socket or mount a parallel test makes (a bwrap session's /tmp tmpfs, round 13)
# is a change, and a change is rightly worked out again (CI: 2 calls for 1).
@pytest.mark.serial
def test_nothing_is_worked_out_again_while_the_sockets_stay_the_same(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = _hostsockets.ipc_mask_args

    def counting(*args: object, **kwargs: object) -> list[str]:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_hostsockets, "ipc_mask_args", counting)
    with _listen(outside / "steady.sock"):
        masks = IpcMasks((tmp_path,))
        first = masks.args()
        for _ in range(5):
            assert masks.args() == first
        assert len(calls) == 1
        with _listen(outside / "new.sock"):
            assert _masked(masks.args(), outside / "new.sock")
        assert len(calls) == 2


def test_another_runtime_dir_is_worked_out_afresh(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = outside / "runtime"
    runtime.mkdir()
    masks = IpcMasks((tmp_path,))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    assert ["--tmpfs", str(runtime)] not in [masks.args()[i : i + 2] for i in range(len(masks.args()))]
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    args = masks.args()
    assert ["--tmpfs", str(runtime)] in [args[i : i + 2] for i in range(len(args))]


def test_a_masked_socket_whose_file_is_removed_is_dropped(tmp_path: Path, outside: Path) -> None:
    """Still listening (the table unchanged) but its file unlinked: bwrap could not cover it (it would
    fail every start), and there is nothing left on disk to connect to."""
    path = outside / "unlinked.sock"
    with _listen(path):
        masks = IpcMasks((tmp_path,))
        assert _masked(masks.args(), path)
        path.unlink()
        assert not _masked(masks.args(), path)


def test_a_removed_masked_file_is_dropped_when_only_connections_changed(tmp_path: Path, outside: Path) -> None:
    """CI63's flake made certain: the table changed by a connection of no path (a parallel test's,
    here a socketpair) while the bound sockets stayed the same, so the flags were kept without
    looking whether each masked file was still there; bwrap then failed on the missing file."""
    path = outside / "unlinked-busy.sock"
    with _listen(path):
        masks = IpcMasks((tmp_path,))
        assert _masked(masks.args(), path)
        path.unlink()
        left, right = socket.socketpair(socket.AF_UNIX)
        with left, right:
            assert not _masked(masks.args(), path)
