"""Asking the sandbox itself whether a directory can be a command's cwd.

Outside the writable roots the host cannot tell what a confined sandbox sees
(bwrap's private ``/tmp`` and its masks, a container's own file system), so
the same `chdir` a command would do is tried first with a no-op: the sandbox's
shell started in that directory with ``:`` as its script. It succeeds exactly
when the command's own start would; its failure becomes a
`WorkingDirectoryError` instead of a command "exiting 1" with a message on
its stderr. One extra start (a few ms) for such directories only.
"""

from __future__ import annotations

import re

import anyio

from sandbox import ExecRequest, ExitStatus, SandboxBackend, SandboxExecError, UnsupportedRequestError
from shellrt.supervisor.errors import WorkingDirectoryError
from shellrt.supervisor.text import safe_decode, shown_dir

__all__ = ["probe_cwd", "unenterable"]

#: What a start that could not enter its directory prints first (the zygote's and zinit's
#: "cannot enter the working directory", bwrap's "Can't chdir"): a cheap filter before the probe.
_ENTRY_FAILED = re.compile(rb"(?i)working directory|chdir")
#: How much of a failed command's first output the filter looks at.
ENTRY_HEAD_BYTES = 1024

#: The probe prints nothing itself; what a backend prints about a failed chdir is short.
_MAX_REPORT = 4096
_PROBE_TIMEOUT_S = 30.0


async def probe_cwd(backend: SandboxBackend, path: str, *, env: dict[str, str], user: str | None) -> None:
    """Raise `WorkingDirectoryError` unless a command started in ``path`` (as ``user``) would get there."""
    request = ExecRequest(
        argv=(backend.shell_path, "-c", ":"), cwd=path, env=env, merge_stderr=True, user=user
    )
    try:
        process = await backend.exec(request)
    except UnsupportedRequestError:
        raise  # about the user, not the directory
    except SandboxExecError as exc:  # docker: the executor could not enter it
        raise WorkingDirectoryError(f"cwd {path} cannot be used in the sandbox: {exc}") from exc
    report = bytearray()
    try:
        with anyio.fail_after(_PROBE_TIMEOUT_S):
            try:
                while len(report) < _MAX_REPORT:
                    report += await process.stdout.receive(_MAX_REPORT)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            status = await process.wait()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await process.kill()
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await process.stdout.aclose()
    if status.exit_code != 0 or status.sandbox_failure:
        why = (
            safe_decode(bytes(report[:_MAX_REPORT])).strip()
            or status.sandbox_failure
            or (f"exit status {status.exit_code}")
        )
        raise WorkingDirectoryError(
            f"cwd {shown_dir(path)} cannot be used in the sandbox ({why}); create it first or "
            "pass a directory the sandbox can see"
        )


async def unenterable(
    backend: SandboxBackend,
    path: str,
    status: ExitStatus | None,
    head: bytes,
    *,
    env: dict[str, str],
    user: str | None,
) -> str | None:
    """Why the session's cwd ``path`` cannot be entered in the sandbox, when the command started there
    failed as a start that could not enter it does (else None).

    The host judges a directory with its own eyes (root enters a 0000 directory the sandbox's user
    cannot); the sandbox disagreeing made every later command fail to start, and no command could
    ``cd`` out (red team round 13). So a failed command whose first output speaks of its working
    directory makes the sandbox itself judge (`probe_cwd`): what the command printed only decides
    whether to ask, never the answer.
    """
    if status is None or status.exit_code == 0 or status.cwd is not None or status.sandbox_failure:
        return None
    if not _ENTRY_FAILED.search(head[:ENTRY_HEAD_BYTES]):
        return None
    try:
        await probe_cwd(backend, path, env=env, user=user)
    except WorkingDirectoryError as exc:
        return str(exc)
    except UnsupportedRequestError:
        return None
    return None
