"""Red team round 25 (trusted): a tree digest that two different trees share.

``hook_files``' tree digest (the workspace's record, a trusted hook directory's, the root's own
files) fed names, kinds and contents into one hash with nothing marking where a file's content
ends: a file whose content carries the next entry's header (``\\0sitecustomize.py\\0<kind>\\0
<mode>\\0``) and a payload hashes as that file cut short plus a new file holding the payload.
A hostile repository ships the long file (data, reviewed as such); a sandboxed command splits it.
"""

from __future__ import annotations

import json
import shlex
import stat
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import _digest, _root_files_digest, workspace_tree_digest
from tests._governance import isolated_workspace
from tests.test_redteam_round24_trusted_treeplant import _server, _session


def _forged(payload: str, name: str = "sitecustomize.py") -> bytes:
    """What the long file holds: its short content, then the header of ``name``, then ``payload``."""
    return b"X\n" + f"\0{name}\0{stat.S_IFREG}\0{0}\0".encode() + payload.encode()


def _split(payload: str, name: str = "sitecustomize.py") -> str:
    """The command that splits ``a.dat`` (run in the sandbox): what a hostile repository needs."""
    code = "import sys; open('a.dat', 'w').write('X\\n'); open(sys.argv[1], 'w').write(sys.argv[2])"
    return shlex.join(["python3", "-c", code, name, payload])


def test_a_file_split_in_two_keeps_no_digest(tmp_path: Path) -> None:
    """Failed 3 of 3 before: the same digest for {a.dat: X + header + code} and {a.dat: X,
    sitecustomize.py: code}: the workspace's, a hook directory's and the root files'."""
    places = (tmp_path / "ws", tmp_path / "other" / ".claude" / "hooks")
    for place in places:
        place.mkdir(parents=True)
        (place / "a.dat").write_bytes(_forged("import os\n"))

    def digests() -> tuple[str | None, ...]:
        other = tmp_path / "other"
        return workspace_tree_digest(places[0]), _digest(other, ".claude/hooks"), _root_files_digest(places[0])

    before = digests()
    for place in places:
        (place / "a.dat").write_bytes(b"X\n")
        (place / "sitecustomize.py").write_text("import os\n")
    after = digests()
    same = [kind for kind, b, a in zip(("workspace", "hook dir", "root files"), before, after, strict=True) if b == a]
    assert not same, f"these digests did not change when a file was split in two: {same}"


def test_a_split_file_is_not_run_by_the_next_sessions_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed 1 of 1 before: the session ended with the digest it started with, dropped the
    record, and the next session's server (cwd in the workspace) imported the split-off module."""
    ws = isolated_workspace(tmp_path, monkeypatch)
    marker = tmp_path / "ran-on-the-host"
    payload = f"open({str(marker)!r}, 'w')\n"
    (ws / "a.dat").write_bytes(_forged(payload))  # the hostile repository, as cloned
    own = tmp_path / "operator.json"
    own.write_text(json.dumps({"mcpServers": {"srv": _server(ws, "cwd")}}))
    first = _session(ws, own, tmp_path / "s1", [("Bash", {"command": f"{_split(payload)} && echo split"})])
    assert "split" in json.dumps(first) and (ws / "sitecustomize.py").exists(), first
    second = _session(ws, own, tmp_path / "s2", [("mcp__srv__echo", {"text": "hi"})])
    assert not marker.exists(), "the next session's server imported a module split off a data file"
    assert second[0].get("is_error") and "earlier session" in " ".join(second[-1]), second
