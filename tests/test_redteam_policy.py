"""Red-team: the default secret masks when HOME is unusual (CI scratch homes, unset, relative, "~")."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from sandbox import SandboxPolicy
from shellrt.runtime.sandbox_policy import derive_policy


@pytest.mark.parametrize("home", ["", "relative/dir", "~", "/nonexistent/scratch-home"])
def test_default_masks_cover_the_real_home_whatever_home_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: str
) -> None:
    """CI and wrappers point HOME at a scratch dir (or break it): the caller's real home (the
    password database's) keeps its keys, and must stay masked; no mask may be a relative path,
    and a strange HOME must not stop the session from starting."""
    monkeypatch.setenv("HOME", home)
    policy, _ = derive_policy(SandboxPolicy(workspace=tmp_path))
    denied = {str(p) for p in policy.read_denied}
    assert all(p.startswith("/") for p in denied), sorted(denied)
    real_home = pwd.getpwuid(os.getuid()).pw_dir
    assert os.path.join(real_home, ".ssh") in denied or real_home in denied, sorted(denied)
