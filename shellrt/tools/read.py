"""Read: a file's content for the model — text with line numbers, images, notebooks, PDFs.

Read bounds its own output (a line and character budget with a note on how to
page), so it opts out of large-result persistence: persisting a Read would loop
Read -> persisted file -> Read. It never opens anything that is not a regular
file (opening a FIFO blocks, /dev/zero never ends) and streams text files, so
the first lines of a 50 MB file cost a few milliseconds and bounded memory.
Every successful read records the file's hash and mtime in ``ctx.read_state``;
Edit and Write use it for their optimistic concurrency check. Reading the same
range of an unchanged text file again returns a short note instead of the
whole text (the earlier result is still in the model's context); a restored or
compacted conversation forgets these ranges (`RANGES_KEY`).
"""

from __future__ import annotations

import base64
import codecs
import errno
import hashlib
import importlib
import importlib.util
import json
import os
import re
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from sandbox import confine
from sandbox.confine import ConfinementError, SpecialFileError, View, file_kind
from shellrt.protocol import (
    ContentBlock,
    FileReadRecord,
    ImageBlock,
    ImageSource,
    PermissionResult,
    PermissionSubject,
    TextBlock,
    Tool,
    ToolContext,
    ToolExecutionError,
    ToolOutput,
    ValidationResult,
)
from shellrt.protocol.image_header import MAX_MODEL_IMAGE_SIDE, image_size
from shellrt.protocol.notes import neutralize_output, note, untrusted_note
from shellrt.tools import _offloop
from shellrt.tools._fileio import bom_encoding
from shellrt.tools._framing import PDF_FRAMING, unframed
from shellrt.tools._hostchild import calm_argv
from shellrt.tools._notebook import NotebookError
from shellrt.tools._notebook import Rendered as RenderedNotebook
from shellrt.tools._notebook import render as render_notebook
from shellrt.tools._offloop import off_loop
from shellrt.tools._parse_slots import parse_slot
from shellrt.tools._paths import (
    PathInput,
    canonical_path,
    file_permission,
    refusal,
    remember_file_path,
    sandbox_path,
    shown_path,
    state_key,
    subject_for,
    view_for,
    visible,
)
from shellrt.tools._people import for_people
from shellrt.tools._render import BREAKS_NOTE, one_line
from shellrt.tools._sendable import SendableText
from shellrt.tools._unseen import missing_refusal, visible_paths

__all__ = ["ReadInput", "ReadOutput", "ReadTool"]

DEFAULT_LINE_LIMIT = 2_000
MAX_OUTPUT_CHARS = 100_000
MAX_LINE_CHARS = 2_000
#: Raw image bytes; 3.75 MB is 5 MB once base64-encoded (the model APIs' per-image limit).
MAX_IMAGE_BYTES = 3_750_000
MAX_PDF_PAGES_PER_CALL = 20
#: PDFs are parsed whole, in memory.
MAX_PDF_BYTES = 32 * 1024 * 1024
#: Whole-file reads (notebooks, UTF-16 text) above this size are refused.
MAX_WHOLE_FILE_BYTES = 10 * 1024 * 1024
#: Pseudo-files report size 0 (``/proc/...``); never scan more than this of them.
MAX_PSEUDO_FILE_BYTES = 16 * 1024 * 1024
#: Text files are streamed (hashed, lines counted) up to this: a sparse file of terabytes is one
#: `truncate` away, and its scan would hold a worker thread and a core for many minutes.
MAX_SCAN_BYTES = 256 * 1024 * 1024
_CHUNK = 1 << 20
#: ``ctx.tool_state`` key: (path, offset, limit) -> the record of the last text Read of that range.
RANGES_KEY = "Read.ranges"
#: ``tool_state`` key: the inode and change time of the file each remembered range was read from.
#: Size and mtime alone are the command's to set (``touch -r``): a changed file passed for unchanged.
STAMPS_KEY = "Read.stamps"
Stamp = tuple[int, int, int]

_IMAGE_EXTS = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
#: Extensions that are never text; Read refuses them without sniffing.
_BINARY_EXTS = frozenset(
    (  # noqa: SIM905 - one readable block instead of sixty lines
        ".zip .gz .tgz .bz2 .xz .zst .7z .rar .tar .jar .war .whl .exe .dll .so .dylib .o .a .lib .class "
        ".pyc .pyo .wasm .bin .iso .img .dmg .mp3 .mp4 .m4a .mov .avi .mkv .wav .flac .ogg .webm .ico .bmp "
        ".tiff .psd .woff .woff2 .ttf .otf .eot .sqlite .sqlite3 .db .parquet .npy .npz .pkl .pickle .pt "
        ".onnx .doc .docx .xls .xlsx .ppt .pptx"
    ).split()
)


class ReadInput(PathInput):
    """Input of Read."""

    file_path: str = Field(
        description="Path of the file to read: absolute, or relative to the working directory."
    )
    offset: int | None = Field(
        default=None,
        ge=1,
        description="1-based line number to start at (for files too long to read at once).",
    )
    limit: int | None = Field(
        default=None, ge=1, description=f"How many lines to read (default {DEFAULT_LINE_LIMIT})."
    )
    pages: str | None = Field(
        default=None,
        pattern=r"^\s*\d+\s*(-\s*\d+\s*)?$",
        description=f'PDF only: page range such as "3" or "1-5" (at most {MAX_PDF_PAGES_PER_CALL} pages per call).',
    )


@dataclass
class ReadOutput:
    """What Read found; ``text`` is the model-facing text, ``image`` an optional image block."""

    kind: Literal["text", "image", "notebook", "pdf"]
    path: str
    text: str
    image: ImageBlock | None = None
    lines_shown: tuple[int, int] | None = None
    total_lines: int | None = None


