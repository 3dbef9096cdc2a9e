"""Red team round 39 (review9): the people face of a tool without its own rendering was raw.

Review6 promised "every people face (`ui` of results and errors, `render_use`) holds no C0/C1
control and no format, separator or unassigned character". Tools that keep the default
rendering (`protocol.tool.rendered_content`: Bash, PowerShell, TaskOutput, TaskStop, every MCP
proxy) had a `ui` that was the model's text as written: a command's (a hostile repository's test)
output carrying OSC 52 (the person's clipboard), ``ESC[2K``, RLO and tag characters reached the
person raw. Now the default people face escapes them as `escape_controls` does (line breaks and
tabs kept); the model's face is unchanged.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.protocol.tool import rendered_content
from tests._governance import isolated_workspace

pytestmark = pytest.mark.anyio
_ids = itertools.count()
_HOSTILE = r"printf 'ok\033]52;c;aGk=\007\033[2K\342\200\256gnp.exe\363\240\200\201\tend\n'"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_workspace(tmp_path, monkeypatch)


def _inert(text: str) -> bool:
    return not any(c in text for c in ("\x1b", "\x07", "\u202e", "\U000e0001"))


async def test_bash_output_reaches_people_escaped(ws: Path) -> None:
    async with shellrt.Runtime(ws, "local", session_dir=ws.parent / "s", mode="bypassPermissions") as rt:
        block = ToolUseBlock(id=f"r39face{next(_ids)}", name="Bash", input={"command": _HOSTILE})
        [envelope] = await rt.run_envelopes([block])
    assert not envelope.is_error, envelope.model.text()
    assert _inert(envelope.ui), repr(envelope.ui)
    assert "\\x1b]52" in envelope.ui and "\tend" in envelope.ui, repr(envelope.ui)
    assert "\x1b]52" in envelope.model.text(), "the model's face is the output as printed"


def test_the_default_face_escapes_every_block() -> None:
    from shellrt.protocol import TextBlock

    shown = rendered_content([TextBlock(text="a\x9b2Kb\u200bc\nd")])
    assert shown == "a\\x9b2Kb\\u200bc\nd", repr(shown)
