"""Results have three faces: the model block, the UI rendering and the audit text.

Large model-facing output is persisted whole to
``<session dir>/tool-results/<tool_use_id>.txt``; the model gets a head+tail
preview, the total size and the path, so nothing is lost and the context stays
small. A message-level budget persists the largest results of one assistant
message until the total fits.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from shellrt.protocol.control_escape import escape_controls
from shellrt.protocol.messages import ContentBlock, TextBlock, ToolResultBlock
from shellrt.protocol.notes import NOTE_MARK, cut_tail

__all__ = [
    "DEFAULT_MESSAGE_BUDGET_CHARS",
    "PREVIEW_HEAD_CHARS",
    "PREVIEW_TAIL_CHARS",
    "ResultEnvelope",
    "apply_message_budget",
    "empty_output_text",
    "error_envelope",
    "persist_result_text",
    "preview_text",
]

PREVIEW_HEAD_CHARS = 2_000
PREVIEW_TAIL_CHARS = 1_000
#: Total characters the results of one assistant message may carry to the model.
DEFAULT_MESSAGE_BUDGET_CHARS = 200_000

_SAFE_ID = re.compile(r"[^A-Za-z0-9_.-]")


class ResultEnvelope(BaseModel):
    """One call's result in all three faces, plus where its full text went."""

    model_config = ConfigDict(extra="forbid")

    tool_use_id: str
    tool_name: str
    model: ToolResultBlock
    ui: str
    audit: str
    persisted_path: str | None = None
    total_chars: int = 0
    #: The exit code of the command the call ran (shell tools), for harnesses; None otherwise.
    exit_code: int | None = None

    @property
    def is_error(self) -> bool:
        return self.model.is_error


def empty_output_text(tool_name: str) -> str:
    """The model-facing text of an empty result."""
    return f"({tool_name} completed with no output)"


#: Longest error message kept whole, and how much of its head and tail a longer one keeps. Errors
#: quote the input (a path, a name): a Read of a 1 MB path was refused with the path whole, and
#: Read's results are never persisted, so the model got all of it (round 28).
MAX_ERROR_CHARS, ERROR_HEAD_CHARS, ERROR_TAIL_CHARS = 20_000, 15_000, 2_000


def bounded_error(message: str) -> str:
    """``message``, or its head and tail with a note of how much was cut between them."""
    if len(message) <= MAX_ERROR_CHARS:
        return message
    cut = len(message) - ERROR_HEAD_CHARS - ERROR_TAIL_CHARS
    return (
        f"{message[:ERROR_HEAD_CHARS]}\n{NOTE_MARK} --- {cut:,} characters of this error message cut ---\n"
        f"{cut_tail(message, len(message) - ERROR_TAIL_CHARS)}"
    )


def error_envelope(tool_use_id: str, tool_name: str, message: str) -> ResultEnvelope:
    """A paired error result (unknown tool, invalid input, denied, …), bounded (`bounded_error`).

    Its people face shows each control, format or separator character as its escape: messages
    quote what the model or a repository chose (a tool's name, a todo item, a URL), and OSC 52 or
    ``ESC[2K`` there acted on the person's terminal (red team round 39, review6). The model's face
    and the audit text keep the message as written."""
    message = bounded_error(message)
    return ResultEnvelope(
        tool_use_id=tool_use_id,
        tool_name=tool_name,
        model=ToolResultBlock(tool_use_id=tool_use_id, content=message, is_error=True),
        ui=escape_controls(message),
        audit=message,
        total_chars=len(message),
    )


#: Where persisted results go: the first is shown to commands (read-only), the second only to the
#: file tools (results of tools whose data commands may not see: `Tool.results_seen_by_commands`).
RESULTS_DIR, HOST_RESULTS_DIR = "tool-results", "tool-results-host"


def persist_result_text(
    session_dir: Path, tool_use_id: str, text: str, *, commands_see: bool = False
) -> Path:
    """Write ``text`` whole (UTF-8) to the session's results directory, atomically (``commands_see``:
    the one commands see too; otherwise the one only the file tools reach)."""
    directory = session_dir / (RESULTS_DIR if commands_see else HOST_RESULTS_DIR)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = _file_name(tool_use_id)
    # 0600 (results hold secrets), a fresh temporary name never opened through a planted symlink.
    tmp = directory / f".{name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with open(fd, "wb") as fh:
            fh.write(_encoded(text))
        return _link_unused(tmp, directory, name)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


#: Surrogates no UTF-8 byte decodes to under ``surrogateescape`` (those are U+DC80..U+DCFF): a lone
#: one came from a tool's own text (JSON's ``"\\ud800"``), not from a command's undecodable bytes.
_LONE_SURROGATES = re.compile("[\ud800-\udc7f\udd00-\udfff]")


def _encoded(text: str) -> bytes:
    """``text`` as UTF-8, a command's undecodable bytes (``surrogateescape``) given back as they were.

    A lone surrogate of any other kind made the write raise after the call ran (round 44): it is
    written as U+FFFD instead."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return _LONE_SURROGATES.sub("\ufffd", text).encode("utf-8", "surrogateescape")


#: Longest id kept whole in a file name (a name has at most 255 bytes, with our prefix and suffixes).
_MAX_NAME_CHARS = 100


def _file_name(tool_use_id: str) -> str:
    """The id as one short file name: a 300-character id made the write fail after the call ran,
    and the call's result was lost (round 9); a long one keeps its start and a digest of the rest."""
    name = _SAFE_ID.sub("_", tool_use_id) or "result"
    if len(name) <= _MAX_NAME_CHARS:
        return name
    return f"{name[:64]}-{hashlib.sha256(tool_use_id.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


