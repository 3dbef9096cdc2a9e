"""Checks of an exec request the host makes before anything reaches the container.

Two kinds of request would otherwise fail late and obscurely inside it:

* a per-call ``user`` that is not a user spec at all, or names the executor's
  own reserved id (names are resolved inside, by the executor, from the
  image's ``/etc/passwd``: the host cannot see them);
* an argv (with its environment) the kernel's ``execve`` refuses: one string
  above ``MAX_ARG_STRLEN`` or all of them above ``ARG_MAX``. Inside, that is
  only ``Argument list too long`` from the helper after the command was
  reported started; here it is a `SandboxExecError` that says the limit and
  what to do instead;
* a working directory that is not absolute: the runner compares the directory it
  entered (getcwd) with the path sent, so it gets the path normalized
  (`container_cwd`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence

from sandbox.docker._recycle import EXECUTOR_UID
from sandbox.errors import CwdRefusedError, SandboxExecError

__all__ = ["ARG_MAX", "MAX_ARG_STRLEN", "check_call_user", "check_exec_size", "container_cwd"]

#: The kernel's limit on one argument or environment string, its NUL included (32 pages).
MAX_ARG_STRLEN = 131072
#: The kernel's limit on argv + environment for one ``execve``: a quarter of the stack
#: limit, 8 MiB in docker's default containers (the kernel counts each string with its NUL
#: and one pointer per string).
ARG_MAX = 2 * 1024 * 1024
#: Room kept for what the executor adds to the same ``execve``: the helper's own words,
#: the task marker, the supplementary groups and the executor's environment.
_EXEC_OVERHEAD = 8192
_POINTER = 8
_ID_MAX = 2**31 - 1
#: A user or group: a number, or a name as useradd and busybox adduser accept them.
_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.-]*\$?"
_SPEC = re.compile(rf"(?P<user>{_NAME})(?::(?P<group>{_NAME}))?")


def check_call_user(user: str, image: str) -> None:
    """Refuse a per-call ``user`` that is malformed or names the executor's reserved id."""
    match = _SPEC.fullmatch(user)
    if match is None:
        raise SandboxExecError(
            f"user {user!r} is not a user spec: give a name, `uid`, `name:group` or `uid:gid` "
            f"as the image {image!r} defines them (nothing was run)"
        )
    for part in (match["user"], match["group"]):
        if part is None or not part.isdigit():
            continue
        if int(part) > _ID_MAX:
            raise SandboxExecError(
                f"user {user!r}: id {part} is out of range (at most {_ID_MAX}); nothing was run"
            )
        if int(part) == EXECUTOR_UID:
            raise SandboxExecError(
                f"user {user!r}: id {EXECUTOR_UID} is reserved for shellrt's executor and no command "
                "may run under it; choose another uid/gid (nothing was run)"
            )


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape")) + 1


def check_exec_size(argv: Sequence[str], env: Mapping[str, str]) -> None:
    """Refuse an argv/environment the kernel's ``execve`` would refuse, saying the limit.

    A NUL byte too: ``execve`` would end the word there (the local and bwrap backends refuse it),
    and dash drops NULs from the request file it sources, so ``echo safe<NUL>; evil`` ran as
    ``echo safe; evil``: another command than the one asked for (red team round 26)."""
    for where, strings in (
        ("argument", list(argv)),
        ("environment entry", [f"{k}={v}" for k, v in env.items()]),
    ):
        for index, text in enumerate(strings):
            if "\0" in text:
                shown = f"{where} {index}" if where == "argument" else f"{where} {text.split('=', 1)[0]!r}"
                raise SandboxExecError(
                    f"{shown} contains a NUL byte, which no program's argv or environment can hold; "
                    "remove it (pass binary data on stdin or in a file). Nothing was run."
                )
            if _size(text) > MAX_ARG_STRLEN:
                shown = f"{where} {index}" if where == "argument" else f"{where} {text.split('=', 1)[0]!r}"
                raise SandboxExecError(
                    f"{shown} is {_size(text) - 1} bytes; the kernel limits one argument or environment "
                    f"string to {MAX_ARG_STRLEN - 1} bytes (MAX_ARG_STRLEN = {MAX_ARG_STRLEN} with its NUL). "
                    "Pass large data on stdin (ExecRequest.stdin) or in a file instead. Nothing was run."
                )
    total = sum(_size(a) for a in argv) + sum(
        _size(k) + len(v.encode("utf-8", "surrogateescape")) for k, v in env.items()
    )
    total += _POINTER * (len(argv) + len(env) + 1)
    if total + _EXEC_OVERHEAD > ARG_MAX:
        raise SandboxExecError(
            f"the arguments and environment take {total} bytes; the kernel limits them to {ARG_MAX} bytes "
            f"for one exec (ARG_MAX: a quarter of the container's 8 MiB stack, less {_EXEC_OVERHEAD} bytes "
            "the executor adds). Pass large data on stdin (ExecRequest.stdin) or in a file instead. "
            "Nothing was run."
        )


def container_cwd(cwd: str) -> str:
    """``cwd`` as the runner must find it entered: absolute and normalized (``.``, ``//`` and a
    trailing ``/`` dropped; ``..`` taken lexically, which differs from the kernel's walk only through
    a link, which the runner refuses anyway: red team round 26)."""
    if not cwd.startswith("/") or "\0" in cwd:
        raise CwdRefusedError(
            f"working directory {cwd!r} is not an absolute path: pass the container path, e.g. "
            "/workspace/sub. Nothing was run."
        )
    path = posixpath.normpath(cwd)
    return "/" + path.lstrip("/") if path.startswith("//") else path
