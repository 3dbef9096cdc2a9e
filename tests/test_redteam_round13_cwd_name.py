"""Red team, round 13: a working directory whose name is not UTF-8 made the Bash result unsendable.

``mkdir $'d\\xff' && cd $'d\\xff'``: the session follows the command into it, and the result said
"Working directory is now <name>" with a lone surrogate in it, which no UTF-8 encoder (the MCP
SDK's, a JSON client's) accepts: the result was lost. The name is now shown as bash's ``$'...'``
quoting, as Glob and Grep show such names, and ``cd`` into that form works.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests._governance import envelope_text, isolated_workspace, run_bash

pytestmark = pytest.mark.anyio


async def test_a_non_utf8_working_directory_is_shown_quoted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = isolated_workspace(tmp_path, monkeypatch)
    [envelope] = await run_bash(ws, ["mkdir $'d\\xff' && cd $'d\\xff' && true"], mode="bypassPermissions", id_prefix="r13c")
    text = envelope_text(envelope)
    text.encode("utf-8")  # raised UnicodeEncodeError before
    assert "Working directory is now" in text, text
    shown = text.split("Working directory is now ", 1)[1].splitlines()[0]
    assert shown.startswith("$'") and shown.endswith("/d\\xff'"), shown
    for text in (envelope.ui, envelope.audit):
        str(text).encode("utf-8")
    done = subprocess.run(["bash", "-c", f"cd {shown} && pwd"], capture_output=True, timeout=30)
    assert done.returncode == 0 and done.stdout.rstrip(b"\n").endswith(b"/d\xff"), done
