"""Red team, round 53 (analysis13): a workspace link to standard input, a descriptor or ``/dev`` (round 52's Left).

The analysis reads words as text: ``bash /dev/stdin <<< CODE`` is code no rule reads, denied beside a command
rule. A link the repository (or an earlier call) left in the workspace spells the same file as a plain name:
``s -> /dev/stdin``, ``w -> /proc/self/fd``, ``d -> /dev``. ``bash s <<< 'x=r; ${x}m y'`` (and ``source s``,
``bash w/0``, ``bash d/stdin``, ``bash a/../s``, ``BASH_ENV=s``, ``sed -f s``, ``awk -f s``, ``bash c/s`` with ``c ->
/proc/self/cwd``, ``bash m/../stdin`` with ``m -> /dev/shm``, ``export BASH_ENV=s``) ran ``rm`` beside
``Bash(rm:*)`` denied in bypassPermissions (15 of 15 allowed before). Now the tools, which resolve a part's words
on the host, read each word a link leads into ``/proc`` or ``/dev`` as the path it leads to, and the part's
code checks judge that reading.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

RM = "'x=r; ${x}m y'"
ATTACKS = [f"bash s <<< {RM}", f"source s <<< {RM}", f"bash w/0 <<< {RM}", f"bash d/stdin <<< {RM}",
           f"bash a/../s <<< {RM}", f"BASH_ENV=s bash -c true <<< {RM}", "sed -f s f <<< '1e rm y'",
           "awk -f s f <<< 'BEGIN { system(\"rm y\") }'", "sed -fs f <<< '1e rm y'", f"bash c/s <<< {RM}",
           f"bash c/a/../s <<< {RM}", f"bash m/../stdin <<< {RM}", f"export BASH_ENV=s; bash -c true <<< {RM}",
           f"BASH_ENV=s; export BASH_ENV; bash -c true <<< {RM}", f"declare -x BASH_ENV=s; bash -c : <<< {RM}"]  # fmt: skip
KEPT = ["bash ok.sh", "bash d/null", "cat s", "cp s z", "sed -f ok.sed f", "bash a/ok.sh", "bash c/c/ok.sh", "export X=s; ls"]


def _links(ws: Path) -> None:
    """The workspace a hostile repository leaves: links to standard input, the descriptors and ``/dev``."""
    (ws / "s").symlink_to("/dev/stdin")
    (ws / "w").symlink_to("/proc/self/fd")
    (ws / "d").symlink_to("/dev")
    (ws / "c").symlink_to("/proc/self/cwd")  # the caller's directory: `c/s` is `s`
    (ws / "m").symlink_to("/dev/shm")  # a directory of the kernel's: its `..` is `/dev`
    (ws / "a").mkdir()
    (ws / "a" / "ok.sh").write_text("echo a\n")
    (ws / "ok.sh").write_text("echo hi\n")
    (ws / "ok.sed").write_text("p\n")
    (ws / "f").write_text("x\n")


def test_each_link_runs_the_here_string(tmp_path: Path) -> None:
    """The premise, with bash 5.2, GNU sed and awk on this machine: each attack removes ``y``."""
    _links(tmp_path)
    script = "".join(f": > y; {c} >/dev/null 2>&1; [ -e y ] && echo 'kept: {c!r}'\n" for c in ATTACKS)
    ran = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "kept" not in ran.stdout, ran.stdout


@pytest.mark.anyio
async def test_workspace_links_meet_deny_rules(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _links(ws)
    calls = ATTACKS + KEPT
    got = await decide(tmp_path, Bash(), calls, "bypassPermissions", ws=ws, deny=["Bash(rm:*)"])
    ran = [c for c, d in zip(calls, got, strict=True) if d == "allow" and c not in KEPT]
    refused = [c for c, d in zip(calls, got, strict=True) if d != "allow" and c in KEPT]
    assert (ran, refused) == ([], [])
    assert os.path.islink(ws / "s")  # nothing ran: the decision reads the links, never opens them


@pytest.mark.anyio
async def test_an_allow_rule_does_not_cover_the_linked_code(tmp_path: Path) -> None:
    """As ``bash /dev/stdin`` is not covered by ``Bash(bash:*)``, neither is ``bash s`` (held before: the link's
    target is a read outside the workspace); a plain script is."""
    ws = tmp_path / "ws"
    ws.mkdir()
    _links(ws)
    calls = [f"bash s <<< {RM}", f"bash /dev/stdin <<< {RM}", "bash ok.sh"]
    got = await decide(tmp_path, Bash(), calls, "default", ws=ws, allow=["Bash(bash:*)"])
    assert got == ["ask", "ask", "allow"]
