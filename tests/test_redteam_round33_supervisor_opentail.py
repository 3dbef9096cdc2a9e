"""Red team, round 33 (supervisor): output left an escape sequence open before shellrt's own text.

Round 26 stopped the spool's cut from ending inside an escape sequence; rounds 25, 26 and 28 left
"an output that ends inside an open sequence still takes in what follows it" open. Every place
shellrt writes its own words after a command's text had it: the Bash result's notes after the
output (`printf 'all good\\033]0;'; exit 3` showed a terminal "all good" and put "[shellrt] Exit
code 3" into the window title), the model-output cut (28,000 characters: its head ended inside
an OSC the command opened just before, and "N characters omitted" went with it), and TaskOutput's
"Full output: PATH" after a finished task's last bytes. The sequence left open is now shown as
escapes (``\\x1b]0;``) wherever shellrt's text follows (`shellrt.supervisor.text.settled`);
the output file keeps every byte.
"""

from __future__ import annotations

from pathlib import Path

import anyio

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.supervisor._escape_cut import open_sequence_start
from shellrt.tools.bash import Bash
from tests._governance import envelope_text
from tests._local_session import local_supervisor

#: (command, what our text says after the output)
_BASH = [
    ("printf 'all good\\033]0;'; exit 3", "[shellrt] Exit code 3"),  # an OSC left open
    ("printf 'all good\\033P'; exit 4", "[shellrt] Exit code 4"),  # a DCS
    ("printf 'all good\\302\\235'; exit 5", "[shellrt] Exit code 5"),  # a C1 OSC as UTF-8
    # the model cut at 14,000 characters lands inside an OSC opened just before it
    (
        "head -c 13990 /dev/zero | tr '\\0' a; printf '\\033]0;'; head -c 16000 /dev/zero | tr '\\0' b;"
        " printf '\\007'",
        "characters omitted",
    ),
]


def _open_before(text: str, ours: str) -> int | None:
    """Where an escape sequence left open before ``ours`` (our text) starts, or None."""
    at = text.find(ours)
    assert at > 0, text[-300:]
    return open_sequence_start(text[:at].encode("utf-8", "surrogateescape"))


def test_bash_results_never_leave_a_sequence_open_before_our_notes(tmp_path: Path) -> None:
    """Failed before (4 of 4): each note sat inside the sequence the output left open."""
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> list[str]:
        async with shellrt.Runtime(
            ws, "local", session_dir=tmp_path / "s", tools=[Bash()], mode="bypassPermissions"
        ) as rt:
            blocks = [
                ToolUseBlock(id=f"r33o{i}", name="Bash", input={"command": c})
                for i, (c, _) in enumerate(_BASH)
            ]
            return [envelope_text(e) for e in await rt.run_envelopes(blocks)]

    texts = anyio.run(main)
    swallowed = [(c[:40], _open_before(t, ours)) for (c, ours), t in zip(_BASH, texts, strict=True)]
    assert all(at is None for _, at in swallowed), swallowed
    assert texts[0].startswith("all good\\x1b]0;"), texts[0]  # shown, not dropped


def test_task_output_never_leaves_a_sequence_open_before_its_notes(tmp_path: Path) -> None:
    """Failed before (1 of 1): a finished task's chunk ended inside its OSC."""
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> str:
        async with local_supervisor(ws, tmp_path / "s") as sup:
            task = await sup.start_background("printf 'done\\033]0;'", description="open")
            await sup.tasks.wait(task.id)
            return (await sup.tasks.read_new(task.id)).text

    text = anyio.run(main)
    assert open_sequence_start(text.encode()) is None and text.startswith("done"), repr(text)
