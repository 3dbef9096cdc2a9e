"""Red team round 8 (bwrap): a hard link made before a read-denied path existed showed its secret.

A mask covers a path, not an inode, and a read-denied path that does not exist is not
masked. A command created it and a second name for it (``touch .env && ln .env notes.txt``);
the operator then wrote the secret into ``.env`` on the host in place (a shell's ``>``); the
next command found ``.env`` masked and read the secret at ``notes.txt``. Likewise for a file
below a read-denied directory the command made first. Each test failed before the fix
(`sandbox._maskaliases`: every other name inside the writable roots is masked too), per
session and per command; `test_the_attacks_hold_for_an_unprivileged_caller` (root) runs them
again as uid 65534.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _maskaliases
from sandbox.errors import SandboxExecError
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests import _nonroot
from tests.conftest import require

MODES = [pytest.param(True, id="session"), pytest.param(False, id="per-command")]
SECRET = "API_KEY=rt8-secret-value"


def _plant_then_read(
    ws: Path,
    session: Path,
    denied: tuple[Path, ...],
    plant: str,
    secret_at: Path,
    read: str,
    *,
    persistent: bool,
    refused_ok: bool = False,
) -> str:
    """Run ``plant``, write the secret in place at ``secret_at`` on the host, run ``read``: its output
    (``refused_ok``: or the error refusing it)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")

    async def main() -> str:
        policy = SandboxPolicy(workspace=ws, read_denied=denied)
        backend = create_backend(BwrapConfig(persistent=persistent), policy)
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=session) as sup:
                planted = await sup.run(plant, timeout_s=60)
                assert planted.exit_code == 0, planted
                with open(secret_at, "w") as f:  # noqa: PTH123 -- in place, as a shell's `>` writes
                    f.write(SECRET + "\n")
                try:
                    result = await sup.run(read, timeout_s=60)
                except SandboxExecError as exc:
                    if not refused_ok:
                        raise
                    return f"refused: {exc}"
                assert result.output_path is not None
                return result.output_path.read_text()
        finally:
            await backend.close()

    return anyio.run(main)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    ws.chmod(0o755)
    return ws


@pytest.mark.parametrize("persistent", MODES)
def test_a_link_to_a_denied_file_made_before_it_existed(ws: Path, tmp_path: Path, persistent: bool) -> None:
    out = _plant_then_read(
        ws,
        tmp_path / "s",
        (ws / ".env",),
        "touch .env && ln .env notes.txt && mkdir -p deep/er && ln .env deep/er/copy",
        ws / ".env",
        "cat .env notes.txt deep/er/copy 2>&1; true",
        persistent=persistent,
    )
    assert SECRET not in out, out


@pytest.mark.parametrize("persistent", MODES)
def test_a_link_beside_a_denied_file_in_a_pinned_directory(
    ws: Path, tmp_path: Path, persistent: bool
) -> None:
    """``sub`` exists, so it is pinned (a mount point of its own): a link is still possible inside it."""
    out = _plant_then_read(
        ws,
        tmp_path / "s",
        (ws / "sub" / "key.pem",),
        "touch sub/key.pem && ln sub/key.pem sub/key.bak",
        ws / "sub" / "key.pem",
        "cat sub/key.pem sub/key.bak 2>&1; true",
        persistent=persistent,
    )
    assert SECRET not in out, out


@pytest.mark.parametrize("persistent", MODES)
def test_a_link_to_a_file_below_a_denied_directory(ws: Path, tmp_path: Path, persistent: bool) -> None:
    out = _plant_then_read(
        ws,
        tmp_path / "s",
        (ws / "secrets",),
        "mkdir secrets && touch secrets/token && ln secrets/token token.txt",
        ws / "secrets" / "token",
        "cat secrets/token token.txt 2>&1; true",
        persistent=persistent,
    )
    assert SECRET not in out, out


