"""One bwrap session's private /tmp (and state) is out of another session's reach.

Each session's /tmp is a host directory under the host's temp dir, bound at /tmp.
When that temp dir is not /tmp (``TMPDIR`` elsewhere), the read-only host view
showed it to every other session's commands of the same uid (a non-root caller):
a command read another agent's scratch files. The host's temp dir is now hidden
in the sandbox (an empty tmpfs) before the session's own binds. Real bwrap, two
sessions at once; the same test as uid 65534, where 0700 directories do not help.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests import _nonroot
from tests.conftest import require


@pytest.fixture
def host_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temp dir outside /tmp, as ``TMPDIR=/var/tmp/…`` makes it."""
    base = Path(tempfile.mkdtemp(prefix="gaps-tmpdir-", dir="/var/tmp"))
    base.chmod(0o1777)  # as a temp dir is (bwrap as root starts commands as another uid)
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    monkeypatch.setenv("TMPDIR", str(base))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_another_sessions_private_tmp_is_unreachable(
    tmp_path: Path, host_tmp: Path, persistent: bool
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws_a, ws_b = tmp_path / "a", tmp_path / "b"
    ws_a.mkdir()
    ws_b.mkdir()

    async def main() -> tuple[str, int | None, str]:
        a = create_backend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws_a))
        b = create_backend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws_b))
        await a.start()
        await b.start()
        try:
            assert isinstance(a, BwrapBackend) and a.session_tmp is not None
            # Below /tmp whatever TMPDIR says since round 40 (tenants); TMPDIR still hidden (the case here).
            assert a.session_tmp.parent.parent == Path("/tmp") and host_tmp not in a.session_tmp.parents
            async with (
                Supervisor(a, session_dir=tmp_path / "sa") as sa,
                Supervisor(b, session_dir=tmp_path / "sb") as sb,
            ):
                wrote = await sa.run("echo secret-of-a > /tmp/note; cat /tmp/note", timeout_s=60)
                assert wrote.exit_code == 0 and "secret-of-a" in wrote.preview, wrote
                target = a.session_tmp / "note"
                read = await sb.run(f"cat {target}; ls -R {host_tmp}", timeout_s=60)
                own = await sb.run("echo mine > /tmp/x && cat /tmp/x", timeout_s=60)
                return read.preview, own.exit_code, own.preview
        finally:
            await b.close()
            await a.close()

    try:
        seen, own_code, own_out = anyio.run(main)
    except Exception as exc:  # noqa: BLE001 - an unusable bwrap is an environment problem
        require(False, f"bwrap unusable here: {exc}")
        return
    assert "secret-of-a" not in seen, seen
    assert own_code == 0 and own_out.strip() == "mine"


def test_the_same_as_an_unprivileged_caller() -> None:
    """As uid 65534 the sessions share the caller's uid: only the mask keeps them apart."""
    require(os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, the test above is it)")
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(shutil.which("setpriv") is not None, "setpriv is not installed")
    args = [
        "tests/test_gaps_private_tmp.py",
        "--deselect",
        "tests/test_gaps_private_tmp.py::test_the_same_as_an_unprivileged_caller",
    ]
    collected, outcome = _nonroot.run_as_nobody(args)
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and not (outcome.failures or outcome.errors), summary
    assert outcome.skipped == 0 and outcome.tests == collected.items, summary
