"""Red team, round 25 (analysis): ``jq -f`` named another filter file to jq than to the check.

jq 1.6 and 1.7 read ``-f``/``--from-file`` as a flag: the filter file is the first operand,
wherever it stands. The option model reads the word after ``-f``, and the Bash tool reads that
file for ``import``/``include`` directives before it allows a jq command (``import "../x" as
$d`` prints ``../x.json``, a file outside the workspace the command does not name). So
``jq -f -n prog`` (the check read a file named ``-n``) and ``jq -nf prog`` (a cluster the
tool's scan did not see) ran a filter file nobody had read, unasked: its import printed a JSON
file outside the workspace (credentials files are often JSON). The jq model now accepts ``-f``
only as ``jq [flags] -f FILE [inputs]``, where every reading names the same file and the tool
reads it. Real jq, real files; the decisions are the Bash tool's in default mode.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.tools.bash import Bash
from tests._governance import default_decisions
from tests.conftest import require

pytestmark = pytest.mark.anyio

_SECRET = "TOPSECRET-JSON-OUTSIDE"
#: Each makes jq 1.6/1.7 read ``prog`` as the filter while the check read another word, or none.
ATTACKS = ["jq -nf prog", "jq -f -n prog", "jq --from-file -n prog", "jq -rnf prog", "jq -f -r -n prog",
           "jq -n prog -f", "jq --arg a b -f prog", "jq -f prog -nf prog"]
#: The written-out form stays read-only; with a plain filter it is allowed (the cost side).
KEPT = ["jq -n -f plain", "jq -f plain -n", "jq -n -r -f plain x.json", "jq -n --from-file plain"]


def _jq() -> str:
    found = shutil.which("jq")
    require(found is not None, "jq is not installed")
    return str(found)


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "creds.json").write_text(json.dumps({"token": _SECRET}))
    (ws / "prog").write_text('import "../outside/creds" as $c; $c')
    (ws / "plain").write_text(".")
    (ws / "x.json").write_text("{}")
    return ws


def test_premise_jq_reads_the_first_operand_as_the_filter_file(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    done = subprocess.run([_jq(), "-f", "-n", "prog"], cwd=ws, capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)
    assert _SECRET in done.stdout, (done.stdout, done.stderr)


async def test_bash_tool_asks_for_every_other_form_of_jq_f(tmp_path: Path) -> None:
    decided = dict(zip(ATTACKS + KEPT, await default_decisions(tmp_path, Bash(), ATTACKS + KEPT, _workspace(tmp_path)),
                       strict=True))
    assert [c for c in ATTACKS if decided[c] != "ask"] == []
    assert [c for c in KEPT if decided[c] != "allow"] == []


def test_the_reason_says_how_to_write_it() -> None:
    reasons = " ".join(analyze("jq -nf prog").reasons)
    assert "jq [flags] -f FILE [inputs]" in reasons, reasons
    assert not analyze("jq -nf prog", shell="powershell").read_only  # pwsh runs the same program
