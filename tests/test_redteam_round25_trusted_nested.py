"""Red team round 25 (trusted, second wave): nested workspaces.

The record was per workspace path: a session on ``proj`` that wrote ``proj/sub/sitecustomize.py``
marked ``proj`` only, and a later session on ``proj/sub`` (no entry of its own) trusted the tree
as it found it. Marks and changed records now apply to every workspace they overlap (an entry
for an ancestor or a descendant).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._governance import isolated_workspace
from tests.test_redteam_round24_trusted_treeplant import _server, _session
from tests.test_redteam_round25_trusted_unrecorded import ECHO, _plant, _shellrt


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "sub").mkdir()
    (ws / "sub" / "app.py").write_text("X = 1\n")
    return ws


def test_a_run_on_the_parent_plants_for_a_server_of_the_child(proj: Path, tmp_path: Path) -> None:
    """Failed 1 of 1 before: the child's server imported what a run on the parent planted."""
    sub, marker = proj / "sub", tmp_path / "ran-on-the-host"
    own = tmp_path / "operator.json"
    own.write_text(json.dumps({"mcpServers": {"srv": _server(sub, "cwd")}}))
    done = _shellrt("run", "--sandbox", "bwrap", "--workspace", str(proj), "--", f"cd sub && {_plant(marker)}")
    assert done.returncode == 0 and (sub / "sitecustomize.py").exists(), done
    out = _session(sub, own, tmp_path / "s2", [ECHO])
    assert not marker.exists(), "a server on the child loaded what a session on its parent planted"
    assert out[0].get("is_error") and "did not record the tree" in " ".join(out[-1]), out


def test_changed_records_apply_to_ancestors_and_descendants(proj: Path) -> None:
    """Failed 1 of 1 before. A guarded session on ``proj`` writes ``sub``: a start on ``sub``
    refuses; ``trust add sub`` clears it for ``sub`` only. A guarded session on ``sub`` changes
    it: a start on ``proj`` refuses; ``trust add proj`` clears both."""
    from shellrt.permissions.tree_writes import begin_tree_session, clear_tree_writes, end_tree_session

    sub = proj / "sub"
    why, at = begin_tree_session(proj, session="a")
    assert why is None
    (sub / "sitecustomize.py").write_text("import os\n")
    end_tree_session(proj, at, session="a")  # marks proj changed
    refused, _ = begin_tree_session(sub)
    assert refused is not None and "overlaps" in refused, refused
    clear_tree_writes(sub)  # the operator reviewed sub only
    assert begin_tree_session(sub, session="b") == (None, begin_tree_session(sub, session="c")[1])
    assert begin_tree_session(proj)[0] is not None  # proj's other files are not reviewed
    clear_tree_writes(proj)
    why, at = begin_tree_session(sub, session="d")
    assert why is None
    (sub / "sitecustomize.py").write_text("import sys\n")
    for name in ("b", "c", "d"):
        end_tree_session(sub, at, session=name)
    refused, _ = begin_tree_session(proj)
    assert refused is not None and "overlaps" in refused, refused
    clear_tree_writes(proj)  # reviewing proj reviews sub, which it holds
    assert begin_tree_session(proj, session="e")[0] is None
    assert begin_tree_session(sub, session="f")[0] is None


def test_a_mark_on_the_child_covers_the_parent(proj: Path) -> None:
    """A session on ``sub`` that records nothing (a mark) refuses a guarded start on ``proj``
    whose tree it may have changed; `trust add proj` clears it."""
    from shellrt.permissions.tree_marks import mark_writable, unmark_writable
    from shellrt.permissions.tree_writes import begin_tree_session, clear_tree_writes, end_tree_session

    why, at = begin_tree_session(proj, session="a")
    assert why is None
    end_tree_session(proj, at, session="a")  # left unchanged: the tree as reviewed
    mark_writable([proj / "sub"], "run")
    (proj / "sub" / "sitecustomize.py").write_text("import os\n")
    unmark_writable([proj / "sub"], "run")
    refused, _ = begin_tree_session(proj)
    assert refused is not None and "did not record the tree" in refused, refused
    clear_tree_writes(proj)
    assert begin_tree_session(proj, session="b")[0] is None
