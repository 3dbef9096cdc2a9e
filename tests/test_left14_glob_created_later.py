"""Left-overs, round 14: files a command creates later that a filename write-deny glob names.

A mount covers only what exists when the sandbox starts, so ``Edit(**/*.pem)`` / ``Write(**/.env)``
cannot keep a command from creating ``new.pem`` or ``sub/.env`` (docs/security.md, "Left-overs,
round 14", says why and what is left). What must hold is the rule for the file tools, through the
whole Runtime, on files a command made in the session: an Edit or Write of such a file, of one
reached through a symlink the command made, or through a directory symlink, is denied; the
existing matches stay read-only to commands. One bwrap session for the module.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import shellrt
from tests._rt13_host import bash_text, host_ws, tool_result

pytestmark = pytest.mark.anyio

RULES = ["Edit(**/*.pem)", "Write(**/.env)"]
MAKE = (
    "echo k > new.pem && mkdir -p sub/deep && echo A=1 > sub/deep/.env && echo e > .env "
    "&& ln -s new.pem innocent.txt && ln -s sub/deep dirlink && echo made\n"
    "echo x >> old.pem 2>/dev/null || echo old-refused\n"
)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    mp = pytest.MonkeyPatch()
    try:
        for path in host_ws(tmp_path_factory.mktemp("trust"), mp, "left14-glob-"):
            path.chmod(0o777)
            (path / "old.pem").write_text("old key\n")
            (path / "old.pem").chmod(0o666)
            (path / "mk.sh").write_text(MAKE)
            yield path
    finally:
        mp.undo()


@pytest.fixture(scope="module")
async def rt(ws: Path, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[shellrt.Runtime]:
    session = tmp_path_factory.mktemp("session") / "s"
    async with shellrt.Runtime(
        ws, "bwrap", session_dir=session, mode="bypassPermissions", deny=RULES
    ) as runtime:
        # Through a script (a repository's file): the Bash analysis cannot see the names in it.
        made = await bash_text(runtime, "sh mk.sh")
        assert "made" in made and "old-refused" in made, made
        yield runtime


async def test_commands_cannot_change_the_existing_match(rt: shellrt.Runtime, ws: Path) -> None:
    assert (ws / "old.pem").read_text() == "old key\n"


@pytest.mark.parametrize(
    ("tool", "target"),
    [
        ("Edit", "new.pem"),
        ("Write", "new.pem"),
        ("Write", ".env"),
        ("Write", "sub/deep/.env"),
        ("Write", "innocent.txt"),  # a link the command made to a denied name
        ("Edit", "innocent.txt"),
        ("Write", "dirlink/.env"),  # through a directory link
        ("Write", "brand/new/dir/x.pem"),  # not there yet at all
    ],
)
async def test_the_file_tools_refuse_what_a_command_made(
    rt: shellrt.Runtime, ws: Path, tool: str, target: str
) -> None:
    path = ws / target
    before = path.read_bytes() if path.exists() else None
    tool_input = {"file_path": str(path), "content": "forged\n"}
    await tool_result(rt, "Read", {"file_path": str(path)})  # so that "not read yet" is not the refusal
    if tool == "Edit":
        tool_input = {"file_path": str(path), "old_string": "k", "new_string": "forged"}
    text, failed = await tool_result(rt, tool, tool_input)
    # Since round 15 the command's new.pem is quarantined after it ran: an Edit then finds nothing.
    gone = tool == "Edit" and "does not exist" in text
    assert failed and ("denied" in text.lower() or gone), (tool, target, text)
    assert (path.read_bytes() if path.exists() else None) == before, (tool, target)


async def test_bash_naming_a_denied_new_file_is_refused(rt: shellrt.Runtime, ws: Path) -> None:
    """What the Bash analysis sees (a redirection to a matching name) is denied before it runs;
    only what it cannot see (a script, an interpreter) creates such a file."""
    text, failed = await tool_result(rt, "Bash", {"command": "echo k > other.pem"})
    assert failed and "denied by deny rule Edit(**/*.pem)" in text, text
    assert not (ws / "other.pem").exists()
