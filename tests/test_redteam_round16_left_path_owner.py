"""Red team round 16 (left-overs): as root, no host program comes from a directory others write.

`sandbox._hostpath` leaves out the ``PATH`` entries inside the writable roots of *this
process's* sessions. Another process's live sessions (an MCP server and a CLI on one machine, a
batch worker beside a server) are unknown to it: with the other workspace's ``bin`` on root's
``PATH``, a command of that session planted ``git`` and this process ran it as root. Now, as
root, an entry that another user owns or a group/others may write (itself or a directory above
it, sticky ``/tmp`` excepted) is left out too: a workspace a sandboxed command writes is one of
those (the leased uid's files, a user's checkout). Root only: a non-root caller's own
directories are its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from sandbox import _hostpath
from sandbox._hostpath import host_path, host_which


@pytest.mark.skipif(os.geteuid() != 0, reason="the ownership rule is a root caller's")
def test_root_never_runs_a_program_from_a_directory_others_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The ownership rule alone: the roots other tests' live sessions registered in this worker
    # leave their entries out too (CI67: one covered this test's /tmp directory, and root's own
    # directory below it was left out for that reason, not by the rule under test).
    monkeypatch.setattr(_hostpath, "_roots", {})
    base = Path(tempfile.mkdtemp(prefix="rt16-owner-", dir="/tmp"))
    try:
        base.chmod(0o755)
        marker = tmp_path / "PWNED"
        dirs = {name: base / name / "bin" for name in ("user", "groupw", "mine")}
        for name, d in dirs.items():
            d.mkdir(parents=True)
            fake = d / "git"
            fake.write_text(f"#!/bin/sh\n: > {marker}\necho {name}\n")
            fake.chmod(0o755)
        # Another process's workspace: a user's checkout, or files a leased sandbox uid made.
        os.chown(base / "user", 65534, 65534)
        (base / "groupw").chmod(0o775)  # a group may write: whoever is in it plants git
        path = f"{dirs['user']}:{dirs['groupw']}:/usr/bin:/bin"
        kept = host_path(path).split(":")
        assert str(dirs["user"]) not in kept and str(dirs["groupw"]) not in kept, kept
        found = host_which("git", path)
        assert found is not None and not found.startswith(str(base)), found
        subprocess.run([found, "--version"], check=True, capture_output=True)
        assert not marker.exists()
        # Root's own directory is kept (the rule can say no, and yes).
        assert host_which("git", f"{dirs['mine']}:/usr/bin") == str(dirs["mine"] / "git")
    finally:
        shutil.rmtree(base, ignore_errors=True)
