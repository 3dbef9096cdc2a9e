"""Red team, round 28 (bwrap2): shellrt's places nested in /tmp made every per-command bwrap fail.

Found by the supbatch helper: ``shellrt batch run`` with ``TMPDIR=/tmp/x/tmp`` and ``--out`` in
``/tmp/x/o`` read every bwrap task ``failed`` ("bwrap: Can't mkdir parents for /tmp/x/o/out.jsonl:
Permission denied", exit 1; no task ran). The narrowest form: a root caller's one bwrap per command
whose read-denied file lies below /tmp, outside the workspace, beside the workspace or the temp dir
under one parent there. Its mask needed a mount point in the session's own /tmp, below a directory
the holder had made there as root (0711) on the way to the workspace or the state dir. Such a path
is out of the sandbox's sight anyway; it is no longer masked (`sandbox._bwrap_unseen`). A bwrap
that still fails its own set-up is now a ``sandbox_failure`` (the batch records ``error``), not
the command's exit 1. Root only: a non-root caller's bwrap runs as the caller.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests import test_redteam_round28_bwrap_tempdir as tempdir_test
from tests._bwrap_session import require_bwrap, supervised

open_base = tempdir_test.open_base  # the fixture: a 0755 directory under /tmp, removed after

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(os.geteuid() != 0, reason="a root caller's (a non-root bwrap runs as the caller)"),
]


def _run(
    ws: Path, policy: SandboxPolicy, session: Path, command: str, *, persistent: bool = False
) -> tuple[int, str, str | None]:
    async def main() -> tuple[int, str, str | None]:
        backend = BwrapBackend(BwrapConfig(persistent=persistent), policy)
        async with supervised(backend, session) as sup:
            result = await sup.run(command, timeout_s=60)
            return result.exit_code, result.preview, result.sandbox_failure

    return anyio.run(main)


@pytest.mark.parametrize(
    ("temp", "workspace", "persistent"),
    [
        ("tmp", "ws", False),  # the batch's layout: TMPDIR and --out below one parent in /tmp
        ("tmp", "tmp/ws", False),  # the workspace inside the temp dir
        (None, "ws", False),  # TMPDIR unset: the workspace and --out side by side below /tmp
        ("tmp", "ws", True),  # the session sandbox (its zygote starts as root): started before too
    ],
)
def test_places_nested_in_tmp_start_and_still_hide(
    open_base: Path, monkeypatch: pytest.MonkeyPatch, temp: str | None, workspace: str, persistent: bool
) -> None:
    """Failed before (3 of 4: each per-command case): exit 1, "bwrap: Can't mkdir parents for ..."."""
    require_bwrap()
    base = open_base
    if temp is not None:
        (base / temp).mkdir()
        monkeypatch.setenv("TMPDIR", str(base / temp))
        monkeypatch.setattr(tempfile, "tempdir", None)
    ws = base / workspace
    ws.mkdir()
    (ws / "secret").write_text("SECRET-IN-WS\n")
    (base / "o").mkdir()
    out = base / "o" / "results.jsonl"  # the batch's --out: masked, below /tmp, outside the workspace
    out.write_text("RESULTS\n")
    shown = base / "o" / "shown"  # a read-only path there (shown again) and a missing denied one
    shown.write_text("x")
    policy = SandboxPolicy(
        workspace=ws, read_denied=(out, base / "gone" / "later", ws / "secret"), read_only=(shown,)
    )
    code, said, failure = _run(
        ws, policy, base / "s", f"cat {ws}/secret {out} 2>/dev/null; echo ran", persistent=persistent
    )
    assert (code, failure) == (0, None), said
    assert said == "ran\n", said  # started; the workspace's denied file still hidden, the host's /tmp unseen


def test_a_failed_bwrap_set_up_is_a_sandbox_failure(open_base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before (1 of 1): bwrap's own set-up failure read as the command's exit 1."""
    require_bwrap()
    base = open_base
    ws = base / "ws"
    ws.mkdir()
    real = BwrapBackend.bwrap_args

    def broken(self: BwrapBackend, *args: Any, **kwargs: Any) -> list[str]:
        argv = real(self, *args, **kwargs)
        return [*argv, "--ro-bind", str(base / "no-such-source"), "/mnt"]  # bwrap fails before the command

    async def main() -> tuple[int, str, str | None]:
        backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
        async with supervised(backend, base / "s") as sup:
            monkeypatch.setattr(BwrapBackend, "bwrap_args", broken)  # started: each command's bwrap fails
            result = await sup.run("echo ran", timeout_s=60)
            return result.exit_code, result.preview, result.sandbox_failure

    code, said, failure = anyio.run(main)
    assert failure is not None and "could not be set up" in failure and "no-such-source" in failure, (
        code,
        said,
    )
    assert "ran" not in said
