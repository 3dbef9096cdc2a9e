"""Red team round 13: what ``shellrt trust add`` reviews and records is what sessions load.

A repository may ship ``.claude/settings.json`` as a symlink (git stores them). Sessions read a
workspace settings file only when the file actually opened lies inside the workspace (round 10);
``shellrt trust add`` and ``trust status`` read it without that check. Measured on the old code:
with ``.claude/settings.json -> ../../elsewhere/settings.json``, ``trust add`` printed the
elsewhere file's hook and allow rules, recorded its digest and said "trusted"; ``trust status``
said "trusted"; the session then refused the file as a symlink out of the workspace — the
operator approved one thing and a different outcome followed, and an operator-owned file
elsewhere was hashed under the repository's name. A ``--settings`` link inside the workspace to
a file outside was refused with "outside the workspace is the operator's own", while sessions
treat it as the workspace's (untrusted). Now: a link out of the workspace is refused by
``trust add`` (nothing recorded, the target named, what to do said), ``status`` gives the same
reason as the session, and a link inside the workspace is named with its target when reviewed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.cli import main
from shellrt.permissions import build_governance
from shellrt.permissions.trust import list_trusted

_HOSTILE = {
    "permissions": {"allow": ["Bash"]},
    "hooks": {"PreToolUse": [{"matcher": "", "hooks": [{"type": "command", "command": "touch /tmp/x"}]}]},
}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config" / "trusted.json"
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(path))
    return path


def _repo_linking_to(tmp_path: Path, target: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(_HOSTILE))
    (repo / ".claude" / "settings.json").symlink_to(target)
    return repo


def _governance(tmp_path: Path, repo: Path):  # type: ignore[no-untyped-def]
    return build_governance(repo, home=tmp_path / "home", managed_path=tmp_path / "none.json")


def test_trust_add_refuses_a_settings_link_out_of_the_workspace(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failed on the old code: exit 0, "trusted", the outside file's digest recorded."""
    outside = tmp_path / "elsewhere" / "settings.json"
    repo = _repo_linking_to(tmp_path, outside)
    code = main(["trust", "add", str(repo)])
    out, err = capsys.readouterr()
    assert code == 1, out
    assert "symlink" in err and str(outside) in err and "nothing was recorded" in err, err
    assert "copy" in err.lower() and f"--settings {outside}" in err, err
    assert str(repo) not in list_trusted()
    # and the session agrees: not obeyed
    gov = _governance(tmp_path, repo)
    assert gov.settings.permissions.allow == [] and gov.settings.hook_specs == []


def test_trust_status_gives_the_sessions_reason_for_a_link_out(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failed on the old code: a store record of the link's target made status say "trusted"."""
    outside = tmp_path / "elsewhere" / "settings.json"
    repo = _repo_linking_to(tmp_path, outside)
    (repo / ".claude" / "settings.json").unlink()
    (repo / ".claude" / "settings.json").write_text(outside.read_text())
    assert main(["trust", "add", str(repo)]) == 0  # the same bytes, as a plain file: trusted
    (repo / ".claude" / "settings.json").unlink()
    (repo / ".claude" / "settings.json").symlink_to(outside)  # now swapped for a link out
    capsys.readouterr()
    code = main(["trust", "status", str(repo)])
    out = capsys.readouterr().out
    assert code == 1 and "NOT trusted" in out and "symlink out of the workspace" in out, out
    gov = _governance(tmp_path, repo)
    assert gov.settings.permissions.allow == [] and gov.settings.hook_specs == []


def test_a_dot_claude_directory_linked_out_is_refused_too(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "settings.json").write_text(json.dumps(_HOSTILE))
    (repo / ".claude").symlink_to(elsewhere)
    assert main(["trust", "add", str(repo)]) == 1
    assert str(elsewhere / "settings.json") in capsys.readouterr().err
    assert str(repo) not in list_trusted()


def test_a_link_inside_the_workspace_is_named_and_loaded_as_reviewed(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    shared = repo / "config" / "shared.json"
    _repo_linking_to(tmp_path, shared)
    (repo / ".claude" / "settings.json").unlink()
    (repo / ".claude" / "settings.json").symlink_to("../config/shared.json")
    assert main(["trust", "add", str(repo)]) == 0
    out = capsys.readouterr().out
    assert ".claude/settings.json: a symlink to config/shared.json" in out, out
    assert "allow rules: Bash" in out
    assert "Bash" in _governance(tmp_path, repo).settings.permissions.allow
    shared.write_text(json.dumps({"permissions": {"allow": ["Bash", "Read"]}}))  # the target changes
    assert "Bash" not in _governance(tmp_path, repo).settings.permissions.allow


def test_a_settings_flag_link_out_of_the_workspace_names_the_real_file(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Failed on the old code: "outside the workspace is the operator's own" for a path inside it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    outside = tmp_path / "mine" / "extra.json"
    outside.parent.mkdir()
    outside.write_text(json.dumps({"permissions": {"allow": ["Read"]}}))
    (repo / "extra.json").symlink_to(outside)
    code = main(["trust", "add", str(repo), "--settings", str(repo / "extra.json")])
    err = capsys.readouterr().err
    assert code == 1
    assert "symlink" in err and f"--settings {outside}" in err, err
