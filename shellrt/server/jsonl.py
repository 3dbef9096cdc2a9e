"""The JSONL tool protocol: one JSON value per line in, one JSON line out per input.

Input lines:
- an Anthropic assistant message ``{"role": "assistant", "content": [...]}``
  -> ``{"role": "user", "content": [tool_result, ...]}`` in tool_use order;
- a single ``tool_use`` block -> the same, with one result;
- ``{"type": "list_tools"}`` (optional ``"format": "anthropic" | "openai"``)
  -> ``{"type": "tools", "tools": [...]}``;
- ``{"type": "history", "messages": [...]}`` -> `Runtime.restore`:
  ``{"type": "history", "messages": [repaired...], "changes": [...], ...}``;
- ``{"type": "interrupt"}`` (optional ``"tool_use_ids": [...]``) -> answered at
  once, while the running message goes on: cancel-type tools of the running
  message stop (their results say so), block-type tools finish.
Every non-blank line gets exactly one output line; blank lines are ignored.
Lines are read while a message runs (so an interrupt can arrive), up to
`READ_AHEAD_BYTES` / `READ_AHEAD_LINES` waiting (then stdin waits; an interrupt sent after
that is read when the queue drains); messages
are still handled one at a time, in order, and answered in that order
(an interrupt's answer comes as soon as it is read).
A malformed line gets ``{"type": "error", "error": "...", "line": N}`` and the server
keeps serving; one refused before anything on it ran (not UTF-8, JSON read two ways, a malformed
message, a line cut short: those read whole before the cut) names the tool_use ids readable on
it in ``"tool_use_ids"``: none of them ran. Session state (cwd, read state, background tasks) persists
across lines; EOF stops every process of the session and returns (its background tasks as soon
as every line read is handled, before the last answers are written: a client that never reads
does not hold them). A stdout nobody reads any more (the client died or closed it) stops
everything at once, status 1, without waiting for an answer's write to fail (round 36).
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

import anyio
import anyio.abc

from shellrt.protocol._one_line import one_line
from shellrt.runtime import MessageFormatError, Runtime
from shellrt.server._cut_line import cut_short, read_until_cut
from shellrt.server._line_budget import INLINE_BYTES, over_budget, parse_off_loop
from shellrt.server._lines import TOO_LONG, LineReader
from shellrt.server._reader_gone import wait_reader_gone
from shellrt.server._strict_json import StrictJsonError, strict_loads

__all__ = ["handle_line", "serve_jsonl"]

#: Longest accepted input line; longer lines are answered with an error (and skipped whole).
MAX_LINE_BYTES = 32 * 1024 * 1024
#: Lines read ahead while a message runs (so that an interrupt can arrive) are held up to these
#: bounds; past them stdin is not read until the queue drains, and the client's writes block (red
#: team round 18: a client that kept writing while a command ran grew the server without bound).
READ_AHEAD_BYTES = 8 * 1024 * 1024
READ_AHEAD_LINES = 256
#: Bytes a pipe that polls writable accepts without blocking.
_PIPE_BUF = 4096


def _error(message: str, **extra: Any) -> dict[str, Any]:
    return {"type": "error", "error": message, **extra}


def _decode_message(exc: json.JSONDecodeError) -> str:
    # json's messages for some errors end in "at" ("Invalid control character at").
    msg = exc.msg[:-3] if exc.msg.endswith(" at") else exc.msg
    return f"{msg} at column {exc.colno}"


async def handle_line(
    runtime: Runtime, line: str, line_number: int = 0, *, interrupted: bool = False
) -> dict[str, Any] | None:
    """Answer one input line (None for a blank line).

    ``interrupted``: an interrupt arrived while the line waited its turn; its calls do not run.
    """
    if not line.strip():
        return None
    parsed = await parse_line(line, line_number)
    if isinstance(parsed, _Refused):
        return parsed.answer
    return await handle_value(runtime, parsed, line_number, interrupted=interrupted)


class _Refused:
    """A line refused before it was handled, with its answer."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer


