"""Byte-faithful file I/O for the file tools.

An edit must change only what the model asked for: a CRLF file stays CRLF, a
latin-1 file stays latin-1, a BOM stays in place, the file mode is kept. Text
is decoded with an encoding that round-trips the exact bytes (UTF-8 when the
bytes are valid UTF-8, else latin-1, which maps every byte to one character),
and written back atomically (temp file in the same directory, fsync, rename)
so a crash or a concurrent reader never sees half a file. Every open and
write goes through `sandbox.confine` (anchored at a directory fd of the
sandbox's view): no symlink swap can send it elsewhere than where it says.
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import os
import re
import stat
from dataclasses import dataclass

from sandbox import confine
from sandbox.confine import Identity, Stamp, View, WriteOutcome, stamp
from shellrt.protocol import FileReadRecord, ToolExecutionError
from shellrt.tools._landed import anchor, require_landed
from shellrt.tools._paths import shown_path
from shellrt.tools._replaced import hold, put_back, written_meanwhile

__all__ = [
    "MAX_EDIT_BYTES",
    "DecodedText",
    "Existing",
    "bom_encoding",
    "decode_bytes",
    "dominant_newline",
    "line_end_counts",
    "read_existing",
    "refuse_oversized",
    "require_fresh",
    "sha256_bytes",
    "to_newline",
    "utf8_split",
    "write_confined",
]

_CHUNK = 1 << 20
#: Files Edit and Write replace are read whole (a sparse file of terabytes is one `truncate` away).
MAX_EDIT_BYTES = 64 * 1024 * 1024


def refuse_oversized(size: int, path: str, how: str) -> None:
    """Refuse a result over `MAX_EDIT_BYTES` before it is built or written (round 32); the error
    names ``path`` (a resolved name: a link's target chose its words) through `shown_path`.

    The limit bounded only what Edit and Write *read*: a ``replace_all`` multiplied an 80 KB file
    into 67 MB on the host (a longer ``new_string`` asks for gigabytes), and a Write of ``\\n``
    into a CRLF file doubles. ``size`` is a lower bound of the bytes (characters, before encoding).
    """
    if size > MAX_EDIT_BYTES:
        raise ToolExecutionError(
            f"{how} would make {shown_path(path)} too large for Edit and Write ({size:,} bytes or more; at most "
            f"{MAX_EDIT_BYTES:,}): nothing was changed. Make the change with Bash (e.g. `sed -i`), or in "
            "smaller steps."
        )

#: Byte order marks, longest first: UTF-32 LE's begins with UTF-16 LE's (``FF FE``), and a UTF-32
#: file read as UTF-16 showed a NUL between its characters, and an Edit wrote UTF-16 units into it
#: (red team round 47).
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
#: Bytes a code unit of each BOM-declared encoding takes (a shorter rest is kept as `DecodedText.tail`).
_UNIT = {"utf-8": 1, "utf-16-le": 2, "utf-16-be": 2, "utf-32-le": 4, "utf-32-be": 4}


@dataclass(frozen=True)
class DecodedText:
    """A file's text plus what is needed to write it back byte-for-byte."""

    text: str
    encoding: str
    bom: bytes = b""
    errors: str = "strict"
    #: A UTF-16 file's odd last byte (no character), kept as it was.
    tail: bytes = b""

    def encode(self, text: str) -> bytes:
        """Encode ``text`` the way the original was encoded; raises UnicodeEncodeError."""
        return self.bom + text.encode(self.encoding, self.errors) + self.tail


#: Error handlers that give back, on encoding, the very bytes they decoded (never U+FFFD).
_LOSSLESS = {
    "utf-8": "surrogateescape",
    "utf-16-le": "surrogatepass",
    "utf-16-be": "surrogatepass",
    "utf-32-le": "surrogatepass",
    "utf-32-be": "surrogatepass",
}


def _bom_decoded(data: bytes) -> DecodedText | None:
    """``data`` decoded by the first BOM it starts with whose encoding gives its bytes back (a UTF-16
    LE file whose first character is U+0000 starts like UTF-32 LE); None when none does."""
    for bom, encoding in _BOMS:
        if not data.startswith(bom):
            continue
        body = data[len(bom) :]
        cut = len(body) - len(body) % _UNIT[encoding]
        body, tail = body[:cut], body[cut:]
        errors = _LOSSLESS[encoding]
        try:
            decoded = DecodedText(body.decode(encoding, errors), encoding, bom, errors, tail)
            if decoded.encode(decoded.text) == data:
                return decoded
        except UnicodeError:
            pass  # a surrogate UTF-16 cannot pass, a code point past U+10FFFF
    return None


def bom_encoding(data: bytes) -> tuple[int, str] | None:
    """The length of ``data``'s byte order mark and the encoding it declares, as Edit and Write will
    decode the file (`decode_bytes`); None without one (or one its bytes do not fit)."""
    decoded = _bom_decoded(data)
    return None if decoded is None else (len(decoded.bom), decoded.encoding)


def decode_bytes(data: bytes) -> DecodedText:
    """Decode losslessly: BOM-declared, else UTF-8, else latin-1. Encoding the text unchanged gives
    ``data`` back, always: a BOM file with bytes its encoding cannot hold was decoded with U+FFFD for
    them, and an Edit anywhere in it wrote U+FFFD back for bytes it never touched (red team, round 20).
    Such a file is decoded as latin-1 whole (BOM included), which every byte survives."""
    decoded = _bom_decoded(data)
    if decoded is not None:
        return decoded
    if data.startswith(tuple(bom for bom, _ in _BOMS)):
        return DecodedText(data.decode("latin-1"), "latin-1")
    try:
        return DecodedText(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        return DecodedText(data.decode("latin-1"), "latin-1")


#: A UTF-8 multi-byte sequence, in text decoded as latin-1 (a character a byte).
_UTF8_SEQUENCE = re.compile("[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")


def utf8_split(text: str, old: str, pattern: re.Pattern[str] | None = None) -> int | None:
    """Where an occurrence of ``old`` (or a match of ``pattern``, which matches ``old`` in either
    line-ending form) in latin-1-decoded ``text`` begins or ends inside a UTF-8 sequence, else None.

    A file that is UTF-8 but for one stray byte is decoded as latin-1 whole: ``old="©"`` (A9) also
    matched the tail of every UTF-8 ``é`` (C3 A9), and an Edit split it (round 32). A boundary next
    to an ASCII character never splits one, so only an ``old`` with a non-ASCII end is looked at.
    """
    if not old or (old[0] < "\x80" and old[-1] < "\x80"):
        return None
    inside: set[int] = set()
    for match in _UTF8_SEQUENCE.finditer(text):
        inside.update(range(match.start() + 1, match.end()))
    if not inside:
        return None
    if pattern is not None:
        return next((m.start() for m in pattern.finditer(text) if m.start() in inside or m.end() in inside), None)
    at = text.find(old)
    while at != -1:
        if at in inside or at + len(old) in inside:
            return at
        at = text.find(old, at + len(old))
    return None


def line_end_counts(text: str) -> tuple[int, int, int]:
    """How many line breaks of ``text`` are CRLF, bare ``\\n`` and bare ``\\r``."""
    crlf = text.count("\r\n")
    return crlf, text.count("\n") - crlf, text.count("\r") - crlf


def dominant_newline(text: str, counts: tuple[int, int, int] | None = None) -> str:
    """The line ending most lines use (``\\n`` for files without line breaks); ``counts``: the
    text's `line_end_counts`, when the caller has them."""
    crlf, lf, cr = counts if counts is not None else line_end_counts(text)
    if crlf > lf and crlf >= cr:
        return "\r\n"
    if cr > lf and cr > crlf:
        return "\r"
    return "\n"


def to_newline(text: str, newline: str) -> str:
    """Convert bare ``\\n`` line breaks (as the model writes them) to ``newline``."""
    if newline == "\n":
        return text
    return text.replace("\r\n", "\n").replace("\n", newline)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Existing:
    """A file's bytes, its canonical path, and its `Stamp` from before the bytes were read."""

    data: bytes
    path: str
    stamp: Stamp


def read_existing(
    view: View, where: str, *, label: str, expect: str | None = None, expect_id: Identity | None = None
) -> Existing | None:
    """Bytes, canonical path and stamp of the file at ``where`` (opened anchored), or None when it does not exist.

    Raises `ToolExecutionError` for a directory or special file; `OSError`
    (`sandbox.confine.ConfinementError` included) when it cannot be reached.
    """
    label = shown_path(label)  # a canonical path: a symlink's target chose its words (round 25)
    try:
        fd, canonical = confine.open_file(view, where, expect=expect, expect_id=expect_id)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ToolExecutionError(f"{label} is a directory; give the path of a file.") from None
    except confine.SpecialFileError as exc:
        raise ToolExecutionError(
            f"{label} is not a regular file ({exc.kind}); the file tools change regular files only."
        ) from None
    try:
        before = os.fstat(fd)  # before the read: a change after it is a change to what was read
        mode = before.st_mode
        if stat.S_ISDIR(mode):
            raise ToolExecutionError(f"{label} is a directory; give the path of a file.")
        if not stat.S_ISREG(mode):
            raise ToolExecutionError(
                f"{label} is not a regular file; the file tools change regular files only."
            )
        _refuse_acl(fd, label)
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(MAX_EDIT_BYTES + 1)  # never more: the file may grow while it is read
        if len(data) > MAX_EDIT_BYTES:
            raise ToolExecutionError(
                f"{label} is too large for Edit and Write ({os.fstat(fd).st_size:,} bytes; at most "
                f"{MAX_EDIT_BYTES:,}): they hold the whole file in memory. Change it with Bash (e.g. `sed -i`)."
            )
        return Existing(data, canonical, stamp(before))
    finally:
        os.close(fd)


#: The kernel's name for a file's POSIX access ACL (absent when the mode says it all).
_ACCESS_ACL = "system.posix_acl_access"


def _refuse_acl(fd: int, label: str) -> None:
    """Refuse a file with a POSIX access ACL: the atomic replace would not keep it.

    The new inode gets the old mode, and with an ACL the mode's group bits are the ACL's mask
    (what its named users and groups may get at most), not the owning group's own permissions:
    a rewritten ``g::--- m::rw-`` file gave its owning group read and write, and its named users
    lost theirs (red team, round 14). A write in place keeps the inode and its ACL.
    """
    try:
        os.getxattr(fd, _ACCESS_ACL)
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP):
            return  # no ACL, or a filesystem without them
        raise
    raise ToolExecutionError(
        f"{label} has a POSIX ACL (see `getfacl {label}`). Edit and Write replace a file with a new one, "
        "which would drop the ACL and give the file's group the ACL's mask as its permissions. Change it "
        f"in place with Bash instead (e.g. `python3 - <<'EOF'` rewriting it with open(path, 'r+'), or "
        f"`cat new-content > {label}`), which keeps the file and its ACL."
    )


def write_confined(
    view: View,
    where: str,
    data: bytes,
    *,
    over: Existing | None,
    expect: str | None = None,
    expect_id: Identity | None = None,
) -> tuple[WriteOutcome, FileReadRecord]:
    """Atomically write ``data`` at ``where`` inside the view's writable places (parents created there).

    ``over``: what the caller read there (None: nothing). The write replaces only that, unchanged,
    or creates the file only if none appeared meanwhile: a command's change made while the tool
    worked is never lost unseen (a write to the replaced file during the replace: put back,
    `shellrt.tools._replaced`; a `ToolExecutionError` says so). ``expect``: the canonical path the permission check judged
    (refused if it now leads elsewhere); ``expect_id``: what it found there
    (`sandbox.confine.Identity`; refused if that changed).
    Returns where it landed and the read-state record of what is now there.
    """
    # Held across the replace: a command's write to it inside confine's check-to-rename window
    # (or later, through a file it holds open) is seen, and put back (round 26).
    held = hold(view, over.path, over.stamp, expect=expect, expect_id=expect_id) if over is not None else None
    # The directory the write goes below, followed wherever a command moves it (round 37).
    place = anchor(view, where, expect_id)
    try:
        outcome = confine.write_file(
            view,
            where,
            data,
            make_parents=True,
            expect=expect,
            # Pinned to what the anchor found: its check then speaks of the write's own directory.
            expect_id=expect_id if expect_id is not None or place is None else place.identity,
            base=over.stamp if over is not None else None,
            exclusive=over is None,
        )
        if place is not None:
            require_landed(view, place, outcome.path)
        if held is not None and over is not None and written_meanwhile(held, over.stamp, over.data):
            put_back(view, held, outcome.path, data, MAX_EDIT_BYTES, shown_path(outcome.path))
    finally:
        if held is not None:
            os.close(held)
        if place is not None:
            place.close()
    mtime_ns = 0
    try:
        fd, _ = confine.open_file(view, outcome.path)
    except OSError:
        pass
    else:
        try:
            mtime_ns = os.fstat(fd).st_mtime_ns
        finally:
            os.close(fd)
    return outcome, FileReadRecord(sha256=sha256_bytes(data), mtime_ns=mtime_ns, size=len(data))


def require_fresh(
    data: bytes, key: str, label: str, read_state: dict[str, FileReadRecord], *, verb: str, need_full: bool
) -> None:
    """Refuse unless the session's last Read of the file (``key``) is still current for ``data``.

    Optimistic concurrency: the content hash must equal the one recorded by
    Read (a changed mtime with equal content is fine — ``touch`` or a no-op
    formatter run). Raises `ToolExecutionError` with what to do next.
    """
    named = shown_path(label)  # a canonical path: a symlink's target may have chosen its words
    record = read_state.get(key)
    if record is None:
        raise ToolExecutionError(
            f"File has not been read yet: Read {named} first, then {verb} it (edits must start from what you saw)."
        )
    if need_full and record.partial:
        # Not only a range: what Read cuts (a long line's rest, a notebook's cells past the budget, a
        # PDF's other pages) was never shown either, and was replaced unseen (red team round 53).
        raise ToolExecutionError(
            f"You only read part of {named} (a range, or what Read cut: a line's rest, the output budget, "
            f"a notebook's later cells, a PDF's other pages); read all of it (Read without offset/limit) "
            f"before you {verb} it, or change it with Edit (or Bash) instead where Read cannot show it whole."
        )
    if sha256_bytes(data) != record.sha256:
        raise ToolExecutionError(
            f"{named}: file changed since it was read (by the user, a formatter or another tool): read it again, "
            f"then {verb} it."
        )
