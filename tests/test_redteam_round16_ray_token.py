"""Red team round 16 (part 2), Ray: the cluster's token in the caller's home.

Ray 2.5x turns token authentication on for the clusters it starts and keeps the token in
``~/.ray/auth_token``, written with ``open(path, "w")``: mode 0644 in a 0755 ``~/.ray``. With
it, any process that reaches the GCS or the dashboard joins the cluster and runs code on every
node; without it, it is refused. ``~/.ray`` was in no default mask: a bwrap command read it
whenever the sandbox's uid could reach the home -- a non-root caller's own (the command runs as
the caller), or a root caller whose ``HOME`` is a readable directory (CI jobs pointing ``HOME``
at a scratch dir; the leased uid reads a 0644 file there) -- and printed it into its result.
``~/.ray`` is now a default mask, like ``~/.kube`` and ``~/.docker``.

Real bwrap (one batch task, the local engine: the mask is the same on a Ray node), as root with
``HOME`` in ``/var/tmp`` (outside bwrap's private ``/tmp``).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require

pytestmark = [pytest.mark.bwrap]

TOKEN = "rt16-ray-auth-token-0123456789abcdef"


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    base = Path(tempfile.mkdtemp(prefix="rt16h-", dir="/var/tmp"))
    try:
        base.chmod(0o755)  # a readable HOME, as a CI job's scratch home is
        token = base / ".ray" / "auth_token"
        token.parent.mkdir(mode=0o755)
        token.write_text(TOKEN)
        token.chmod(0o644)  # as Ray writes it
        (base / "notes.txt").write_text("home-visible\n")
        (base / "notes.txt").chmod(0o644)
        monkeypatch.setenv("HOME", str(base))
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_bwrap_task_cannot_read_the_ray_token(home: Path, tmp_path: Path) -> None:
    from shellrt.batch import Task, run_sync

    task = Task.model_validate(
        {
            "id": "token",
            "sandbox": "bwrap",
            "commands": [f"cat {home}/notes.txt", f"cat {home}/.ray/auth_token 2>&1; ls -a {home}/.ray 2>&1"],
        }
    )
    (result,) = run_sync([task], artifacts_dir=tmp_path / "art", concurrency=1)
    control, probe = result.commands
    # The attack is real: the sandbox reads this home (a file beside ~/.ray).
    assert control.preview == "home-visible\n", (result.error, control)
    shown = (probe.preview or "") + (probe.stderr or "")
    assert TOKEN not in shown, f"a bwrap task read Ray's token: {shown!r}"
    assert "auth_token" not in shown.splitlines(), f"a bwrap task listed ~/.ray: {shown!r}"
