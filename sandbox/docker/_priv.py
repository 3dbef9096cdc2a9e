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
where shellrt itself wrote it (`sandbox._static_build`: its MAC under the uid's keyring secret),
and as the bytes that were checked (the caller writes them to its private I/O directory).
"""

from __future__ import annotations

from importlib import resources

from sandbox import _seccomp
from sandbox._static_build import StaticBuildError, static_program
from sandbox.errors import BackendUnavailableError

__all__ = ["priv_binary"]


def _source() -> bytes:
    """priv.c, preceded by the seccomp filter it loads for every command: bwrap's whole deny list
    (`sandbox._seccomp`). Docker's own profile lets a command set S_ISUID on a workspace file (on a
    bind mount, a set-id program on the host) and, before docker 23, use io_uring (file and socket
    operations no filter sees); the deny list covers both, whatever the daemon's version. Its set-id
    rules alone (``shellrt_setid_filter``) bind the executor too, whose shell is the image's (round 33)."""
    head = "".join(
        f"static const unsigned char {name}[] __attribute__((aligned(8))) = "
        f"{{{', '.join(f'0x{b:02x}' for b in _seccomp.filter_bytes(setid_only))}}};\n"
        for name, setid_only in (("shellrt_command_filter", False), ("shellrt_setid_filter", True))
    )
    return head.encode() + resources.files("sandbox.docker").joinpath("priv.c").read_bytes()


def priv_binary() -> bytes:
    """The built helper's bytes (built and cached on first use, checked as shellrt's own on every
    read from the cache: `sandbox._static_build`; thread-safe)."""
    try:
        return static_program("priv", _source())
    except StaticBuildError as exc:
        raise BackendUnavailableError(
            f"the docker backend needs its small static identity helper (sandbox/docker/priv.c): {exc}"
        ) from None
