"""A fetched body as text for the model, with bounded work whatever the page holds.

Why a module of its own: the page is hostile input, and turning it into text is
where it can cost the host most. html2text's output grows with the square of a
list's depth (48 KB of ``<ul><li>`` became 25 MB of indentation and 20 s of
CPU; 10 MB would never end), a run of ``<`` costs tens of microseconds per
byte, and Python's ``punycode`` codec (a ``charset`` the page names) decodes in
quadratic time. All of it ran in the event loop, stalling every session of the
process. Here HTML is converted in a worker process (`shellrt.tools._convert_worker`:
bounded memory, killed at the deadline; round 20), fed in small pieces with the
deadline also checked between them, and stops once it has produced more text than
the model would be shown; charsets are limited to real text encodings.
"""

from __future__ import annotations

import codecs
import importlib
import importlib.util
import re
import time
from typing import Any

from shellrt.protocol import ToolExecutionError

__all__ = [
    "CONVERSION_SLICE_CHARS",
    "Converted",
    "NotText",
    "body_to_text",
    "charset_of",
    "html_to_markdown",
    "shown_media_type",
]

_MISSING_EXTRA = "WebFetch needs the optional web dependencies: pip install 'shellrt[web]'"
_TEXTUAL = re.compile(
    r"^(text/|application/(json|xml|xhtml\+xml|javascript|ld\+json|x-ndjson|[\w.+-]+\+(json|xml)))"
)
#: A media type as RFC 9110 writes one: ``type/subtype`` tokens.
_MEDIA_TYPE = re.compile(r"[a-z0-9!#$&^_.+-]{1,64}/[a-z0-9!#$&^_.+-]{1,64}")
#: HTML handed to the converter at a time; the deadline is checked between slices.
CONVERSION_SLICE_CHARS = 8 * 1024
#: Text encodings a page may not choose: decoders whose cost is not linear in the body.
_SLOW_CODECS = frozenset({"punycode", "idna"})


class NotText(Exception):
    """The body is not text (image, PDF, archive …); the message is its media type."""


class _Full(Exception):
    """The converter produced as much text as is kept."""


class Converted:
    """Text of a page and, when the work was cut short, why (a note for the model)."""

    __slots__ = ("cpu_s", "lasting", "note", "text")

    def __init__(self, text: str, note: str = "", cpu_s: float = 0.0, *, lasting: bool = True) -> None:
        self.text = text
        self.note = note
        #: CPU seconds the worker process spent on the page (HTML only).
        self.cpu_s = cpu_s
        #: The text is what the page converts to, whenever it is converted (complete, or cut at the
        #: size cap): not cut short by the moment (the deadline, busy or failed converters), so it may
        #: be cached (red team round 56, web3).
        self.lasting = lasting


