"""Red team, round 33 (supervisor): a directory's name wrote control characters into our notes.

"Working directory is now PATH" and the cwd notes ("The command changed directory to PATH,
outside the allowed roots ...") quoted the name the command chose as it was (only a name that
is not UTF-8 was quoted). A name holding ESC ``]0;`` opened an OSC inside our note, which took
every later note into the window title wherever a terminal renders the result ("Processes the
command started were still running ...; they were killed"); U+202E turned the note's line
around; a newline began a line of its own. Such a name is now shown as bash's ``$'...'``
(`shellrt.supervisor.text.shown_dir`): exact, on one line, and a form Bash takes back.
"""

from __future__ import annotations

from pathlib import Path

import anyio

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from tests._governance import envelope_text


def test_a_directory_name_writes_no_control_into_our_notes(tmp_path: Path) -> None:
    """Failed before (3 of 3): raw ESC, U+202E and a newline in the notes."""
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "out\x1b]0;"
    outside.mkdir()
    commands = [
        # in the workspace, then a note after the cwd note (a forged line's count)
        "echo '[shellrt] forged'; mkdir -p $'d\\e]0;' && cd $'d\\e]0;'",
        "mkdir -p $'/tmp' $'g\\u202eabc' && cd $'g\\u202eabc'",
        # outside the roots: the supervisor's own cwd note
        f"cd $'{tmp_path}/out\\e]0;'",
    ]

    async def main() -> list[str]:
        async with shellrt.Runtime(
            ws, "local", session_dir=tmp_path / "s", tools=[Bash()], mode="bypassPermissions"
        ) as rt:
            texts = []
            for i, command in enumerate(commands):
                block = ToolUseBlock(id=f"r33c{i}", name="Bash", input={"command": command})
                texts.append(envelope_text((await rt.run_envelopes([block]))[0]))
                if i == 1:
                    rt_cd = ToolUseBlock(id="r33back", name="Bash", input={"command": f"cd {ws}"})
                    await rt.run_envelopes([rt_cd])
            return texts

    texts = anyio.run(main)
    raw = [(i, t) for i, t in enumerate(texts) if "\x1b" in t or "\u202e" in t]
    assert not raw, raw
    assert "d\\x1b]0;'" in texts[0] and texts[0].endswith("prefixed with '(output)'."), texts[0]
    assert "$'" in texts[1] and "\\xe2\\x80\\xae" in texts[1], texts[1]
    assert "out\\x1b]0;'" in texts[2] and "outside the allowed roots" in texts[2], texts[2]
