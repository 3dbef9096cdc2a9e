"""The JSONL tool protocol: one JSON value per line in, one JSON line out per input.

Input lines:
- an Anthropic assistant message ``{"role": "assistant", "content": [...]}``
  -> ``{"role": "user", "content": [tool_result, ...]}`` in tool_use order;
- a single ``tool_use`` block -> the same, with one result;
- ``{"type": "list_tools"}`` (optional ``"format": "anthropic" | "openai"``)
  -> ``{"type": "tools", "tools": [...]}``.
A malformed line gets ``{"type": "error", "error": "..."}`` and the server
keeps serving. Session state (cwd, read state, background tasks) persists
across lines; EOF stops every process of the session and returns.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

import anyio
import anyio.to_thread

from shellrt.runtime import MessageFormatError, Runtime

__all__ = ["handle_line", "serve_jsonl"]

#: Longest accepted input line; longer lines are answered with an error (and skipped whole).
MAX_LINE_BYTES = 32 * 1024 * 1024


def _error(message: str, **extra: Any) -> dict[str, Any]:
    return {"type": "error", "error": message, **extra}


async def handle_line(runtime: Runtime, line: str, line_number: int = 0) -> dict[str, Any] | None:
    """Answer one input line (None for a blank line)."""
    if not line.strip():
        return None
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return _error(
            f"line {line_number}: not valid JSON ({exc.msg} at column {exc.colno}); send one JSON value per line",
            line=line_number,
        )
    if isinstance(value, dict) and value.get("type") == "list_tools":
        fmt = value.get("format", "anthropic")
        if fmt == "openai":
            return {"type": "tools", "tools": runtime.tools_for_openai()}
        if fmt != "anthropic":
            return _error(f"line {line_number}: unknown tools format {fmt!r}; use 'anthropic' or 'openai'")
        return {"type": "tools", "tools": runtime.tools_for_anthropic()}
    try:
        return await runtime.run(value)
    except MessageFormatError as exc:
        return _error(f"line {line_number}: {exc}", line=line_number)


async def serve_jsonl(
    runtime: Runtime,
    stdin: BinaryIO | None = None,
    write: Callable[[str], Awaitable[None]] | None = None,
) -> int:
    """Serve until EOF on ``stdin``; the runtime must already be started. Returns 0."""
    source = stdin if stdin is not None else sys.stdin.buffer
    out = sys.stdout

    async def default_write(text: str) -> None:
        out.write(text + "\n")
        out.flush()

    emit = write or default_write
    line_number = 0
    while True:
        raw = await anyio.to_thread.run_sync(source.readline, MAX_LINE_BYTES + 1)
        if not raw:
            return 0
        line_number += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):  # skip the rest of the oversized line
                raw = await anyio.to_thread.run_sync(source.readline, MAX_LINE_BYTES)
            await emit(json.dumps(_error(f"line {line_number}: longer than {MAX_LINE_BYTES} bytes; skipped")))
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            await emit(json.dumps(_error(f"line {line_number}: not UTF-8; send UTF-8 JSON", line=line_number)))
            continue
        try:
            answer = await handle_line(runtime, text, line_number)
        except Exception as exc:  # the server never dies on one line
            answer = _error(f"line {line_number}: internal error: {type(exc).__name__}: {exc}", line=line_number)
        if answer is not None:
            await emit(json.dumps(answer, ensure_ascii=False))
