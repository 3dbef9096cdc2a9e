"""The executor's identity switch: a tiny static C program (``priv.c``) built on the host on first use.

Why a program of our own: the executor must run under a uid no command has,
keep just the capabilities it needs to start commands as another user, and
start each command with none at all, whatever the image holds (busybox's
``setpriv`` cannot change uids; many images have no ``setpriv`` at all). A
static binary runs in any image. It is built once per source version with the
host's C compiler and cached (``$XDG_CACHE_HOME/shellrt`` or ``~/.cache``, else
the temp dir); without a compiler the docker backend refuses to start and
says what to install.

The helper runs as container root at every start, so a cached one is used only
from a directory that no one but the caller can write, below parents only the
caller or root can write (a sticky ``/tmp`` is fine), and only when the caller
owns it and no one else can write it: ``<tmp>/shellrt-cache-<uid>`` is a name
any local user can create first (red team round 9). When no cache qualifies the
process builds a helper of its own in a fresh private directory.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from importlib import resources
from pathlib import Path

from sandbox import _seccomp
from sandbox.errors import BackendUnavailableError

__all__ = ["priv_binary"]

_lock = threading.Lock()
_built: dict[str, str] = {}


def _source() -> bytes:
    """priv.c, preceded by the seccomp filter it loads for every command: bwrap's whole deny list
    (`sandbox._seccomp`). Docker's own profile lets a command set S_ISUID on a workspace file (on a
    bind mount, a set-id program on the host) and, before docker 23, use io_uring (file and socket
    operations no filter sees); the deny list covers both, whatever the daemon's version."""
    words = ", ".join(f"0x{b:02x}" for b in _seccomp.filter_bytes())
    head = f"static const unsigned char shellrt_command_filter[] __attribute__((aligned(8))) = {{{words}}};\n"
    return head.encode() + resources.files("sandbox.docker").joinpath("priv.c").read_bytes()


def _cache_dirs() -> list[Path]:
    dirs = []
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        dirs.append(Path(xdg) / "shellrt")
    home = os.path.expanduser("~")
    if home and home != "~":
        dirs.append(Path(home) / ".cache" / "shellrt")
    dirs.append(Path(tempfile.gettempdir()) / f"shellrt-cache-{os.getuid()}")
    return dirs


def _untrusted(path: Path, *, regular: bool = False) -> str | None:
    """Why the caller must not trust ``path`` (a directory, or with ``regular`` the helper in
    one), None when only the caller (and root, above it) can have written it."""
    me = os.geteuid()
    st = os.lstat(path)
    kind = stat.S_ISREG(st.st_mode) if regular else stat.S_ISDIR(st.st_mode)
    if not kind or st.st_uid != me or st.st_mode & 0o022:
        return f"{path} is not the caller's own (uid {me}), or others can write it"
    if regular:
        return None
    for parent in path.parents:
        st = os.lstat(parent)
        if st.st_uid not in (0, me) or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
            return f"{parent} is another user's, or others can write it"
    return None


def _compile(src: bytes, dest: Path) -> None:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise BackendUnavailableError(
            "the docker backend needs a C compiler once, to build its small static identity helper "
            "(sandbox/docker/priv.c): install gcc and the static C library (apt-get install gcc libc6-dev)."
        )
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        c_file = Path(tmp) / "priv.c"
        c_file.write_bytes(src)
        out = Path(tmp) / "priv"
        proc = subprocess.run(
            [cc, "-static", "-Os", "-s", "-o", str(out), str(c_file)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode != 0:
            raise BackendUnavailableError(
                "could not build the docker backend's static identity helper (sandbox/docker/priv.c): "
                f"{proc.stderr.strip()[-500:]}. Install gcc and the static C library (libc6-dev)."
            )
        os.chmod(out, 0o755)
        os.replace(out, dest)


def priv_binary() -> str:
    """Path of the built helper (built and cached on first use; thread-safe)."""
    src = _source()
    digest = hashlib.sha256(src).hexdigest()[:16]
    with _lock:
        found = _built.get(digest)
        if found is not None and os.path.exists(found):
            return found
        errors: list[str] = []
        for base in _cache_dirs():
            try:
                base.mkdir(parents=True, exist_ok=True, mode=0o700)
                base = Path(os.path.realpath(base))
                why = _untrusted(base)
                dest = base / f"priv-{digest}"
                if why is None and os.path.lexists(dest):
                    why = _untrusted(dest, regular=True)
                if why is not None:
                    errors.append(f"{base}: not used: {why}")
                    continue
                if not os.path.lexists(dest):
                    _compile(src, dest)
            except OSError as exc:
                errors.append(f"{base}: {exc}")
                continue
            _built[digest] = str(dest)
            return str(dest)
        # Every cache was refused (another user may have made ours first): this process builds its
        # own, in a fresh private directory (not shared, removed at exit).
        try:
            own = Path(tempfile.mkdtemp(prefix="shellrt-priv-"))
            atexit.register(shutil.rmtree, own, True)
            _compile(src, own / "priv")
        except OSError as exc:
            errors.append(f"a private directory: {exc}")
        else:
            _built[digest] = str(own / "priv")
            return str(own / "priv")
        raise BackendUnavailableError(f"no writable cache directory for the docker identity helper: {errors}")