def _link_unused(tmp: Path, directory: Path, name: str) -> Path:
    """``tmp`` linked as ``<name>.txt``, or ``<name>-2.txt``… when taken: each result keeps its own file.

    Ids that sanitise alike (``a/b``, ``a_b``) or an id reused with other input replaced the first
    call's file, so the path its result and transcript hold showed another call's output (round 9).
    """
    for n in range(1, 1000):
        path = directory / (f"{name}.txt" if n == 1 else f"{name}-{n}.txt")
        try:
            os.link(tmp, path, follow_symlinks=False)
            return path
        except FileExistsError:
            continue
    path = directory / f"{name}-{secrets.token_hex(8)}.txt"
    os.link(tmp, path, follow_symlinks=False)
    return path


def preview_text(
    text: str, path: Path | str, *, head: int = PREVIEW_HEAD_CHARS, tail: int = PREVIEW_TAIL_CHARS
) -> str:
    """Head and tail of ``text`` with the size and where the whole is."""
    total = len(text)
    omitted = max(0, total - head - tail)
    # The tail may start mid-line: `cut_tail` keeps that line from passing for a note of ours.
    return (
        f"{NOTE_MARK} Output too large ({total:,} characters); the full output is saved at {path}. "
        "Read it in pages (Read with offset/limit) or search it with Grep.\n"
        f"{NOTE_MARK} --- first {min(head, total):,} characters ---\n{text[:head]}\n"
        f"{NOTE_MARK} --- {omitted:,} characters omitted ---\n"
        f"{NOTE_MARK} --- last {min(tail, max(total - head, 0)):,} characters ---\n"
        f"{cut_tail(text, max(head, total - tail))}"
    )


def unsaved_preview_text(text: str, exc: OSError) -> str:
    """`preview_text` for a result whose whole text could not be saved (``exc``)."""
    why = f"{type(exc).__name__}: {exc.strerror or exc}"
    rest = preview_text(text, "(nowhere)").split("\n", 1)[1]
    return (
        f"{NOTE_MARK} Output too large ({len(text):,} characters), and the full output could not be "
        f"saved ({why}): only this preview is kept. A new call may show more once the session's "
        f"results directory can be written.\n{rest}"
    )


def persist_block(
    envelope: ResultEnvelope, session_dir: Path, *, commands_see: bool = False
) -> ResultEnvelope:
    """Return ``envelope`` with its model text persisted and replaced by a preview.

    Image blocks are kept as they are; only text is persisted. ``commands_see``: see
    `persist_result_text`.
    """
    content = envelope.model.content
    text = (
        content
        if isinstance(content, str)
        else "\n".join(b.text for b in content if isinstance(b, TextBlock))
    )
    path: Path | None
    try:
        path = persist_result_text(session_dir, envelope.tool_use_id, text, commands_see=commands_see)
    except OSError as exc:
        # The call has run: a results directory that cannot be written (full, removed, a file in its
        # place) lost its result, or every result of the message in the budget (round 44). The
        # model still gets the preview, told the rest is gone.
        path = None
        preview = unsaved_preview_text(text, exc)
    else:
        preview = preview_text(text, path)
    new_content: str | list[ContentBlock]
    if isinstance(content, str):
        new_content = preview
    else:
        new_content = [TextBlock(text=preview), *[b for b in content if not isinstance(b, TextBlock)]]
    model = envelope.model.model_copy(update={"content": new_content})
    saved = None if path is None else str(path)
    return envelope.model_copy(update={"model": model, "persisted_path": saved, "total_chars": len(text)})


def model_chars(envelope: ResultEnvelope) -> int:
    """Characters the envelope costs the model (images counted by their base64 size)."""
    content = envelope.model.content
    if isinstance(content, str):
        return len(content)
    return sum(len(b.text) if isinstance(b, TextBlock) else len(b.source.data) for b in content)


def _text_chars(envelope: ResultEnvelope) -> int:
    """Characters of the envelope's text, what persisting it can take out of the message."""
    content = envelope.model.content
    if isinstance(content, str):
        return len(content)
    return sum(len(b.text) for b in content if isinstance(b, TextBlock))


def apply_message_budget(
    envelopes: list[ResultEnvelope],
    session_dir: Path,
    budget: int = DEFAULT_MESSAGE_BUDGET_CHARS,
    *,
    exempt: frozenset[str] = frozenset(),
    seen_by_commands: frozenset[str] = frozenset(),
) -> list[ResultEnvelope]:
    """Persist the largest results until the message's total fits ``budget``.

    ``exempt`` names tools that opted out of persistence (their own output is
    bounded, and persisting them would loop Read -> file -> Read).
    """
    result = list(envelopes)
    total = sum(model_chars(e) for e in result)
    # Only text is persisted: a result is judged by its text (an image's base64 counted as text
    # made the budget "persist" an image result's caption, "Output too large (7 characters)", and
    # grow the message by the preview's note; round 44).
    candidates = sorted(
        (i for i, e in enumerate(result) if e.persisted_path is None and e.tool_name not in exempt),
        key=lambda i: _text_chars(result[i]),
        reverse=True,
    )
    for index in candidates:
        if total <= budget:
            break
        if _text_chars(result[index]) <= PREVIEW_HEAD_CHARS + PREVIEW_TAIL_CHARS:
            continue  # a preview would not be smaller than the text itself
        before = model_chars(result[index])
        commands_see = result[index].tool_name in seen_by_commands
        result[index] = persist_block(result[index], session_dir, commands_see=commands_see)
        total += model_chars(result[index]) - before
    return result
