"""Red team round 52 (files12): the two "shown alike" Edits through a whole session, on bwrap
and on docker (a private copy of the workspace): each refused, the file left as it was.

The matching runs on the bytes the session's view read (the same code for every backend); this
pins that the refusal reaches the model through the runtime there too (`…_line_ends.py` and
`…_marks.py` hold the cases).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from tests._calls import block_text, session_results
from tests._docker_support import DEBIAN, config, require_docker

_MIXED = b"x = 1\r\ny = 2\r\nz = 3\r\nx = 1\ny = 2\n"
_MARKS = "key = a\u240db\nkey = a\rb\n".encode()


@pytest.mark.parametrize("backend", ["bwrap", "docker-copy"])
def test_edits_shown_alike_are_refused_in_a_session(tmp_path: Path, backend: str) -> None:
    base = Path(os.path.realpath(tmp_path))
    ws = base / "ws"
    ws.mkdir()
    (ws / "mixed.txt").write_bytes(_MIXED)
    (ws / "marks.txt").write_bytes(_MARKS)
    sandbox: Any = "bwrap"
    inside = str(ws)
    if backend == "docker-copy":
        require_docker()
        sandbox, inside = config(DEBIAN, workspace_mode="copy"), "/workspace"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("Read", {"file_path": f"{inside}/mixed.txt"}),
        ("Edit", {"file_path": f"{inside}/mixed.txt", "old_string": "x = 1\ny = 2", "new_string": "C"}),
        ("Read", {"file_path": f"{inside}/marks.txt"}),
        ("Edit", {"file_path": f"{inside}/marks.txt", "old_string": "key = a\u240db", "new_string": "k"}),
        ("Bash", {"command": f"cat {inside}/mixed.txt {inside}/marks.txt | md5sum"}),
    ]
    got = session_results(ws, sandbox, calls, mode="bypassPermissions", session_dir=base / "s")
    assert not got[0]["is_error"] and not got[2]["is_error"], got
    assert got[1]["is_error"] and "matches 2 times" in block_text(got[1]), got[1]
    assert got[3]["is_error"] and "as Read shows" in block_text(got[3]), got[3]
    assert (ws / "mixed.txt").read_bytes() == _MIXED and (ws / "marks.txt").read_bytes() == _MARKS
    # Inside the sandbox too (docker's copy is not the host's file): the bytes as written.
    assert not got[4]["is_error"], got[4]
    assert hashlib.md5(_MIXED + _MARKS).hexdigest() in block_text(got[4]), got[4]
