"""A bwrap session command's init in C (``zinit.c``): built on the host on first use, handed to the zygote sealed.

Why: back to back, a session command costs what its CPU costs, and most of it was the
zygote cloning its Python process per command (page tables, copy-on-write faults,
re-faulted library text, the init's Python; docs/performance.md). The zygote now
``posix_spawn``s (a vfork: nothing of it copied) this small static program once, as a
fork server, which clones each command's init into fresh pid, mount and IPC namespaces;
the init does there, in the same order, what the Python init did.

Built once per source version with the host's C compiler, cached as the docker
backend's helper is (`sandbox._static_build`: used only with the MAC shellrt wrote), and given to each zygote as a sealed
memfd: nothing inside the sandbox can change the program later inits run, whatever
it may write. Without a compiler (or with ``SHELLRT_BWRAP_INIT=python``) the zygote
keeps its Python init; which one runs is logged (`init_kind`).
"""

from __future__ import annotations

import fcntl
import logging
import os
import sys
import threading
from importlib import resources
from pathlib import Path

from sandbox._static_build import StaticBuildError, static_program

__all__ = ["INIT_ENV", "encode_request", "init_kind", "init_program_fd", "starter_program_fd"]

_log = logging.getLogger(__name__)

#: ``c`` (the default: the C init when it can be built) or ``python`` (the zygote's own init).
INIT_ENV = "SHELLRT_BWRAP_INIT"
_MFD_EXEC = 0x10  # Linux 6.3+: an executable memfd (older kernels refuse the flag: retried without)
_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE

_lock = threading.Lock()
#: The built program's bytes, or why there is none (decided once per process).
_program: bytes | str | None = None
#: The same program for one bwrap per command's starter (``zinit enter``), whatever `INIT_ENV` says.
_starter: bytes | str | None = None


def _source() -> bytes:
    return resources.files("sandbox").joinpath("zinit.c").read_bytes()


def _build() -> bytes | str:
    """The program's bytes (built and cached on first use, read once from a cache only shellrt can
    have written: `sandbox._static_build`), or why there is none."""
    try:
        return static_program("zinit", _source(), opt="-O2")
    except (StaticBuildError, OSError) as exc:
        return str(exc)


def _program_or_reason() -> bytes | str:
    global _program
    with _lock:
        if _program is None:
            wanted = os.environ.get(INIT_ENV, "c")
            if wanted not in ("c", "python"):
                _log.warning(
                    "%s=%r is neither 'c' nor 'python': using the C init when it builds", INIT_ENV, wanted
                )
            built = f"{INIT_ENV}=python" if wanted == "python" else _build()
            if isinstance(built, str) and wanted != "python":
                built = f"{built} (the C init is faster; the Python one is used)"
            _program = built
            if isinstance(_program, str):
                _log.info("bwrap session inits: Python (the zygote's own), because %s", _program)
            else:
                _log.info("bwrap session inits: C (sandbox/zinit.c, %d bytes)", len(_program))
        return _program


def init_kind() -> str:
    """``"c"`` or ``"python"``: which init the next bwrap session's commands get (for operators)."""
    return "python" if isinstance(_program_or_reason(), str) or not _memfd_exec_allowed() else "c"


def _memfd_exec_allowed() -> bool:
    """Whether this kernel runs programs from a memfd (``vm.memfd_noexec`` 2 forbids it)."""
    try:
        return Path("/proc/sys/vm/memfd_noexec").read_text().strip() in ("0", "1")
    except OSError:
        return True  # before Linux 6.3: no such setting, memfds are executable


def init_program_fd() -> int | None:
    """A new sealed, close-on-exec memfd holding the C init, or None: the zygote uses its Python init.

    The caller owns the fd (pass it to the zygote, then close it).
    """
    program = _program_or_reason()
    if isinstance(program, str) or not _memfd_exec_allowed():
        return None
    return _sealed(program)


def starter_program_fd() -> int | str:
    """A new sealed, close-on-exec memfd holding the program (its ``enter`` mode starts one bwrap per
    command: `sandbox._bwrap_starter`), or why there is none. The caller owns the fd."""
    global _starter
    with _lock:
        if _starter is None:
            _starter = _build()
        program = _starter
    if isinstance(program, str):
        return program
    if not _memfd_exec_allowed():
        return "vm.memfd_noexec forbids running a program from a memfd"
    return _sealed(program)


def _sealed(program: bytes) -> int:
    """``program`` in a new memfd, sealed: nothing can change it once passed on."""
    flags = os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING
    try:
        fd = os.memfd_create("shellrt-init", flags | _MFD_EXEC)
    except OSError:
        fd = os.memfd_create("shellrt-init", flags)
    try:
        view = memoryview(program)
        while view:
            view = view[os.write(fd, view) :]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    except BaseException:
        os.close(fd)
        raise
    return fd


def encode_request(argv: list[str], cwd: str, env: dict[str, str]) -> bytes:
    """A command for the C init: cwd, the argument count, the arguments, then ``NAME=VALUE``
    entries, each NUL-terminated (none may hold a NUL: exec could not pass it either)."""
    fields = [cwd, str(len(argv)), *argv, *(f"{name}={value}" for name, value in env.items())]
    joined = "\0".join(fields)  # encoded once, as os.fsencode would each field (a third of the time)
    if joined.count("\0") != len(fields) - 1:
        raise ValueError("an argument, the working directory or an environment entry holds a NUL byte")
    return joined.encode(_FS_ENCODING, _FS_ERRORS) + b"\0"


_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
