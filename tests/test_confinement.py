"""sandbox.confine: one containment semantics, anchored resolution, race-free atomic writes."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import confine
from sandbox.confine import ConfinementError, Mount, View, contained, is_within, normalize, relative_to


@pytest.fixture(params=["openat2", "walk"])
def resolution(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every anchored test runs with the openat2 fast path and with the O_NOFOLLOW walk alone."""
    saved = confine._openat2.usable
    confine._openat2.usable = saved and request.param == "openat2"
    try:
        yield str(request.param)
    finally:
        confine._openat2.usable = saved


def local_view(ws: Path, *, masked: tuple[str, ...] = ()) -> View:
    return View([Mount("/", "/"), Mount(str(ws), str(ws), writable=True)], masked)


# --- lexical -----------------------------------------------------------------------------------


def test_lexical_containment() -> None:
    assert normalize("//a/./b/../c/") == "/a/c"
    assert relative_to("/a/b/c", "/a") == "b/c" and relative_to("/a", "/a") == ""
    assert relative_to("/ab", "/a") is None and relative_to("/x", "/") == "x"
    assert is_within("/a/b/../../etc", "/a") is False
    with pytest.raises(ValueError):
        normalize("relative")


def test_contained_resolves_host_symlinks_only_when_asked(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "out").symlink_to(tmp_path)
    assert contained([str(ws / "out" / "x")], [ws], resolve=False)
    assert not contained([str(ws / "out" / "x")], [ws], resolve=True)
    alias = tmp_path / "alias"
    alias.symlink_to(ws)
    # A root given through a symlink counts in its resolved form too.
    assert contained([str(ws / "a")], [alias], resolve=True)


# --- anchored resolution -------------------------------------------------------------------------


def test_symlinks_inside_stay_usable(tmp_path: Path, resolution: str) -> None:
    ws = tmp_path / "ws"
    (ws / "real").mkdir(parents=True)
    (ws / "real" / "f.txt").write_text("hi")
    (ws / "rel").symlink_to("real")
    (ws / "abs").symlink_to(ws / "real")
    view = local_view(ws)
    for via in ("rel", "abs"):
        fd, where = confine.open_file(view, f"{ws}/{via}/f.txt")
        with os.fdopen(fd, "rb") as fh:
            assert fh.read() == b"hi"
        assert where == f"{ws}/real/f.txt"
        assert confine.write_file(view, f"{ws}/{via}/g.txt", b"x").path == f"{ws}/real/g.txt"


def test_write_through_symlink_out_of_the_workspace_refused(tmp_path: Path, resolution: str) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (ws / "lnk").symlink_to(outside)
    view = local_view(ws)
    for target in (f"{ws}/lnk/x", f"{ws}/lnk/new/dir/x", "/etc/shellrt-confine-test"):
        with pytest.raises(ConfinementError, match="outside the sandbox's writable places"):
            confine.write_file(view, target, b"x", make_parents=True)
    assert list(outside.iterdir()) == [] and sorted(p.name for p in ws.iterdir()) == ["lnk"]


def test_masked_paths_refused_through_any_route(tmp_path: Path, resolution: str) -> None:
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / "secrets" / "key").write_text("k")
    (ws / "alias").symlink_to(ws / "secrets" / "key")
    view = local_view(ws, masked=(str(ws / "secrets"),))
    for path in (f"{ws}/secrets/key", f"{ws}/alias"):
        with pytest.raises(ConfinementError, match="read-denied"):
            confine.open_file(view, path)
    with pytest.raises(ConfinementError, match="read-denied"):
        confine.write_file(view, f"{ws}/secrets/new", b"x")


def test_container_view_maps_and_refuses_the_rest(tmp_path: Path, resolution: str) -> None:
    """Docker-like: only /workspace exists (backed by a host copy); /etc is unreachable, even via a link."""
    copy = tmp_path / "copy"
    (copy / "sub").mkdir(parents=True)
    (copy / "sub" / "a.txt").write_text("a")
    (copy / "to_ws").symlink_to("/workspace/sub")
    (copy / "to_etc").symlink_to("/etc")
    (copy / "to_host").symlink_to(tmp_path)
    view = View([Mount("/workspace", str(copy), writable=True, logical="/original/ws")])
    fd, where = confine.open_file(view, "/workspace/to_ws/a.txt")
    os.close(fd)
    assert where == "/workspace/sub/a.txt"
    assert view.to_logical(where) == "/original/ws/sub/a.txt"
    assert view.from_host(str(copy / "sub")) == "/workspace/sub"
    for path in ("/etc/hostname", "/workspace/to_etc/hostname", "/workspace/to_host/copy/sub/a.txt"):
        with pytest.raises(ConfinementError, match="outside what the file tools can reach in this sandbox"):
            confine.open_file(view, path)
    assert confine.write_file(view, "/workspace/new.txt", b"n").path == "/workspace/new.txt"
    assert (copy / "new.txt").read_bytes() == b"n"