class ReadTool(SendableText, Tool[ReadInput, ReadOutput]):
    """Read a file: text (numbered lines), images, notebooks, PDFs."""

    name = "Read"
    input_model = ReadInput
    search_hint = "read view open show file contents cat lines image notebook pdf"
    interrupt_behavior: ClassVar[Literal["cancel", "block"]] = "cancel"
    max_result_chars: ClassVar[int | None] = None
    idempotent: ClassVar[bool] = True

    def prompt(self) -> str:
        return (
            "Read a file from the filesystem. `file_path` may be absolute or relative to the working directory.\n"
            f"- Text files come back with line numbers (`cat -n` style), up to {DEFAULT_LINE_LIMIT} lines or "
            f"{MAX_OUTPUT_CHARS:,} characters per call; use `offset` and `limit` to page through longer files.\n"
            f"- Lines longer than {MAX_LINE_CHARS} characters are cut.\n"
            "- Images (PNG, JPEG, GIF, WebP) are returned as images; Jupyter notebooks as cells with "
            'summarised outputs; PDFs as text per page (use `pages`, e.g. "1-5").\n'
            "- Directories cannot be read: use Bash `ls` (or Glob) instead.\n"
            "- You must Read a file before you Edit or overwrite it with Write."
        )

    def is_read_only(self, tool_input: ReadInput) -> bool:
        return True

    def is_concurrency_safe(self, tool_input: ReadInput) -> bool:
        return True

    async def validate(self, tool_input: ReadInput, ctx: ToolContext) -> ValidationResult:
        view = view_for(ctx)
        try:
            await remember_file_path(tool_input, tool_input.file_path, ctx, view)
        except ToolExecutionError as exc:
            return ValidationResult.failure(str(exc))
        return ValidationResult.success()

    async def check_permissions(self, tool_input: ReadInput, ctx: ToolContext) -> PermissionResult:
        return file_permission(
            tool_input.file_path, ctx, write=False, canonical=tool_input.canonical, refused=tool_input.refused
        )

    def permission_subject(self, tool_input: ReadInput) -> PermissionSubject:
        return subject_for(tool_input, tool_input.file_path, write=False)

    def describe(self, tool_input: ReadInput) -> str:
        return f"Read {tool_input.file_path}"

    async def call(self, tool_input: ReadInput, ctx: ToolContext) -> ToolOutput[ReadOutput]:
        view = view_for(ctx)
        where = sandbox_path(tool_input.file_path, ctx)
        ranges: dict[tuple[str, int | None, int | None], FileReadRecord] = ctx.tool_state.setdefault(
            RANGES_KEY, {}
        )
        stamps: dict[tuple[str, int | None, int | None], Stamp] = ctx.tool_state.setdefault(STAMPS_KEY, {})
        what = f"Reading {tool_input.file_path}"
        known = await off_loop(canonical_path, tool_input.file_path, ctx, view, what=what)
        if known is not None:
            logical = state_key(known, ctx, view)
            key = (logical, tool_input.offset, tool_input.limit)
            seen, was = ranges.get(key), stamps.get(key)
            if await off_loop(_unchanged, view, known, seen, ctx.read_state.get(logical), was, what=what):
                return ToolOutput(
                    ReadOutput(kind="text", path=known, text=_UNCHANGED.format(path=shown_path(known)))
                )
        output, record, stamp = await off_loop(_read, view, where, tool_input, ctx, what=what)
        if record is not None:
            # Idempotent bookkeeping: safe to write directly (see ToolContext docs).
            logical = state_key(output.path, ctx, view)
            ctx.read_state[logical] = record
            if output.kind == "text":
                key = (logical, tool_input.offset, tool_input.limit)
                ranges[key] = record
                stamps[key] = stamp
        return ToolOutput(output)

    def to_model_content(self, output: ReadOutput) -> str | list[ContentBlock]:
        if output.image is not None:
            return [TextBlock(text=output.text), output.image]
        return output.text

    def render_result(self, output: ReadOutput) -> str:
        if output.lines_shown is not None:
            first, last = output.lines_shown
            of = f" of {output.total_lines}" if output.total_lines is not None else ""
            return f"Read lines {first}-{last}{of} of {for_people(shown_path(output.path))}"
        return (
            for_people(output.text.splitlines()[0])
            if output.text
            else f"Read {for_people(shown_path(output.path))}"
        )


_UNCHANGED = (
    "File unchanged since last read: the content of {path} from your earlier Read of this range (same offset "
    "and limit) is still current. Refer to that result instead of reading it again."
)


def _unchanged(
    view: View, where: str, seen: FileReadRecord | None, current: FileReadRecord | None, stamp: Stamp | None
) -> bool:
    """Whether this range was read before and nothing (Edit, Write, another process) changed the file since.

    Opened through the confinement view (anchored, no symlink followed), like the read itself. The
    same inode and change time are required besides size and mtime, which a command can put back;
    then the same bytes: a write through a shared mapping (``mmap(MAP_SHARED)``) moves no time once
    its page is dirty, so a command that dirtied it before the model's Read changed the file
    unseen and the model was told it was unchanged (red team round 33). The bytes cost what the
    Read they stand for would: the short answer saves the model's context, not the disk.
    """
    if seen is None or current is not seen or stamp is None:
        return False
    try:
        fd, _ = confine.open_file(view, where)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        # Only a read cut at `MAX_SCAN_BYTES` recorded fewer bytes than the file held.
        same_size = st.st_size == seen.size or (seen.size >= MAX_SCAN_BYTES and st.st_size > seen.size)
        same_inode = (st.st_dev, st.st_ino, st.st_ctime_ns) == stamp
        if not (stat.S_ISREG(st.st_mode) and st.st_mtime_ns == seen.mtime_ns and same_size and same_inode):
            return False
        return _digest_of(fd, seen.size) == seen.sha256
    finally:
        os.close(fd)


