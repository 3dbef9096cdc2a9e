"""Red team round 47 (iface6): JSON the CLI prints on stdout carried controls a terminal obeys.

``shellrt run --json`` prints one JSON report holding the command's own stdout and stderr, and
``shellrt permissions check`` echoes the input it judged: both with ``json.dumps(...,
ensure_ascii=False)``, which escapes only U+0000..U+001F. The C1 controls (U+009B is a whole
CSI, U+009D an OSC: a clipboard write on a terminal that honours C1, as xterm does), the
bidirectional overrides (U+202E shows the rest of the line reversed) and the other characters
that do not print went out raw, to the operator's terminal when stdout is one. Plain mode drops
every C1 control of the command's output (`shellrt.cli._tty_filter`, round 19) and ``shellrt
classify`` escapes them in its JSON (round 29); these two did not.

Now each prints them as JSON ``\\u`` escapes: the same JSON to any reader (the test parses the
report back and gets the command's text unchanged), nothing a terminal acts on.

Real child processes: ``python -m shellrt run --json`` over the local backend, and
``python -m shellrt permissions check``, each with a private ``HOME``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: What must never reach stdout raw: C1 controls (UTF-8 ``C2 80``..``C2 9F``), U+202E (RLO),
#: U+2066 (LRI) and U+200B (a zero-width space hides a character between two that look joined).
_RAW = re.compile(rb"\xc2[\x80-\x9f]|\xe2\x80\xae|\xe2\x81\xa6|\xe2\x80\x8b")
#: The hostile text: a C1 CSI (red), an OSC 52 clipboard write ended by the C1 ST, a bidi override,
#: an isolate and a zero-width space, among letters that must stay as they are.
_TEXT = "caf\u00e9 \u009b31mRED \u009d52;c;Y3VybCBldmlsfHNo\u009c \u202eevil\u2066 z\u200bw \u6f22"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "SHELLRT_"))}
    env.update({"PYTHONPATH": str(ROOT), "HOME": str(home), "SHELLRT_HOME": str(home / "state")})
    return env


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "ws").mkdir(parents=True)
    return home


def test_run_json_report_escapes_what_a_terminal_obeys(tmp_path: Path) -> None:
    home = _home(tmp_path)
    script = home / "ws" / "emit.py"
    script.write_text(
        f"import sys\nsys.stdout.buffer.write({_TEXT.encode()!r})\nsys.stderr.buffer.write({_TEXT.encode()!r})\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "local", "--json", "--workspace", str(home / "ws"),
         "--", f"{sys.executable} emit.py"],
        capture_output=True,
        env=_env(home),
        cwd=home / "ws",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    raw = _RAW.findall(proc.stdout)
    assert not raw, f"the report printed {raw!r} raw"
    report = json.loads(proc.stdout)
    assert report["stdout"] == _TEXT and report["stderr"] == _TEXT  # the same JSON to a reader
    assert "caf\u00e9".encode() in proc.stdout and "\u6f22".encode() in proc.stdout  # letters stay letters


def test_permissions_check_echo_escapes_what_a_terminal_obeys(tmp_path: Path) -> None:
    home = _home(tmp_path)
    given = {"command": f"echo {_TEXT}"}
    proc = subprocess.run(
        [sys.executable, "-m", "shellrt", "permissions", "check", "--workspace", str(home / "ws"), "Bash",
         json.dumps(given)],
        capture_output=True,
        env=_env(home),
        cwd=home / "ws",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    raw = _RAW.findall(proc.stdout)
    assert not raw, f"the check printed {raw!r} raw"
    echoed = proc.stdout.decode().splitlines()[0]
    assert echoed.startswith("Bash ") and json.loads(echoed[len("Bash ") :]) == given
