"""Red team, round 48 (analysis8): second read of round 47's loaded-code options.

Round 47 kept allow rules off a reader's option that loads code from a file (``less --lesskey-src``,
``openssl -engine``…). Spellings its table missed, each checked with the real program where installed
(less 590, mawk, OpenSSL 3.0, OpenSSH 9.2, GnuPG 2.2): less matches long options in any case
(``--LESSKEY-SRC=k`` ran ``LESSOPEN`` from the file) and reads a number, not the rest of the word, after
``-#``/``-b``/``-h``/``-j``/``-x``/``-y``/``-z`` (``-#5k kb`` loaded a lesskey file); ``--`` given as an
option's value is no end of options (``mawk -F -- -f p.awk``, ``view -T -- -S x.vim``); openssl takes
``-engine=./e.so`` and ``-config=o.cnf`` (and ``engine -pre SO_PATH:./e.so``); ``ssh -I ./p.so`` loads a
PKCS#11 library; ``mawk -W exec p.awk`` (and ``-We``) is a program file; ``gpg --homedir .`` obeys that
directory's ``gpg.conf`` (``agent-program``), and ``--agent-program``/``--dirmngr-program``/
``--photo-viewer`` name programs. Each ran unasked under ``Bash(<reader>:*)``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

READERS = ["less", "view", "vim", "ssh", "scp", "gpg", "openssl", "awk", "mawk"]
ALLOW = [f"Bash({r}:*)" for r in READERS]
ATTACKS = [
    "less --LESSKEY-SRC=k f", "less --Lesskey-Src=k f", "less --LESSKEY-FILE=kb f", "less --LESSKEY-S=k f",
    "less -#5k kb f", "less -xk kb f", "less -x4,8k kb f", "less -j.5kkb f", "less -b5kkb f", "less -z-2k kb f",
    "less -h5k kb f", "mawk -F -- -f p.awk f", "awk -F -- -f p.awk f", "view -T -- -S x.vim f",
    "view -i -- -S x.vim f", "ssh -l -- -F cfg host ls", "ssh -I ./p.so host ls", "ssh -vI ./p.so host ls",
    "mawk -W exec p.awk f", "mawk -Wexec p.awk f", "mawk -We p.awk f",
    "mawk -Wex=p.awk f", "mawk -W e,x p.awk f", "awk -We p.awk f", "openssl x509 -in c -noout -engine=./e.so",
    "openssl req -new -config=o.cnf -key key", "openssl list -provider-path=. -provider e",
    "openssl engine dynamic -pre SO_PATH:./e.so -pre LOAD", "gpg --homedir . --card-status",
    "gpg --homedir=. -c f", "gpg --home h --card-status", "gpg --agent-program ./q --card-status",
    "gpg --agent-prog=./q -c f", "gpg --dirmngr-program ./q --recv-keys 00", "gpg --photo-viewer ./q --list-keys",
]
KEPT = [
    "less -N f", "less -#5 f", "less -x4 f", "less -j.5 f", "less -- -k k", "less -N -- -k k", "mawk -W version",
    "ssh -v host ls", "ssh -i key host ls", "openssl x509 -in c -noout",
    "openssl list -provider=legacy", "gpg --list-keys", "gpg --verify f.sig f", "view -T xterm f",
]


async def test_loader_spellings_round_47_missed_are_asked(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "default", allow=ALLOW, deny=["Bash(rm:*)"])
    allowed = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (allowed, refused) == ([], [])


def test_real_less_and_mawk_load_code_through_these_spellings(tmp_path: Path) -> None:
    """The premise: real less and mawk run ``./q`` (which makes ``ran``) through the missed spellings."""
    less, lesskey, mawk = shutil.which("less"), shutil.which("lesskey"), shutil.which("mawk")
    if less is None or lesskey is None or mawk is None:
        pytest.skip("less, lesskey or mawk not installed")
    (tmp_path / "f").write_text("hello\n")
    (tmp_path / "q").write_text("#!/bin/sh\ntouch ran\ncat \"$1\"\n")
    (tmp_path / "q").chmod(0o755)
    (tmp_path / "k").write_text("#env\nLESSOPEN=|./q %s\n")
    (tmp_path / "p.awk").write_text('BEGIN { system("touch ran") }\n')
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TERM": "dumb"}
    subprocess.run([lesskey, "-o", "kb", "k"], cwd=tmp_path, capture_output=True, timeout=20, env=env)
    for argv in ([less, "--LESSKEY-SRC=k", "f"], [less, "-#5k", "kb", "f"], [mawk, "-F", "--", "-f", "p.awk", "f"],
                 [mawk, "-We", "p.awk", "f"]):
        (tmp_path / "ran").unlink(missing_ok=True)
        subprocess.run(argv, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, timeout=20, env=env)
        assert (tmp_path / "ran").exists(), argv
