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

import pytest

from shellrt.protocol import ToolContext
from shellrt.tools.bash import Bash, BashInput
from tests import test_tools_bash

pytestmark = pytest.mark.anyio

#: A real supervisor over the local backend, as the Bash tool's own tests use.
ctx = test_tools_bash.ctx

#: (command, what the text must show, escaped, before our note)
_BASH = [
    ("printf 'all good\\033\\n'; exit 3", "all good\\x1b"),  # ESC, then a line end
    ("printf 'all good\\033\\t'; exit 4", "all good\\x1b"),  # ESC, then a tab
    ("printf 'all good\\033[1\\177'; exit 5", "all good\\x1b[1"),  # a CSI, then DEL
]


async def test_an_escape_held_open_by_a_control_is_shown_escaped(ctx: ToolContext) -> None:
    """Failed before (3 of 3): the raw ESC stood before "[shellrt] Exit code N"."""
    bash = Bash()
    texts = [bash.to_model_content((await bash.call(BashInput(command=c), ctx)).data) for c, _ in _BASH]
    raw_before_note = [
        (c[:30], "\x1b" in t[: t.index("[shellrt] Exit code")])
        for (c, _), t in zip(_BASH, texts, strict=True)
    ]
    assert not any(raw for _, raw in raw_before_note), raw_before_note
    for (_, shown), text in zip(_BASH, texts, strict=True):
        assert text.startswith(shown), text[:40]
