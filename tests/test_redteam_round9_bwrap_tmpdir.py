"""Red team round 9 (bwrap and file tools): the file tools read another session's private /tmp.

Every bwrap session keeps its private ``/tmp`` and state directory under the host's temp dir.
With ``TMPDIR`` outside ``/tmp``, round 6 hid that directory from commands (an empty tmpfs:
a non-root caller's sessions share a uid, so 0700 keeps nobody out). The file tools' view was
built from its own list of what bwrap replaces (``/proc``, ``/dev``, ``/run``...), which did not
have it: a non-root caller's Read in session B of ``$TMPDIR/shellrt-…/tmp/notes`` showed
session A's scratch file (outside the allowed roots: it asks, and ``bypassPermissions`` reads
it). The view now takes its private places from the backend (`sandbox.bwrap.private_places`),
the list its own flags come from.

Root callers were not affected (the sandbox uid cannot enter root's 0700 directories, and the
tools read as that uid); the test runs as root and, through `tests/_nonroot`, as uid 65534,
where it failed before the fix.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import anyio
import pytest

import shellrt
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests.conftest import require

SECRET = "rt9-other-session-scratch"


def test_a_session_cannot_read_another_sessions_private_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    host_tmp = Path(tempfile.mkdtemp(prefix="rt9-tmpdir-", dir="/var/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(host_tmp))  # TMPDIR outside /tmp
    ws_a, ws_b = tmp_path / "a", tmp_path / "b"
    for ws in (ws_a, ws_b):
        ws.mkdir()
        ws.chmod(0o755)

    async def main() -> tuple[str, str]:
        kwargs = {"sandbox": "bwrap", "mode": "bypassPermissions", "settings_files": ()}
        async with (
            shellrt.Runtime(workspace=ws_a, session_dir=tmp_path / "sa", **kwargs) as a,  # type: ignore[arg-type]
            shellrt.Runtime(workspace=ws_b, session_dir=tmp_path / "sb", **kwargs) as b,  # type: ignore[arg-type]
        ):
            wrote = await a.run(
                [{"type": "tool_use", "id": "rt9t" + os.urandom(6).hex(), "name": "Bash",
                  "input": {"command": f"echo {SECRET} > /tmp/notes && echo done"}}]
            )  # fmt: skip
            assert "done" in str(wrote), wrote
            backend = a.backend
            assert isinstance(backend, BwrapBackend) and backend.session_tmp is not None
            target = backend.session_tmp / "notes"
            assert target.is_relative_to("/tmp"), target  # below /tmp whatever TMPDIR says (round 40)
            got = await b.run(
                [{"type": "tool_use", "id": "rt9t" + os.urandom(6).hex(), "name": "Read",
                  "input": {"file_path": str(target)}}]
            )  # fmt: skip
            listed = await b.run(
                [{"type": "tool_use", "id": "rt9t" + os.urandom(6).hex(), "name": "Grep",
                  "input": {"pattern": SECRET, "path": str(backend.session_tmp), "output_mode": "content"}}]
            )  # fmt: skip
            return str(got), str(listed)

    try:
        read, grep = anyio.run(main)
    finally:
        shutil.rmtree(host_tmp, ignore_errors=True)
    assert SECRET not in read and SECRET not in grep, (read, grep)


def test_the_attack_holds_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("bwrap") is not None, "setpriv and bwrap")
    name = "test_a_session_cannot_read_another_sessions_private_tmp"
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}"], collect_args=[f"{__file__}::{name}"]
    )
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and outcome.tests == collected.items and not outcome.skipped, summary
