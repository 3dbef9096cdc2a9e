"""Red team, round 39 (review10): any change in the writable roots during the alias search refused the command.

Round 39 (sockets) made `sandbox._maskaliases.AliasFinder` walk the roots again when a directory's
ctime changed during the walk, and refuse after three walks. A ctime changes on far more than a
rename: a file made or removed (a build writing ``out/``), a ``chmod``, an xattr, a ``touch``.
A build (or another session's command, or a hostile command's ``while :; do touch x; rm x; done``)
changing anything once a millisecond in a 20,000-file workspace got every search refused, so
every command of every session sharing the workspace whose read-denied file changed, and each
refused search cost three walks. Now the walk is checked directory by directory: a changed one is
listed again and only what is new in it walked, until one pass finds nothing changed (the rename
the sockets test makes is still found or refused). Root and uid 65534 (the search runs on the
host as the caller).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox._maskaliases import AliasFinder, stats_of
from sandbox.errors import SandboxExecError
from tests import _nonroot

#: A build's or another session's change, once a millisecond, none of them a rename.
_CHURN = {
    "files": "open('out/o', 'w').close(); os.unlink('out/o')",
    "chmod": "os.chmod('out', 0o755); os.chmod('out', 0o775)",
    "mkdir": "os.mkdir('out/d'); os.rmdir('out/d')",
}

_CHURNER = """
import os, sys, time
os.chdir(sys.argv[1])
print("churning", flush=True)
while True:
    {churn}
    time.sleep(0.001)
"""


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "out").mkdir()
    for k in range(20):  # a repository: 20,000 files in 20 directories
        (ws / f"src{k}").mkdir()
        for n in range(1000):
            (ws / f"src{k}" / f"f{n}").touch()
    secret = ws / ".env"
    secret.write_text("")
    os.link(secret, ws / "d" / "notes")  # round 36: made by a command before the secret was written
    return ws, secret


@pytest.mark.parametrize("churn", sorted(_CHURN))
def test_a_change_that_is_no_rename_neither_refuses_nor_hides(tmp_path: Path, churn: str) -> None:
    """Failed before: files 10 of 10 refused, chmod 10 of 10, mkdir 10 of 10 (root; uid 65534 alike)."""
    ws, secret = _workspace(tmp_path)
    churner = subprocess.Popen(
        [sys.executable, "-c", _CHURNER.format(churn=_CHURN[churn]), str(ws)], stdout=subprocess.PIPE, text=True
    )
    assert churner.stdout is not None and churner.stdout.readline().strip() == "churning"
    refused: list[str] = []
    missed = 0
    try:
        for _ in range(10):
            finder = AliasFinder(count_outside=True)  # each a first search: a session's start
            try:
                found = finder.aliases([secret], stats_of([secret]), [ws])
            except SandboxExecError as exc:
                refused.append(str(exc))
                continue
            if ws / "d" / "notes" not in found:
                missed += 1
    finally:
        churner.kill()
        churner.wait()
    assert not refused and not missed, f"{len(refused)} of 10 refused, {missed} missed: {refused[:1]}"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_change_that_is_no_rename_neither_refuses_nor_hides")
