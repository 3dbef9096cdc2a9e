"""Red team, round 25: a command leaves the session in a directory the sandbox masks.

A ``Read(...)`` deny rule masks its directory in the sandbox (an empty read-only tmpfs on
bwrap). An explicit ``cwd`` there is refused (`CwdTracker.explicit`), and the analysis refuses a
literal ``cd secret``, but a ``cd`` it cannot see (a sourced script) was adopted from the shell's
report like any directory inside the roots. From then on every call of the session started
there: the Bash tool's relative words, Glob, Grep and Read all resolved into the denied
directory and were refused ("'echo hi' reads .../secret/hi, which is denied"), with nothing
saying why, until the model guessed to ``cd`` out. Now a reported (or requested) cwd under a
read-denied path is not adopted: the shell stays at the workspace root and the result says so.
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

from tests._bwrap_session import require_bwrap
from tests._calls import block_text, session_results


def test_a_hidden_directory_is_not_adopted_as_the_cwd(tmp_path: Path) -> None:
    require_bwrap()
    ws = tmp_path / "ws"
    (ws / "secret").mkdir(parents=True)
    (ws / "secret" / "key").write_text("hunter2\n")
    (ws / "s.sh").write_text("cd secret\n")
    blocks = session_results(
        ws,
        "bwrap",
        [("Bash", {"command": ". ./s.sh"}), ("Bash", {"command": "echo hi; pwd"}), ("Glob", {"pattern": "*.sh"})],
        session_dir=tmp_path / "session",
        mode="bypassPermissions",
        deny=["Read(./secret/**)"],
    )
    texts = [block_text(b) for b in blocks]
    assert "hidden" in texts[0] and "Working directory is now" not in texts[0], texts[0]
    assert not blocks[1].get("is_error") and texts[1].split() == ["hi", str(ws)], texts[1]
    assert not blocks[2].get("is_error") and "s.sh" in texts[2], texts[2]