@pytest.mark.parametrize("persistent", MODES)
def test_a_link_in_a_directory_the_host_cannot_list(ws: Path, tmp_path: Path, persistent: bool) -> None:
    """A non-root caller's command owns its directories: ``chmod 000`` keeps the host's search out of
    the one holding the link. Held here by the protected-files check, which gives such a directory
    back its owner's access after the command; the search refuses by itself too (below)."""
    out = _plant_then_read(
        ws,
        tmp_path / "s",
        (ws / ".env",),
        "touch .env && mkdir hide && ln .env hide/x && chmod 000 hide",
        ws / ".env",
        "chmod 700 hide; cat hide/x 2>&1; true",
        persistent=persistent,
        refused_ok=True,
    )
    assert SECRET not in out, out


def test_the_search_refuses_a_directory_it_cannot_list(tmp_path: Path) -> None:
    """Without that check in between (a new session, a background command closing the directory
    after the check ran), an unlistable directory was skipped and its link left unmasked (failed
    before, as uid 65534). As root every directory is listed and the link found."""
    ws = tmp_path / "ws"
    (ws / "hide").mkdir(parents=True)
    (ws / ".env").write_text("")
    os.link(ws / ".env", ws / "hide" / "x")
    (ws / "hide").chmod(0)
    denied = (ws / ".env",)
    try:
        try:
            found = _maskaliases.AliasFinder().aliases(denied, [os.stat(denied[0])], (ws,))
        except SandboxExecError as exc:
            assert "chmod u+r" in str(exc), exc
            assert os.geteuid() != 0, "root lists every directory"
        else:
            assert found == (ws / "hide" / "x",), found
    finally:
        (ws / "hide").chmod(0o700)


@pytest.mark.parametrize("persistent", MODES)
def test_an_ordinary_file_stays_readable(ws: Path, tmp_path: Path, persistent: bool) -> None:
    """Only other names of a denied file are hidden: a file with two names of its own is not."""
    out = _plant_then_read(
        ws,
        tmp_path / "s",
        (ws / ".env",),
        "echo mine > a.txt && ln a.txt b.txt",
        ws / ".env",
        "cat a.txt b.txt .env 2>&1; true",
        persistent=persistent,
    )
    assert out.count("mine") == 2 and SECRET not in out, out


def test_the_attacks_hold_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("bwrap") is not None, "setpriv and bwrap")
    tests = [
        "test_a_link_to_a_denied_file_made_before_it_existed",
        "test_a_link_beside_a_denied_file_in_a_pinned_directory",
        "test_a_link_to_a_file_below_a_denied_directory",
        "test_an_ordinary_file_stays_readable",
        "test_a_link_in_a_directory_the_host_cannot_list",
        "test_the_search_refuses_a_directory_it_cannot_list",
    ]
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}" for name in tests],
        collect_args=[f"{__file__}::{name}" for name in tests],
    )
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and outcome.tests == collected.items and not outcome.skipped, summary


def test_a_search_past_its_bound_refuses_once_and_is_not_repeated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command can make the search long (hard links cost no inode): past the bound the command is
    refused (fail closed), and later starts re-raise without walking the tree again."""
    monkeypatch.setattr(_maskaliases, "MAX_ENTRIES", 50)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text("")
    for n in range(60):
        os.link(ws / ".env", ws / f"n{n}")
    finder = _maskaliases.AliasFinder()
    denied = (ws / ".env",)
    with pytest.raises(SandboxExecError, match="-samefile"):
        finder.aliases(denied, [os.stat(denied[0])], (ws,))
    walks: list[Path] = []

    def counted(top: Path, *_args: object) -> Iterator[tuple[Path, os.stat_result]]:
        walks.append(top)
        return iter(())

    monkeypatch.setattr(_maskaliases, "_walk", counted)
    with pytest.raises(SandboxExecError):
        finder.aliases(denied, [os.stat(denied[0])], (ws,))
    assert walks == []
    for n in range(60):
        (ws / f"n{n}").unlink()
    os.link(ws / ".env", ws / "last")
    monkeypatch.undo()
    assert _maskaliases.AliasFinder().aliases(denied, [os.stat(denied[0])], (ws,)) == (ws / "last",)