def _digest_of(fd: int, size: int) -> str | None:
    """SHA-256 of the first ``size`` bytes of ``fd`` (as a Read's record hashed them), or None when
    the file now holds fewer."""
    digest, done = hashlib.sha256(), 0
    while done < size:
        chunk = os.pread(fd, min(_CHUNK, size - done), done)
        if not chunk:
            return None
        digest.update(chunk)
        done += len(chunk)
    return digest.hexdigest()


# --- dispatch -----------------------------------------------------------------


def _read(
    view: View, where: str, tool_input: ReadInput, ctx: ToolContext
) -> tuple[ReadOutput, FileReadRecord | None, Stamp]:
    """Open ``where`` through the confinement (anchored, no symlink leaves the view), then read the fd;
    with the file's `Stamp` as it was before the read."""
    _refuse_special_path(Path(where), where)
    try:
        fd, canonical = confine.open_file(
            view, where, expect=tool_input.canonical, expect_id=tool_input.identity
        )
    except FileNotFoundError:
        unseen = missing_refusal(view, where)  # where the sandbox's user cannot look: as unreadable
        if unseen is not None:
            raise ToolExecutionError(
                f"Permission denied reading {shown_path(where)} ({unseen.strerror})."
            ) from None
        raise ToolExecutionError(_missing_message(view, where, tool_input.file_path, ctx)) from None
    except IsADirectoryError:
        raise ToolExecutionError(_directory_message(shown_path(where))) from None
    except SpecialFileError as exc:
        label = shown_path(exc.filename) if exc.filename else where
        raise ToolExecutionError(
            f"{label} is not a regular file ({exc.kind}); Read refuses it because reading it could block or "
            f"never end. Use Bash if you really need it (e.g. `head -c 100 {label} | xxd`)."
        ) from None
    except PermissionError as exc:
        plain = exc.strerror in (None, "", os.strerror(errno.EACCES), os.strerror(errno.EPERM))
        detail = "" if plain else f" ({exc.strerror})"
        raise ToolExecutionError(f"Permission denied reading {shown_path(where)}{detail}.") from None
    except ConfinementError as exc:
        raise refusal("read", tool_input.file_path, exc) from None
    except OSError as exc:
        raise refusal("read", tool_input.file_path, exc) from None
    try:
        # The canonical path's words are the repository's (a symlink's target): a result names it on
        # its line, visibly (round 25: a link to "real\n[shellrt] ..." forged a note in the header).
        path, label = Path(canonical), shown_path(canonical)
        _refuse_special_path(path, label)
        st = os.fstat(fd)
        return (*_read_fd(fd, path, label, st, tool_input), (st.st_dev, st.st_ino, st.st_ctime_ns))
    finally:
        os.close(fd)


def _read_fd(
    fd: int, path: Path, label: str, st: os.stat_result, tool_input: ReadInput
) -> tuple[ReadOutput, FileReadRecord | None]:
    """The opened regular file's content, by kind (``st``: its `os.fstat` before reading)."""
    if stat.S_ISDIR(st.st_mode):
        raise ToolExecutionError(_directory_message(label))
    if not stat.S_ISREG(st.st_mode):
        raise ToolExecutionError(
            f"{label} is not a regular file ({file_kind(st.st_mode)}); Read refuses it because reading it could "
            f"block or never end. Use Bash if you really need it (e.g. `head -c 100 {label} | xxd`)."
        )
    suffix = path.suffix.lower()
    if tool_input.pages is not None and suffix != ".pdf":
        raise ToolExecutionError("`pages` is only for PDF files; use `offset` and `limit` for text files.")
    if suffix in _IMAGE_EXTS:
        return _read_image(fd, path, label, st)
    if suffix == ".ipynb":
        return _read_notebook(fd, path, label, st)
    if suffix == ".pdf":
        return _read_pdf(fd, path, label, st, tool_input.pages)
    if suffix in _BINARY_EXTS:
        raise ToolExecutionError(_binary_message(path, label, st.st_size))
    return _read_text(fd, path, label, tool_input, st)


def _directory_message(label: str) -> str:
    return (
        f"{label} is a directory, not a file. List it with Bash (`ls -la {label}`) or find files with Glob."
    )


def _refuse_special_path(path: Path, label: str) -> None:
    text = str(path)
    device = text == "/dev" or (text.startswith("/dev/") and not text.startswith("/dev/shm/"))
    # A thread's own directory (``/proc/P/task/T``, ``/proc/thread-self``) holds the same files as
    # the process's (red team round 19: its ``mem`` was opened, and failed as an unexpected EIO).
    if device or re.match(r"^/proc/[^/]+(/task/[^/]+)?/fd(/|$)", text):
        raise ToolExecutionError(
            f"{label} is a device or process file descriptor; Read refuses it (reading it could block or never "
            "end). Read regular files only."
        )
    if text in ("/proc/kcore", "/proc/kmsg") or re.match(r"^/proc/[^/]+(/task/[^/]+)?/(mem|pagemap)$", text):
        raise ToolExecutionError(f"{label} is a kernel memory file; Read refuses it.")


