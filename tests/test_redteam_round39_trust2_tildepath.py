"""Red team round 39 (trust2): a ``PATH`` entry with a leading ``~``, as bash searches it.

``export PATH="~/dotfiles/bin:$PATH"`` (the tilde quoted, so no shell expanded it) works in bash:
its command search expands a leading ``~`` of each entry (probed: bash ran ``~/dot/bin/x``; ``sh``
and ``env`` did not). Rounds 38 and review4 read such an entry as written, a relative one naming
``<any directory>/~/dotfiles/bin``: a ``git`` in the real directory, which the operator's next bash
runs instead of ``/usr/bin/git``, was kept, and the file tools did not ask.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests._plants import assert_tools_ask
from tests._round39_trust2 import plant_and_check, workspace


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_a_tilde_path_entry_is_the_directory_bash_searches(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(backend, tmp_path, "dot/bin")
    monkeypatch.setenv("HOME", str(tmp_path))  # the workspace is ~/ws: a dotfiles repository
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    monkeypatch.setenv("PATH", f"~/ws/dot/bin:{os.environ['PATH']}")
    plants = ["dot/bin/git", "dot/bin/r39-typo"]
    plant_and_check(
        ws, tmp_path / "s", plants, ["dot/README.md", "src/main.py"], "#!/bin/sh\n", backend=backend
    )
    assert_tools_ask(ws, plants)
