"""Red team, round 26 (supervisor): the preview's cut inside an escape sequence hid our note.

A long output's preview is its head, our note ("N bytes omitted; full output in PATH") and its
tail. A command that begins an escape sequence just before the head's end -- an OSC string, a
DCS, a CSI, or the C1 form of one -- and ends it after the cut made our note the rest of its
sequence wherever the result is rendered by a terminal: an OSC took the note into the window
title up to the tail's BEL (the reader never learns the output was cut, nor where the rest is);
a CSI ate the note's first characters. The head now stops before such a sequence
(`shellrt.supervisor._escape_cut`); the bytes left out are counted in the note, and the file
keeps every byte.
"""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor

#: Head and tail of the preview, each.
_KEEP = 1000
#: Sequences a command opens across the cut: (name, opener, closer). Each is closed in the
#: omitted part, far from the head.
_OPENERS = [
    ("osc-title", b"\x1b]0;", b"\x07"),
    ("dcs", b"\x1bP", b"\x1b\\"),
    ("csi", b"\x1b[38;5;", b"1m"),
    ("c1-osc", b"\xc2\x9d8;;", b"\x07"),
    ("bare-esc", b"\x1b", b""),
]


def _output(opener: bytes, closer: bytes) -> bytes:
    """The head's last bytes open the sequence; it ends far inside the omitted part."""
    # a lone ESC as the head's very last byte; a CSI still taking parameters
    body = b"" if opener == b"\x1b" else b"12" if opener.startswith(b"\x1b[") else b"xx"
    return b"a" * (_KEEP - len(opener) - len(body)) + opener + body + b"y" * 4000 + closer + b"z" * 3000


async def _previews(tmp_path: Path) -> list[tuple[str, int, str]]:
    backend = LocalBackend(policy=SandboxPolicy(workspace=tmp_path))
    await backend.start()
    out: list[tuple[str, int, str]] = []
    try:
        async with Supervisor(backend, session_dir=tmp_path / "s", preview_bytes=_KEEP) as sup:
            for name, opener, closer in _OPENERS:
                data = tmp_path / f"{name}.bin"
                data.write_bytes(_output(opener, closer))
                result = await sup.run(f"cat {data.name}", timeout_s=60)
                assert result.output_path.read_bytes() == data.read_bytes()  # the file keeps every byte
                out.append((name, result.total_bytes, result.preview))
    finally:
        await backend.close()
    return out


@pytest.fixture(scope="module")
def previews(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str]]:
    got = anyio.run(_previews, tmp_path_factory.mktemp("previewcut"))
    return {name: (total, text) for name, total, text in got}


@pytest.mark.parametrize("name", [name for name, _, _ in _OPENERS])
def test_the_head_stops_before_a_sequence_the_cut_left_open(name: str, previews: dict[str, tuple[int, str]]) -> None:
    """Failed before (5 of 5): the head ended inside the sequence, right before our note."""
    total, text = previews[name]
    note = re.search(r"\n\n(.*?)\.\.\. (\d+) bytes omitted; full output in ", text)
    assert note is not None, text[:200]
    head, tail = text[: note.start()], text[text.index(" ...", note.end()) :]
    assert "\x1b" not in head and "\x9d" not in head, f"the head ends inside an escape sequence: {head[-12:]!r}"
    assert head == "a" * len(head) and len(head) >= _KEEP - 16, "more than the open sequence was left out"
    shown_tail = _KEEP  # the tail is whole: it starts in the omitted run of 'y'
    assert int(note.group(2)) == total - len(head) - shown_tail, "the note's count leaves out what the head dropped"
    assert tail.endswith("z" * 100)


def test_complete_sequences_in_the_head_are_kept(tmp_path: Path) -> None:
    """A head whose colours and titles are all closed is shown whole (guard)."""

    async def main() -> str:
        backend = LocalBackend(policy=SandboxPolicy(workspace=tmp_path))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "s", preview_bytes=_KEEP) as sup:
                body = b"\x1b[31mred\x1b[0m \x1b]0;t\x07 \x1bP1$r\x1b\\ \x1b(B"
                (tmp_path / "ok.bin").write_bytes(body + b"a" * (_KEEP - len(body)) + b"b" * 5000)
                return (await sup.run("cat ok.bin", timeout_s=60)).preview
        finally:
            await backend.close()

    text = anyio.run(main)
    head = text[: text.index("\n\n")]
    assert head.startswith("\x1b[31mred\x1b[0m") and head.endswith("a" * 100) and len(head.encode()) == _KEEP


def test_a_task_output_read_leaves_an_open_sequence_for_the_next_read(tmp_path: Path) -> None:
    """Failed before (1 of 1): a TaskOutput chunk cut at a line end inside an OSC string (a
    terminal runs the line ends in it and stays in the string) ended open, so the tool's own
    words after it ("more output ...") went into the title. Now the sequence waits for the next
    read, whole; every byte still comes out, in order."""
    body = b"".join(b"line %02d\n" % i for i in range(20)) + b"\x1b]0;" + b"x\n" * 200 + b"\x07done\n"
    (tmp_path / "task.bin").write_bytes(body)

    async def main() -> list[bytes]:
        backend = LocalBackend(policy=SandboxPolicy(workspace=tmp_path))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "s") as sup:
                task = await sup.start_background("cat task.bin")
                with anyio.fail_after(60):
                    await sup.tasks.wait(task.id)
                chunks = []
                for _ in range(20):
                    chunk = await sup.tasks.read_new(task.id, max_bytes=300)
                    chunks.append(chunk.text.encode())
                    if not chunk.more_available and not chunk.new_bytes:
                        break
                return chunks
        finally:
            await backend.close()

    chunks = anyio.run(main)
    assert b"".join(chunks) == body, "a read lost or reordered output"
    first = chunks[0]
    assert first.startswith(b"line 00") and b"\x1b" not in first, f"the chunk ends inside an OSC: {first[-20:]!r}"