async def parse_line(raw: bytes | str, line_number: int) -> Any:
    """The line's JSON value, or `_Refused` (bad JSON, or too many values to read without stalling
    the server: `_line_budget`); a long line is read in a worker thread."""
    refused = over_budget(raw)
    if refused is not None:
        return _Refused(_error(f"line {line_number}: {refused}", line=line_number))
    try:
        # a repeated key or NaN: refused, as other readers differ on them
        return await parse_off_loop(strict_loads, raw)
    except json.JSONDecodeError as exc:
        reason = f"not valid JSON ({_decode_message(exc)}); send one JSON value per line"
    except StrictJsonError as exc:
        reason = f"{exc}; nothing on this line ran"
    except RecursionError:
        return _Refused(
            _error(f"line {line_number}: JSON nested too deeply to read; send a flatter message", line=line_number)
        )
    return _Refused(await refused_line(raw, line_number, reason))


async def refused_line(raw: bytes | str, line_number: int, reason: str) -> dict[str, Any]:
    """The error for a line refused before anything on it ran, naming the tool_use ids it carried
    (`_readable_ids`): a client pairs results by id, and a line error alone left it guessing which
    of its calls did not run (round 45's Left; round 47)."""
    ids = await parse_off_loop(_readable_ids, raw)
    return _not_run(_error(f"line {line_number}: {reason}", line=line_number), ids)


def _not_run(answer: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    """``answer`` (a line error) saying that the tool_use ``ids`` on the line did not run."""
    if ids:
        answer["error"] += f"; its tool_use ids did not run: {', '.join(ids)}"
    answer["tool_use_ids"] = ids
    return answer


#: Keys that say which call a block is: a line repeating one of them names no id (which one ran?).
_IDENTITY_KEYS = frozenset({"role", "content", "type", "id"})


def _unambiguous(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs if key in _IDENTITY_KEYS]
    if len(keys) != len(set(keys)):
        raise ValueError("an identifying key repeated")
    return dict(pairs)


def _readable_ids(raw: bytes | str) -> list[str]:
    """The tool_use ids of a line refused before it ran, as far as they can be read for sure: none
    from a line too large to read (`_line_budget`), one that is not JSON (but for one cut short:
    the ids read whole before the cut, `_cut_line`), or one repeating a key that identifies a
    call; an id that is not text (or not UTF-8) is left out, never spelled anew."""
    if over_budget(raw) is not None:
        return []
    text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
    try:
        value = json.loads(text, object_pairs_hook=_unambiguous)
    except json.JSONDecodeError as exc:
        if not cut_short(text, exc):
            return []
        try:  # a line cut short (round 48): the calls it spelled whole before the cut
            value = read_until_cut(text, _unambiguous)
        except (ValueError, RecursionError):
            return []
    except (ValueError, RecursionError):
        return []
    return _ids_of(value)


def _ids_of(value: Any) -> list[str]:
    """The text tool_use ids of a parsed line, in order, each once (not UTF-8: left out)."""
    blocks = value.get("content") if isinstance(value, dict) and "content" in value else [value]
    if not isinstance(blocks, list):
        return []
    ids = [b["id"] for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)]
    return [i for i in dict.fromkeys(ids) if _sendable(i)]


def _sendable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


async def handle_value(
    runtime: Runtime, value: Any, line_number: int, *, interrupted: bool = False
) -> dict[str, Any] | None:
    """Answer one parsed line (see `handle_line`)."""
    if isinstance(value, dict) and value.get("type") == "history":
        return _history(runtime, value, line_number)
    if isinstance(value, dict) and value.get("type") == "interrupt":
        return _error(
            f"line {line_number}: an interrupt is only meaningful to a running server", line=line_number
        )
    if isinstance(value, dict) and value.get("type") == "list_tools":
        fmt = value.get("format", "anthropic")
        if fmt == "openai":
            return {"type": "tools", "tools": runtime.tools_for_openai()}
        if fmt != "anthropic":
            return _error(f"line {line_number}: unknown tools format {fmt!r}; use 'anthropic' or 'openai'")
        return {"type": "tools", "tools": runtime.tools_for_anthropic()}
    try:
        return await runtime.run(value, interrupted=interrupted)
    except MessageFormatError as exc:  # raised before any call of the message ran
        return _not_run(_error(f"line {line_number}: {exc}", line=line_number), _ids_of(value))
    except RecursionError:
        return _error(
            f"line {line_number}: message nested too deeply to handle; send a flatter message",
            line=line_number,
        )


