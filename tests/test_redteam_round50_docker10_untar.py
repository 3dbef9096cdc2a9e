"""Red team round 50, docker10: the export's extraction (`_untar.extract`) fed a hostile tar stream.

The copy-back reads the container's workspace as a tar stream and makes each member below the
destination through anchored directory fds. Two classes were open:

- a sparse member (GNU sparse, PAX 0.0/0.1/1.0) declares a size whose holes the stream never
  carries: the bound counts the archive's bytes, so ~10 KB of archive had the host generate and
  scan gigabytes of zeros (6 GiB in 29 s) and leave files of that apparent size, up to a million of
  them. docker's archives have no sparse members: one is refused, its holes never read.
- a member the host cannot make (a name component past NAME_MAX, a host directory the caller may
  not write, an immutable file) raised a bare ``OSError``: the export stopped there (everything
  after it left out, no `WorkspaceExportError` for the caller to report) and the command's name
  went raw into the message. Now that member is refused, the rest extracted, and the error names it
  escaped.

Real files below a temp dir; the streams are built here as a hostile one would be.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

from sandbox.docker._untar import ChunkReader, WorkspaceExportError, extract

_DECLARED = 64 << 20  # a sparse member's declared size: 64 MiB of holes, none of it in the stream


def _stream(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _regular(name: str, data: bytes = b"kept\n") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    return info, data


def _sparse(name: str) -> tuple[tarfile.TarInfo, None]:
    """A PAX 0.1 sparse member: one empty data region, ``_DECLARED`` bytes of holes."""
    info = tarfile.TarInfo(name)
    info.size, info.mode = 0, 0o644
    info.pax_headers = {"GNU.sparse.map": "0,0", "GNU.sparse.size": str(_DECLARED), "GNU.sparse.numblocks": "1"}
    return info, None


def _extract(tmp_path: Path, data: bytes) -> tuple[Path, BaseException | None]:
    dest = tmp_path / "dest"
    dest.mkdir()
    fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        extract(ChunkReader(iter([data]), 1 << 30), fd, lambda name: name)
    except Exception as exc:  # the assertions below say which kind is right
        return dest, exc
    finally:
        os.close(fd)
    return dest, None


def _apparent(dest: Path) -> int:
    return sum(os.lstat(Path(top) / name).st_size for top, _dirs, files in os.walk(dest) for name in files)


def test_a_sparse_member_is_refused_its_holes_never_made(tmp_path: Path) -> None:
    data = _stream([_sparse("holes-a"), _sparse("holes-b"), _regular("after")])
    dest, exc = _extract(tmp_path, data)
    # Bound by bytes: what the host made is at most what the stream carried.
    made = _apparent(dest)
    assert made <= len(data), f"{len(data)} bytes of archive made {made} bytes of files on the host"
    assert not (dest / "holes-a").exists() and not (dest / "holes-b").exists()
    assert (dest / "after").read_bytes() == b"kept\n"
    assert isinstance(exc, WorkspaceExportError), exc
    assert {name for name, _why in exc.refused} == {"holes-a", "holes-b"}


@pytest.mark.parametrize(
    "hostile",
    [
        "\x1b]0;owned\x07" + "a" * 300,  # a component past NAME_MAX, a terminal escape in front
        "dir/\x1b[2J" + "b" * 300,  # one below a directory the archive made
    ],
    ids=["top", "below"],
)
def test_a_member_the_host_cannot_make_is_refused_and_the_rest_extracted(tmp_path: Path, hostile: str) -> None:
    members = [_regular(hostile), _regular("after")]
    if hostile.startswith("dir/"):
        info = tarfile.TarInfo("dir")
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        members.insert(0, (info, None))
    dest, exc = _extract(tmp_path, _stream(members))
    assert isinstance(exc, WorkspaceExportError), f"not the export's error: {exc!r:.200}"
    assert [name for name, _why in exc.refused] == [hostile]
    assert (dest / "after").read_bytes() == b"kept\n", "the export stopped at the member it could not make"
    assert "\x1b" not in str(exc) and "\x07" not in str(exc), "the command's name went raw into the message"


@pytest.mark.parametrize("mtime", ["1e300", "nan", "-99999999999999999999999"])
def test_a_modification_time_no_call_takes_is_refused_and_the_rest_extracted(tmp_path: Path, mtime: str) -> None:
    """A PAX ``mtime`` out of ``time_t``'s range or not a number raised OverflowError or ValueError out
    of the extraction (a directory's at the very end, after its members were written)."""
    bad_file, _ = _regular("late-file")
    bad_file.pax_headers = {"mtime": mtime}
    bad_dir = tarfile.TarInfo("late-dir")
    bad_dir.type, bad_dir.mode, bad_dir.pax_headers = tarfile.DIRTYPE, 0o755, {"mtime": mtime}
    dest, exc = _extract(tmp_path, _stream([(bad_file, b"kept\n"), (bad_dir, None), _regular("after")]))
    assert isinstance(exc, WorkspaceExportError), f"not the export's error: {exc!r:.200}"
    assert sorted(name for name, _why in exc.refused) == ["late-dir", "late-file"]
    assert (dest / "after").read_bytes() == b"kept\n"


_AS_NOBODY = """
import io, json, os, sys, tarfile, types
# The packages' __init__ import the docker SDK and anyio, from a site-packages uid 65534 may not
# read: the two packages are stood in for, their modules loaded from the checkout.
for name, where in (("sandbox", sys.argv[2]), ("sandbox.docker", sys.argv[2] + "/docker")):
    package = types.ModuleType(name)
    package.__path__ = [where]
    sys.modules[name] = package
from sandbox.docker._untar import ChunkReader, WorkspaceExportError, extract
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
    for name in ("ro/\\x1b]0;owned\\x07new", "after"):
        info = tarfile.TarInfo(name)
        info.size = 5
        tar.addfile(info, io.BytesIO(b"kept\\n"))
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
try:
    extract(ChunkReader(iter([buf.getvalue()]), 1 << 30), fd, lambda name: name)
    print(json.dumps({"error": None}))
except WorkspaceExportError as exc:
    print(json.dumps({"error": "export", "refused": [n for n, _ in exc.refused], "text": str(exc)}))
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__, "text": str(exc)}))
"""


def test_a_host_directory_the_caller_may_not_write_refuses_its_member_only() -> None:
    """The reachable form, a non-root caller: the host's workspace holds a mode 0555 directory (a Go
    module cache's are), the command (its copy's owner) makes it writable and adds a file there.
    The export's write into the host's 0555 directory failed with a bare ``PermissionError`` naming
    the file raw, and nothing after it came out."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root to give the tree away and setpriv to extract as uid 65534")
    # Not below pytest's tmp_path: its root is 0700, uid 65534 could not reach the tree.
    base = Path(tempfile.mkdtemp(prefix="r50-docker10-ro-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        said = _extract_as_nobody(base)
    finally:
        shutil.rmtree(base)
    assert said["error"] == "export", f"not the export's error: {said}"
    assert said["refused"] == ["ro/\x1b]0;owned\x07new"], said
    assert "\x1b" not in said["text"], said
    assert said["after"] == "kept\n", said


def _extract_as_nobody(base: Path) -> dict[str, object]:
    base.chmod(0o755)
    dest = base / "dest"
    (dest / "ro").mkdir(parents=True)
    for path in (dest, dest / "ro"):
        os.chown(path, 65534, 65534)
    (dest / "ro").chmod(0o555)
    done = subprocess.run(
        [
            *("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"),
            *(sys.executable, "-I", "-c", _AS_NOBODY, str(dest), str(Path(__file__).resolve().parents[1] / "sandbox")),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=base,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said: dict[str, object] = json.loads(done.stdout)
    with contextlib.suppress(OSError):
        said["after"] = (dest / "after").read_text()
    return said
