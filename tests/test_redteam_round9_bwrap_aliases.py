"""Red team round 9 (bwrap, local and file tools): the file tools read a denied file by its other name.

Round 8 made the sandbox hide every other name (hard link) of a read-denied file inside the
writable roots (`sandbox._maskaliases`), so a command no longer reads ``.env`` at ``notes.txt``.
The file tools run on the host and judged paths only: their view masked ``.env`` but not
``notes.txt``, so Read (auto-allowed inside the workspace in ``default`` mode), Grep of that
file, and Edit (which reads first) showed the secret to the model. The repository ships the
link (an archive extracted into the workspace keeps hard links; so does a command run before
the file was denied); the operator then writes the secret into ``.env`` in place.

Each test failed before the fix (`confine.View.aliased`: an opened file with more than one link
is refused when it is a denied file's inode), on bwrap (session) and local;
`test_the_attacks_hold_for_an_unprivileged_caller` (root) runs them again as uid 65534.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest

import shellrt
from tests import _nonroot
from tests.conftest import require

SECRET = "API_KEY=rt9-alias-secret"
BACKENDS = [pytest.param("bwrap", id="bwrap"), pytest.param("local", id="local")]


def _calls(
    ws: Path,
    session: Path,
    sandbox: Literal["bwrap", "local"],
    deny: str,
    secret_at: Path,
    calls: list[tuple[str, Any]],
) -> list[str]:
    """Open a session denying ``deny``, write the secret in place at ``secret_at``, make ``calls``."""
    if sandbox == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")

    async def main() -> list[str]:
        out: list[str] = []
        async with shellrt.Runtime(
            workspace=ws,
            sandbox=sandbox,
            mode="acceptEdits",
            session_dir=session,
            settings_files=(),
            deny=[deny],
        ) as rt:
            with open(secret_at, "w") as f:  # noqa: PTH123 -- in place, as a shell's `>` writes
                f.write(SECRET + "\n")
            for name, raw in calls:
                user = await rt.run(
                    [{"type": "tool_use", "id": "rt9a" + os.urandom(6).hex(), "name": name, "input": raw}]
                )
                content = user["content"][0]["content"]
                text = content if isinstance(content, str) else " ".join(c.get("text", "") for c in content)
                out.append(f"{name}: {text}")
        return out

    return anyio.run(main)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    ws.chmod(0o755)
    return ws


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_read_grep_and_edit_of_a_link_to_a_denied_file(
    ws: Path, tmp_path: Path, sandbox: Literal["bwrap", "local"]
) -> None:
    (ws / ".env").write_text("")
    os.link(ws / ".env", ws / "notes.txt")
    out = _calls(
        ws,
        tmp_path / "s",
        sandbox,
        "Read(./.env)",
        ws / ".env",
        [
            ("Read", {"file_path": "notes.txt"}),
            ("Grep", {"pattern": "API_KEY", "path": "notes.txt", "output_mode": "content"}),
            ("Grep", {"pattern": "API_KEY", "output_mode": "content"}),
            ("Edit", {"file_path": "notes.txt", "old_string": "API_KEY", "new_string": "X"}),
        ],
    )
    assert not any("rt9-alias-secret" in line for line in out), out
    assert "read-denied" in out[0] and "read-denied" in out[3], out  # refused, saying why


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_read_of_a_link_to_a_file_below_a_denied_directory(
    ws: Path, tmp_path: Path, sandbox: Literal["bwrap", "local"]
) -> None:
    (ws / "secrets").mkdir()
    (ws / "secrets" / "token").write_text("")
    os.link(ws / "secrets" / "token", ws / "token.txt")
    out = _calls(
        ws,
        tmp_path / "s",
        sandbox,
        "Read(./secrets/**)",
        ws / "secrets" / "token",
        [("Read", {"file_path": "token.txt"}), ("Grep", {"pattern": "API_KEY", "output_mode": "content"})],
    )
    assert not any("rt9-alias-secret" in line for line in out), out


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_ordinary_hard_links_stay_readable(
    ws: Path, tmp_path: Path, sandbox: Literal["bwrap", "local"]
) -> None:
    """Only other names of a denied file are refused: a file with two names of its own is read."""
    (ws / "a.txt").write_text("mine\n")
    os.link(ws / "a.txt", ws / "b.txt")
    out = _calls(
        ws,
        tmp_path / "s",
        sandbox,
        "Read(./.env)",
        ws / ".env",
        [
            ("Read", {"file_path": "b.txt"}),
            ("Grep", {"pattern": "mine", "output_mode": "files_with_matches"}),
        ],
    )
    assert "mine" in out[0] and "b.txt" in out[1] and "a.txt" in out[1], out


def test_the_attacks_hold_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("bwrap") is not None, "setpriv and bwrap")
    tests = [
        "test_read_grep_and_edit_of_a_link_to_a_denied_file",
        "test_read_of_a_link_to_a_file_below_a_denied_directory",
        "test_ordinary_hard_links_stay_readable",
    ]
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}" for name in tests],
        collect_args=[f"{__file__}::{name}" for name in tests],
    )
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and outcome.tests == collected.items and not outcome.skipped, summary
