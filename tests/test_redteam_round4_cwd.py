"""Red team round 4: the cwd report a command leaves is data, never a path the host follows.

A shell reports its final directory by writing ``$SHELLRT_CWD_FILE``, a file in the
bwrap session's state directory, which commands can write (mode 1733). The host
reads it after the command, as the caller (root in CI). A command that put a
symlink there made the host read any host file and hand its first 64 KiB to the
model in the result's ``cwd_note`` ("The command changed directory to <content>,
outside the allowed roots"); a FIFO there made the host's ``open`` block forever,
inside the event loop of every session of the process.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import CommandResult, Supervisor
from tests.conftest import require

SECRET = "ROOT-ONLY-SECRET-7f3a"


def _run(tmp_path: Path, persistent: bool, commands: list[str]) -> list[CommandResult]:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)

    async def main() -> list[CommandResult]:
        backend = create_backend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "session") as sup:
                return [await sup.run(c, timeout_s=30) for c in commands]
        finally:
            await backend.close()

    out: list[list[CommandResult]] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            out.append(anyio.run(main))
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            errors.append(exc)

    # A blocked host `open` freezes the event loop itself: watch it from another thread.
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(90)
    assert not thread.is_alive(), "shellrt hung reading the command's cwd report"
    if errors:
        raise errors[0]
    return out[0]


def _text(result: CommandResult) -> str:
    return f"{result.preview}\n{result.cwd_note}\n{result.cwd}\n{result.notes}"


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_cwd_report_symlinked_to_a_host_file_is_not_read(tmp_path: Path, persistent: bool) -> None:
    secret = tmp_path / "secret"
    secret.write_text(SECRET + "\n")
    os.chmod(secret, 0o600)
    results = _run(tmp_path, persistent, [f'cat {secret}; ln -sf {secret} "$SHELLRT_CWD_FILE"', "pwd"])
    assert all(SECRET not in _text(r) for r in results), [_text(r) for r in results]
    assert results[1].preview.strip() == str(tmp_path / "ws")


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_cwd_report_planted_for_the_next_command_is_not_read(tmp_path: Path, persistent: bool) -> None:
    """The report files are numbered: a command can plant the next command's name in advance."""
    secret = tmp_path / "secret"
    secret.write_text(SECRET + "\n")
    os.chmod(secret, 0o600)
    plant = (
        'd=$(dirname "$SHELLRT_CWD_FILE"); n=${SHELLRT_CWD_FILE##*-}; '
        f'for i in 1 2 3 4 5 6; do ln -sf {secret} "$d/cwd-$((n+i))"; done'
    )
    results = _run(tmp_path, persistent, [plant, "cd /", "cd /", "cd /"])
    assert all(SECRET not in _text(r) for r in results), [_text(r) for r in results]


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_fifo_as_cwd_report_does_not_hang_the_host(tmp_path: Path, persistent: bool) -> None:
    results = _run(
        tmp_path, persistent, ['rm -f "$SHELLRT_CWD_FILE"; mkfifo "$SHELLRT_CWD_FILE"', "echo alive"]
    )
    assert results[1].preview.strip() == "alive"


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_real_cd_is_still_tracked(tmp_path: Path, persistent: bool) -> None:
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    results = _run(tmp_path, persistent, ["cd sub", "pwd"])
    assert results[1].preview.strip() == str(tmp_path / "ws" / "sub")
