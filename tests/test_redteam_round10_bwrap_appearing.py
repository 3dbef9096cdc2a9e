"""Red team round 10 (bwrap): a read-denied path outside the roots that appears while a command runs.

A mask needs its path to exist. ``Read(~/.aws/credentials)`` with no ``~/.aws`` yet hid nothing,
and the sandbox shows the host live: a command polling the path (a background one, or a long
build) read the file the moment the operator or a host program wrote it, and kept reading it
until it ended (rounds 8-9 documented it as a residual risk). Outside the writable roots the
sandbox only reads, so the nearest existing directory on the way is now frozen
(``sandbox._frozen``): its entries as they are at the start, each still live below its own name,
and nothing that appears later. Failed before (the poller printed the secret in each mode);
`test_it_holds_for_an_unprivileged_caller` runs it again as uid 65534.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests import _nonroot
from tests.conftest import require

MODES = [pytest.param(False, id="per-command"), pytest.param(True, id="session")]


@pytest.fixture
def places() -> Iterator[tuple[Path, Path]]:
    """A workspace and, beside it (outside the roots), a home-like directory without ``.aws``."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = Path(tempfile.mkdtemp(prefix="rt10-appear-", dir="/var/tmp"))
    base.chmod(0o755)
    ws, home = base / "ws", base / "home"
    ws.mkdir(mode=0o755)
    home.mkdir(mode=0o755)
    (home / ".profile").write_text("rt10-profile\n")
    (home / ".config").mkdir(mode=0o755)
    (home / ".config" / "tool.ini").write_text("rt10-live-before\n")
    os.symlink(".profile", home / "link")
    try:
        yield ws, home
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("persistent", MODES)
def test_a_denied_file_written_while_a_command_runs_stays_hidden(
    places: tuple[Path, Path], tmp_path: Path, persistent: bool
) -> None:
    ws, home = places
    secret = home / ".aws" / "credentials"

    started = ws / "rt10-started"

    def operator() -> None:  # the host writes the secret, and edits a file that was there
        # Once the command runs (a fixed 1.5 s was less than a per-command start as 65534 at load
        # beside CI's other workers: the secret was there before it started, CI56).
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        secret.parent.mkdir()
        secret.write_text("rt10-appeared-secret\n")
        (home / ".config" / "tool.ini").write_text("rt10-live-after\n")

    poll = (
        f"touch {started}; cat {home}/.profile {home}/link; touch {home}/mine 2>&1; "
        f"for i in $(seq 40); do cat {secret} 2>/dev/null && break; sleep 0.1; done; "
        f"ls -a {home}; cat {home}/.config/tool.ini; echo done"
    )

    async def main() -> tuple[str, str]:
        backend = create_backend(
            BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws, read_denied=(secret,))
        )
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "s") as sup:
                writer = threading.Thread(target=operator)
                writer.start()
                during = await sup.run(poll, timeout_s=60)
                writer.join()
                after = await sup.run(f"cat {secret} 2>&1; ls {home}", timeout_s=60)
                assert during.output_path is not None and after.output_path is not None
                return during.output_path.read_text(), after.output_path.read_text()
        finally:
            await backend.close()

    during, after = anyio.run(main)
    assert "rt10-appeared-secret" not in during + after, (during, after)
    assert ".aws" not in during, during  # not even the new directory's name
    # What was there stays there, live and read-only; the next sandbox shows the new name, masked.
    assert during.count("rt10-profile") == 2 and "Read-only file system" in during, during
    assert "rt10-live-after" in during and during.rstrip().endswith("done"), during
    assert ".aws" in after, after


def test_it_holds_for_an_unprivileged_caller() -> None:
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run this file directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("bwrap") is not None, "setpriv and bwrap")
    name = "test_a_denied_file_written_while_a_command_runs_stays_hidden"
    collected, outcome = _nonroot.run_as_nobody(
        [f"tests/{Path(__file__).name}::{name}"], collect_args=[f"{__file__}::{name}"]
    )
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and outcome.tests == collected.items and not outcome.skipped, summary