def _missing_message(view: View, where: str, raw: str, ctx: ToolContext) -> str:
    """Names the disk chose (a symlink's target, a similar file's name) are shown with `shown_path`:
    ``config.\\n[shellrt] ...`` next to a missing ``config.py`` forged a note (round 25). A similar
    name the session may not read is not suggested (round 41: "Did you mean .env?" named a masked
    file that Glob and every denial keep unnamed)."""
    shown = shown_path(where)
    message = f"File does not exist: {shown}." if raw == where else f"File does not exist: {raw} ({shown})."
    parent, name = os.path.split(where)
    stem = os.path.splitext(name)[0].lower()
    try:
        fd, _ = confine.open_directory(view, parent)
    except OSError:
        return (
            message
            + f" Its directory {shown_path(parent)} does not exist either. Check the path (Glob can find files by name)."
        )
    try:
        similar = sorted(n for n in os.listdir(fd) if os.path.splitext(n)[0].lower() == stem and n != name)
    except OSError:
        similar = []
    finally:
        os.close(fd)
    if similar:
        near = [os.path.join(parent, n) for n in similar]
        seen = visible_paths(near, ctx, view, ReadTool.name)
        similar = [n for n, p in zip(similar, near, strict=True) if p in seen]
    if similar:
        message += f" Did you mean {', '.join(shown_path(os.path.join(parent, s)) for s in similar[:3])}?"
    return message + " Check the path (Glob can find files by name)."


def _binary_message(path: Path, label: str, size: int) -> str:
    return (
        f"{label} is a binary file ({size:,} bytes); Read shows text, images, notebooks and PDFs. "
        f"Inspect it with Bash instead (e.g. `file {label}` or `xxd {label} | head`)."
    )


