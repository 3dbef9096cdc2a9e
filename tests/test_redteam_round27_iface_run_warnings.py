"""Round 27, interfaces: a command moved the cursor up and erased ``shellrt run``'s warnings.

``shellrt run --sandbox auto`` where bubblewrap is not usable warns once, before the command
starts, that it runs without isolation. On a terminal the output filter keeps cursor moves and
erases (progress bars use them, round 19), so a command's ``ESC[5A ESC[J`` wiped that line: the
operator saw a clean run and believed it sandboxed (round 26 "Left"). What the operator must
always see now comes again after the command's output, once the terminal state is reset. The real
CLI with its stdout and stderr on a pty of the test's own; ``bwrap`` kept off ``PATH``.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from tests._pty import read_terminal

_ROOT = Path(__file__).resolve().parents[1]
_WARNING = b"running without isolation"
#: Up five lines, erase to the end of the screen, print a reassuring line, and hide what follows.
_ERASE = r"printf 'working\n'; printf '\033[5A\033[J'; printf 'sandboxed: ok\n\033[8m'"


def test_a_warning_is_shown_after_the_command_s_output_too(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    bin_dir = tmp_path / "bin"  # bash, no bwrap: `auto` falls back to local with its warning
    bin_dir.mkdir()
    (bin_dir / "bash").symlink_to("/bin/bash")
    env = {
        **os.environ,
        "PATH": str(bin_dir),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])),
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    main, side = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "auto", "--workspace", str(tmp_path / "ws"), "--", _ERASE],
        stdin=subprocess.DEVNULL, stdout=side, stderr=side, env=env, cwd=tmp_path,
    )
    os.close(side)
    seen = read_terminal(main, proc, timeout_s=60)
    assert proc.returncode == 0, seen
    assert seen.count(_WARNING) >= 1 and b"sandboxed: ok" in seen, seen
    after_erase = seen[seen.rindex(b"\x1b[J") :]
    after_output = after_erase[after_erase.index(b"sandboxed: ok") :]
    shown = after_output.split(b"\x1b[8m", 1)[1]  # what comes after the command hid the text
    assert _WARNING in shown, seen
    assert shown.index(b"\x1b[0m") < shown.index(_WARNING), seen  # drawn once the colours are reset
