"""Small static C programs of ours, built on the host once and cached where only shellrt wrote them.

Two programs run with more power than any command: the docker executor's identity switch
(``docker/priv.c``, container root at every start) and the bwrap session's init
(``zinit.c``, the zygote's privileges in the sandbox's namespaces). A cached copy is
therefore used only from a directory no one but the caller can write, below parents only
the caller or root can write (a sticky ``/tmp`` is fine), only when the caller owns it
and no one else can write it (``<tmp>/shellrt-cache-<uid>`` is a name any local user can
create first: red team round 9), and only when its HMAC-SHA256 under the uid's keyring
secret (`sandbox._keyring`) matches: a sandboxed command can create a cache a later process
uses, owned by the caller on the host (red team round 28, static), but cannot read the key.
The bytes are read once, checked and returned: nothing is read again after the check. No key,
or no cache qualifies: the process builds its own copy and keeps the bytes. A build's source,
object and program never have a name another process can open (`_compile`: a pipe and memfds),
and the compiler gets no environment of the caller's but `host_path` (round 29), and is none a
command can change, nor searches a directory one can write (`_compiler`, round 30). One function for both programs, so the checks cannot
drift apart.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import stat
import subprocess
import tempfile
import threading
from pathlib import Path

from sandbox import _keyring
from sandbox._compiler import CompilerRefused, check_search_dirs, find_compiler
from sandbox._hostpath import host_path

__all__ = ["StaticBuildError", "cache_dirs", "cache_name", "static_program", "store"]

INSTALL_HINT = "install gcc and the static C library (apt-get install gcc libc6-dev)"

_lock = threading.Lock()
#: ``name-digest`` -> the checked program's bytes (per process).
_built: dict[str, bytes] = {}
#: Whether this process said it has no keyring secret (said once).
_said_no_key: list[str] = []
_log = logging.getLogger(__name__)


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
    """Never a compiler a sandboxed command wrote or can reach (`_compiler.find_compiler`)."""
    try:
        return find_compiler()
    except CompilerRefused as exc:
        raise StaticBuildError(f"{exc}: {INSTALL_HINT}") from None


def _compile(name: str, src: bytes, opt: str) -> bytes:
    """The program's bytes as the compiler made them, where no one else can change them: the source
    goes in through a pipe, the object and the program come out into memfds (``/proc/self/fd/N``,
    names no other process can open). A build directory below ``TMPDIR`` is reachable by a command
    of a sandbox whose writable root covers it, which swapped the source or the output before its
    MAC (red team round 29, static). The compiler's own temp files (GNU collect2 makes two it never
    fills on ELF) go to a fresh private directory that is also its cwd (no ``"..."`` include of the
    caller's cwd); nothing in it is read back."""
    cc = _compiler()
    obj = os.memfd_create(f"shellrt-{name}.o", os.MFD_CLOEXEC)
    out = os.memfd_create(f"shellrt-{name}", os.MFD_CLOEXEC)
    try:
        with tempfile.TemporaryDirectory(prefix=f"shellrt-{name}-") as tmp:
            env = _compiler_env(tmp)
            try:
                check_search_dirs(cc, env, tmp)
            except CompilerRefused as exc:
                raise StaticBuildError(str(exc)) from None
            # -pipe: cc1's assembly goes to the assembler through a pipe, not a temp file.
            compile_ = [cc, "-pipe", opt, "-c", "-x", "c", "-", "-o", f"/proc/self/fd/{obj}"]
            _run_cc(name, compile_, src, (obj,), tmp, env)
            link = [cc, "-static", "-s", "-o", f"/proc/self/fd/{out}", f"/proc/self/fd/{obj}"]
            _run_cc(name, link, b"", (obj, out), tmp, env)
        program = os.pread(out, os.fstat(out).st_size, 0)
    finally:
        os.close(obj)
        os.close(out)
    if program[:4] != b"\x7fELF":
        raise StaticBuildError(f"{cc} built no ELF program from {name}.c ({INSTALL_HINT})")
    return program


def _compiler_env(tmp: str) -> dict[str, str]:
    """The compiler's whole environment: `host_path` and its private temp dir, nothing else of the
    caller's. The driver looks its helpers up on ``PATH`` (gcc: ``as``, collect2: ``ld``): one a
    command planted in a writable root's bin/ ran on the host; and ``CPATH``, ``LIBRARY_PATH``,
    ``COMPILER_PATH``, ``GCC_EXEC_PREFIX``, ``LD_LIBRARY_PATH`` (an environment activated in a
    workspace) put a command's header, library or helper into the program (red team round 29)."""
    return {"PATH": host_path(), "TMPDIR": tmp, "LC_ALL": "C"}


def _run_cc(
    name: str, argv: list[str], stdin: bytes, fds: tuple[int, ...], cwd: str, env: dict[str, str]
) -> None:
    """One compiler run; StaticBuildError with its message when it fails."""
    proc = subprocess.run(argv, input=stdin, pass_fds=fds, cwd=cwd, env=env, capture_output=True, timeout=120)
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()[-500:]
        raise StaticBuildError(f"{argv[0]} could not build {name}.c: {err} ({INSTALL_HINT})")


def _read_regular(path: Path) -> bytes:
    """A regular file's bytes, read through one descriptor (never a link)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise OSError(f"{path} is not a regular file")
        return fh.read()


def cache_name(name: str, src: bytes) -> str:
    """The cached program's file name: one per source version."""
    return f"{name}-{hashlib.sha256(src).hexdigest()[:16]}"


def _mac(secret: bytes, key: str, program: bytes) -> bytes:
    """The program's HMAC, bound to its cache name (no other version's file passes for it)."""
    return hmac.new(secret, key.encode() + b"\0" + program, hashlib.sha256).hexdigest().encode()


def _mac_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".mac")


