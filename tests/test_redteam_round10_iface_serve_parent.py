"""Red team round 10 (interfaces): the directory holding ``<state>/serve/`` was not checked.

``shellrt serve --http`` writes its bearer token to ``<state>/serve/http-<port>.token``. The
``serve`` directory itself was checked (the caller's, not a symlink, made 0700), its parent was
not: with ``SHELLRT_HOME`` in a directory another local user owns or may write (a shared
scratch directory without the sticky bit), that user can rename ``serve`` away between the check
and the token's creation and put a directory of theirs in its place, so the token is written
where they choose and the file a client reads the token from is theirs to replace. Sessions
have checked their parent since round 8; the token directory now gets the same check and
``serve`` exits 2 saying what to do. uid 65534 plays the other user (root tests).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from shellrt.server._http_token import TokenError, generate_token_file, remove_token_file
from tests._mcp_support import ROOT, isolated_env
from tests._serve_cli import http_serve_argv
from tests.test_mcp_server import _free_port

OTHER_UID = 65534


def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("SHELLRT_HOME", str(state))
    return state


def test_a_state_directory_others_may_write_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = _state(tmp_path, monkeypatch)
    state.chmod(0o777)  # a shared scratch directory, not sticky: anyone may rename `serve`
    with pytest.raises(TokenError, match="writable by other users") as caught:
        generate_token_file(4321)
    assert f"chmod go-w {state}" in str(caught.value) and "--token-file" in str(caught.value)
    assert not (state / "serve" / "http-4321.token").exists()


def test_a_sticky_shared_state_directory_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = _state(tmp_path, monkeypatch)
    state.chmod(0o1777)  # like /tmp: others cannot rename what is ours
    token = generate_token_file(4322)
    assert token.created is not None and token.created.read_text().strip() == token.value
    remove_token_file(token)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_state_directory_another_user_owns_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = _state(tmp_path, monkeypatch)
    (state / "serve").mkdir(mode=0o700)  # ours, as the old check wanted: only its parent is theirs
    os.chown(state, OTHER_UID, OTHER_UID)
    state.chmod(0o755)
    with pytest.raises(TokenError, match=f"not owned by you or root \\(uid {OTHER_UID}\\)"):
        generate_token_file(4323)
    assert not (state / "serve" / "http-4323.token").exists()


def test_serve_exits_2_and_says_what_to_do(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {**os.environ, **isolated_env(tmp_path)}
    state = Path(env["SHELLRT_HOME"])
    state.mkdir(mode=0o777)
    state.chmod(0o777)
    done = subprocess.run(
        http_serve_argv(_free_port(), workspace),
        env=env,
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "writable by other users" in done.stderr and "SHELLRT_HOME" in done.stderr, done.stderr
    assert not any(state.glob("serve/*.token"))
