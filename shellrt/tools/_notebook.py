"""Rendering a Jupyter notebook for Read, in a child process held to a deadline and a memory bound.

A notebook is JSON, parsed whole: three bytes of it (``{},``) are a Python object of ~70, so a
10 MB notebook a command planted cost the shellrt process 300-500 MB and seconds of CPU per Read
(and Reads run several at once). `render` runs in `serve`'s process instead, started with the
package directories only (no pydantic, no anyio: it starts in about a bare interpreter's time).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from typing import Any

from shellrt.tools._framing import NOTEBOOK_CUT, NOTEBOOK_FRAMING, NOTEBOOK_LABELS, unframed

__all__ = ["NotebookError", "Rendered", "render", "serve"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_MAX_OUTPUT_PER_CELL = 2_000
#: What an attribute value may not hold: its quote, a tag's brackets, line breaks and controls.
_ATTRIBUTE_UNSAFE = re.compile('["<>&\x00-\x1f\x7f-\x9f\u2028\u2029]')
_ATTRIBUTE_MAX = 200


class NotebookError(ValueError):
    """Raised by `render` for data that is not a Jupyter notebook."""


def _raw(value: Any) -> str:
    return (
        "".join(str(v) for v in value) if isinstance(value, list) else str(value) if value is not None else ""
    )


def _joined(value: Any, limit: int | None = None, *, output: bool = False) -> str:
    """The notebook's text ``value``, cut to ``limit`` (the tool's mark says how much more), with every
    line that would pass for the tool's framing escaped (red team round 13: a cell holding ``</cell>``
    then ``<cell ...>`` forged a cell; round 23: behind invisible characters, escapes, fullwidth;
    round 25: an ``output``'s ``[stderr]`` or ``… [9 more characters]`` line forged a label or a
    cut). The text is cut before it is judged (bounded work) and marked after (the mark is ours)."""
    text = _raw(value)
    shown = text if limit is None else text[:limit]
    shown = unframed(shown, NOTEBOOK_FRAMING, NOTEBOOK_LABELS if output else NOTEBOOK_CUT)
    return shown if limit is None or len(text) <= limit else shown + _cut_mark(len(text) - limit)


def _cut_mark(more: int) -> str:
    return f"\n… [{more:,} more characters]"


def _attribute(value: Any) -> str:
    """A value the notebook chose, safe inside the tool's ``"..."`` attribute (escaped, bounded)."""
    text = str(value)[:_ATTRIBUTE_MAX]
    return _ATTRIBUTE_UNSAFE.sub(lambda m: _ENTITIES.get(m[0]) or f"&#{ord(m[0])};", text)


_ENTITIES = {'"': "&quot;", "<": "&lt;", ">": "&gt;", "&": "&amp;"}
#: The label names the tool shows as the notebook gives them (nbformat's); any other name is the
#: notebook's text and would let a label say what it chose (``stdout] [error] ...``).
_STREAMS = frozenset({"stdout", "stderr"})
_DATA_KINDS = frozenset({"execute_result", "display_data"})
_MIME = re.compile(r"[A-Za-z][A-Za-z0-9.+_-]{0,60}/[A-Za-z0-9.+_-]{1,60}")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + _cut_mark(len(text) - limit)


def _summarise_output(out: dict[str, Any]) -> str:
    kind = out.get("output_type", "")
    if kind == "stream":
        name = out.get("name")
        label = name if isinstance(name, str) and name in _STREAMS else "stream"
        return f"[{label}]\n" + _joined(out.get("text"), _MAX_OUTPUT_PER_CELL, output=True)
    if kind == "error":
        trace = _ANSI.sub("", "\n".join(_joined(t, output=True) for t in out.get("traceback", [])[-5:]))
        return "[error] " + _joined(
            f"{out.get('ename', '')}: {out.get('evalue', '')}\n{trace}", _MAX_OUTPUT_PER_CELL, output=True
        )
    data = out.get("data") or {}
    parts: list[str] = []
    for mime in sorted(data):
        if mime == "text/plain":
            parts.append(_joined(data[mime], _MAX_OUTPUT_PER_CELL, output=True))
        else:
            shown = mime if _MIME.fullmatch(mime) else "unnamed"
            parts.append(f"[{shown} output, {len(_raw(data[mime])):,} characters, not shown]")
    return f"[{kind if kind in _DATA_KINDS else 'output'}]\n" + "\n".join(parts)


@dataclass(frozen=True)
class Rendered:
    """A notebook's model-facing text, and whether it shows every cell (``whole``): Write replaces
    only what was read whole, and cells past the budget were replaced unseen (red team round 53)."""

    text: str
    whole: bool


def render(data: bytes, label: str, max_chars: int) -> Rendered:
    """The model-facing text of the notebook ``data`` (cells up to ``max_chars``); `NotebookError`
    when it is not one."""
    whole = True
    try:
        nb = json.loads(data)
        cells = nb["cells"]
        language = _attribute(nb.get("metadata", {}).get("language_info", {}).get("name", "python"))
        rendered: list[str] = []
        total = 0
        for index, cell in enumerate(cells, 1):
            cell_type = cell.get("cell_type", "code")
            tag = f'<cell index="{index}" type="{_attribute(cell_type)}"'
            if cell.get("id"):
                tag += f' id="{_attribute(cell["id"])}"'
            if cell_type == "code":
                tag += f' language="{language}"'
            piece = f"{tag}>\n{_joined(cell.get('source'))}\n</cell>"
            outputs = [_summarise_output(o) for o in cell.get("outputs", []) if isinstance(o, dict)]
            if outputs:
                piece += f'\n<outputs cell="{index}">\n' + "\n".join(outputs) + "\n</outputs>"
            clipped = _clip(piece, max_chars)  # a first cell is shown even when alone over the budget
            whole = whole and clipped == piece
            piece = clipped
            if total + len(piece) > max_chars and rendered:
                whole = False
                rendered.append(
                    f"(Output budget reached: showing cells 1-{index - 1} of {len(cells)}. Search the rest "
                    "with Grep or read the raw JSON with Bash.)"
                )
                break
            rendered.append(piece)
            total += len(piece)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise NotebookError(f"{label} is not a valid Jupyter notebook (bad JSON or no cells).") from None
    return Rendered(f"Notebook {label} ({len(cells)} cells)\n\n" + "\n\n".join(rendered), whole)


def serve() -> None:
    """The child's entry: ``argv`` = address-space bytes, label, character budget; the notebook on
    stdin; ``{"text": ..., "whole": ...}`` or ``{"error": ...}`` on stdout."""
    import resource

    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        shown = render(sys.stdin.buffer.read(), sys.argv[2], int(sys.argv[3]))
        answer: dict[str, object] = {"text": shown.text, "whole": shown.whole}
    except NotebookError as exc:
        answer = {"error": str(exc)}
    json.dump(answer, sys.stdout)
