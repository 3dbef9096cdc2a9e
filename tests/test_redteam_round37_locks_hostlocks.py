"""Red team, round 37 (locks): a command's lock on a host file it sees read-only held the host up.

Advisory locks live on the inode. A bwrap sandbox showed the host's files through bind mounts,
the host's own inodes, so a command that could merely *read* a host file could lock it: ``flock``
(any open mode), a POSIX or open-file-description read lock (``F_RDLCK`` needs only a read fd),
an sqlite read transaction. A host program that locks the same file then waited or failed for as
long as the command liked: debconf's ``config.dat`` (0644, apt's installs failed "locked by
another process"), a non-root caller's cargo/pip caches, any sqlite database it can read.

Now the session sandbox shows every read-only host directory it can through an overlay of its own
per command (`sandbox._lockview`): the command's opens give overlay inodes, its locks stay on them,
and the host's locks on the real inodes never meet them. Root and uid 65534, session.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import struct
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.bwrap

#: fcntl's open-file-description lock commands (Linux; Python's fcntl module does not name them).
_F_OFD_SETLK = 37

#: Run in the sandbox: take every kind of lock a read-only fd allows on the host files in HOSTDIR,
#: say so in the workspace, and hold them until the host says done (30 s at most).
_HOLD = r"""
import fcntl, os, sqlite3, struct, sys, time
host, ws = sys.argv[1], sys.argv[2]
said = []
def attempt(name, fn):
    try:
        fn(); said.append(name + " ok")
    except OSError as exc:
        said.append(name + " " + (exc.strerror or str(exc)))
fds = {n: os.open(os.path.join(host, n), os.O_RDONLY) for n in ("flock", "posix", "ofd")}
attempt("FLOCK", lambda: fcntl.flock(fds["flock"], fcntl.LOCK_EX | fcntl.LOCK_NB))
attempt("POSIX", lambda: fcntl.lockf(fds["posix"], fcntl.LOCK_SH | fcntl.LOCK_NB))
attempt("OFD", lambda: fcntl.fcntl(fds["ofd"], 37, struct.pack("hhqqi", fcntl.F_RDLCK, 0, 0, 0, 0)))
import ctypes, select
libc = ctypes.CDLL(None, use_errno=True)
ino = libc.inotify_init1(os.O_NONBLOCK)
watched = libc.inotify_add_watch(ino, os.path.join(host, "watched").encode(), 0x2 | 0x4 | 0x20)  # MODIFY ATTRIB OPEN
said.append("INOTIFY " + ("ok" if watched >= 0 else "refused"))
fan = libc.fanotify_init(0x200, os.O_RDONLY)  # FAN_REPORT_FID: unprivileged, inode marks only
marked = fan >= 0 and libc.fanotify_mark(
    fan, 1, ctypes.c_uint64(0x1 | 0x2 | 0x20), -100, os.path.join(host, "watched").encode()
) == 0  # FAN_MARK_ADD; ACCESS, MODIFY, OPEN
said.append("FANOTIFY " + ("ok" if marked else "refused"))
db = sqlite3.connect("file:" + os.path.join(host, "db.sqlite") + "?mode=ro", uri=True, isolation_level=None)
db.execute("BEGIN")
said.append("SQLITE rows=%d" % len(db.execute("SELECT * FROM t").fetchall()))
with open(os.path.join(ws, "ready.tmp"), "w") as f:
    f.write("\n".join(said) + "\n")
os.rename(os.path.join(ws, "ready.tmp"), os.path.join(ws, "ready"))
for _ in range(300):
    if os.path.exists(os.path.join(ws, "done")):
        break
    time.sleep(0.1)