def test_private_tmp_is_the_sandbox_one(tmp_path: Path, resolution: str) -> None:
    """bwrap-like: /tmp is the session's private directory, also when reached through a symlink."""
    ws, private = tmp_path / "ws", tmp_path / "private-tmp"
    ws.mkdir()
    private.mkdir()
    (ws / "t").symlink_to("/tmp/shellrt-confine-probe")
    view = View([Mount("/", "/"), Mount(str(ws), str(ws), writable=True), Mount("/tmp", str(private), writable=True)])
    assert confine.write_file(view, f"{ws}/t", b"p").path == "/tmp/shellrt-confine-probe"
    assert (private / "shellrt-confine-probe").read_bytes() == b"p"
    assert not Path("/tmp/shellrt-confine-probe").exists()


def test_atomic_write_keeps_mode_and_leaves_nothing_on_refusal(tmp_path: Path, resolution: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    f = ws / "run.sh"
    f.write_text("old")
    f.chmod(0o751)
    view = local_view(ws)
    out = confine.write_file(view, str(f), b"new")
    assert not out.created and f.read_bytes() == b"new" and (f.stat().st_mode & 0o777) == 0o751
    with pytest.raises(FileNotFoundError):
        confine.write_file(view, f"{ws}/no/such/dir.txt", b"x")
    with pytest.raises(IsADirectoryError):
        confine.write_file(view, str(ws), b"x")
    assert confine.write_file(view, f"{ws}/a/b/c.txt", b"c", make_parents=True).created
    assert sorted(str(p.relative_to(ws)) for p in ws.rglob("*")) == ["a", "a/b", "a/b/c.txt", "run.sh"]


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_new_files_get_the_mounts_owner_and_replaced_files_keep_theirs(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    view = View([Mount("/workspace", str(copy), writable=True, owner=(65534, 65534))])
    confine.write_file(view, "/workspace/d/new.txt", b"n", make_parents=True)
    assert (copy / "d").stat().st_uid == 65534 and (copy / "d" / "new.txt").stat().st_gid == 65534
    mine = copy / "mine.txt"
    mine.write_text("x")
    os.chown(mine, 1234, 1234)
    confine.write_file(view, "/workspace/mine.txt", b"y")
    assert (mine.stat().st_uid, mine.stat().st_gid) == (1234, 1234) and mine.read_bytes() == b"y"


def test_symlink_loop_is_an_error(tmp_path: Path, resolution: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a").symlink_to("b")
    (ws / "b").symlink_to("a")
    with pytest.raises(ConfinementError, match="too many levels"):
        confine.open_file(local_view(ws), f"{ws}/a")


def test_symlink_swap_race_never_escapes(tmp_path: Path, resolution: str) -> None:
    """A thread swaps d between a directory and a symlink to outside while 300 writes go to d/."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            os.rename(ws / "d", ws / "d.real")
            os.symlink(outside, ws / "d")
            os.unlink(ws / "d")
            os.rename(ws / "d.real", ws / "d")

    view = local_view(ws)
    swapper = threading.Thread(target=swap)
    swapper.start()
    landed, refused = [], 0
    try:
        for n in range(300):
            try:
                landed.append(confine.write_file(view, f"{ws}/d/race_{n}.txt", b"x").path)
            except (ConfinementError, FileNotFoundError):
                refused += 1
    finally:
        stop.set()
        swapper.join()
    assert list(outside.iterdir()) == []
    assert not [p for p in ws.rglob("*") if p.name.endswith(".tmp")]
    assert all(Path(p).is_file() for p in landed), "every success is where it says"
    assert len(landed) + refused == 300


# --- one glob dialect ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("glob", "path", "hit"),
    [
        ("*.{pem,key}", "certs/server.key", True),
        ("*.{pem,key}", "a/b/c.pem", True),
        ("*.{pem,key}", "notes.txt", False),
        ("secrets/**", "secrets/a/b", True),
        ("[!a]*.py", "b.py", True),
        ("[!a]*.py", "a.py", False),
    ],
)
def test_rules_and_tools_share_one_glob_dialect(glob: str, path: str, hit: bool) -> None:
    """``*.{pem,key}`` in ``Read(...)`` and in Glob/Grep means the same files."""
    from shellrt.permissions.globs import glob_matches
    from shellrt.tools._gitignore import GlobList, compile_glob

    tool_pattern = glob if "/" in glob else "**/" + glob
    assert glob_matches(glob, path) is hit
    assert (compile_glob(tool_pattern).match(path) is not None) is hit
    assert (GlobList.parse([glob]).matched(path, is_dir=False) == "ignore") is hit