def shown_media_type(content_type: str) -> str:
    """The media type of ``content_type`` as a result names it: ``type/subtype`` in lower case, or
    ``unknown``; never other words the server wrote there (red team round 48, net3: a Content-Type
    wrote a sentence after ``Content-Type:`` in the result's header line)."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media if _MEDIA_TYPE.fullmatch(media) else "unknown"


def charset_of(content_type: str) -> str:
    """The ``charset`` of a Content-Type when it names a text encoding with a linear decoder, else utf-8."""
    match = re.search(r"charset=[\"']?([\w.:-]+)", content_type, re.IGNORECASE)
    if match:
        try:
            info = codecs.lookup(match.group(1))
        except LookupError:
            return "utf-8"
        # Binary transforms (base64, zlib, rot13) are no text encoding: bytes.decode refuses them.
        if getattr(info, "_is_text_encoding", True) and info.name not in _SLOW_CODECS and _decodes(info.name):
            return info.name
    return "utf-8"


def _decodes(name: str) -> bool:
    """Whether codec ``name`` decodes at all: ``undefined`` raises on every decode, whatever the
    error handler, and failed the call (red team, round 14)."""
    try:
        b"a".decode(name, errors="replace")
    except (UnicodeError, LookupError, TypeError, ValueError):
        return False
    return True


def body_to_text(
    body: bytes, content_type: str, url: str, *, deadline: float, max_chars: int, session: str = ""
) -> Converted:
    """``body`` as text (HTML as markdown); blocking: run it in a worker thread.

    Stops at ``deadline`` (``time.monotonic``) or once ``max_chars`` are produced,
    keeping what was converted. Raises `NotText` for a non-text media type.
    """
    media = content_type.split(";", 1)[0].strip().lower()
    text = body.decode(charset_of(content_type), errors="replace")
    if media in ("text/html", "application/xhtml+xml") or (not media and "<html" in text[:2000].lower()):
        return _in_worker(text, url, deadline=deadline, max_chars=max_chars, session=session)
    if not media or _TEXTUAL.match(media):
        if len(text) > max_chars:
            # Kept (in the result and the cache) no longer than what the model can be shown.
            return Converted(
                text[:max_chars],
                f"The page has {len(text):,} characters of text; only the first {max_chars:,} are kept.",
            )
        return Converted(text)
    # The media type is named in the result's text: a token, never the server's words (round 48).
    raise NotText(shown_media_type(content_type))


def _in_worker(html: str, url: str, *, deadline: float, max_chars: int, session: str = "") -> Converted:
    """`html_to_markdown` in a worker process: what it costs is the worker's (memory limit), and
    it ends at the deadline, whatever one step of it would have taken (red team, round 20)."""
    if importlib.util.find_spec("html2text") is None:
        raise ToolExecutionError(_MISSING_EXTRA)
    from shellrt.tools._convert_worker import SLOT_SECONDS, WORKER_MEMORY_BYTES, convert_html

    done = convert_html(html, url, deadline=deadline, max_chars=max_chars, session=session)
    if done.error == "deadline":
        note = (
            "Converting the page to text took too long and was stopped at the call's deadline; "
            "nothing of it is shown."
        )
    elif done.error == "slot":
        note = (
            f"Converting the page to text took more than {SLOT_SECONDS:g} s, the most one page may hold "
            "a converter process (others wait for them), and was stopped; nothing of it is shown."
        )
    elif done.error == "busy":
        note = (
            "Other pages held every converter process until the call's deadline; the page was not "
            "converted. Try again."
        )
    elif done.error == "memory":
        note = (
            f"Converting the page to text needed more than {WORKER_MEMORY_BYTES // 2**20:,} MiB of "
            "memory and was stopped; nothing of it is shown."
        )
    elif done.error:
        note = f"Converting the page to text failed ({done.message or done.error}); nothing of it is shown."
    else:
        return Converted(done.text, done.note, done.cpu_s, lasting=done.lasting)
    return Converted("", note, done.cpu_s, lasting=False)


def html_to_markdown(html: str, base_url: str, *, deadline: float, max_chars: int) -> Converted:
    """``html`` as markdown, in this process: the worker process's work (`_convert_child`)."""
    try:
        html2text: Any = importlib.import_module("html2text")
    except ImportError:
        raise ToolExecutionError(_MISSING_EXTRA) from None

    class _Bounded(html2text.HTML2Text):  # type: ignore[misc,name-defined]
        produced = 0

        def outtextf(self, s: str) -> None:
            super().outtextf(s)
            self.produced += len(s)
            if self.produced > max_chars:
                raise _Full

    html = _inert_marked_sections(html)
    converter = _Bounded(baseurl=base_url)
    converter.body_width = 0
    converter.ignore_images = False
    converter.unicode_snob = True
    converter.single_line_break = False
    note = ""
    lasting = True
    try:
        converter.start = True
        start = 0
        while start < len(html):
            if time.monotonic() > deadline:
                note = (
                    f"Converting the page to text took too long; only the first {start:,} of "
                    f"{len(html):,} characters of its HTML were converted."
                )
                lasting = False
                break
            # html.parser holds an unclosed tag back and scans it again at every feed: in fixed
            # slices a page that never closes one cost time quadratic in its size (1 MB of
            # `<a x=y x=y …`: 11 s of CPU, up to the deadline). A slice at least as long as what
            # is held keeps the work linear (red team, round 19).
            size = max(CONVERSION_SLICE_CHARS, len(converter.rawdata))
            converter.feed(html[start : start + size])
            start += size
        if not note:
            converter.feed("")
            _hand_over_unclosed(converter)
            text: str = converter.optwrap(converter.finish())
            return _kept(_squeeze(text), "", max_chars)
    except _Full:
        note = _FULL.format(max_chars)
    kept = _kept(_squeeze("".join(converter.outtextlist)), note, max_chars)
    kept.lasting = lasting
    return kept


#: ``<![`` opening no marked section html.parser knows: it raises ``AssertionError`` there (``<![x[``,
#: ``<![ [``), which ended the page's converter process, so the page showed nothing.
_UNKNOWN_MARKED = re.compile(
    r"<!\[(?!(?:cdata|temp|ignore|include|rcdata|if|else|endif)(?![-_.a-z0-9]))", re.IGNORECASE
)


def _inert_marked_sections(html: str) -> str:
    """``html`` with each ``<![`` html.parser would raise on written as text (``&lt;![``): a browser
    reads it as a bogus comment; the parser's exception ended the page's converter process (the
    host started a new one) and the page was shown as nothing, ``Converting the page to text
    failed`` (red team round 48, net3: Word's ``<![if !supportLists]>`` parses; ``<![x[`` did not)."""
    return _UNKNOWN_MARKED.sub("&lt;![", html) if "<![" in html else html


#: The most of an unclosed construct at a page's end left to html.parser's ``close``, which scans
#: the rest of the page once per ``<`` in it: 40 KB of ``<a <a …`` cost 18 s of CPU after the
#: deadline on Python 3.11 (CPython's CVE-2025-6069; red team, round 19). A longer one is text.
_CLOSE_TAIL_CHARS = 4096


def _hand_over_unclosed(converter: Any) -> None:
    """Hand the converter what its parser still holds, as text, when ``close`` would cost too much."""
    tail = converter.rawdata
    if len(tail) > _CLOSE_TAIL_CHARS:
        converter.rawdata = ""
        converter.handle_data(tail)


_FULL = "The page converts to more text than is kept ({:,} characters); the rest is left out."


def _kept(text: str, note: str, max_chars: int) -> Converted:
    """At most ``max_chars`` of ``text``: the converter's last piece may be any size (an unclosed
    ``<!--`` or ``<![CDATA[`` came out whole when the parser closed: a 10 MB page kept 10 MB of
    text in the result and the cache; red team, round 18)."""
    if len(text) > max_chars:
        return Converted(text[:max_chars], note or _FULL.format(max_chars))
    return Converted(text, note)


def _squeeze(text: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", text).strip()
