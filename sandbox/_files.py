"""File transfer through the sandbox itself: `SandboxBackend.read_file` / `write_file`.

Why through ``exec`` and not the host filesystem: the sandbox is the boundary.
A file read or written by a tiny POSIX ``sh`` script running *inside* the
sandbox reaches exactly what a command could reach there, on every backend
(a container's own filesystem, bwrap's read-only root and masked paths, the
caller's identity), so this API can never be a way around the policy. It needs
only ``/bin/sh``, ``cat`` and ``mkdir -p`` (busybox images are fine).

Why exit codes: the script tells a missing file, a directory, refused access
and a non-directory on the path apart by its own exit codes (below), decided
with ``test`` before anything is opened, so nothing parses an error text whose
wording depends on the locale or the image's tools. Bytes travel raw over the
process's stdin/stdout: no base64, no size limit of the transport.
"""

from __future__ import annotations

import errno

from sandbox._collect import Collected, run_collected
from sandbox.base import ExecRequest, SandboxBackend
from sandbox.errors import FileTooLargeError, FileTransferError

__all__ = ["DEFAULT_MAX_READ_BYTES", "read_file", "write_file"]

#: `read_file`'s default cap (Inspect's default read limit too).
DEFAULT_MAX_READ_BYTES = 100 * 1024 * 1024

_SH = "/bin/sh"
_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"}
_NAME = "shellrt-file"

_NOT_FOUND, _IS_DIR, _DENIED, _NOT_DIR, _NOT_REGULAR = 80, 81, 82, 83, 84

# $1: the path. A missing path is told apart from one whose parent is not a
# directory (83) or cannot be searched (82); only regular files are read (a FIFO
# or a device would block or never end). The shell execs cat rather than forking
# it: a command that leaves no child is several times cheaper to finish on every backend.
_READ = """
p=$1
case $p in */*) d=${p%/*}; [ -n "$d" ] || d=/ ;; *) d=. ;; esac
if [ -d "$p" ]; then exit 81; fi
if [ ! -e "$p" ]; then
  if [ -e "$d" ] && [ ! -d "$d" ]; then exit 83; fi
  if [ -d "$d" ] && [ ! -x "$d" ]; then exit 82; fi
  exit 80
fi
if [ ! -f "$p" ]; then exit 84; fi
if [ ! -r "$p" ]; then exit 82; fi
exec cat -- "$p"
"""

# $1: the path. Parent directories are made; when that fails, the nearest
# existing ancestor says why (not a directory: 83, else no permission: 82). A
# redirection that fails after these checks (a race) exits non-zero with the shell's message.
_WRITE = """
p=$1
case $p in */*) d=${p%/*}; [ -n "$d" ] || d=/ ;; *) d=. ;; esac
if [ -d "$p" ]; then exit 81; fi
if [ ! -d "$d" ]; then
  if ! mkdir -p -- "$d" 2>/dev/null; then
    q=$d
    while [ ! -e "$q" ]; do
      case $q in */*) q=${q%/*}; [ -n "$q" ] || q=/ ;; *) q=. ;; esac
    done
    if [ ! -d "$q" ]; then exit 83; fi
    exit 82
  fi
fi
if [ -e "$p" ] && [ ! -w "$p" ]; then exit 82; fi
if [ ! -e "$p" ] && [ ! -w "$d" ]; then exit 82; fi
exec cat > "$p"
"""


def _request(backend: SandboxBackend, script: str, path: str, *, stdin: bool) -> ExecRequest:
    if not path or "\0" in path:
        raise ValueError(f"not a usable file path: {path!r}")
    # A relative path is relative to the workspace; "-x" must not read as an option to test.
    safe = path if path.startswith(("/", "./")) else "./" + path
    return ExecRequest(
        argv=(_SH, "-c", script, _NAME, safe), cwd=backend.workspace, env=dict(_ENV), stdin=stdin
    )


def _raise_for(result: Collected, path: str, action: str) -> None:
    """Turn the script's exit code into the matching OS error (or `FileTransferError`)."""
    status = result.status
    if status.sandbox_failure is not None:
        raise FileTransferError(f"cannot {action} {path}: the sandbox failed ({status.sandbox_failure})")
    code = status.exit_code
    if code == 0:
        return
    if code == _NOT_FOUND:
        raise FileNotFoundError(errno.ENOENT, f"No such file or directory in the sandbox: {path}", path)
    if code == _IS_DIR:
        raise IsADirectoryError(errno.EISDIR, f"Is a directory, not a file: {path}", path)
    if code == _DENIED:
        raise PermissionError(
            errno.EACCES,
            f"Permission denied: the sandbox's user may not {action} {path} (or the filesystem is read-only there)",
            path,
        )
    if code == _NOT_DIR:
        raise NotADirectoryError(errno.ENOTDIR, f"A part of the path is not a directory: {path}", path)
    if code == _NOT_REGULAR:
        raise FileTransferError(f"cannot {action} {path}: not a regular file (a device, FIFO or socket)")
    detail = result.stderr.decode(errors="replace").strip() or f"exit code {code}"
    raise FileTransferError(f"cannot {action} {path}: {detail}")


async def read_file(
    backend: SandboxBackend,
    path: str,
    *,
    max_bytes: int = DEFAULT_MAX_READ_BYTES,
    timeout_s: float | None = None,
) -> bytes:
    """The bytes of ``path`` as the sandbox sees it (relative: to the workspace).

    Raises `FileNotFoundError`, `IsADirectoryError`, `NotADirectoryError`,
    `PermissionError`, `FileTooLargeError` (more than ``max_bytes``; nothing is
    returned), `FileTransferError`, or `TimeoutError` after ``timeout_s``.
    """
    if max_bytes < 0:
        raise ValueError("max_bytes must be >= 0")
    result = await run_collected(
        backend,
        _request(backend, _READ, path, stdin=False),
        limit=max_bytes,
        keep="head",
        stop_on_overflow=True,
        timeout_s=timeout_s,
    )
    if result.stdout_overflow:
        raise FileTooLargeError(
            f"{path} is larger than the read limit of {max_bytes} bytes; read it in parts "
            f"(e.g. `head -c`/`tail -c` through exec) or raise max_bytes",
            max_bytes,
        )
    _raise_for(result, path, "read")
    return result.stdout


async def write_file(
    backend: SandboxBackend, path: str, data: bytes, *, timeout_s: float | None = None
) -> None:
    """Write ``data`` to ``path`` inside the sandbox (relative: to the workspace), making parent dirs.

    An existing file is replaced in place (its mode and owner stay). Raises
    `IsADirectoryError`, `NotADirectoryError`, `PermissionError`,
    `FileTransferError`, or `TimeoutError` after ``timeout_s``.
    """
    result = await run_collected(
        backend,
        _request(backend, _WRITE, path, stdin=True),
        stdin_data=bytes(data),
        limit=64 * 1024,
        timeout_s=timeout_s,
    )
    _raise_for(result, path, "write")
