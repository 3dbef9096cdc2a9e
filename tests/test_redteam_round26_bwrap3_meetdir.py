"""Red team, round 26 (wave 3, bwrap-3): a sandbox over the caller's home or temp dir reached the
budget holders' meeting directory.

A non-root caller's shellrt processes share one budget namespace; their holders meet in a
directory only the uid may enter (`sandbox._budget_meet`): ``$XDG_RUNTIME_DIR``, else
``~/.cache/shellrt/budget-<host>``, else ``<temp>/shellrt-budget-<uid>``. bwrap hid the runtime
directory (an empty tmpfs) but not the other two. A workspace of ``$HOME`` (or a ``TMPDIR`` inside
the workspace) showed the directory to commands, which run as the caller's uid: they listed it,
could take the lock file's ``flock`` (a read-only file is enough), make names there, and rename
its parent away so the next process met elsewhere, each stopping the sharing for processes
started later. Now each place is masked as a read-denied directory (an empty read-only tmpfs,
every directory between a writable root and it pinned), for root and non-root callers.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import _budget_meet, _ucounts
from tests import _nonroot
from tests._bwrap_session import probe_lines, require_bwrap
from tests.conftest import require

pytestmark = pytest.mark.bwrap

#: What a command can do to the meeting directory ``argv``-free: its path is substituted below.
_PROBE = r"""
import errno, fcntl, os, socket
meet = MEET
def why(exc):
    return errno.errorcode.get(exc.errno, str(exc.errno))
try:
    print("SEES", sorted(os.listdir(meet)) or "empty", flush=True)
except OSError as exc:
    print("SEES", why(exc), flush=True)