def _open_regular(fd: int, label: str) -> Any:
    """A file object over the confined, already-opened fd (its own offset, from the start)."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise ToolExecutionError(f"{label} is not a regular file; Read refuses it.")
    fh = os.fdopen(os.dup(fd), "rb")
    fh.seek(0)
    return fh


# --- text ---------------------------------------------------------------------


def _pick_encoding(head: bytes) -> str:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data" and exc.start >= len(head) - 3:
            return "utf-8"
        return "latin-1"
    return "utf-8"


def _whole_file_encoding(data: bytes) -> str:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "latin-1"
    return "utf-8"


def _looks_binary(head: bytes) -> bool:
    if b"\x00" in head:
        return True
    if not head:
        return False
    control = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27, 8))
    return control / len(head) > 0.3


def _read_text(
    fd: int, path: Path, label: str, tool_input: ReadInput, st: os.stat_result
) -> tuple[ReadOutput, FileReadRecord]:
    start = tool_input.offset or 1
    limit = tool_input.limit or DEFAULT_LINE_LIMIT
    with _open_regular(fd, label) as fh:
        head = fh.read(8192)
        if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_BE)):
            return _read_utf16(path, label, fh, head, tool_input, st)
        if _looks_binary(head):
            raise ToolExecutionError(_binary_message(path, label, st.st_size))
        if 0 < st.st_size <= MAX_WHOLE_FILE_BYTES:
            # Small enough to judge the encoding on every byte, exactly as Edit will decode it.
            data = head + fh.read(max(0, st.st_size - len(head)))  # what it was: it may be growing
            encoding = _whole_file_encoding(data)
            scan = _LineScanner(start, limit, encoding)
            scan.feed(data)
            seen = len(data)
        else:
            # Huge (or pseudo) file: stream it; the encoding is judged on the first block.
            encoding = "utf-8" if head.startswith(b"\xef\xbb\xbf") else _pick_encoding(head)
            fh.seek(0)
            scan = _LineScanner(start, limit, encoding)
            max_bytes = min(st.st_size if st.st_size > 0 else MAX_PSEUDO_FILE_BYTES, MAX_SCAN_BYTES)
            seen = 0
            while seen < max_bytes and (chunk := fh.read(min(_CHUNK, max_bytes - seen))):
                seen += len(chunk)
                scan.feed(chunk)
        # A file of size 0 when judged (a /proc-like file, or one a command filled since) may hold
        # more than was scanned: without this the cut was silent and the read whole (round 53).
        unsized = st.st_size == 0 and seen >= MAX_PSEUDO_FILE_BYTES and fh.read(1) != b""
        cut = (seen >= MAX_SCAN_BYTES and st.st_size > seen) or unsized
        scan.finish()
        record = FileReadRecord(
            sha256=scan.digest.hexdigest(),
            mtime_ns=st.st_mtime_ns,
            size=seen,
            # A line shown cut is content never shown, as a range's other lines are (round 53).
            partial=start > 1 or scan.more or cut or bool(scan.cut),
        )
    text = _format_window(path, label, scan, start, encoding)
    if cut:
        size = f"{st.st_size:,}-byte file" if st.st_size else "file (its size was 0 when it was opened)"
        text += (
            f"\n\n(Only the first {seen // (1 << 20)} MiB of this {size} were scanned; "
            "line counts cover that part. Use Bash for the rest, e.g. `tail` or `sed -n 'N,Mp'`.)"
        )
    shown = (scan.shown[0][0], scan.shown[-1][0]) if scan.shown else None
    return ReadOutput("text", os.fspath(path), text, lines_shown=shown, total_lines=scan.total_lines), record


class _LineScanner:
    """Splits a byte stream into lines, keeping only the requested window (bounded memory).

    Hashes every byte and counts every line, so the read state covers the
    whole file even when only its first lines are shown.
    """

    def __init__(self, start: int, limit: int, encoding: str) -> None:
        self.start, self.limit, self.encoding = start, limit, encoding
        self.digest = hashlib.sha256()
        self.shown: list[tuple[int, str]] = []
        self.chars = 0
        self.collecting = True
        self.more = False
        self.budget_hit = False
        self.line_no = 1
        self.pending = bytearray()
        self.pending_len = 0
        self.total_lines = 0
        self.broken = 0  # shown lines that held a line break other than \n (`one_line`)
        self.cut: list[int] = []  # shown lines cut at MAX_LINE_CHARS: a note names them
        self._cap = MAX_LINE_CHARS * 4 + 4

    def feed(self, chunk: bytes) -> None:
        self.digest.update(chunk)
        pos = 0
        while self.collecting:
            nl = chunk.find(b"\n", pos)
            end = nl if nl != -1 else len(chunk)
            if self.line_no >= self.start and len(self.pending) < self._cap:
                self.pending += chunk[pos : min(end, pos + self._cap - len(self.pending))]
            self.pending_len += end - pos
            if nl == -1:
                return
            self._end_line()
            pos = nl + 1
        # Past the window: only count what is left.
        if pos < len(chunk) or not self.collecting:
            rest = chunk[pos:]
            newlines = rest.count(b"\n")
            self.total_lines += newlines
            self.pending_len = (
                len(rest) - (rest.rfind(b"\n") + 1) if newlines else self.pending_len + len(rest)
            )

    def _end_line(self) -> None:
        if self.line_no >= self.start:
            if len(self.shown) >= self.limit:
                self.more, self.collecting = True, False
            else:
                line = bytes(self.pending).decode(self.encoding, errors="replace")
                if self.line_no == 1:
                    line = line.removeprefix("\ufeff")
                line, broken = one_line(line.removesuffix("\r"))
                self.broken += broken
                cut = len(line) > MAX_LINE_CHARS or self.pending_len > len(self.pending)
                if cut:
                    line = line[:MAX_LINE_CHARS] + " … [line truncated]"
                cost = len(line) + 8
                if self.shown and self.chars + cost > MAX_OUTPUT_CHARS:
                    self.more, self.budget_hit, self.collecting = True, True, False
                else:
                    self.shown.append((self.line_no, line))
                    self.chars += cost
                    if cut:
                        self.cut.append(self.line_no)
        self.total_lines += 1
        self.line_no += 1
        self.pending.clear()
        self.pending_len = 0

    def finish(self) -> None:
        if self.pending_len:
            if self.collecting:
                self._end_line()
            else:
                self.total_lines += 1


def _format_window(path: Path, label: str, scan: _LineScanner, start: int, encoding: str) -> str:
    shown, total, more, budget_hit = scan.shown, scan.total_lines, scan.more, scan.budget_hit
    if total == 0:
        return f"(The file {label} exists but is empty.)"
    if not shown:
        return (
            f"(The file {label} has only {total} lines; offset {start} is past the end. "
            f"Use an offset between 1 and {total}.)"
        )
    # The file's own line breaks (`\r`, U+2028 …) inside a numbered line may start a line that reads
    # like a note of ours: marked as command output is, and counted in a note.
    body, forged = neutralize_output("\n".join(f"{n:>6}\t{line}" for n, line in shown))
    notes: list[str] = []
    first, last = shown[0][0], shown[-1][0]
    if more or first > 1:
        why = f" (the {MAX_OUTPUT_CHARS:,}-character budget was reached)" if budget_hit else ""
        notes.append(f"Showing lines {first}-{last} of {total}{why}.")
        if last < total:
            notes.append(
                f"To continue, call Read with offset={last + 1} (and optionally limit); Grep can search the file."
            )
    if encoding == "latin-1":
        notes.append("The file is not valid UTF-8; it was decoded as latin-1 (edits keep that encoding).")
    if scan.cut:
        notes.append(_cut_note(scan.cut))
    if scan.broken:
        notes.append(f"{scan.broken} shown line{'s' if scan.broken != 1 else ''} {BREAKS_NOTE}")
    if notes:
        body += "\n\n" + note(" ".join(notes))
    if forged:
        body += ("\n" if notes else "\n\n") + untrusted_note(forged, "the file")
    return body


#: How many cut lines the note names (the rest are counted).
_CUT_NAMED = 20


def _cut_note(cut: list[int]) -> str:
    """Which lines were cut: the file's own text may end a line in ``… [line truncated]`` too
    (red team round 23), so the note, which the file cannot write, is what says so."""
    named = ", ".join(str(n) for n in cut[:_CUT_NAMED])
    more = f" and {len(cut) - _CUT_NAMED:,} more" if len(cut) > _CUT_NAMED else ""
    which = f"Line {named} was" if len(cut) == 1 else f"Lines {named}{more} were"
    return (
        f"{which} longer than {MAX_LINE_CHARS:,} characters and shown cut (ending in "
        "'… [line truncated]'; no other line was cut). Use Bash for the rest, e.g. `cut -c2001-4000`."
    )


def _read_utf16(
    path: Path, label: str, fh: Any, head: bytes, tool_input: ReadInput, st: os.stat_result
) -> tuple[ReadOutput, FileReadRecord]:
    if st.st_size > MAX_WHOLE_FILE_BYTES:
        raise ToolExecutionError(
            f"{label} is a UTF-16 or UTF-32 file over {MAX_WHOLE_FILE_BYTES:,} bytes; convert it with iconv first."
        )
    data = head + fh.read(max(0, st.st_size - len(head)))
    # As Edit will decode it (`bom_encoding`): UTF-32 LE's mark begins with UTF-16 LE's, and such a
    # file was shown with a NUL between its characters (red team round 47).
    found = bom_encoding(data)
    if found is None and data.startswith(codecs.BOM_UTF32_BE):
        raise ToolExecutionError(_binary_message(path, label, st.st_size))
    if found is None:
        found = (2, "utf-16-le" if data.startswith(codecs.BOM_UTF16_LE) else "utf-16-be")
    skip, encoding = found
    # The same scanner as UTF-8 text (its output budget, its line cut and notes): this path once
    # returned every line of an 8 MB file, ~4,000,000 characters, in one result (round 14).
    start = tool_input.offset or 1
    scan = _LineScanner(start, tool_input.limit or DEFAULT_LINE_LIMIT, "utf-8")
    scan.feed(data[skip:].decode(encoding, errors="replace").encode("utf-8"))
    scan.finish()
    text = _format_window(path, label, scan, start, encoding)
    record = FileReadRecord(
        sha256=hashlib.sha256(data).hexdigest(),
        mtime_ns=st.st_mtime_ns,
        size=len(data),
        partial=start > 1 or scan.more or bool(scan.cut),
    )
    shown = (scan.shown[0][0], scan.shown[-1][0]) if scan.shown else None
    return ReadOutput("text", os.fspath(path), text, lines_shown=shown, total_lines=scan.total_lines), record


# --- images ---------------------------------------------------------------------


def _sniff_image(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _read_image(fd: int, path: Path, label: str, st: os.stat_result) -> tuple[ReadOutput, FileReadRecord]:
    if st.st_size > MAX_IMAGE_BYTES:
        raise ToolExecutionError(
            f"{label} is an image of {st.st_size / 1e6:.1f} MB; images over {MAX_IMAGE_BYTES / 1e6:.2f} MB "
            "(5 MB base64-encoded) cannot be returned. Make a smaller copy first, e.g. with Bash "
            f"`convert {label} -resize 50% /tmp/small{path.suffix}`, and Read that."
        )
    with _open_regular(fd, label) as fh:
        data = fh.read(MAX_IMAGE_BYTES + 1)
    if len(data) > MAX_IMAGE_BYTES:
        raise ToolExecutionError(f"{label} grew while it was read; Read it again once it is written.")
    media_type = _sniff_image(data)
    if media_type is None:
        raise ToolExecutionError(
            f"{label} has an image extension but is not a PNG, JPEG, GIF or WebP image; check it with Bash `file {label}`."
        )
    width, height = _model_image_size(data, media_type, label, path.suffix)
    block = ImageBlock(source=ImageSource(media_type=media_type, data=base64.b64encode(data).decode("ascii")))
    record = FileReadRecord(sha256=hashlib.sha256(data).hexdigest(), mtime_ns=st.st_mtime_ns, size=len(data))
    text = f"Image {label} ({media_type}, {width:,} x {height:,} pixels, {len(data):,} bytes):"
    return ReadOutput("image", os.fspath(path), text, image=block), record


def _model_image_size(data: bytes, media_type: str, label: str, suffix: str) -> tuple[int, int]:
    """The image's (width, height), or a refusal: an image the model's API cannot take would stay in
    the conversation and fail every later turn (red team round 35: a garbage PNG, a 20,000 px bomb)."""
    smaller = f"`convert {label} -resize 2000x2000 /tmp/small{suffix}`"
    try:
        width, height = image_size(data, media_type)
    except ValueError as exc:
        raise ToolExecutionError(
            f"{label} starts like a {media_type} image but is not a well-formed one ({exc}); the model's API "
            f"would refuse it, and with it every later turn of the conversation. Check it with Bash "
            f"(`file {label}`), or make a clean copy (e.g. {smaller}) and Read that."
        ) from None
    if not (0 < width <= MAX_MODEL_IMAGE_SIDE and 0 < height <= MAX_MODEL_IMAGE_SIDE):
        raise ToolExecutionError(
            f"{label} is an image of {width:,} x {height:,} pixels; the model takes at most "
            f"{MAX_MODEL_IMAGE_SIDE:,} a side (and none of 0). Make a smaller copy with Bash (e.g. {smaller}) "
            "and Read that."
        )
    return width, height


# --- notebooks --------------------------------------------------------------------

#: How long one notebook may take to parse and render, and the address space its process may use.
NOTEBOOK_TIMEOUT_S = 30.0
NOTEBOOK_MEMORY_BYTES = 1 << 30
#: Notebooks up to this size are rendered in this process (at most ~50 times it in memory, and no
#: interpreter start); larger ones in the child.
NOTEBOOK_IN_PROCESS_BYTES = 256 * 1024
#: The notebook process imports `shellrt.tools._notebook` and the standard-library modules it uses
#: (`shellrt.tools._framing`, `shellrt.protocol.textchars`) alone: no package ``__init__``.
_NOTEBOOK_CHILD = """
import os, sys, types
root = sys.argv.pop(1)
for name in ("shellrt", "shellrt.tools", "shellrt.protocol"):
    module = types.ModuleType(name)
    module.__path__ = [os.path.join(root, *name.split(".")[1:])]
    sys.modules[name] = module
