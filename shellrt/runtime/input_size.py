"""How large a tool_use's input is, judged before the session keeps or writes it.

Why: the model chooses the input, and the servers take lines of up to 64 MiB. A session writes
each call's input into its transcript twice (the start line and the call line) and keeps the input
of its last 2,000 calls, refused ones too, to tell a resend from a reused id: ten refused 16 MiB
calls held 176 MiB of the shellrt process for good and wrote 320 MiB (red team round 39,
review6). An input past `MAX_INPUT_CHARS` is replaced, before any of that, by a small marker the
executor refuses with a reason (`cut_message`).
"""

from __future__ import annotations

from typing import Any

from shellrt.protocol import ToolUseBlock

__all__ = [
    "CUT_KEY",
    "ITEM_CHARS",
    "MAX_INPUT_CHARS",
    "bounded_block",
    "bounded_input",
    "cut_message",
    "input_chars",
    "sized_block",
]

#: Characters a tool input may hold (`input_chars`): a
#: model writes far less in one turn; a Write of a larger file goes in parts (Write, then Edit).
MAX_INPUT_CHARS = 4 * 1024 * 1024
#: What a container, a member or a number counts as: about what one holds in memory per character
#: of a string (an empty list and its slot: 64 bytes). At one each, 1.4 M empty lists (4.2 MB of
#: JSON) were counted 2.8 M and held 96 MiB for the session's next 2,000 calls (round 39, review9).
ITEM_CHARS = 16
#: The one key of the marker that stands for a cut input (`bounded_block`).
CUT_KEY = "shellrt_input_cut"
_CONTAINERS = (dict, list, tuple)


def input_chars(value: Any, limit: int = MAX_INPUT_CHARS) -> int:
    """The characters of ``value`` (JSON-like): its strings' and keys', and `ITEM_CHARS` for each
    container, member and number (more for an int of many digits); counted without recursion, and
    no further once past ``limit`` (a container's members count before it is walked: five million
    small items are past at once)."""
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            total += ITEM_CHARS * (1 + len(item))
            if total <= limit:
                for key, child in item.items():
                    total += len(key) if isinstance(key, str) else ITEM_CHARS
                    stack.append(child)
        elif isinstance(item, _CONTAINERS):
            total += ITEM_CHARS * (1 + len(item))
            if total <= limit:
                stack.extend(item)
        else:  # a number, bool or null (an int's size grows with its digits)
            total += ITEM_CHARS + (item.bit_length() // 8 if isinstance(item, int) else 0)
    return total


def bounded_input(value: Any) -> Any:
    """``value``, or the marker ``{CUT_KEY: {"characters": n}}`` when it holds more than
    `MAX_INPUT_CHARS` (``n``: counted up to just past the bound, the same for the same input)."""
    size = input_chars(value)
    return value if size <= MAX_INPUT_CHARS else {CUT_KEY: {"characters": size}}


def bounded_block(block: ToolUseBlock) -> ToolUseBlock:
    """``block``, or a copy whose input is `bounded_input`'s marker."""
    return sized_block(block)[0]


def sized_block(block: ToolUseBlock) -> tuple[ToolUseBlock, int]:
    """`bounded_block`'s block and the `input_chars` of its input, counted once: the session keeps an
    input by its size too (round 40: it counted each input three times)."""
    size = input_chars(block.input)
    if size <= MAX_INPUT_CHARS:
        return block, size
    marker = {CUT_KEY: {"characters": size}}
    return ToolUseBlock(id=block.id, name=block.name, input=marker), input_chars(marker)


def cut_message(tool_name: str, raw: Any) -> str | None:
    """Why the model's input was refused, when ``raw`` is the marker `bounded_block` made."""
    if not (isinstance(raw, dict) and len(raw) == 1 and isinstance(raw.get(CUT_KEY), dict)):
        return None
    return (
        f"Invalid input for {tool_name}: the input holds more than {MAX_INPUT_CHARS:,} characters, the most "
        f"one call may send (each list or object item and each number counts as {ITEM_CHARS}); it was not "
        "run or kept. Send less at once: write a large file in parts (Write the first part, then Edit to "
        "add the rest), or generate it with a command."
    )
