"""Red team, round 28 (supbatch): TaskOutput cut a character in two at a read's edge.

A background command prints a long line of multi-byte characters (a minified UTF-8 file, a log
of CJK text, a progress bar of box characters) with no newline. TaskOutput hands out at most
256 KiB per read and a running task's partial line at most 64 KiB at a time; each such cut fell
where the byte count did, inside a character, and both halves were shown as U+FFFD: the model
saw characters the command never printed (2 per cut). A cut now backs off to the character's
start: the next read begins with it whole.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from tests._local_session import local_supervisor


def test_reads_never_split_a_character(tmp_path: Path) -> None:
    """Failed before (1 of 1): U+FFFD in the joined reads of 300,000 euro signs."""
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> None:
        async with local_supervisor(ws, tmp_path / "s") as sup:
            command = "python3 -c \"import sys; sys.stdout.write('\\u20ac' * 300000)\""
            task = await sup.start_background(command, description="no newline")
            await sup.tasks.wait(task.id)
            texts = []
            for _ in range(10):
                chunk = await sup.tasks.read_new(task.id)
                texts.append(chunk.text)
                if not chunk.more_available:
                    break
            text = "".join(texts)
            replaced = text.count("\ufffd")  # (no text in the messages: it is 300,000 characters)
            assert len(texts) > 1 and replaced == 0, (len(texts), replaced)
            whole = text == "\u20ac" * 300000
            assert whole, len(text)

    anyio.run(main)
