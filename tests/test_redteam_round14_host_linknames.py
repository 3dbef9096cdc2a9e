"""Red team round 14 (host side): a path that is UTF-8 as given but not once resolved.

Round 13 made Glob's and Grep's *listed* names sendable (a lone surrogate from a non-UTF-8 name
makes a result no UTF-8 encoder takes: the MCP SDK refuses it and the result is lost). The file
tools also name the *canonical* path they resolved, and a symbolic link a sandboxed command made
(``link -> $'d\\xff'``) turns the model's plain UTF-8 path ``link/a.txt`` into ``d\\udcff/a.txt``.
Failed before: Edit's and Write's results ("The file …/d\\udcff/a.txt has been updated"), Read's
note on an empty file, Glob's "No files found under …", and errors naming the resolved path
(a directory given to Write, a file not read before Edit) held lone surrogates. Now every text
the file tools give (results, refusals, validation failures, permission reasons) shows such bytes
as ``\\xNN`` (`shellrt.tools._sendable`), as Bash's notes do since round 13.
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path
from typing import Any

import pytest

import shellrt
from tests._governance import trust_env
from tests.conftest import require

pytestmark = pytest.mark.anyio


def _sendable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


async def test_results_naming_a_resolved_non_utf8_path_stay_sendable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(shutil.which("bwrap") is not None, "bwrap is needed")
    trust_env(tmp_path, monkeypatch)
    ws = tmp_path / "ws"
    ws.mkdir()
    link = ws / "link"
    async with shellrt.Runtime(ws, "bwrap", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:

        async def call(name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
            block = {"type": "tool_use", "id": "ln-" + secrets.token_hex(6), "name": name, "input": tool_input}
            result: dict[str, Any] = (await rt.run([block]))["content"][0]
            content = result["content"]
            text = content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)
            assert _sendable(text), (name, tool_input, text)
            return text, bool(result.get("is_error"))

        made, failed = await call(
            "Bash",
            {"command": "mkdir $'d\\xff' && ln -s $'d\\xff' link && printf 'hi\\n' > link/a.txt && : > link/e.txt "
             "&& printf 'x\\n' > link/unread.txt && mkdir link/sub"},
        )
        assert not failed, made
        text, failed = await call("Read", {"file_path": str(link / "e.txt")})
        assert not failed and "d\\xff/e.txt" in text, text
        await call("Read", {"file_path": str(link / "a.txt")})
        text, failed = await call("Edit", {"file_path": str(link / "a.txt"), "old_string": "hi", "new_string": "ho"})
        assert not failed and "d\\xff/a.txt" in text, text
        text, failed = await call("Write", {"file_path": str(link / "b.txt"), "content": "x"})
        assert not failed and "d\\xff/b.txt" in text, text
        text, failed = await call("Glob", {"pattern": "*.none", "path": str(link)})
        assert not failed and "d\\xff" in text, text
        # Refusals that name the resolved path.
        text, failed = await call("Edit", {"file_path": str(link / "unread.txt"), "old_string": "x", "new_string": "y"})
        assert failed and "d\\xff/unread.txt" in text, text
        text, failed = await call("Write", {"file_path": str(link / "sub"), "content": "x"})
        assert failed and "d\\xff/sub" in text, text
        text, failed = await call("Read", {"file_path": str(link / "sub")})
        assert failed, text
    assert (ws / "d\udcff" / "a.txt").read_text() == "ho\n"
