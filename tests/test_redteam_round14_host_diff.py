"""Red team round 14 (host side): the diff Edit and Write show held a core for minutes.

After replacing a file, Edit and Write show a unified diff of the old and new text, computed on
the host with `difflib`, whose matcher is quadratic in the lines it compares (worse for lines that
repeat). The old text is the repository's. A `replace_all` of a word on every other line of a
10,000-line file (119 KB) took 52 s of CPU after the file was written, in a worker thread no
cancellation reaches; 20,000 lines about four minutes. Failed before: a 6,000-line file's Edit
took far longer than the bound below. Now only the changed middle (after the common head and
tail) goes to `difflib`, and only while it is small; past that the diff pairs lines in order
(still a diff that `patch` applies, not always the shortest one).
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.tools._render import unified_diff
from tests._governance import trust_env
from tests.conftest import require

pytestmark = pytest.mark.anyio

#: Far above the fixed cost (under 0.2 s here), far below the old one (tens of seconds).
_BOUND_S = 4.0


def _alternating(n: int) -> str:
    return "".join(f"line {i} foo\n" if i % 2 else f"line {i}\n" for i in range(n))


async def test_an_edit_of_many_lines_returns_promptly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trust_env(tmp_path, monkeypatch)
    ws = tmp_path / "ws"
    ws.mkdir()
    async with shellrt.Runtime(ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:

        async def call(name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
            block = {"type": "tool_use", "id": "df-" + secrets.token_hex(6), "name": name, "input": tool_input}
            result: dict[str, Any] = (await rt.run([block]))["content"][0]
            return str(result["content"]), bool(result.get("is_error"))

        script = "import sys\nopen('big.txt', 'w').write(''.join(f'line {i} foo\\n' if i % 2 else f'line {i}\\n' for i in range(6000)))\n"
        made, failed = await call("Bash", {"command": f"python3 - <<'EOF'\n{script}EOF"})
        assert not failed, made
        await call("Read", {"file_path": str(ws / "big.txt")})
        started = time.monotonic()
        text, failed = await call(
            "Edit", {"file_path": str(ws / "big.txt"), "old_string": "foo", "new_string": "bar", "replace_all": True}
        )
        elapsed = time.monotonic() - started
        assert not failed, text
        assert elapsed < _BOUND_S, elapsed
    assert (ws / "big.txt").read_text() == _alternating(6000).replace("foo", "bar")


def _case(name: str) -> tuple[str, str]:
    if name == "alternating":
        return _alternating(20_000), _alternating(20_000).replace("foo", "bar")
    if name == "repeated":
        # Lines that repeat (each under 1 % of them: not junk to difflib), one change in the middle.
        old = "".join(f"row {i % 150}\n" for i in range(30_000))
        return old, old.replace("row 7\n", "row seven\n", 1)
    if name == "counts":
        # Line counts that differ.
        return _alternating(5_000), "head\n" + _alternating(5_000).replace("line 2500\n", "x\ny\n")
    return "a\nb\nc\n", "a\nB\nc\nd\n"


@pytest.mark.parametrize("name", ["alternating", "repeated", "counts", "small"])
def test_the_diff_is_bounded_and_applies(tmp_path: Path, name: str) -> None:
    old, new = _case(name)
    require(shutil.which("patch") is not None, "patch is needed")
    started = time.monotonic()
    diff = unified_diff(old, new, "f.txt", max_lines=None)
    assert time.monotonic() - started < _BOUND_S
    (tmp_path / "f.txt").write_text(old)
    (tmp_path / "d.patch").write_text(diff + "\n")
    done = subprocess.run(
        ["patch", "-s", "-p1", "-i", "d.patch"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "f.txt").read_text() == new
