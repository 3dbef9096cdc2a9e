"""Red team round 53 (files13): a Read shown in part does not let Write replace the file, through a
whole session on bwrap and on docker (a private copy of the workspace, and the workspace bound).

Read's record is made on the host from the bytes the session's view read (the same code for every
backend); this pins that the refusal reaches the model through the runtime there too, and that
the file is left as it was, inside the sandbox as well (`…_partial_views.py` holds the cases).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests._calls import block_text, session_results
from tests._docker_support import DEBIAN, config, require_docker

_NOTEBOOK = json.dumps(
    {
        "cells": [{"cell_type": "code", "source": f"# {i}\n" + "x" * 2_000, "outputs": []} for i in range(80)],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
).encode()
_LONG_LINE = b"short\n" + b"a" * 5_000 + b"TAIL\nend\n"


@pytest.mark.parametrize("backend", ["bwrap", "docker-copy", "docker-bind"])
def test_a_write_after_a_partial_view_is_refused_in_a_session(tmp_path: Path, backend: str) -> None:
    base = Path(os.path.realpath(tmp_path))
    ws = base / "ws"
    ws.mkdir()
    (ws / "long.ipynb").write_bytes(_NOTEBOOK)
    (ws / "long.txt").write_bytes(_LONG_LINE)
    sandbox: Any = "bwrap"
    inside = str(ws)
    if backend.startswith("docker"):
        require_docker()
        sandbox, inside = config(DEBIAN, workspace_mode=backend.removeprefix("docker-")), "/workspace"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("Read", {"file_path": f"{inside}/long.ipynb"}),
        ("Write", {"file_path": f"{inside}/long.ipynb", "content": "{}\n"}),
        ("Read", {"file_path": f"{inside}/long.txt"}),
        ("Write", {"file_path": f"{inside}/long.txt", "content": "short\nend\n"}),
        ("Bash", {"command": f"cat {inside}/long.ipynb {inside}/long.txt | md5sum"}),
    ]
    got = session_results(ws, sandbox, calls, mode="bypassPermissions", session_dir=base / "s")
    assert not got[0]["is_error"] and "Output budget reached" in block_text(got[0]), got[0]
    assert not got[2]["is_error"] and "line truncated" in block_text(got[2]), got[2]
    for refused in (got[1], got[3]):
        assert refused["is_error"] and "only read part" in block_text(refused), refused
    assert (ws / "long.ipynb").read_bytes() == _NOTEBOOK and (ws / "long.txt").read_bytes() == _LONG_LINE
    assert not got[4]["is_error"], got[4]
    assert hashlib.md5(_NOTEBOOK + _LONG_LINE).hexdigest() in block_text(got[4]), got[4]
