"""A command's write to the file Edit or Write replaced, made while they replaced it: never lost unseen.

Why: `sandbox.confine.write_file` replaces a file by renaming a new one over it, right after
checking that the old one is still what the tool read. A command's write to the old file between
that check and the rename (or after it, through a file the command holds open) went to a file no
name leads to any more, and the tool said the change was made (round 25, "Left"). The old file is
held open across the replace (`hold`); afterwards its size, modification time and bytes must
still be what was read (`written_meanwhile`; its change time moves with the rename itself). If they are
not, the command's content is put back and the tool's change is not kept (`put_back`), unless
the replaced file or the new one changed again, which is then said instead. Where the filesystem
can exchange (``renameat2(RENAME_EXCHANGE)``), confine itself refuses a write made before the
exchange (the file stays as the command left it); this covers a write after it, through a held fd,
and filesystems without the exchange.
"""

from __future__ import annotations

import os
from typing import NoReturn

from sandbox import confine
from sandbox.confine import Identity, Stamp, View, stamp
from shellrt.protocol import ToolExecutionError
from shellrt.tools._paths import shown_path, visible

__all__ = ["hold", "put_back", "written_meanwhile"]


def hold(view: View, path: str, base: Stamp, *, expect: str | None, expect_id: Identity | None) -> int:
    """An fd of the file at ``path`` (canonical), which must be the one read (``base``): what a
    command may write to while it is replaced. Raises `ToolExecutionError` when another file is
    there now, `OSError` when it cannot be opened."""
    fd, _ = confine.open_file(view, path, expect=expect, expect_id=expect_id)
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != base.inode:
        os.close(fd)
        raise ToolExecutionError(
            f"{shown_path(path)} was replaced after it was read (a running command?); it was left as it is "
            "now and this write was not made. Read it again, then make the change again."
        )
    return fd


def written_meanwhile(fd: int, base: Stamp, was: bytes | None = None) -> bool:
    """Whether the held file was written since it was read: its size or modification time, and,
    given ``was`` (the bytes read), its bytes. A write through a shared mapping (``mmap``) whose
    page was already dirty moves no time (red team round 33: such a write was lost unseen)."""
    st = os.fstat(fd)
    if (st.st_size, st.st_mtime_ns) != (base.size, base.mtime_ns):
        return True
    return was is not None and _read_all(fd, len(was)) != was


def put_back(view: View, fd: int, landed: str, data: bytes, limit: int, shown: str) -> NoReturn:
    """Put the held (replaced) file's content back at ``landed``, where ``data`` was just written,
    and raise the `ToolExecutionError` that says what happened. Nothing is put back over a file
    that no longer holds ``data`` (a command wrote it since), nor when the replaced file is larger
    than ``limit`` or kept changing while it was copied: then the error says the write is lost."""
    before = os.fstat(fd)
    kept = _read_all(fd, limit)
    why = ""
    if kept is None:
        why = f"the replaced file is larger than {limit:,} bytes"
    elif written_meanwhile(fd, stamp(before)):
        why = "the command kept writing the replaced file"
    else:
        try:
            ours = _stamp_if_holding(view, landed, data)
            if ours is None:
                why = f"{shown} changed again after this write"
            else:
                confine.write_file(view, landed, kept, expect=landed, base=ours)
        except OSError as exc:
            why = f"putting it back failed: {visible(exc.strerror or str(exc))}"
    if not why:
        raise ToolExecutionError(
            f"{shown} changed while this write replaced it (a running command wrote to it); the command's "
            "version was put back and this change was not made. Read the file again, then make the change "
            "again (stop the command first if it keeps writing the file)."
        )
    raise ToolExecutionError(
        f"{shown} changed while this write replaced it (a running command wrote to the file being replaced, "
        f"which no name leads to any more) and could not be put back ({why}): {shown} holds this change "
        "without the command's write. Read it, and redo what the command wrote if it is still needed."
    )


def _read_all(fd: int, limit: int) -> bytes | None:
    """The held file's bytes from its start, or None when it holds more than ``limit``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = os.pread(fd, min(1 << 20, limit + 1 - size), size)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return None


def _stamp_if_holding(view: View, path: str, data: bytes) -> Stamp | None:
    """The `Stamp` of the file at ``path`` if it holds exactly ``data`` (else None)."""
    fd, _ = confine.open_file(view, path, expect=path)
    try:
        st = os.fstat(fd)
        if st.st_size != len(data) or _read_all(fd, len(data)) != data:
            return None
        return stamp(st)
    finally:
        os.close(fd)
