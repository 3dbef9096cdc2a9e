"""Red team, round 43 (review23): ``shellrt trust add`` reads ``~`` as sessions do.

Round 42 (perms5) gave governance, the sandbox masks and the trust store one home
(`permissions.caller_home`), but ``shellrt trust`` still loaded the files it describes and
records with ``Path.home()`` (perms5's Left): ``HOME=~`` raised a traceback, and ``HOME=`` or a
relative ``HOME`` showed ``additionalDirectories: ["~/proj"]`` as ``/proj`` or ``rel/proj``
while the session it vouches for grants the password database's home's ``proj``: the operator
agreed to a directory other than the one commands then write.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from shellrt.cli import main
from shellrt.permissions.caller_home import caller_home
from shellrt.permissions.trust import assess_trust


@pytest.mark.parametrize("home", ["~", "", "rel", "~/x"])
def test_trust_add_shows_and_records_the_sessions_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: str
) -> None:
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"additionalDirectories": ["~/proj"]}}))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "store.json"))
    monkeypatch.setenv("HOME", home)
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["trust", "add", str(ws)])
    assert code == 0, err.getvalue()
    expected = caller_home() / "proj"
    assert expected.is_absolute() and str(expected) != "/proj"
    assert f"additionalDirectories (commands may read and write there): {expected}" in out.getvalue()
    assert assess_trust(ws, store=tmp_path / "store.json").trusted == {".claude/settings.json"}