from shellrt.tools._notebook import serve
serve()
"""


def _read_notebook(fd: int, path: Path, label: str, st: os.stat_result) -> tuple[ReadOutput, FileReadRecord]:
    if st.st_size > MAX_WHOLE_FILE_BYTES:
        raise ToolExecutionError(
            f"{label} is a notebook over {MAX_WHOLE_FILE_BYTES / 1e6:.0f} MB; search it with Grep, or strip "
            "outputs first (`jupyter nbconvert --clear-output`)."
        )
    with _open_regular(fd, label) as fh:
        data = fh.read(MAX_WHOLE_FILE_BYTES + 1)
    if len(data) <= NOTEBOOK_IN_PROCESS_BYTES:
        try:
            shown = render_notebook(data, label, MAX_OUTPUT_CHARS)
        except NotebookError as exc:
            raise ToolExecutionError(str(exc)) from None
    else:
        shown = _render_in_child(data, label)
    # Cells past the budget were never shown: Write must not replace them unseen (red team round 53).
    record = FileReadRecord(
        sha256=hashlib.sha256(data).hexdigest(), mtime_ns=st.st_mtime_ns, size=len(data), partial=not shown.whole
    )
    return ReadOutput("notebook", os.fspath(path), _marked(shown.text, "the notebook")), record


def _marked(text: str, source: str) -> str:
    """A notebook's or a PDF's text (shown without line numbers, so a line of the file starts a line
    of the result) with every line that reads like a shellrt note marked, and a note counting them."""
    body, forged = neutralize_output(text)
    return body + "\n\n" + untrusted_note(forged, source) if forged else text


def notebook_deadline() -> float:
    """Seconds the notebook child may take: `NOTEBOOK_TIMEOUT_S`, within `off_loop`'s deadline."""
    return _offloop.inner_deadline(NOTEBOOK_TIMEOUT_S)


