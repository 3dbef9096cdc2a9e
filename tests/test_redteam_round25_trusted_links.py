"""Red team round 25 (trusted): a link in the workspace to what its digest does not cover.

The workspace's tree digest hashes a symbolic link as its target's *text*, and leaves ``.git``
out. A hostile repository ships ``sitecustomize.py -> .git/site.py`` (dangling: git does not
care) or a link into a directory outside the workspace that commands may write (another
writable root): a command writes the target, the digest stays, the session ends "unchanged",
and the next session's server (cwd in the workspace) imports the target on the host.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import workspace_tree_digest
from tests._git import git_in
from tests._governance import isolated_workspace
from tests.test_redteam_round24_trusted_treeplant import _server, _session


@pytest.mark.parametrize("where", ["outside", "git"])
def test_a_links_target_outside_the_digest_changes_it_or_refuses(tmp_path: Path, where: str) -> None:
    """Failed 2 of 2 before: the digest was the same after the target (outside the workspace,
    or in ``.git``) was written, and after it was rewritten."""
    outside = tmp_path / "shared"
    outside.mkdir()
    target = outside / "site.py" if where == "outside" else Path(".git") / "site.py"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").mkdir()
    (ws / "sitecustomize.py").symlink_to(target)
    before = workspace_tree_digest(ws)
    (ws / target).write_text("import os\n")  # the link's target: absolute or relative to ws
    after = workspace_tree_digest(ws)
    assert before != after or not str(before).startswith("sha256:"), before
    (ws / target).write_text("import sys\n")
    assert workspace_tree_digest(ws) != after or not str(after).startswith("sha256:"), after


def test_a_git_target_written_by_a_command_is_not_run_next_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed 1 of 1 before: the command wrote ``.git/site.py`` (not git's config or hooks: not
    protected), the tree kept its digest, the next session's server imported it on the host."""
    ws = isolated_workspace(tmp_path, monkeypatch)
    git_in(ws, "init", "-q")
    (ws / "sitecustomize.py").symlink_to(".git/site.py")  # as the hostile repository ships it
    marker = tmp_path / "ran-on-the-host"
    own = tmp_path / "operator.json"
    own.write_text(json.dumps({"mcpServers": {"srv": _server(ws, "cwd")}}))
    plant = shlex.join(["python3", "-c", "import sys; open('.git/site.py', 'w').write(sys.argv[1])",
                        f"open({str(marker)!r}, 'w')\n"])
    first = _session(ws, own, tmp_path / "s1", [("Bash", {"command": f"{plant} && echo wrote"})])
    assert "wrote" in json.dumps(first) and os.path.exists(ws / ".git" / "site.py"), first
    second = _session(ws, own, tmp_path / "s2", [("mcp__srv__echo", {"text": "hi"})])
    assert not marker.exists(), "the next session's server imported a module a command wrote in .git"
    assert second[0].get("is_error"), second
