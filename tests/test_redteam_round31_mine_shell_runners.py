"""Red team, round 31 (lead): wrappers that, given no command, run a shell reading standard input.

``sudo -s``, ``sudo -i``, ``doas -s``, ``su``, ``runuser -l u``, ``nsenter -t 1 -a``, ``chroot /``,
``unshare``, ``newgrp g``, ``sg g``, ``firejail``, ``fakeroot`` with no command start the user's
shell, which runs whatever arrives on standard input (a here-string, a pipe): ``sudo -s <<<'rm x'``
ran ``rm`` past a ``Bash(rm:*)`` deny rule in ``bypassPermissions`` mode (the variants helper's
report: 12 of 12 allowed on its base; 10 of 85 on the lead's probe after round 31's other fixes).
Also a shell spelt with a build suffix (``bash-static``, ``busybox.static``). Decisions of the real
engine, the same for root and non-root callers and on every backend. Their plain uses stay allowed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

ATTACKS = [
    "sudo -s <<<'rm x'", "sudo -i <<<'rm x'", "doas -s <<<'rm x'", "echo 'rm x' | sudo -s",
    "echo 'rm x' | sudo -u a -s", "echo 'rm x' | sudo --shell", "echo 'rm x' | sudo --login",
    "echo 'rm x' | sudo -E -s", "echo 'rm x' | sudo -iu root", "sudo --sh <<<'rm x'", "echo 'rm x' | doas -u a -s",
    "echo 'rm x' | su", "echo 'rm x' | su -", "echo 'rm x' | su - root", "echo 'rm x' | runuser -l a",
    "echo 'rm x' | nsenter -t 1 -a", "echo 'rm x' | chroot /", "echo 'rm x' | unshare -r", "echo 'rm x' | newgrp g",
    "echo 'rm x' | sg g", "echo 'rm x' | firejail", "echo 'rm x' | fakeroot", "echo 'rm x' | script -q",
    "echo 'rm x' | bash-static", "echo 'rm x' | /usr/bin/busybox.static sh", "busybox.static sh <<<'rm x'",
    "echo 'rm x' | machinectl shell", "echo 'rm x' | login",
]
KEPT = ["sudo -l", "sudo -v", "sudo ls", "sudo -u a ls", "doas ls", "sudo -s ls", "nice", "watch -n 1 ls"]


async def test_a_wrapper_that_starts_a_shell_on_stdin_meets_deny_rules(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "bypassPermissions", deny=["Bash(rm:*)"])
    assert [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"] == []
    assert [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"] == []
