"""Red team round 38 (rules): hard links of a read-denied file, the second reading.

- A denied file *outside* the writable roots with a link *inside* them (``ln /srv/keys/id ws/id``,
  the operator's, a package's or a backup tool's, before the session or during it): round 37's
  count took the link in the roots as seen ("the sandbox masks them"), but the sandbox searched the
  roots only for denied files inside them, so ``cat ws/copy.txt`` printed what
  ``Read(//<outside>/secret.txt)`` hides, both bwrap modes.
- A link made *during* the session, outside the roots, by another process of the caller
  (``ln ws/secret.txt /var/tmp/x/copy.txt`` between two commands): the outside-link count ran once,
  when the session started, so the next command printed it.
- A link made during the session *inside* the roots to a file below a denied directory
  (``ln ws/keys/id ws/x`` with ``Read(./keys/**)``): the roots were searched again only when the
  directory itself changed (its mtime), which a link to a file in it does not change.

Root caller (commands as the leased uid); the links are the host's, made here as root.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests._rt11_rules import deny_policy
from tests.conftest import require


@pytest.fixture
def base() -> Iterator[Path]:
    require(os.geteuid() == 0, "the root caller's sandbox (commands as the leased uid)")
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    top = Path(tempfile.mkdtemp(prefix="rt38-links-", dir="/var/tmp"))
    for d in ("ws", "outside", "elsewhere", "session"):
        (top / d).mkdir()
    top.chmod(0o755)
    (top / "ws").chmod(0o777)
    (top / "outside").chmod(0o755)
    (top / "elsewhere").chmod(0o755)
    try:
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


async def _two(ws: Path, session: Path, persistent: bool, policy_rules: list[str], between: object, second: str) -> str:
    """Run one command, call ``between`` (the host's move), then ``second``; both outputs."""
    backend = create_backend(BwrapConfig(persistent=persistent), deny_policy(ws, *policy_rules))
    await backend.start()
    try:
        async with Supervisor(backend, session_dir=session) as sup:
            first = await sup.run(f"cd {ws}; echo one", timeout_s=60)
            assert first.output_path is not None
            out = first.output_path.read_text()
            between()  # type: ignore[operator]
            try:
                result = await sup.run(f"cd {ws}; {second}; echo two", timeout_s=60)
            except Exception as exc:  # noqa: BLE001 - a refusal is a pass: nothing printed
                return out + f"refused: {exc}"
            assert result.output_path is not None
            return out + result.output_path.read_text()
    finally:
        await backend.close()


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
@pytest.mark.parametrize("when", ["before", "during"])
def test_a_link_in_the_roots_to_a_denied_file_outside_them_shows_nothing(
    base: Path, persistent: bool, when: str
) -> None:
    ws, secret = base / "ws", base / "outside" / "secret.txt"
    secret.write_text("TOPSECRET\n")
    secret.chmod(0o644)

    def link() -> None:
        os.link(secret, ws / "copy.txt")

    if when == "before":
        link()
    out = anyio.run(
        _two, ws, base / "session", persistent, [f"Read(/{secret})"],
        (lambda: None) if when == "before" else link, "cat copy.txt",
    )  # fmt: skip
    assert "one" in out and "TOPSECRET" not in out, out


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
def test_a_link_made_outside_the_roots_during_the_session_shows_nothing(base: Path, persistent: bool) -> None:
    ws = base / "ws"
    secret = ws / "secret.txt"
    secret.write_text("TOPSECRET\n")
    secret.chmod(0o644)
    copy = base / "elsewhere" / "copy.txt"
    out = anyio.run(
        _two, ws, base / "session", persistent, ["Read(./secret.txt)"], lambda: os.link(secret, copy), f"cat {copy}"
    )
    assert "one" in out and "TOPSECRET" not in out, out


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
def test_a_link_made_in_the_roots_during_the_session_to_a_file_below_a_denied_directory(
    base: Path, persistent: bool
) -> None:
    ws = base / "ws"
    (ws / "keys").mkdir(mode=0o755)
    secret = ws / "keys" / "id"
    secret.write_text("TOPSECRET\n")
    secret.chmod(0o644)
    out = anyio.run(
        _two, ws, base / "session", persistent, ["Read(./keys/**)"], lambda: os.link(secret, ws / "x"), "cat x"
    )
    assert "one" in out and "TOPSECRET" not in out, out
