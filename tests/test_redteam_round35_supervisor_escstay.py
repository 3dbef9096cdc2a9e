"""Red team, round 35 (supervisor): an escape the output left open behind a control byte took in our note.

A terminal (the DEC/ECMA-48 parser xterm and the others follow) runs a C0 control that comes
after ESC (``ESC LF``) and stays in the escape, and ignores DEL inside a CSI. shellrt's scanner
(`shellrt.supervisor._escape_cut`) took that control as the escape's final byte, and DEL as a
CSI's end, so an output ending ``ESC LF`` or ``ESC [ 1 DEL`` counted as closed: the note after it
was not protected (round 33's `settled`, round 26's preview cut, TaskOutput's hold-back) and a
terminal read its first characters as the rest of the sequence (``[s`` of "[shellrt]": a CSI).
Now those bytes keep the escape open, as on a terminal, and it is shown as escapes.
"""

from __future__ import annotations

from pathlib import Path

import anyio

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from tests._governance import envelope_text

#: (command, what the text must show, escaped, before our note)
_BASH = [
    ("printf 'all good\\033\\n'; exit 3", "all good\\x1b"),  # ESC, then a line end
    ("printf 'all good\\033\\t'; exit 4", "all good\\x1b"),  # ESC, then a tab
    ("printf 'all good\\033[1\\177'; exit 5", "all good\\x1b[1"),  # a CSI, then DEL
]


def test_an_escape_held_open_by_a_control_is_shown_escaped(tmp_path: Path) -> None:
    """Failed before (3 of 3): the raw ESC stood before "[shellrt] Exit code N"."""
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> list[str]:
        async with shellrt.Runtime(
            ws, "local", session_dir=tmp_path / "s", tools=[Bash()], mode="bypassPermissions"
        ) as rt:
            blocks = [
                ToolUseBlock(id=f"r35e{i}", name="Bash", input={"command": c})
                for i, (c, _) in enumerate(_BASH)
            ]
            return [envelope_text(e) for e in await rt.run_envelopes(blocks)]

    texts = anyio.run(main)
    raw_before_note = [
        (c[:30], "\x1b" in t[: t.index("[shellrt] Exit code")])
        for (c, _), t in zip(_BASH, texts, strict=True)
    ]
    assert not any(raw for _, raw in raw_before_note), raw_before_note
    for (_, shown), text in zip(_BASH, texts, strict=True):
        assert text.startswith(shown), text[:40]
