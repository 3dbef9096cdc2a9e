"""The operator's interactive shell in a session's container (``inspect sandbox connect``).

Why not a plain ``docker exec -it --user U <container> <shell>``: a ``docker exec`` process runs
outside shellrt's ``priv drop``, so as root it holds the container's whole bounding set — the
executor's ``CHOWN, DAC_OVERRIDE, FOWNER, KILL, SETGID, SETUID, SETPCAP, SYS_PTRACE`` — and no
shellrt seccomp list. A root command (``root_can_administer``: the image is writable) planted
``/root/.bashrc`` and it ran with those capabilities the moment the operator connected, where
``SYS_PTRACE`` over the executor reaches the control channel (red team round 13). The shell is
now started the way every command is: ``priv exec`` to the executor's identity, then ``priv
drop`` (``priv admin`` for uid 0 under ``root_can_administer``) to the user, so it holds what a
command of that user holds and no more. The helper is reached where the executor reaches it
(the I/O mount, or with ``root_can_administer`` the executor's fd 8, the mount being detached).
"""

from __future__ import annotations

import posixpath
import re
import shlex

__all__ = ["connection_argv", "resolve_login"]

_NUMERIC = re.compile(r"([0-9]{1,10})(?::([0-9]{1,10}))?")
_NAME = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]{0,31}")


def _table(text: str) -> list[list[str]]:
    return [line.split(":") for line in text.splitlines() if line and not line.startswith("#")]


def resolve_login(login: str, passwd: str, group: str) -> tuple[int, int, str]:
    """``login`` (``uid``, ``uid:gid``, ``name``, ``name:group``) as (uid, gid, home) through the
    image's ``/etc/passwd`` and ``/etc/group`` texts. ValueError for anything else."""
    users = [f for f in _table(passwd) if len(f) >= 6]
    numeric = _NUMERIC.fullmatch(login)
    if numeric is not None:
        uid = int(numeric[1])
        entry = next((f for f in users if f[2] == str(uid)), None)
        gid = (
            int(numeric[2])
            if numeric[2] is not None
            else int(entry[3])
            if entry and entry[3].isascii() and entry[3].isdigit()
            else uid
        )
        home = entry[5] if entry else "/"
        return uid, gid, home if posixpath.isabs(home) else "/"
    name, _, grp = login.partition(":")
    if not _NAME.fullmatch(name) or (grp and not _NAME.fullmatch(grp)):
        raise ValueError(f"user {login!r} is not a user name, uid or uid:gid (name[:group] or uid[:gid])")
    entry = next((f for f in users if f[0] == name), None)
    if entry is None or not (
        entry[2].isascii() and entry[2].isdigit() and entry[3].isascii() and entry[3].isdigit()
    ):
        raise ValueError(f"user {name!r} is not in the image's /etc/passwd; connect with a uid[:gid] instead")
    uid, gid = int(entry[2]), int(entry[3])
    if grp:
        row = next((f for f in _table(group) if len(f) >= 3 and f[0] == grp), None)
        if row is None or not (row[2].isascii() and row[2].isdigit()):
            raise ValueError(
                f"group {grp!r} is not in the image's /etc/group; connect with a uid:gid instead"
            )
        gid = int(row[2])
    home = entry[5]
    return uid, gid, home if posixpath.isabs(home) else "/"


def connection_argv(
    *,
    container: str,
    workspace: str,
    shell: str,
    helper_dir: str,
    executor_uid: int,
    ids: tuple[int, int],
    home: str,
    admin: bool,
    path: str,
    private: bool = False,
    audit: int | None = None,
) -> list[str]:
    """The ``docker exec`` argv of an interactive shell as ``ids`` through the ``priv`` helper in
    ``helper_dir`` (see the module). ``audit``: the audit login uid ``priv exec`` pins where unset
    (a ``docker exec``'d process inherits the daemon's, not the container's; default: ``uid``)."""
    uid, gid = ids
    if executor_uid in (uid, gid):
        raise ValueError(f"uid/gid {executor_uid} is reserved for shellrt's executor")
    priv = f"{helper_dir}/priv"
    e = str(executor_uid)
    # priv drop hands the shell no environment of its own: give it the usual few (quoted words).
    inner = (
        f"export PATH={shlex.quote(path)} TERM=xterm HOME={shlex.quote(home)}; exec {shlex.quote(shell)} -i"
    )
    # ``private``: ids are the session's leased uid, the host's nothing else: keeps inotify (priv own).
    mode = "admin" if admin and uid == 0 else ("own" if private else "drop")
    return [
        "docker", "exec", "-it", "--user", "0", "-w", workspace, container,
        priv, "exec", e, e, str(uid if audit is None else audit), "--", priv, mode, str(uid), str(gid), "-", "--", shell, "-c", inner,
    ]  # fmt: skip
