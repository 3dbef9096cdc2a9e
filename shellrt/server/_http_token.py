"""Where ``shellrt serve --http`` gets its bearer token, and the file it writes when it makes one.

In order: ``--token-file PATH`` (its first line; the file must be a regular
file of the caller's, not a symlink, and private: mode 0600 or stricter), the
``SHELLRT_SERVE_TOKEN`` environment variable (taken out of the environment, so
commands never inherit it), else a fresh random token written to
``<state>/serve/http-<port>.token`` (0600 in a 0700 directory whose parent only the caller or
root may change; ``<state>`` is
where sessions live: ``$SHELLRT_HOME``, else ``$XDG_STATE_HOME/shellrt``, else
``~/.local/state/shellrt``) and removed when the server stops.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "TOKEN_ENV",
    "ServeToken",
    "TokenError",
    "generate_token_file",
    "read_token_file",
    "remove_token_file",
    "serve_token_dir",
    "token_from_env",
]

TOKEN_ENV = "SHELLRT_SERVE_TOKEN"
#: A token file is a line of text; anything larger is not one.
_MAX_TOKEN_FILE_BYTES = 4096
#: Shorter secrets are guessable; `secrets.token_urlsafe(32)` gives 43 characters.
_MIN_TOKEN_CHARS = 16


class TokenError(ValueError):
    """The token cannot be used; the message says what to do."""


@dataclass(frozen=True)
class ServeToken:
    """The token and where a client finds it (for messages: never the token itself)."""

    value: str
    where: str
    #: The file this server created (removed at shutdown), else None.
    created: Path | None = None


def serve_token_dir() -> Path:
    """``<state>/serve``: next to the sessions directory, in the per-user state directory."""
    from shellrt.runtime.session import session_root

    return session_root().parent / "serve"


def _checked_token(text: str, source: str) -> str:
    token = text.strip()
    if not token:
        raise TokenError(f"{source} is empty; put a random secret in it (e.g. `openssl rand -hex 32`)")
    if len(token) < _MIN_TOKEN_CHARS or any(c.isspace() or not c.isprintable() for c in token):
        raise TokenError(
            f"{source} must be one word of at least {_MIN_TOKEN_CHARS} printable characters "
            "(e.g. `openssl rand -hex 32`)"
        )
    return token


def read_token_file(path: Path) -> ServeToken:
    """The first line of ``path``, refused unless the file is private to the caller."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise TokenError(f"--token-file {path}: {exc.strerror}") from exc
    if stat.S_ISLNK(st.st_mode):
        raise TokenError(f"--token-file {path} is a symlink; pass the file it points to")
    _require_private(path, st)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise TokenError(f"--token-file {path}: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as fh:
        # Judged again on the file opened (the stat above named a path, which may have changed
        # since: a file made readable by others, or another file, between the two).
        opened = os.fstat(fh.fileno())
        if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
            raise TokenError(f"--token-file {path} changed while it was read; try again")
        _require_private(path, opened)
        raw = fh.read(_MAX_TOKEN_FILE_BYTES + 1)
    if len(raw) > _MAX_TOKEN_FILE_BYTES:
        raise TokenError(
            f"--token-file {path} is larger than {_MAX_TOKEN_FILE_BYTES} bytes; put the token alone in it"
        )
    first_line = raw.decode("utf-8", errors="replace").splitlines()[:1]
    return ServeToken(_checked_token(first_line[0] if first_line else "", f"--token-file {path}"), str(path))


def _require_private(path: Path, st: os.stat_result) -> None:
    """Refuse a token file that is not a regular file of the caller's, private to them."""
    if not stat.S_ISREG(st.st_mode):
        raise TokenError(f"--token-file {path} is not a regular file")
    if st.st_uid != os.getuid():
        raise TokenError(
            f"--token-file {path} is not owned by you (uid {os.getuid()}); use a file of your own"
        )
    if st.st_mode & 0o077:
        raise TokenError(
            f"--token-file {path} is readable or writable by others (mode {stat.S_IMODE(st.st_mode):o}); "
            f"run `chmod 600 {path}`"
        )


def token_from_env() -> ServeToken | None:
    """``$SHELLRT_SERVE_TOKEN``, removed from this process's environment (commands must not see it)."""
    text = os.environ.pop(TOKEN_ENV, None)
    if text is None:
        return None
    return ServeToken(_checked_token(text, f"${TOKEN_ENV}"), f"the {TOKEN_ENV} environment variable")


def _private_dir(directory: Path) -> None:
    """Create ``directory`` (0700) or check the existing one is ours and make it 0700.

    Its parent is checked first, as a session directory's is: whoever may rename entries there
    could swap ``serve`` for a directory of theirs between this check and the token's creation
    (red team round 10)."""
    from shellrt.runtime.session_dir import SessionDirError, check_holder

    directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        check_holder(
            directory.parent,
            f"the token directory {directory.name}/",
            f"set SHELLRT_HOME to a directory of yours, pass --token-file PATH or set {TOKEN_ENV}",
        )
    except SessionDirError as exc:
        raise TokenError(str(exc)) from exc
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700)
    st = os.lstat(directory)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise TokenError(f"{directory} is not a directory (a symlink?); remove it and start again")
    if st.st_uid != os.getuid():
        raise TokenError(
            f"{directory} is not owned by you; remove it or set SHELLRT_HOME to a directory of yours"
        )
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(directory, 0o700, follow_symlinks=False)


def generate_token_file(port: int) -> ServeToken:
    """A fresh token in ``<state>/serve/http-<port>.token`` (0600; a stale file of ours is replaced)."""
    directory = serve_token_dir()
    try:
        _private_dir(directory)
        path = directory / f"http-{port}.token"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # left by a server that was killed: the port is ours now
        token = secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise TokenError(
            f"cannot write the token file in {directory}: {exc.strerror}; pass --token-file PATH "
            f"or set {TOKEN_ENV}"
        ) from exc
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return ServeToken(token, str(path), created=path)


def remove_token_file(token: ServeToken) -> None:
    """Remove the file `generate_token_file` made (a server that stopped leaves no usable token)."""
    if token.created is not None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(token.created)