try:
    fd = os.open(os.path.join(meet, NAME + ".lock"), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        print("LOCK taken", flush=True)
    except OSError as exc:
        print("LOCK", why(exc), flush=True)
except OSError as exc:
    print("LOCK", why(exc), flush=True)
with socket.socket(socket.AF_UNIX) as s:
    try:
        os.chdir(meet)  # by a relative name: the full path may pass AF_UNIX's 108 bytes
        s.connect(NAME)
        print("CONNECT ok", flush=True)
    except OSError as exc:
        print("CONNECT", why(exc), flush=True)
    finally:
        os.chdir("/")
try:
    os.mkdir(os.path.join(meet, "squat"))
    print("MAKE ok", flush=True)
except OSError as exc:
    print("MAKE", why(exc), flush=True)
parent = os.path.dirname(meet)
try:
    os.rename(parent, parent + "-moved")
    os.rename(parent + "-moved", parent)
    print("MOVE ok", flush=True)
except OSError as exc:
    print("MOVE", why(exc), flush=True)
"""


@pytest.fixture
def fresh_holder(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's budget holder made anew (under the test's HOME/TMPDIR), ended after."""
    namespace = _ucounts._BudgetNamespace()
    monkeypatch.setattr(_ucounts, "_NAMESPACE", namespace)
    yield
    if namespace._holder is not None:
        _ucounts._stop(namespace._holder)


def _place(tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(workspace, meeting directory) with the caller's HOME (``home``) or temp dir (``temp``,
    no usable home) inside the workspace."""
    ws = tmp_path / "ws"
    ws.mkdir(mode=0o755)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    if where == "home":
        monkeypatch.setenv("HOME", str(ws))
        return ws, ws.joinpath(*_budget_meet.home_place())
    home = tmp_path / "open-home"  # open to others: the home place is refused, the temp path next
    home.mkdir()
    home.chmod(0o777)
    monkeypatch.setenv("HOME", str(home))
    temp = ws / "tmpdir"
    temp.mkdir(mode=0o700)
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    return ws, Path(_budget_meet.temp_place())


@pytest.mark.parametrize(
    ("where", "persistent"),
    [("home", True), ("home", False), ("temp", True)],
    ids=["home-session", "home-per-command", "temp-session"],
)
@pytest.mark.usefixtures("fresh_holder")
def test_the_meeting_directory_is_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, persistent: bool
) -> None:
    """As uid 65534 failed before (3 of 3): the command listed the holder's socket and lock file,
    made a name there and renamed its parent away (the host's directory with it)."""
    require_bwrap()
    ws, meet = _place(tmp_path, where, monkeypatch)
    if os.geteuid() == 0:  # root has no rendezvous: a directory of its name left there, as a guard
        meet.mkdir(mode=0o700, parents=True)
        (meet / f"{_ucounts._RENDEZVOUS}.lock").touch()
    probe = _PROBE.replace("MEET", repr(str(meet))).replace("NAME", repr(_ucounts._RENDEZVOUS))
    fields, out = probe_lines(ws, tmp_path / "s", probe, persistent=persistent)
    if os.geteuid() != 0:
        assert meet.is_dir() and os.listdir(meet), "the holder met elsewhere: " + out
    # An empty read-only directory, or none (a root caller's temp dir holding its session's: masked whole).
    assert fields.get("SEES") in ("empty", "ENOENT") and fields.get("MAKE") in ("EROFS", "ENOENT"), out
    assert fields.get("LOCK") == "ENOENT" and fields.get("CONNECT") == "ENOENT", out
    assert fields.get("MOVE") == "EBUSY", out  # the way to it pinned: no rename moves it on the host
    assert meet.is_dir() and "squat" not in os.listdir(meet), out


#: What a command can do to a static program cache (the zygote's init is built and kept there).
_CACHE_PROBE = r"""
import errno, os
for tag, cache in CACHES:
    try:
        seen = sorted(os.listdir(cache)) or "empty"
    except OSError as exc:
        seen = errno.errorcode.get(exc.errno, "?")
    try:
        with open(os.path.join(cache, "zinit-0123456789abcdef"), "w") as planted:
            planted.write("#!/bin/sh\n")
        made = "ok"
    except OSError as exc:
        made = errno.errorcode.get(exc.errno, "?")
    print(tag, seen, made, flush=True)
"""


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_the_static_program_caches_are_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, persistent: bool
) -> None:
    """Failed before (root 2 of 2, uid 65534 2 of 2): with the workspace the caller's home, a
    command listed ``~/.cache/shellrt`` and ``$XDG_CACHE_HOME/shellrt`` and planted a program there,
    which a later process of the caller trusts (the caller's own file) and runs as a zygote's init."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir(mode=0o755)
    monkeypatch.setenv("HOME", str(ws))
    monkeypatch.setenv("XDG_CACHE_HOME", str(ws / "xdg-cache"))
    caches = [("HOME", ws / ".cache" / "shellrt"), ("XDG", ws / "xdg-cache" / "shellrt")]
    for _tag, cache in caches:
        cache.mkdir(mode=0o700, parents=True)
        (cache / "zinit-fedcba9876543210").write_bytes(b"built")
    probe = _CACHE_PROBE.replace("CACHES", repr([(tag, str(cache)) for tag, cache in caches]))
    fields, out = probe_lines(ws, tmp_path / "s", probe, persistent=persistent)
    for tag, cache in caches:
        seen, _, made = fields.get(tag, "").rpartition(" ")
        assert seen in ("empty", "ENOENT") and made in ("EROFS", "ENOENT"), out
        assert "zinit-0123456789abcdef" not in os.listdir(cache), out  # nothing planted on the host


def test_it_holds_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(
        shutil.which("setpriv") is not None and shutil.which("nsenter") is not None, "setpriv and nsenter"
    )
    names = [
        "test_the_meeting_directory_is_hidden",
        "test_the_static_program_caches_are_hidden",
        "test_a_host_socket_in_a_temp_dir_inside_the_workspace_does_not_show_it",
    ]
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{n}" for n in names], collect_args=[f"{__file__}::{n}" for n in names]
    )
    _nonroot.assert_all_held(collected, outcome)


_TEMP_PROBE = r"""
import os
print("SEES", sorted(os.listdir(TEMP)) or "empty", flush=True)
"""


def test_a_host_socket_in_a_temp_dir_inside_the_workspace_does_not_show_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guard (held before, root and uid 65534): the host's temp dir inside a writable root stays
    masked whole (`sandbox._tempholder`) with a host socket below it, whose cover pins the
    directories on its way. The holder's socket in the temp-path meeting directory did show that
    directory to uid 65534 before this round's mask (`test_the_meeting_directory_is_hidden`)."""
    require_bwrap()
    ws = tmp_path / "ws"
    temp = ws / "tmpdir"
    (temp / "sock-dir").mkdir(parents=True)
    (temp / "other-session").mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    with socket.socket(socket.AF_UNIX) as listener:
        here = os.getcwd()
        os.chdir(temp / "sock-dir")  # by a relative name: the path may pass AF_UNIX's 108 bytes
        try:
            listener.bind("s.sock")
        finally:
            os.chdir(here)
        listener.listen(1)
        fields, out = probe_lines(
            ws, tmp_path / "s", _TEMP_PROBE.replace("TEMP", repr(str(temp))), persistent=True
        )
    assert "other-session" not in fields.get("SEES", "") and "sock-dir" not in fields.get("SEES", ""), out