def _render_in_child(data: bytes, label: str) -> RenderedNotebook:
    tools = os.path.dirname(os.path.abspath(__file__))
    argv = [sys.executable, "-I", "-S", "-c", _NOTEBOOK_CHILD, os.path.dirname(tools)]
    argv += [str(NOTEBOOK_MEMORY_BYTES), label, str(MAX_OUTPUT_CHARS)]
    deadline = notebook_deadline()
    try:
        with parse_slot(deadline, label, f"jq '.cells[0]' {label}") as left:
            # Never in shellrt's cwd (often the workspace: an operator's `LD_PRELOAD=./x.so` or
            # `LD_LIBRARY_PATH=:/opt/lib` loaded a library a sandboxed command left there, on the host),
            # nor with the operator's variables: the child needs none (red team round 49, hostread).
            done = subprocess.run(
                calm_argv(argv), input=data, capture_output=True, timeout=left, check=False, cwd="/", env={}
            )
        answer = json.loads(done.stdout)
    except subprocess.TimeoutExpired:
        raise ToolExecutionError(
            f"{label} took longer than {deadline:g} s to parse; look at it with Bash instead "
            f"(e.g. `jq '.cells[0]' {label}`)."
        ) from None
    except ValueError:  # the process died (its memory bound) or printed nothing
        raise ToolExecutionError(
            f"{label} is too large or too deeply structured to show as a notebook; look at it with Bash "
            f"instead (e.g. `jq '.cells | length' {label}`)."
        ) from None
    if "error" in answer:
        raise ToolExecutionError(str(answer["error"]))
    return RenderedNotebook(str(answer["text"]), answer.get("whole") is True)


# --- PDFs ----------------------------------------------------------------------------


def _page_range(pages: str | None, total: int) -> tuple[int, int]:
    if pages is None:
        return 1, min(total, MAX_PDF_PAGES_PER_CALL)
    first_s, _, last_s = pages.replace(" ", "").partition("-")
    first, last = int(first_s), int(last_s or first_s)
    if first < 1 or last < first:
        raise ToolExecutionError(f'Invalid page range "{pages}": use "N" or "N-M" with 1 <= N <= M.')
    if first > total:
        raise ToolExecutionError(f"The PDF has {total} pages; page {first} does not exist.")
    if last - first + 1 > MAX_PDF_PAGES_PER_CALL:
        raise ToolExecutionError(
            f"At most {MAX_PDF_PAGES_PER_CALL} pages per call; ask for a smaller range, e.g. {first}-{first + MAX_PDF_PAGES_PER_CALL - 1}."
        )
    return first, min(last, total)


#: How long one PDF may take to parse and extract (pypdf, in a child process: a 15 KB page of nested
#: form XObjects keeps it busy for hours), and the address space that child may use.
PDF_TIMEOUT_S = 30.0
PDF_MEMORY_BYTES = 2 << 30
_PDF_CHILD = """
import io, json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
first, last, cap = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
import pypdf
data = sys.stdin.buffer.read()
try:
    reader = pypdf.PdfReader(io.BytesIO(data))
    total = len(reader.pages)
except Exception as exc:
    json.dump({"error": str(exc)}, sys.stdout)
    raise SystemExit(0)
texts, failed = {}, {}
for number in range(first, min(last, total) + 1):
    try:
        texts[number] = (reader.pages[number - 1].extract_text() or "").strip()[:cap]
    except Exception as exc:
        failed[number] = f"{type(exc).__name__}: {exc}"
json.dump({"total": total, "texts": texts, "failed": failed}, sys.stdout)
"""


def _has_pdf_library() -> bool:
    return importlib.util.find_spec("pypdf") is not None


def pdf_deadline() -> float:
    """Seconds the PDF child may take: `PDF_TIMEOUT_S`, within `off_loop`'s deadline."""
    return _offloop.inner_deadline(PDF_TIMEOUT_S)