seen = select.select([ino], [], [], 0)[0]
fan_seen = marked and select.select([fan], [], [], 0)[0]
print("HELD", *said, "WATCH " + ("saw the host" if seen else "quiet"), sep="\n")
print("FANWATCH " + ("saw the host" if fan_seen else "quiet"))
"""


@contextmanager
def _host_dir() -> Iterator[Path]:
    """A host directory the sandbox sees read-only (outside its private /tmp and its workspace),
    world-readable, with the files the command locks."""
    path = Path(tempfile.mkdtemp(prefix="r37-locks-", dir="/var/tmp"))
    try:
        path.chmod(0o755)
        for name in ("flock", "posix", "ofd", "watched"):
            (path / name).write_text("x\n")
            (path / name).chmod(0o644)
        db = sqlite3.connect(path / "db.sqlite")
        db.execute("CREATE TABLE t (v INTEGER)")
        db.execute("INSERT INTO t VALUES (1)")
        db.commit()
        db.close()
        (path / "db.sqlite").chmod(0o644)
        yield path
    finally:
        for child in path.iterdir():
            child.unlink()
        path.rmdir()


def _host_tries(host: Path) -> dict[str, str]:
    """What the host gets, not waiting, on each file the command locked."""
    got: dict[str, str] = {}

    def attempt(name: str, fn: object) -> None:
        try:
            fn()  # type: ignore[operator]
            got[name] = "ok"
        except (OSError, sqlite3.OperationalError) as exc:
            got[name] = f"blocked: {exc}"

    fds = [os.open(host / name, os.O_RDWR) for name in ("flock", "posix", "ofd")]
    try:
        attempt("flock", lambda: fcntl.flock(fds[0], fcntl.LOCK_EX | fcntl.LOCK_NB))
        attempt("posix", lambda: fcntl.lockf(fds[1], fcntl.LOCK_EX | fcntl.LOCK_NB))
        wrlck = struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0)
        attempt("ofd", lambda: fcntl.fcntl(fds[2], _F_OFD_SETLK, wrlck))
    finally:
        for fd in fds:
            os.close(fd)
    with open(host / "watched", "a") as fh:  # a host program touching a file the command watches
        fh.write("y\n")
    db = sqlite3.connect(host / "db.sqlite", timeout=0)
    try:
        attempt("sqlite", lambda: (db.execute("INSERT INTO t VALUES (2)"), db.commit()))
    finally:
        db.close()
    return got


def _run(tmp_path: Path, persistent: bool, *, lock_view: bool = True) -> tuple[dict[str, str], str]:
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    ws.chmod(0o755)
    (ws / "hold.py").write_text(_HOLD)
    with _host_dir() as host:
        got: dict[str, str] = {}
        out: list[str] = []

        async def main() -> None:
            config = BwrapConfig(persistent=persistent, lock_view=lock_view)
            backend = BwrapBackend(config, SandboxPolicy(workspace=ws))
            async with supervised(backend, tmp_path / "s") as sup:

                async def command() -> None:
                    result = await sup.run(f"python3 {ws}/hold.py {host} {ws}", timeout_s=60)
                    out.append(result.preview)

                async with anyio.create_task_group() as tg:
                    tg.start_soon(command)
                    deadline = time.monotonic() + 40
                    while not (ws / "ready").exists() and not out and time.monotonic() < deadline:
                        await anyio.sleep(0.05)
                    if (ws / "ready").exists():
                        got.update(_host_tries(host))
                    (ws / "done").write_text("")

        anyio.run(main)
    text = "\n".join(out)
    assert "SQLITE rows=1" in text, f"the command must have read the host's database: {text}"
    return got, text


@pytest.mark.parametrize("persistent", [True], ids=["session"])
def test_a_commands_lock_on_a_read_only_host_file_does_not_hold_the_host(
    tmp_path: Path, persistent: bool
) -> None:
    """The command takes ``flock`` LOCK_EX, a POSIX and an OFD read lock (read-only fds) and an
    sqlite read transaction on host files; the host's own non-blocking locks and an sqlite write
    must all succeed meanwhile; its inotify watch and fanotify mark on a host file must not see the host write it.
    Failed before: all four blocked (and both watches saw the host's write), root 1 of 1, uid 65534 1 of 1."""
    got, text = _run(tmp_path, persistent)
    assert got == {"flock": "ok", "posix": "ok", "ofd": "ok", "sqlite": "ok"}, (got, text)
    # Read-only uses inside keep working: each lock was granted to the command (on its own view).
    for kind in ("FLOCK ok", "POSIX ok", "OFD ok", "INOTIFY ok"):
        assert kind in text, text
    # Its watch on a host file it reads sees its own view only: not when the host writes the file.
    assert "WATCH quiet" in text, text
    assert "FANWATCH saw the host" not in text, text  # a fanotify inode mark: the same


def test_the_operator_can_turn_the_view_off(tmp_path: Path) -> None:
    """`BwrapConfig.lock_view` False (the operator's choice, documented as such) reaches the zygote:
    the command's locks are the host's again. Checks the switch does what it says, so that the
    default (on) is what the test above measures."""
    assert BwrapConfig().lock_view is True
    got, text = _run(tmp_path, True, lock_view=False)
    assert got["flock"] != "ok" and got["sqlite"] != "ok", (got, text)


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The same as uid 65534: its commands run as its own uid, so they can open (and lock) all its
    files outside the workspace -- its package caches, its sqlite databases."""
    _nonroot.held_as_nobody(__file__, "test_a_commands_lock_on_a_read_only_host_file_does_not_hold_the_host")


def test_each_command_sees_the_hosts_changes_since_the_last(tmp_path: Path) -> None:
    """An overlay caches what it looked up (a name found missing stays missing, a file replaced by a
    rename keeps its old content) and never learns of its lower layer's changes: one overlay for
    the session would show a later command the host as an earlier one saw it. Each command's init
    mounts its own, so a command sees the host as of its own start."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    with _host_dir() as host:
        look = f"cat {host}/flock; ls {host}/appeared 2>/dev/null || echo MISSING"
        outs: list[str] = []

        async def main() -> None:
            backend = BwrapBackend(BwrapConfig(persistent=True), SandboxPolicy(workspace=ws))
            async with supervised(backend, tmp_path / "s") as sup:
                outs.append((await sup.run(look, timeout_s=60)).preview)
                (host / "appeared").write_text("")
                (host / "next").write_text("replaced\n")
                (host / "next").rename(host / "flock")  # as editors and package managers write
                for _ in range(4):  # whichever pooled init serves it
                    outs.append((await sup.run(look, timeout_s=60)).preview)

        anyio.run(main)
    assert "x" in outs[0] and "MISSING" in outs[0], outs
    for out in outs[1:]:
        assert "replaced" in out and "MISSING" not in out, outs


def test_the_zygote_and_the_backend_agree_on_the_place() -> None:
    """`sandbox._zygote_main` imports nothing of ``sandbox``: its copy of the name is pinned here."""
    from sandbox import _zygote_main, bwrap

    assert _zygote_main.LOCK_VIEW_DIR == bwrap.LOCK_VIEW_DIR
