"""Small static C programs of ours, built on the host once and cached where only the caller wrote them.

Two programs run with more power than any command: the docker executor's identity switch
(``docker/priv.c``, container root at every start) and the bwrap session's init
(``zinit.c``, the zygote's privileges in the sandbox's namespaces). A cached copy is
therefore used only from a directory no one but the caller can write, below parents only
the caller or root can write (a sticky ``/tmp`` is fine), and only when the caller owns it
and no one else can write it: ``<tmp>/shellrt-cache-<uid>`` is a name any local user can
create first (red team round 9). When no cache qualifies the process builds its own copy
in a fresh private directory (removed at exit). One function for both programs, so the
checks cannot drift apart (the second program first copied the cache code without them).
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
from pathlib import Path

from sandbox._hostpath import host_which

__all__ = ["StaticBuildError", "cache_dirs", "static_program"]

INSTALL_HINT = "install gcc and the static C library (apt-get install gcc libc6-dev)"

_lock = threading.Lock()
#: ``name-digest`` -> the built program's path (per process).
_built: dict[str, str] = {}


class StaticBuildError(RuntimeError):
    """The program cannot be built here; the message says why and what to install."""


def cache_dirs() -> list[Path]:
    """Where built programs are cached, most preferred first (the runtime masks these from commands)."""
    dirs = []
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        dirs.append(Path(xdg) / "shellrt")
    home = os.path.expanduser("~")
    if home and home != "~":
        dirs.append(Path(home) / ".cache" / "shellrt")
    dirs.append(Path(tempfile.gettempdir()) / f"shellrt-cache-{os.getuid()}")
    return dirs


def _untrusted(path: Path, *, regular: bool = False) -> str | None:
    """Why the caller must not trust ``path`` (a directory, or with ``regular`` a program in
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


def _compiler() -> str:
    named = os.environ.get("CC")
    # Never a compiler a sandboxed command wrote (a PATH entry in a workspace): it would run on the host.
    cc = host_which(named) if named else host_which("cc") or host_which("gcc") or host_which("clang")
    if cc is None:
        raise StaticBuildError(
            f"no C compiler{f' ($CC={named!r} not found)' if named else ''}: {INSTALL_HINT}"
        )
    return cc


def _compile(name: str, src: bytes, dest: Path, opt: str) -> None:
    cc = _compiler()
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        c_file = Path(tmp) / f"{name}.c"
        c_file.write_bytes(src)
        out = Path(tmp) / name
        proc = subprocess.run(
            [cc, "-static", opt, "-s", "-o", str(out), str(c_file)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode != 0:
            raise StaticBuildError(
                f"{cc} could not build {name}.c: {proc.stderr.strip()[-500:]} ({INSTALL_HINT})"
            )
        os.chmod(out, 0o755)
        os.replace(out, dest)


def static_program(name: str, src: bytes, *, opt: str = "-Os") -> Path:
    """``src`` built into a static program (once per source version; thread-safe): its path, in a
    cache only the caller can have written, or in a private directory of this process."""
    key = f"{name}-{hashlib.sha256(src).hexdigest()[:16]}"
    with _lock:
        found = _built.get(key)
        if found is not None and os.path.exists(found):
            return Path(found)
        errors: list[str] = []
        for base in cache_dirs():
            try:
                base.mkdir(parents=True, exist_ok=True, mode=0o700)
                base = Path(os.path.realpath(base))
                why = _untrusted(base)
                dest = base / key
                if why is None and os.path.lexists(dest):
                    why = _untrusted(dest, regular=True)
                if why is not None:
                    errors.append(f"{base}: not used: {why}")
                    continue
                if not os.path.lexists(dest):
                    _compile(name, src, dest, opt)
            except (OSError, subprocess.SubprocessError) as exc:
                errors.append(f"{base}: {exc}")
                continue
            _built[key] = str(dest)
            return dest
        # Every cache was refused (another user may have made ours first): build a copy of our own.
        try:
            own = Path(tempfile.mkdtemp(prefix=f"shellrt-{name}-"))
            atexit.register(shutil.rmtree, own, True)
            _compile(name, src, own / name, opt)
        except (OSError, subprocess.SubprocessError) as exc:
            errors.append(f"a private directory: {exc}")
        else:
            _built[key] = str(own / name)
            return own / name
        raise StaticBuildError(f"no usable cache directory for {name}: {'; '.join(errors)}")
