"""Red team, round 56 (reviewa): a pattern word made the supervisor backtrack for minutes.

Round 56 matched each segment of a bash pattern word against the directory's names with a regex of its own
(``*`` as ``.*``), to see the reads a deny rule must judge. Python's ``re`` backtracks: ``*a*a*a*a*a*b`` against
a name of 200 ``a`` took 38 s, one more ``*a`` minutes, while the engine judged one ``cat`` (a hostile repository
ships the name, or an earlier call creates it). Now a ``*`` is matched the way ``fnmatch`` does it, without
backtracking into an earlier star, and the over-approximation is the same.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

#: Stars and a name that make a backtracking ``.*a.*a...b`` try every way to split the name.
PATTERNS = ["*a" * 12 + "b", "*a" * 12 + "[b]x", "*" + "?*" * 12 + "b", "*a" * 12 + "b/x"]
NAME = "a" * 200


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": str(Path(__file__).resolve().parents[1])})  # fmt: skip


def test_a_backtracking_pattern_is_judged_quickly(tmp_path: Path) -> None:
    (tmp_path / NAME).write_text("x")
    (tmp_path / ".env").write_text("SECRET=1\n")
    code = f"""
        import time
        from shellrt.tools._bash_glob import bash_glob
        for pattern in {PATTERNS!r}:
            start = time.monotonic()
            assert list(bash_glob(pattern, {str(tmp_path)!r}, 100)) == [], pattern
            assert time.monotonic() - start < 2, pattern
        assert list(bash_glob("*a*a*a*", {str(tmp_path)!r}, 100)) == [{str(tmp_path / NAME)!r}]
        print("ok")
    """
    try:
        ran = _run(code, tmp_path)
    except subprocess.TimeoutExpired:
        raise AssertionError("the glob of one word took more than 60 s") from None
    assert ran.stdout.strip() == "ok", ran.stderr[-2000:]


def test_the_engine_judges_the_command_in_time(tmp_path: Path) -> None:
    """End to end: the engine decides ``cat <pattern>`` beside the name (a deny rule on ``.env``) at once."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / NAME).write_text("x")
    code = f"""
        import anyio, functools, pathlib
        from shellrt.tools.bash import Bash
        from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide
        tmp = pathlib.Path({str(tmp_path)!r})
        calls = ["cat " + p for p in {PATTERNS[:2]!r}] + ["cat *.env"]
        got = anyio.run(functools.partial(decide, tmp, Bash(), calls, "default", tmp / "ws", deny=["Read(./.env)"]))
        print(got)
    """
    try:
        ran = _run(code, ws)
    except subprocess.TimeoutExpired:
        raise AssertionError("the engine took more than 60 s to judge one cat") from None
    assert ran.stdout.strip() == "['allow', 'allow', 'allow']", ran.stderr[-2000:]
