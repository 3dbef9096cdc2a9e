"""Red team, round 56 (analysis13): a glob in bash's dialect read a denied file unseen.

The tools expanded a pattern word with Python's ``glob.iglob`` to find what it reads. Python's dialect is not
bash's: ``[^x]`` is no negation there, ``[[:alpha:]]``, ``[[=e=]]``, ``[[.e.]]`` are no classes, and the shell
options a session's earlier call may set (``shopt -s nocaseglob``, ``globstar``) widen what bash matches. So
``cat .[^x]nv`` (or ``cat .E*`` after ``shopt -s nocaseglob``) printed ``.env`` while a ``Read(./.env)`` deny rule
saw no read of it: allowed in the default, plan and bypassPermissions modes. Now every segment is matched by the
analysis's over-approximating ``bash_segment_regex`` and ``**`` at any depth.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis.globwords import bash_segment_regex
from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

#: (shell options an earlier call of the session set, the word that names ``.env``).
WORDS = [("", ".[^x]nv"), ("", ".[[:alpha:]]nv"), ("", ".[[=e=]]nv"), ("", ".[[.e.]]nv"), ("", ".[\\e]nv"),
         ("", ".[[:lower:]][[:alnum:]]v"), ("", ".[[:alpha:]x]nv"), ("nocaseglob", ".E*"),
         ("nocaseglob", ".[E]NV"), ("globstar", "**/.env"), ("globstar", "**/.e*")]  # fmt: skip
ATTACKS = [f"cat {word}" for _, word in WORDS] + [f"shopt -s {opt}; cat {word}" for opt, word in WORDS if opt]
KEPT = ["cat f", "cat [fg]", "cat su?/f", "cat f*", "cat sub/[^x]"]


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / ".env").write_text("SECRET=1\n")
    (ws / "f").write_text("f\n")
    (ws / "sub" / "f").write_text("f\n")
    return ws


def test_bash_expands_each_word_to_the_denied_file(tmp_path: Path) -> None:
    """The premise, with bash 5.2: each word (after its session's options) expands to ``.env``."""
    ws = _workspace(tmp_path)
    script = "".join(f"( {'shopt -s ' + opt + ';' if opt else ''} printf '%s\\n' {word} )\n" for opt, word in WORDS)
    ran = subprocess.run(["bash", "-c", script], cwd=ws, capture_output=True, text=True, timeout=30)
    assert ran.stdout.splitlines() == [".env"] * len(WORDS)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["default", "plan", "bypassPermissions"])
async def test_a_denied_file_read_through_a_bash_glob_is_denied(tmp_path: Path, mode: str) -> None:
    ws = _workspace(tmp_path)
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, mode, ws=ws, deny=["Read(./.env)"])
    # ``.[\e]nv`` is no static word for the analysis: asked (an unknown read) where asking is possible.
    allowed = "deny" if mode == "bypassPermissions" else "ask"
    assert [g if g != allowed or "\\" not in c else "deny" for c, g in zip(ATTACKS, got, strict=False)] == [
        "deny"
    ] * len(ATTACKS)
    assert got[len(ATTACKS) :] == ["allow"] * len(KEPT)


def test_the_segment_regex_matches_whatever_bash_matches(tmp_path: Path) -> None:
    """Differential: every name bash expands a pattern to (widest options on) the regex matches too."""
    names = [".env", "env", "a]b", "A-b", "x.TXT", "é", "[x", "a\\b", ".hidden", "-R", "ab"]
    patterns = ["*", ".*", "?", "[^a]*", "[!.]*", "[]a]*", "[a-]*", "[[:upper:]]*", "[[:punct:]]*", "[\\]]*",
                "*.txt", "[[=e=]]*", "[[.a.]]?", "@(ab|env)", "!(ab)", "+([a-z])", "[x", "a\\b", "[a\\]b",
                "[[:alpha:]-]?", "[%-]*"]  # fmt: skip
    for name in names:
        (tmp_path / name).write_text("x")
    script = "shopt -s nocaseglob extglob dotglob nullglob\n" + "".join(
        f"for n in {p}; do printf '%s\\0' {i} \"$n\"; done\n" for i, p in enumerate(patterns)
    )
    ran = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, timeout=30)
    fields = ran.stdout.decode().split("\0")[:-1]
    pairs = list(zip(fields[0::2], fields[1::2], strict=True))
    assert len(pairs) > len(patterns)  # bash expanded the patterns
    missed = [(patterns[int(i)], n) for i, n in pairs if not bash_segment_regex(patterns[int(i)]).fullmatch(n)]
    assert missed == []
    assert os.listdir(tmp_path)  # the names stayed where the test made them


def test_a_walk_too_large_to_judge_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``**`` walks at most `MAX_ENTRIES` entries, then names "" (unknown: fails closed), never hangs."""
    from shellrt.tools import _bash_glob

    for i in range(30):
        (tmp_path / f"d{i}" / "e").mkdir(parents=True)
    monkeypatch.setattr(_bash_glob, "MAX_ENTRIES", 40)
    assert list(_bash_glob.bash_glob("**/**/**/e", str(tmp_path), 10_000)) == [""]
    assert list(_bash_glob.bash_glob("d1/e", str(tmp_path), 10_000)) == [str(tmp_path / "d1" / "e")]
    assert list(_bash_glob.bash_glob("d*/e", str(tmp_path), 5)) == [""]  # more matches than the limit


def test_dot_names_only_on_the_way_to_a_further_name(tmp_path: Path) -> None:
    """``.*/x`` may pass through ``..`` (``shopt -u globskipdots``); a last ``.*`` names no ``.``/``..``."""
    from shellrt.tools._bash_glob import bash_glob

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".rc").write_text("x")
    (tmp_path / "x").write_text("x")
    assert list(bash_glob(".*", str(ws), 100)) == [str(ws / ".rc")]
    assert str(ws / ".." / "x") in list(bash_glob(".*/x", str(ws), 100))
