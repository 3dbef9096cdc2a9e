"""Accept the shapes agents send, and make a whole conversation legal again.

`parse_tool_uses` takes what `Runtime.run` runs: an assistant message, a list
of blocks, or one tool_use. A user message or a whole conversation is refused
with a pointer to `Runtime.restore`, never silently answered with nothing.

`repair_history` is Claude Code's ``ensureToolResultPairing`` for histories
that went through a crash, a compaction or a replay: every tool_use gets
exactly one tool_result in the next user message (a synthetic error result
when none was recorded), results nobody asked for are dropped, duplicates are
removed, and every change is reported.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from shellrt.protocol import ToolUseBlock

__all__ = [
    "MAX_HISTORY_ITEMS",
    "MISSING_RESULT",
    "HistoryRepair",
    "MessageFormatError",
    "checked_block",
    "parse_tool_uses",
    "repair_history",
]

#: The synthetic result of a tool_use whose result was never recorded.
MISSING_RESULT = (
    "No result was recorded for this call (the session was interrupted or the history was cut), so it may or "
    "may not have run. Check its effects before you run it again."
)
#: The most JSON objects and arrays (messages, content blocks, tool inputs, nested content) one
#: history may hold: about 33,000 tool calls. Restoring is linear in them (~0.5 s of CPU for 20,000
#: Reads, round 28) but runs on the caller's event loop; a 32 MB JSONL line holds millions.
MAX_HISTORY_ITEMS = 100_000
_RESTORE_HINT = "to load a conversation (user and assistant messages), use Runtime.restore(messages)"


class MessageFormatError(ValueError):
    """Raised when input is not an assistant message, a tool_use block or a list of blocks."""


def checked_block(block: Any) -> ToolUseBlock:
    """``block`` when its fields are what `ToolUseBlock` validation leaves; `MessageFormatError` otherwise.

    ``ToolUseBlock.model_construct(...)`` and ``model_copy(update=...)`` skip validation: an id
    that is not a string (or is missing or empty), a name that is not one, ended the whole message
    in a ``TypeError`` and left its other calls' ids "running" for good (red team round 35). A
    validated block always holds exactly ``str`` (never a subclass) in both, so exact type checks
    (~0.3 us) tell them apart without validating again (~10 us).
    """
    if isinstance(block, ToolUseBlock):
        use_id, name = getattr(block, "id", None), getattr(block, "name", None)
        if type(use_id) is str and use_id and type(name) is str and block.type == "tool_use":
            return block
        shown = f"id {_shown(use_id)}, name {_shown(name)}, type {_shown(getattr(block, 'type', None))}"
    else:
        shown = f"a {type(block).__name__}"
    raise MessageFormatError(
        f"not a valid tool_use block ({shown}): a tool_use needs a non-empty string id and a string "
        "name. Build blocks with ToolUseBlock(...) or ToolUseBlock.model_validate(...), not model_construct "
        "or model_copy(update=...), which skip the checks; it was not run"
    )


def _shown(value: Any) -> str:
    """A field's value for an error: a string's start, else only its type (a repr may be huge or raise)."""
    return repr(value[:40]) if type(value) is str else f"a {type(value).__name__}"


def parse_tool_uses(message: Any) -> list[ToolUseBlock]:
    """Extract the tool_use blocks, in order; other content blocks (text, thinking) are ignored."""
    if isinstance(message, ToolUseBlock):
        return [checked_block(message)]
    if isinstance(message, dict):
        if message.get("type") == "tool_use":
            return [_block(message, 0)]
        if "content" in message:
            if message.get("role", "assistant") != "assistant":
                raise MessageFormatError(
                    f"expected an assistant message, got role {message.get('role')!r}; send the model's turn "
                    f"to run its tool calls ({_RESTORE_HINT})"
                )
            content = message["content"]
        else:
            raise MessageFormatError(
                "expected an assistant message {'role': 'assistant', 'content': [...]} or a tool_use block"
            )
    elif isinstance(message, list):
        if any(_is_message(item) for item in message):
            raise MessageFormatError(
                f"expected one assistant message or a list of content blocks, got a list of messages; {_RESTORE_HINT}, "
                "then send only the newest assistant message to run"
            )
        content = message
    else:
        raise MessageFormatError(
            f"expected a message object or a list of blocks, got {type(message).__name__}"
        )
    if isinstance(content, str):
        return []
    if not isinstance(content, list):
        raise MessageFormatError("'content' must be a list of content blocks")
    blocks: list[ToolUseBlock] = []
    seen: set[str] = set()
    for index, item in enumerate(content):
        if isinstance(item, ToolUseBlock):
            block = checked_block(item)
        elif isinstance(item, dict) and item.get("type") == "tool_use":
            block = _block(item, index)
        else:
            continue
        if block.id in seen:
            raise MessageFormatError(f"duplicate tool_use id {block.id!r}: every tool_use needs a unique id")
        seen.add(block.id)
        blocks.append(block)
    return blocks


def _block(item: dict[str, Any], index: int) -> ToolUseBlock:
    try:
        return ToolUseBlock.model_validate(item)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        raise MessageFormatError(f"content[{index}] is not a valid tool_use block ({problems})") from exc


def _is_message(item: Any) -> bool:
    if isinstance(item, BaseModel):
        item = item.model_dump(mode="json")
    return isinstance(item, dict) and "role" in item and "content" in item


# --- conversation repair --------------------------------------------------------------------
RepairKind = Literal[
    "synthetic_result",
    "orphan_result_dropped",
    "duplicate_tool_use_dropped",
    "duplicate_result_dropped",
    "empty_message_dropped",
]


@dataclass(frozen=True)
class HistoryRepair:
    """One change `repair_history` made; ``message`` indexes the input list."""

    kind: RepairKind
    message: int
    tool_use_id: str = ""

    def describe(self) -> str:
        what = {
            "synthetic_result": "added an error result for tool_use {id} (none was recorded)",
            "orphan_result_dropped": "dropped tool_result {id}: no tool_use before it asked for it",
            "duplicate_tool_use_dropped": "dropped a second tool_use with id {id}",
            "duplicate_result_dropped": "dropped a second tool_result for {id}",
            "empty_message_dropped": "dropped a message left empty by the repair",
        }[self.kind]
        return f"message {self.message}: " + what.format(id=self.tool_use_id)


_TOO_BIG = (
    f"the history holds more than {MAX_HISTORY_ITEMS:,} JSON objects and arrays (messages, content blocks "
    "and tool inputs), more than one restore takes; send the conversation as compacted for the model, or "
    "only its newest messages (a cut history is repaired)"
)


def _plain(obj: Any, copied: Iterator[int]) -> Any:
    """``obj`` as plain JSON values; each object and array copied draws from ``copied``, so a history
    too big to restore is refused after at most `MAX_HISTORY_ITEMS` of them."""
    if isinstance(obj, (BaseModel, dict, list)) and next(copied) >= MAX_HISTORY_ITEMS:
        raise MessageFormatError(_TOO_BIG)
    if isinstance(obj, BaseModel):
        try:
            return obj.model_dump(mode="json", exclude_none=True, warnings=False)
        except (ValueError, TypeError) as exc:  # built by model_construct: a field no JSON holds (round 35)
            raise MessageFormatError(
                f"a {type(obj).__name__} of the history holds a value no JSON can carry ({type(exc).__name__}); "
                "build blocks with their class(...) or model_validate, not model_construct or "
                "model_copy(update=...), which skip the checks. Nothing was restored"
            ) from None
    if isinstance(obj, dict):
        return {k: _plain(v, copied) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v, copied) for v in obj]
    return obj


def _synthetic(tool_use_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": MISSING_RESULT, "is_error": True}


def repair_history(messages: Any) -> tuple[list[dict[str, Any]], list[HistoryRepair]]:
    """A legal copy of ``messages`` (each tool_use answered once, in the next user message) and the changes.

    Raises `MessageFormatError` when ``messages`` is not a list of ``{role, content}`` messages, or
    holds more than `MAX_HISTORY_ITEMS` objects and arrays.
    """
    if not isinstance(messages, list):
        raise MessageFormatError(
            f"expected a list of messages [{{'role': ..., 'content': ...}}, ...], got {type(messages).__name__}"
        )
    plain: list[dict[str, Any]] = []
    copied = itertools.count()
    for index, raw in enumerate(messages):
        message = _plain(raw, copied)
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise MessageFormatError(
                f"messages[{index}] is not a user or assistant message {{'role': 'user'|'assistant', 'content': ...}}"
            )
        if "content" not in message:
            raise MessageFormatError(f"messages[{index}] has no 'content'")
        plain.append(message)

    repaired: list[dict[str, Any]] = []
    changes: list[HistoryRepair] = []
    seen_uses: set[str] = set()
    answered: set[str] = set()
    # tool_use ids of the last assistant message, not yet answered: in order, and as a set (a
    # list's `in` made one message of 20,000 uses quadratic; red team, round 28: hist)
    pending: dict[str, None] = {}
    pending_at = -1

    def answer_missing(before_index: int) -> None:
        if pending:
            changes.extend(HistoryRepair("synthetic_result", before_index, i) for i in pending)
            answered.update(pending)
            repaired.append({"role": "user", "content": [_synthetic(i) for i in pending]})
            pending.clear()

    for index, message in enumerate(plain):
        content = message["content"]
        blocks = content if isinstance(content, list) else None
        if message["role"] == "assistant":
            answer_missing(pending_at)
            if blocks is None:
                repaired.append(message)
                continue
            kept: list[Any] = []
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    use_id = str(block.get("id", ""))
                    if use_id in seen_uses:
                        changes.append(HistoryRepair("duplicate_tool_use_dropped", index, use_id))
                        continue
                    seen_uses.add(use_id)
                    pending[use_id] = None
                kept.append(block)
            pending_at = index
            if not kept:
                changes.append(HistoryRepair("empty_message_dropped", index))
                continue
            repaired.append({**message, "content": kept})
            continue
        # a user message: it answers the assistant message just before it
        if blocks is None:
            answer_missing(pending_at)
            repaired.append(message)
            continue
        results: dict[str, dict[str, Any]] = {}
        others: list[Any] = []
        for block in blocks:
            if not (isinstance(block, dict) and block.get("type") == "tool_result"):
                others.append(block)
                continue
            result_id = str(block.get("tool_use_id", ""))
            if result_id in results or result_id in answered:
                changes.append(HistoryRepair("duplicate_result_dropped", index, result_id))
            elif result_id not in pending:
                changes.append(HistoryRepair("orphan_result_dropped", index, result_id))
            else:
                results[result_id] = block
        ordered: list[Any] = []
        for use_id in pending:
            if use_id in results:
                ordered.append(results[use_id])
            else:
                changes.append(HistoryRepair("synthetic_result", index, use_id))
                ordered.append(_synthetic(use_id))
        answered.update(pending)
        pending.clear()
        kept_user = ordered + others  # tool_results first, as the Messages API requires
        if not kept_user:
            changes.append(HistoryRepair("empty_message_dropped", index))
            continue
        repaired.append({**message, "content": kept_user})
    answer_missing(pending_at)
    return repaired, changes
