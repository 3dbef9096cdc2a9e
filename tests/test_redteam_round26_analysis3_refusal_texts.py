"""Red team, round 26 (wave 3, analysis-3): each file-tool refusal says its own next step.

`_paths.refusal` added "Work inside the workspace (or use Bash ...)" to every `ConfinementError`, so a
write refused because the file changed after it was read read "... then make the change again.. Work
inside the workspace ...": a doubled period and advice that sends the model away from the file it
must read again. A place the tools cannot reach that already names Bash got the advice twice.
Real errors of `sandbox.confine`, exact texts.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox import confine
from shellrt.tools._paths import refusal

ADVICE = " Work inside the workspace (or use Bash for what the sandbox allows there)."


def _error(call: object) -> OSError:
    with pytest.raises(OSError) as caught:
        call()  # type: ignore[operator]
    return caught.value


def test_each_refusal_names_its_own_next_step(tmp_path: Path) -> None:
    ws, other = tmp_path / "ws", tmp_path / "other"
    ws.mkdir()
    other.mkdir()
    f = ws / "f.txt"
    f.write_text("old\n")
    base = confine.stamp(os.stat(f))
    f.write_text("a command's\n")
    os.utime(f, ns=(1, 1))
    view = confine.View([confine.Mount(str(ws), str(ws), writable=True), confine.Mount(str(other), str(other))])
    stale = _error(lambda: confine.write_file(view, str(f), b"new\n", base=base))
    assert str(refusal("edit", "f.txt", stale)) == (
        f"Cannot edit f.txt: {f} changed after it was read (a running command?); it was left as it is now "
        "and this write was not made. Read it again, then make the change again."
    )
    (ws / "loop").symlink_to(ws / "loop")
    loop = _error(lambda: confine.open_file(view, str(ws / "loop")))
    assert str(refusal("read", "loop", loop)).endswith("; check where its links lead.")
    outside = _error(lambda: confine.open_file(view, "/etc/hostname"))
    said = str(refusal("read", "/etc/hostname", outside))
    assert said.endswith("use Bash (e.g. `cat`) for other files the sandbox can see.") and ADVICE not in said
    read_only = _error(lambda: confine.write_file(view, str(other / "x"), b"x"))
    assert str(refusal("write", "../other/x", read_only)) == (
        f"Cannot write ../other/x: {other}/x is outside the sandbox's writable places ({ws}).{ADVICE}"
    )
    assert not any(".." in str(refusal("read", "x", e)).replace("../", "") for e in (stale, loop, outside, read_only))