def _checked(dest: Path, secret: bytes) -> bytes | None:
    """The cached program's bytes when shellrt wrote them (its MAC matches), else None."""
    program = _read_regular(dest)
    try:
        mac = _read_regular(_mac_path(dest))
    except OSError:
        return None  # missing, a link, a directory: no MAC (the program is built again over it)
    return program if hmac.compare_digest(mac, _mac(secret, dest.name, program)) else None


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """``data`` at ``path``, replaced whole (a fresh file of ours, renamed over what was there)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            os.fchmod(fh.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def store(dest: Path, program: bytes) -> None:
    """Cache ``program`` (built or vouched for by this process) at ``dest`` with its MAC; raises
    StaticBuildError when the uid has no keyring secret (nothing cached can be trusted then)."""
    secret = _keyring.secret()
    if isinstance(secret, str):
        raise StaticBuildError(f"cannot vouch for a cached program: {secret}")
    _write_new(dest, program, 0o755)
    _write_new(_mac_path(dest), _mac(secret, dest.name, program), 0o644)


def _own_dir(base: Path) -> Path:
    """``base`` made if missing and resolved; OSError when it is not the caller's alone."""
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    base = Path(os.path.realpath(base))
    why = _untrusted(base)
    if why is not None:
        raise OSError(f"not used: {why}")
    return base


def _from_caches(name: str, src: bytes, opt: str, key: str, secret: bytes, errors: list[str]) -> bytes:
    """The program from the first usable cache, built (once) and stored there when it has none
    that shellrt wrote; built privately when no cache can be used."""
    built: bytes | None = None
    for base in cache_dirs():
        try:
            base = _own_dir(base)
            dest = base / key
            if os.path.lexists(dest):
                why = _untrusted(dest, regular=True)
                if why is not None:
                    raise OSError(f"not used: {why}")
                checked = _checked(dest, secret)
                if checked is not None:
                    return checked
                _log.warning("%s was not written by shellrt (no matching MAC): building it again", dest)
            if built is None:
                built = _compile(name, src, opt)
            store(dest, built)
            return built
        except (OSError, subprocess.SubprocessError) as exc:
            errors.append(f"{base}: {exc}")
    return built if built is not None else _compile(name, src, opt)


def static_program(name: str, src: bytes, *, opt: str = "-Os") -> bytes:
    """``src`` built into a static program (once per source version; thread-safe): its bytes, read
    once from a cache whose MAC shows shellrt wrote it, or built by this process."""
    key = cache_name(name, src)
    with _lock:
        found = _built.get(key)
        if found is not None:
            return found
        errors: list[str] = []
        secret = _keyring.secret()
        try:
            if isinstance(secret, str):
                if not _said_no_key:
                    _said_no_key.append(secret)
                    _log.warning(
                        "static programs are built per process, not cached: %s (slower start, as safe)",
                        secret,
                    )
                program = _compile(name, src, opt)
            else:
                program = _from_caches(name, src, opt, key, secret, errors)
        except (OSError, subprocess.SubprocessError) as exc:
            errors.append(f"a private directory: {exc}")
            raise StaticBuildError(f"no usable cache directory for {name}: {'; '.join(errors)}") from None
        _built[key] = program
        return program
