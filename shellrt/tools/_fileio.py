"""Byte-faithful file I/O for the file tools.

An edit must change only what the model asked for: a CRLF file stays CRLF, a
latin-1 file stays latin-1, a BOM stays in place, the file mode is kept. Text
is decoded with an encoding that round-trips the exact bytes (UTF-8 when the
bytes are valid UTF-8, else latin-1, which maps every byte to one character),
and written back atomically (temp file in the same directory, fsync, rename)
so a crash or a concurrent reader never sees half a file.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from shellrt.protocol import FileReadRecord, ToolExecutionError

__all__ = [
    "DecodedText",
    "atomic_write",
    "decode_bytes",
    "dominant_newline",
    "fingerprint",
    "require_fresh",
    "sha256_bytes",
    "to_newline",
]

_CHUNK = 1 << 20

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


@dataclass(frozen=True)
class DecodedText:
    """A file's text plus what is needed to write it back byte-for-byte."""

    text: str
    encoding: str
    bom: bytes = b""

    def encode(self, text: str) -> bytes:
        """Encode ``text`` the way the original was encoded; raises UnicodeEncodeError."""
        return self.bom + text.encode(self.encoding)


def decode_bytes(data: bytes) -> DecodedText:
    """Decode with a lossless encoding: BOM-declared, else UTF-8, else latin-1."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return DecodedText(data[len(bom) :].decode(encoding, errors="replace"), encoding, bom)
    try:
        return DecodedText(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        return DecodedText(data.decode("latin-1"), "latin-1")


def dominant_newline(text: str) -> str:
    """The line ending most lines use (``\\n`` for files without line breaks)."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    cr = text.count("\r") - crlf
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


def fingerprint(path: Path, *, partial: bool = False) -> FileReadRecord:
    """Hash, mtime and size of ``path``, read in chunks (bounded memory for huge files)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return FileReadRecord(
        sha256=digest.hexdigest(), mtime_ns=st.st_mtime_ns, size=st.st_size, partial=partial
    )


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, keeping the mode of an existing file.

    A new file gets the default mode (0o666 minus the umask), as ``open`` would give it.
    """
    try:
        mode: int | None = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def require_fresh(path: Path, read_state: dict[str, FileReadRecord], *, verb: str, need_full: bool) -> bytes:
    """The current bytes of ``path``, if the session's last Read of it is still current.

    Optimistic concurrency: the content hash must equal the one recorded by
    Read (a changed mtime with equal content is fine — ``touch`` or a no-op
    formatter run). Raises `ToolExecutionError` with what to do next.
    """
    record = read_state.get(str(path))
    if record is None:
        raise ToolExecutionError(
            f"File has not been read yet: Read {path} first, then {verb} it (edits must start from what you saw)."
        )
    if need_full and record.partial:
        raise ToolExecutionError(
            f"You only read part of {path}; read all of it (Read without offset/limit) before you {verb} it, "
            "or change it with Edit instead."
        )
    with open(path, "rb") as fh:
        data = fh.read()
    if sha256_bytes(data) != record.sha256:
        raise ToolExecutionError(
            f"{path}: file changed since it was read (by the user, a formatter or another tool): read it again, "
            f"then {verb} it."
        )
    return data
