"""Red team, round 52 (analysis12): a ``..`` after a link, which the kernel resolves from the link's target.

Round 51 read a path word as the kernel opens it, but resolved ``..`` in the text: the kernel follows a link
first, so ``/proc/self/root/..`` is ``/`` (not ``/proc/self``), ``/dev/fd/..`` is ``/proc/self``, ``/proc/net/..``
is ``/proc/self``, ``/proc/thread-self/../..`` is ``/proc/PID``, and ``/var/run/..`` is ``/`` where ``/var/run`` is a
link to ``/run``. Each spelling below is standard input, so ``bash WORD <<< 'x=r; ${x}m y'`` ran the obfuscated
``rm`` beside ``Bash(rm:*)`` denied in ``bypassPermissions`` (7 of 7 allowed before), and ``cat`` of such a
spelling of ``/dev/zero`` (or after ``cd /; cd dev``, ``cd ../../…/dev``, where only an absolute ``cd`` was a
base) was read-only and concurrency-safe, allowed in plan mode (6 of 6 before). Now `kernel_paths` walks the
kernel's own links and names a ``..`` after any other name as leading somewhere not known (fail closed), and
the ``cd`` targets are read one after another.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

UP = "../" * 40  # more `..` than any directory is deep: they stop at the root
STDIN = ["/proc/self/root/../dev/stdin", "/dev/fd/../root/dev/stdin", "/proc/net/../fd/0", "/dev/fd/../../self/fd/0",
         "/proc/thread-self/../../fd/0", f"/proc/self/cwd/{UP}dev/stdin"]  # fmt: skip
RM = "'x=r; ${x}m y'"
ATTACKS = [*(f"bash {w} <<< {RM}" for w in STDIN), f"source /proc/self/root/../dev/stdin <<< {RM}"]
#: Where `/var/run` is a link (Debian, Ubuntu, Fedora), `..` after it is the root: not known from the text.
LINKED = [f"bash /var/run/../dev/stdin <<< {RM}"]
KEPT = ["bash -c 'echo x'", "bash ./s.sh", "cat /proc/self/status"]
READS = ["cat /proc/self/root/../dev/zero", "cd /; cd dev; cat zero", f"cd {UP}dev && cat zero",
         "cd ~/../../../../../../../dev && cat zero", "wc -c < /dev/fd/../root/dev/zero", "cd /var/run/../dev && cat zero"]  # fmt: skip
READS_KEPT = ["cd /usr && cat share/x", "cd src && cat x", "cat ../x", "cat a/../b", "cd /; cd usr; cat x"]


def test_each_spelling_is_standard_input(tmp_path: Path) -> None:
    """The premise, with bash 5.2 on this machine's kernel: each attack removes ``y``."""
    attacks = ATTACKS + (LINKED if os.path.realpath("/var/run") == "/run" else [])
    script = "".join(f": > y; {c} >/dev/null 2>&1; [ -e y ] && echo 'kept: {c!r}'\n" for c in attacks)
    ran = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "kept" not in ran.stdout, ran.stdout


@pytest.mark.anyio
async def test_link_parents_meet_deny_rules(tmp_path: Path) -> None:
    calls = ATTACKS + LINKED + KEPT
    got = await decide(tmp_path, Bash(), calls, "bypassPermissions", deny=["Bash(rm:*)"])
    ran = [c for c, d in zip(calls, got, strict=True) if d == "allow" and c not in KEPT]
    refused = [c for c, d in zip(calls, got, strict=True) if d != "allow" and c in KEPT]
    assert (ran, refused) == ([], [])


def test_link_parents_and_chained_cds_are_not_read_only() -> None:
    judged = [c for c in READS if analyze(c).read_only or analyze(c).concurrency_safe]
    refused = [c for c in READS_KEPT if not analyze(c).read_only]
    assert (judged, refused) == ([], [])
