"""Red team, round 52 (analysis12): a shell or ``watch`` named by another spelling of its system path.

The planner reads ``bash -c SCRIPT`` (and ``watch CMD``, which ``sh -c`` runs) as the commands of SCRIPT, so a
deny rule meets what the script runs; ``/bin/bash`` counted as ``bash`` only when its directory was written
exactly as a system directory. ``//bin/bash``, ``/bin//bash``, ``/bin/./bash``, ``/proc/self/root/bin/bash``
(the kernel's reading: the same file) and ``/usr/bin/../bin/bash``, ``/bin/../bin/bash``, ``/var/run/../bin/bash``
(a ``..`` after a link: ``/bin`` and ``/var/run`` are links here) were paths of some other program, so their
script went unread and ``x=r; ${x}m y`` ran ``rm`` beside ``Bash(rm:*)`` denied in ``bypassPermissions``; so did
``/usr/bin/watch 'x=r; ${x}m y'`` in any spelling (11 of 11 allowed before). Now `wrappers.program_name`
reads a directory as the kernel opens it, and the planner and the code-string reader use
`possible_program` (a ``..`` that may follow a link may reach a system directory: more read, only more caught).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

RM = "'x=r; ${x}m y'"
SHELLS = ["//bin/bash", "/bin//bash", "/bin/./bash", "/proc/self/root/bin/bash", "/usr//bin/sh",
          "/usr/bin/../bin/bash", "/bin/../bin/bash", "/var/run/../bin/bash"]  # fmt: skip
WATCHES = ["/usr/bin/watch", "//usr/bin/watch", "/bin/../usr/bin/watch -n 1"]
ATTACKS = [*(f"{s} -c {RM}" for s in SHELLS), *(f"{w} {RM}" for w in WATCHES)]
KEPT = ["//bin//bash -c 'echo x'", "/usr/bin/watch -x ls", "/bin/bash ./s.sh"]


def test_each_spelling_runs_the_shell(tmp_path: Path) -> None:
    """The premise, on this machine: each spelling is a shell that runs the script (``rm y``)."""
    script = "".join(f": > y; {s} -c {RM} >/dev/null 2>&1; [ -e y ] && echo 'kept: {s}'\n" for s in SHELLS)
    ran = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert "kept" not in ran.stdout, ran.stdout


@pytest.mark.anyio
async def test_spelt_shells_meet_deny_rules(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "bypassPermissions", deny=["Bash(rm:*)"])
    ran = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (ran, refused) == ([], [])


@pytest.mark.anyio
async def test_an_allow_rule_still_covers_no_path(tmp_path: Path) -> None:
    """The reading is for deny and ask checks: a program run by a path (``/usr/bin/ls`` as before, and now
    ``//usr/bin/ls``, which reads as ``ls``) is not covered by ``Bash(ls:*)``, whatever its spelling."""
    calls = ["//usr/bin/ls -l", "/tmp/x/../../usr/bin/ls -l", "ls -l"]
    assert await decide(tmp_path, Bash(), calls, "default", allow=["Bash(ls:*)"]) == ["ask", "ask", "allow"]