def _history(runtime: Runtime, value: dict[str, Any], line_number: int) -> dict[str, Any]:
    messages = value.get("messages")
    if not isinstance(messages, list):
        return _error(
            f'line {line_number}: a history line needs "messages": [...] (the whole conversation)',
            line=line_number,
        )
    try:
        restored = runtime.restore(messages)
    except MessageFormatError as exc:
        return _error(f"line {line_number}: {exc}", line=line_number)
    return {
        "type": "history",
        "messages": restored.messages,
        "changes": [
            {"kind": c.kind, "message": c.message, "tool_use_id": c.tool_use_id, "description": c.describe()}
            for c in restored.changes
        ],
        "discovered_tools": restored.discovered_tools,
        "stale_reads": restored.stale_reads,
        "recorded": restored.recorded,
    }


def _interrupt(
    runtime: Runtime, value: dict[str, Any], running: set[str] | None, queued: dict[int, set[str]]
) -> tuple[dict[str, Any], set[int]]:
    """Interrupt the running message (honouring each tool's interrupt_behavior) and queued ones.

    A message line read before the interrupt but not started yet is interrupted
    too (its calls will not run): the client sent it first. With ``tool_use_ids``,
    only the messages carrying one of those ids are. Returns the answer and the
    queued line numbers to answer as interrupted.
    """
    ids = value.get("tool_use_ids")
    if ids is not None and (not isinstance(ids, list) or not all(isinstance(i, str) for i in ids)):
        return _error("an interrupt's tool_use_ids must be a list of strings"), set()

    def targeted(carried: set[str]) -> bool:
        return bool(carried) and (ids is None or bool(carried.intersection(ids)))

    lines = {number for number, carried in queued.items() if targeted(carried)}
    hit_running = running is not None and (ids is None or bool(running.intersection(ids)))
    if not hit_running and not lines:
        reason = "nothing is running" if ids is None else "none of those tool_use ids is running"
        return {"type": "interrupted", "interrupted": False, "reason": reason}, set()
    if hit_running:
        runtime.interrupt()
    affected = set(running or ()) if hit_running else set()
    for number in lines:
        affected |= queued[number]
    return {"type": "interrupted", "interrupted": True, "tool_use_ids": sorted(affected)}, lines