def _parse_pdf(data: bytes, label: str, want: tuple[int, int]) -> PdfText:
    """The `PdfText` of the pages of ``want``, from pypdf in a child process, cut off at
    `PDF_TIMEOUT_S` and `PDF_MEMORY_BYTES`: the host's threads and memory never pay for a PDF."""
    # Each page's text is cut in the child to what Read can show: the host keeps `MAX_OUTPUT_CHARS`
    # of all of them (a 10 KB PDF's pages sent 20 MB of text, round 33).
    argv = [sys.executable, "-I", "-c", _PDF_CHILD, str(PDF_MEMORY_BYTES), str(want[0]), str(want[1])]
    argv.append(str(MAX_OUTPUT_CHARS + 1))
    deadline = pdf_deadline()
    try:
        with parse_slot(deadline, label, f"pdftotext -f 1 -l 5 {label} -") as left:
            # Never in shellrt's cwd (often the workspace: an operator's `LD_PRELOAD=./x.so` or
            # `LD_LIBRARY_PATH=:/opt/lib` loaded a library a sandboxed command left there, on the host),
            # nor with the operator's variables: the child needs none (red team round 49, hostread).
            done = subprocess.run(
                calm_argv(argv), input=data, capture_output=True, timeout=left, check=False, cwd="/", env={}
            )
    except subprocess.TimeoutExpired:
        raise ToolExecutionError(
            f"{label} took longer than {deadline:g} s to parse; extract its text with Bash instead "
            f"(e.g. `pdftotext -f 1 -l 5 {label} -`)."
        ) from None
    try:
        return pdf_answer(done.stdout, label)
    except ValueError:
        why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [
            f"exit status {done.returncode}"
        ]
        raise ToolExecutionError(
            f"{label} could not be parsed as a PDF ({visible(why[0])}); extract its text with Bash instead "
            f"(e.g. `pdftotext -f 1 -l 5 {label} -`)."
        ) from None


@dataclass(frozen=True)
class PdfText:
    """What the PDF child found: the page count, each page's text, and why a page's extraction
    failed, apart from any text (round 26: written into the text, a page's own ``[text extraction
    failed: ...]`` line read as the tool's)."""

    total: int
    texts: dict[str, str]
    failed: dict[str, str]


def pdf_answer(stdout: bytes, label: str) -> PdfText:
    """The child's JSON answer as a `PdfText`; raises `ValueError` when it is not one (the child
    died) and `ToolExecutionError` when the child could not parse the PDF."""
    result = json.loads(stdout)
    if not isinstance(result, dict):
        raise ValueError("not an object")
    if "error" in result:
        raise ToolExecutionError(f"{label} could not be parsed as a PDF: {visible(str(result['error']))}")
    try:
        texts = {str(k): str(v) for k, v in result["texts"].items()}
        failed = {str(k): str(v) for k, v in result.get("failed", {}).items()}
        return PdfText(int(result["total"]), texts, failed)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not the child's answer: {exc!r}") from None


#: The longest reason a failed page's note quotes (pypdf's message may quote the PDF's own bytes).
_MAX_FAILURE_CHARS = 300


def _pdf_pages(
    texts: dict[str, str], first: int, last: int, total: int, failed: dict[str, str] | None = None
) -> str:
    """The pages' text under their ``--- page N of M ---`` lines; a page's own line that would pass
    for one, for a note on what was shown, or for a failed page's note is escaped (`unframed`, red
    team rounds 23 and 26). A page in ``failed`` gets the note, on one line, every character of its
    reason visible (`_paths.visible`)."""
    parts: list[str] = []
    for number in range(first, last + 1):
        why = (failed or {}).get(str(number))
        if why is not None:
            shown = visible(why[:_MAX_FAILURE_CHARS]) + ("..." if len(why) > _MAX_FAILURE_CHARS else "")
            page_text = f"[text extraction failed: {shown}]"
        else:
            page_text = unframed(texts.get(str(number), "").strip(), PDF_FRAMING) or "[no extractable text]"
        parts.append(f"--- page {number} of {total} ---\n{page_text}")
    return "\n\n".join(parts)


def _read_pdf(
    fd: int, path: Path, label: str, st: os.stat_result, pages: str | None
) -> tuple[ReadOutput, FileReadRecord]:
    if not _has_pdf_library():
        raise ToolExecutionError(
            f"{label} is a PDF, and reading PDFs needs the pypdf package, which is not installed in this "
            "environment (pip install pypdf). Alternatively use Bash: `pdftotext -layout file.pdf -` "
            "(poppler-utils), if it is installed."
        )
    if st.st_size > MAX_PDF_BYTES:
        raise ToolExecutionError(
            f"{label} is a PDF of {st.st_size / 1e6:.0f} MB; Read parses PDFs up to {MAX_PDF_BYTES / 1e6:.0f} MB. "
            f"Extract its text with Bash instead (e.g. `pdftotext -f 1 -l 5 {label} -`)."
        )
    with _open_regular(fd, label) as fh:
        data = fh.read(MAX_PDF_BYTES + 1)
    want = _page_range(pages, MAX_PDF_PAGES_PER_CALL * 1_000_000)  # the range's own checks, before parsing
    found = _parse_pdf(data, label, want)
    total = found.total
    first, last = _page_range(pages, total)
    text = _pdf_pages(found.texts, first, last, total, found.failed)
    cut = len(text) > MAX_OUTPUT_CHARS
    if cut:
        text = text[:MAX_OUTPUT_CHARS] + "\n\n(Output budget reached; ask for fewer pages.)"
    if last < total:
        text += f'\n\n(Showing pages {first}-{last} of {total}; pass pages="{last + 1}-{min(total, last + MAX_PDF_PAGES_PER_CALL)}" for more.)'
    # Pages not shown (the range, the output budget): Write must not replace them unseen (round 53).
    record = FileReadRecord(
        sha256=hashlib.sha256(data).hexdigest(),
        mtime_ns=st.st_mtime_ns,
        size=len(data),
        partial=cut or first > 1 or last < total,
    )
    return ReadOutput("pdf", os.fspath(path), _marked(text, "the PDF")), record
