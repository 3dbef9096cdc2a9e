"""A per-command bwrap's environment: the command's goes in through an fd, the launchers get a fixed one.

Why: the host starts ``prlimit``, ``nsenter`` and ``bwrap`` before any namespace
exists, and the dynamic loader obeys their environment (``LD_PRELOAD``,
``LD_LIBRARY_PATH``, ``GCONV_PATH``, ``GLIBC_TUNABLES``, ...). Given the
command's environment -- which a batch task file, Inspect's ``exec(env=...)``
or any caller chooses -- a library named there ran on the host, as the
sandbox uid outside its mount and network namespaces, or as root in
``nsenter``. So the launchers get `LAUNCHER_ENV` (plus the run's marker, which
the tree kill looks for), and bwrap sets the command's own environment with
``--clearenv --setenv NAME VALUE ...`` read from a memfd (``--args FD``): never
on a command line, which every host user may list.
"""

from __future__ import annotations

import os

from sandbox.base import ExecRequest

__all__ = ["LAUNCHER_ENV", "env_args_fd", "launcher_request"]

#: The whole environment of the host-side launchers (they need only PATH).
LAUNCHER_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}


def launcher_request(request: ExecRequest) -> ExecRequest:
    """``request`` with the launchers' environment instead of the command's."""
    return request.model_copy(update={"env": dict(LAUNCHER_ENV)})


def env_args_fd(env: dict[str, str]) -> int:
    """A memfd holding ``--clearenv --setenv NAME VALUE ...`` for bwrap's ``--args FD`` (the caller closes it).

    Raises ValueError for a name holding ``=`` or a NUL anywhere, as ``execve`` would: in the
    NUL-separated list a NUL would start another bwrap option.
    """
    words = ["--clearenv"]
    for name, value in env.items():
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ValueError(f"illegal environment variable {name!r}: no '=' in a name, no NUL anywhere")
        words += ["--setenv", name, value]
    fd = os.memfd_create("shellrt-bwrap-env", os.MFD_CLOEXEC)
    try:
        data = b"".join(os.fsencode(w) + b"\0" for w in words)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