def _tool_use_ids(value: Any) -> set[str]:
    """The tool_use ids a parsed message line carries (to match an interrupt's ``tool_use_ids``)."""
    blocks = value.get("content") if isinstance(value, dict) and "content" in value else [value]
    if not isinstance(blocks, list):
        return set()
    return {str(b["id"]) for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use" and "id" in b}


def encode_answer(answer: dict[str, Any], line_number: int) -> bytes:
    """One output line (newline included) for ``answer``; never raises.

    Text that cannot be UTF-8 (a lone surrogate echoed from the input) is sent
    as JSON ``\\u`` escapes, so the answer still reaches the client intact. An
    answer that cannot be serialised at all becomes an error line that names
    the tool_use ids it carried, so the client learns which calls ran.
    """
    try:
        text = one_line(json.dumps(answer, ensure_ascii=False))
        try:
            return text.encode("utf-8") + b"\n"
        except UnicodeEncodeError:
            return json.dumps(answer, ensure_ascii=True).encode("ascii") + b"\n"
    except (TypeError, ValueError, RecursionError) as exc:
        ids = _result_ids(answer)
        fallback = _error(
            f"line {line_number}: the answer could not be serialised ({type(exc).__name__}: {exc}); "
            f"tool_use ids that ran: {', '.join(ids) or 'none'}",
            line=line_number,
            tool_use_ids=ids,
        )
        return json.dumps(fallback, ensure_ascii=True).encode("ascii") + b"\n"


def _result_ids(answer: dict[str, Any]) -> list[str]:
    content = answer.get("content")
    if not isinstance(content, list):
        return []
    return [str(b.get("tool_use_id")) for b in content if isinstance(b, dict) and b.get("tool_use_id")]


class _StdoutWriter:
    """Writes each line whole with ``os.write`` (no half line left buffered after a failure).

    A pipe is written in PIPE_BUF pieces as it drains, waiting in the event loop (as the MCP
    wire does): one blocking ``os.write`` to a client that does not read held the whole loop, so
    SIGINT, SIGTERM and interrupts were not acted on and the session's processes ran on (round 18)."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._pollable = True
        try:
            self._fd: int | None = out.fileno()
        except (AttributeError, OSError, ValueError):
            self._fd = None

    @property
    def fd(self) -> int | None:
        """The descriptor written (watched for a reader gone), None for a stream without one."""
        return self._fd

    async def __call__(self, data: bytes) -> None:
        if self._fd is None:
            self._out.write(data)
            self._out.flush()
            return
        view = memoryview(data)
        while view:
            if self._pollable:
                try:
                    await anyio.wait_writable(self._fd)
                except (OSError, ValueError, NotImplementedError):
                    self._pollable = False  # a regular file: writes do not block
            piece = view[:_PIPE_BUF] if self._pollable else view
            view = view[os.write(self._fd, piece) :]


async def serve_jsonl(
    runtime: Runtime,
    stdin: BinaryIO | None = None,
    write: Callable[[bytes], Awaitable[None]] | None = None,
) -> int:
    """Serve until EOF on ``stdin``; the runtime must already be started.

    Returns 0 at EOF, 1 when stdout was closed by the reader (nothing could be
    answered any more). A line whose answer cannot be written is reported on
    stderr (with the tool_use ids it carried) and the server goes on.
    """
    source = stdin if stdin is not None else sys.stdin.buffer
    emit = write or _StdoutWriter(sys.stdout.buffer)
    reader = LineReader(source, MAX_LINE_BYTES)
    send, receive = anyio.create_memory_object_stream[tuple[int, bytes | object]](math.inf)
    write_lock = anyio.Lock()
    running: list[set[str] | None] = [None]
    #: Message lines read but not started yet (their raw text) and those an interrupt caught waiting.
    queued: dict[int, bytes] = {}
    interrupted_lines: set[int] = set()
    status = [0]
    #: Bytes of the lines in ``queued``, and an event set when a queued line is taken.
    held = [0]
    taken = [anyio.Event()]
    #: Set at EOF on stdin: from then on no line waits for its answer to be written (see below).
    ended = anyio.Event()
    #: The answer whose write the handling of lines waits for.
    waiting_for: list[anyio.Event | None] = [None]
    answers_send, answers_receive = anyio.create_memory_object_stream[tuple[dict[str, Any], int, anyio.Event]](
        math.inf
    )

    async def room_to_read() -> None:
        """Wait until the read-ahead is under its bounds (back-pressure to the client)."""
        while held[0] >= READ_AHEAD_BYTES or len(queued) >= READ_AHEAD_LINES:
            taken[0] = anyio.Event()
            await taken[0].wait()

    async def answer_with(answer: dict[str, Any], line_number: int) -> bool:
        """Write one answer; False when stdout is gone (stop serving)."""
        data = encode_answer(answer, line_number)
        async with write_lock:
            try:
                await emit(data)
            except (BrokenPipeError, ConnectionResetError):
                print(
                    f"shellrt serve: stdout was closed by the client at line {line_number}; stopping",
                    file=sys.stderr,
                )
                status[0] = 1
                return False
            except (OSError, ValueError) as exc:
                ids = _result_ids(answer)
                print(
                    f"shellrt serve: could not write the answer to line {line_number} ({exc}); "
                    f"tool_use ids that ran: {', '.join(ids) or 'none'}",
                    file=sys.stderr,
                )
        return True

    async def read_lines(tg: anyio.abc.TaskGroup) -> None:
        """Read while messages run: an interrupt is answered (and acted on) at once."""
        line_number = 0
        async with send:
            while True:
                await room_to_read()
                raw = await reader.readline()
                if raw is None:
                    ended.set()
                    if waiting_for[0] is not None:
                        waiting_for[0].set()  # the line waiting on a write goes on (see handle_lines)
                    return
                line_number += 1
                if isinstance(raw, bytes) and b"interrupt" in raw and len(raw) <= INLINE_BYTES:
                    value = _json_object(raw)  # a longer line is handled in turn (read off the loop)
                    if value is not None and value.get("type") == "interrupt":
                        waiting = {n: _queued_ids(n, q) for n, q in queued.items()}
                        answer, caught = _interrupt(runtime, value, running[0], waiting)
                        interrupted_lines.update(caught)
                        if not await answer_with(answer, line_number):
                            tg.cancel_scope.cancel()
                            return
                        continue
                if isinstance(raw, bytes):
                    queued[line_number] = raw
                    held[0] += len(raw)
                await send.send((line_number, raw))

    #: The tool_use ids of queued lines, read once (an interrupt matches them; round 28).
    ids_of: dict[int, set[str]] = {}

    def _queued_ids(line_number: int, raw: bytes) -> set[str]:
        if line_number not in ids_of:
            ids_of[line_number] = _ids_in_line(raw)
        return ids_of[line_number]

    async def answer_text(text: str, line_number: int, caught: bool) -> dict[str, Any] | None:
        """`handle_line`, with the running message's tool_use ids noted (for an interrupt)."""
        if not text.strip():
            return None
        try:
            parsed = await parse_line(text, line_number)
            if isinstance(parsed, _Refused):
                return parsed.answer
            running[0] = _tool_use_ids(parsed)
            return await handle_value(runtime, parsed, line_number, interrupted=caught)
        except Exception as exc:  # the server never dies on one line
            return _error(f"line {line_number}: internal error: {type(exc).__name__}: {exc}", line=line_number)
        finally:
            running[0] = None

    async def handle_lines(tg: anyio.abc.TaskGroup) -> None:
        async with receive:
            async for line_number, raw in receive:
                if queued.pop(line_number, None) is not None and isinstance(raw, bytes):
                    held[0] -= len(raw)
                    taken[0].set()
                caught = line_number in interrupted_lines
                interrupted_lines.discard(line_number)
                answer: dict[str, Any] | None
                if raw is TOO_LONG:
                    answer = _error(
                        f"line {line_number}: longer than {MAX_LINE_BYTES:,} bytes (the line cap); skipped "
                        "unread. Send less per line: a large file in parts, a history compacted",
                        line=line_number,
                    )
                else:
                    assert isinstance(raw, bytes)
                    ids_of.pop(line_number, None)
                    try:
                        text = raw.decode("utf-8")
                    except UnicodeDecodeError:
                        answer = await refused_line(raw, line_number, "not UTF-8; send UTF-8 JSON")
                    else:
                        answer = await answer_text(text, line_number, caught)
                if answer is None:
                    continue
                written = anyio.Event()
                answers_send.send_nowait((answer, line_number, written))
                # Until EOF the next line waits for this answer to be written (back-pressure); after
                # it, lines are handled on, so that tasks can be stopped once all are (round 19).
                if not ended.is_set():
                    waiting_for[0] = written
                    await written.wait()
                    waiting_for[0] = None
        if ended.is_set():
            await _stop_tasks(runtime)
        answers_send.close()

    async def write_answers(tg: anyio.abc.TaskGroup) -> None:
        async with answers_receive:
            async for answer, line_number, written in answers_receive:
                ok = await answer_with(answer, line_number)
                written.set()
                if not ok:
                    tg.cancel_scope.cancel()
                    return

    async def stop_when_unread(tg: anyio.abc.TaskGroup, fd: int) -> None:
        """Nobody reads stdout any more: the running calls are cancelled (their trees killed) at once."""
        await wait_reader_gone(fd)
        if status[0] == 0:
            print("shellrt serve: stdout was closed by the client; stopping", file=sys.stderr)
        status[0] = 1
        tg.cancel_scope.cancel()

    async with anyio.create_task_group() as outer:
        async with anyio.create_task_group() as tg:
            if isinstance(emit, _StdoutWriter) and emit.fd is not None:
                outer.start_soon(stop_when_unread, tg, emit.fd)
            tg.start_soon(read_lines, tg)
            tg.start_soon(handle_lines, tg)
            tg.start_soon(write_answers, tg)
        outer.cancel_scope.cancel()  # the watcher: served to the end
    return status[0]


async def _stop_tasks(runtime: Runtime) -> None:
    """Stop the session's background tasks once stdin ended and every line read is handled, before
    the last answers are written: EOF stopped them only after, and a client that closed stdin and
    never read held that write, and the tasks, for as long as it kept stdout open (round 19)."""
    supervisor = getattr(runtime, "supervisor", None)
    if supervisor is not None:
        with anyio.CancelScope(shield=True):
            await supervisor.tasks.close()


def _ids_in_line(raw: bytes) -> set[str]:
    """The tool_use ids of a queued line; none for one that will be refused unread."""
    if over_budget(raw) is not None:
        return set()
    try:
        return _tool_use_ids(strict_loads(raw))
    except (ValueError, RecursionError):
        return set()


def _json_object(raw: bytes) -> dict[str, Any] | None:
    """The line as an object, read strictly: Python's lenient reader took the last of two ``type``
    keys, so a line another reader saw as a tool_use interrupted the running calls (round 25); a
    line the strict reader refuses is handled (and refused) in turn as any other."""
    try:
        value = strict_loads(raw)
    except (ValueError, RecursionError):  # StrictJsonError, JSONDecodeError and UnicodeDecodeError too
        return None
    return value if isinstance(value, dict) else None
