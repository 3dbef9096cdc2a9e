"""Where Edit's and Write's file landed: at the path the result names, or wherever its directory went.

Why: `sandbox.confine.write_file` resolves the path to a directory fd and writes below that fd, so
what was checked is what is written. A directory is not pinned to its name, though: a command that
renamed a directory on the way (``mv scripts .git/hooks``) between the resolution and the rename
made the file land wherever the directory went, while the result said the path the model gave had
been written (red team round 37). `anchor` keeps the deepest existing directory of the path before
the write; `require_landed` checks after it that the path still leads to the very file below that
directory, and when it does not, says where the content went instead of claiming the path.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass

from sandbox import confine
from sandbox.confine import Identity, View
from shellrt.protocol import ToolExecutionError
from shellrt.tools._paths import shown_path

__all__ = ["Anchor", "anchor", "require_landed"]


@dataclass
class Anchor:
    """The deepest existing directory on a path's way (an fd: it follows the directory wherever it
    is moved) and the components from it to the file."""

    fd: int
    below: tuple[str, ...]
    #: What the anchoring resolution found (`confine.identity`): the write is pinned to it.
    identity: Identity

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def anchor(view: View, where: str, expect_id: Identity | None = None) -> Anchor | None:
    """The `Anchor` of ``where`` as it resolves now; None when it does not resolve to a file's place
    (the write itself then refuses it, saying why).

    The anchor and the write resolve the path separately: the write must then be pinned to what
    the anchor found (its ``identity``, the caller's ``expect_id`` when given, which the anchor must
    match): else a directory swapped in for the anchoring and back for the write made the check
    compare a look-alike with itself and pass, while the write went wherever the checked directory
    was moved (red team round 37 review2)."""
    try:
        with view.resolve(where) as r:
            below = r.missing or ((r.name,) if r.name else ())
            if not below:
                return None
            found = confine.identity(r)
            if expect_id is not None and found != expect_id:
                raise confine.ConfinementError(
                    errno.EAGAIN,
                    f"{where} changed since it was checked (a command renamed or replaced it, or a "
                    "directory on its way); try again",
                )
            return Anchor(os.dup(r.dir_fd), tuple(below), found)
    except confine.ConfinementError as exc:
        if exc.errno == errno.EAGAIN:
            raise
        return None
    except (OSError, ValueError):
        return None


def require_landed(view: View, where: Anchor, landed: str) -> None:
    """Raise `ToolExecutionError` unless ``landed`` (the canonical path the write reports) names the
    file now below ``where`` (what the write wrote, or what a command made of it there since)."""
    try:
        below = _entry_below(where)
    except OSError:
        below = None
    try:
        named = _entry_at(view, landed)
    except OSError:
        named = None
    if below is not None and below == named:
        return
    shown = shown_path(landed)
    raise ToolExecutionError(
        f"{shown}: a directory on the way was moved or replaced while this file was written (a running "
        f"command?), so the new content went {_gone_to(view, where) if below else 'elsewhere'}, and {shown} "
        "is not that file. "
        "Stop the command, look at what is where now (Glob, Read), then make the change again."
    )


def _entry_below(where: Anchor) -> tuple[int, int]:
    parent = confine.open_dir_beneath(where.fd, list(where.below[:-1]))
    try:
        st = os.stat(where.below[-1], dir_fd=parent, follow_symlinks=False)
    finally:
        os.close(parent)
    return (st.st_dev, st.st_ino)


def _entry_at(view: View, path: str) -> tuple[int, int] | None:
    with view.resolve(path, follow_last=False) as r:
        if r.missing or r.name is None:
            return None
        st = os.stat(r.name, dir_fd=r.dir_fd, follow_symlinks=False)
    return (st.st_dev, st.st_ino)


def _gone_to(view: View, where: Anchor) -> str:
    """Where the anchored directory's file is now, in the sandbox's words when the view has them."""
    try:
        host = os.readlink(f"/proc/self/fd/{where.fd}")
    except OSError:
        return "to a place the tool cannot name"
    if host.endswith(" (deleted)"):
        return "into a directory that was deleted since"
    place = view.from_host(os.path.join(host, *where.below))
    return f"to {shown_path(place)}" if place is not None else "outside the places the tool can name"
