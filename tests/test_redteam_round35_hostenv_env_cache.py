"""Red team round 35 (hostenv): `hook_env` is computed once per environment and set of live roots.

It resolves every path the environment names (``realpath``, and as root a ``stat`` of every
directory above each): 3.7 ms at integ, more once every variable is judged (round 35), asked by
host ripgrep, its walker and every host git query of a call. Cached for `CACHE_S`, keyed on the
environment and every live root: a root registered since is never missed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox._hostpath import register_writable, unregister_writable
from shellrt.permissions import hook_env as module
from shellrt.permissions.hook_env import hook_env


def test_reused_per_environment_and_live_roots_never_across_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    computed: list[int] = []
    real = module._cleaned

    def counting(environ: dict[str, str], named: module.Roots) -> dict[str, str]:
        computed.append(1)
        return real(environ, named)

    monkeypatch.setattr(module, "_cleaned", counting)
    monkeypatch.setattr(module, "_cache", {})
    other = tmp_path / "other"
    (other / "bin").mkdir(parents=True)
    env = {"PATH": f"/usr/bin:{other}/bin", "HOME": "/root", "TOOL_HOME": f"{other}/tool"}
    first = hook_env(env, [tmp_path / "ws"])
    first["PATH"] = "changed by a caller"
    second = hook_env(env, [tmp_path / "ws"])
    assert len(computed) == 1 and second["PATH"] == f"/usr/bin:{other}/bin"
    assert second["TOOL_HOME"] == f"{other}/tool"
    # Another session's roots registered since: recomputed, its directories gone.
    token = register_writable([other])
    try:
        third = hook_env(env, [tmp_path / "ws"])
    finally:
        unregister_writable(token)
    assert len(computed) == 2 and third["PATH"] == "/usr/bin" and "TOOL_HOME" not in third
    # Another environment or other roots of the caller: recomputed.
    hook_env({**env, "X": "1"}, [tmp_path / "ws"])
    hook_env(env, [other])
    assert len(computed) == 4
    # Past CACHE_S: recomputed (the file system may have changed).
    monkeypatch.setattr(module, "CACHE_S", 0.0)
    hook_env(env, [tmp_path / "ws"])
    assert len(computed) == 5
