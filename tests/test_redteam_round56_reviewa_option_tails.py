"""Red team, round 56 (reviewa): names starting with ``-`` made one ``cat *`` cost minutes to judge.

Round 56 (analysis13) judged every name a pattern word expands to that starts with ``-`` as the option it becomes
(``?f.env`` beside ``-f.env`` reads ``.env``), and resolved *every tail* of it as a file the option may name: a
name of 250 characters is 248 paths. A hostile repository of 2,000 such names made ``_glob_matches('*')`` resolve
490,000 paths (14 s); at the 10,000 names a word may expand to, one ``cat *`` held the engine for minutes. Now the
option values one word may name are bounded; past the bound the word's reads are unknown (fail closed: asked).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

#: A name whose every tail is an option value to resolve.
LONG = "x" * 240


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": str(Path(__file__).resolve().parents[1])})  # fmt: skip


def test_many_option_like_names_are_judged_in_time_and_fail_closed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(4000):
        (ws / f"-{i:04d}{LONG}").touch()
    code = f"""
        import anyio, functools, pathlib, time
        from shellrt.tools.bash import Bash
        from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide
        tmp = pathlib.Path({str(tmp_path)!r})
        start = time.monotonic()
        got = anyio.run(functools.partial(decide, tmp, Bash(), ["cat *"], "default", tmp / "ws", deny=["Read(./.env)"]))
        print(got, time.monotonic() - start < 15)
    """
    try:
        ran = _run(code, ws)
    except subprocess.TimeoutExpired:
        raise AssertionError("the engine took more than 60 s to judge one cat *") from None
    assert ran.stdout.strip() == "['ask'] True", ran.stderr[-2000:]


def test_a_few_option_like_names_keep_their_reads(tmp_path: Path) -> None:
    """Below the bound nothing changes: ``cat ?f.env`` beside ``-f.env`` is denied, ``cat *`` beside
    honest names starting with ``-`` is allowed."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text("SECRET=1\n")
    for name in ("-f.env", "-notes.txt", "--help.md", f"-{LONG}"):
        (ws / name).touch()
    code = f"""
        import anyio, functools, pathlib
        from shellrt.tools.bash import Bash
        from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide
        tmp = pathlib.Path({str(tmp_path)!r})
        calls = ["cat ?f.env", "cat -- ?notes.txt", "ls"]
        print(anyio.run(functools.partial(decide, tmp, Bash(), calls, "default", tmp / "ws", deny=["Read(./.env)"])))
    """
    ran = _run(code, ws)
    assert ran.stdout.strip() == "['deny', 'allow', 'allow']", ran.stderr[-2000:]
