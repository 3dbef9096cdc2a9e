"""Red team, round 47 (analysis7): a word after an allowed prefix makes a reader load code from a file.

A prefix allow rule covers the words after it by design, and the engine kept such rules off an option whose
value is a command (``man -P``, ``rg --pre``, ``find -exec``). These options name a file instead, and the
program runs what the file says: ``less --lesskey-src=k`` (``#env`` sets ``LESSOPEN=|cmd``), ``view -c CMD``,
``view -S``/``-s``/``-u``, ``nm --plugin x.so``, ``man -C`` (``DEFINE pager``), ``ssh -F`` (``ProxyCommand``),
``gpg --options``, ``bat --pager``, ``openssl -engine ./e.so``/``-config``/``-provider-path``, ``kubectl get
--kubeconfig`` (an ``exec`` credential plugin), awk's ``-f``/``-i`` (its inline program was read): each ran
under ``Bash(<reader>:*)`` without asking. Beside ``Bash(rm:*)`` denied in ``bypassPermissions``, a lesskey,
man or ssh configuration the command wrote ran a hidden ``rm``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests._hidden_code import rule_misses
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

READERS = ["less", "view", "vim", "nm", "ar", "man", "ssh", "gpg", "bat", "awk", "gawk", "openssl", "kubectl get"]
ALLOW = [f"Bash({r}:*)" for r in READERS]
ATTACKS = [
    "less --lesskey-src=k f", "less --lesskey-src k f", "less --lesskey-s=k f", "less -k k f", "less -kk f",
    "less -Nk k f", "less --lesskey-file=k f", "less --lesskey-content=x f", "view -c '!./q' f",
    "view -S x.vim f", "view -S", "view -s keys f", "view -u x.vim f", "vim -uvimrc f", "nm --plugin ./p.so a.o",
    "nm --plugin=./p.so a.o", "ar --plugin ./p.so t lib.a", "man -C k ls", "man --config-file=k ls", "man -Ck ls",
    "ssh -F cfg host ls", "ssh -vF cfg host ls", "gpg --options f --list-keys", "bat --pager=./q f",
    "awk -f p.awk f", "awk -vx=1 -fp.awk f", "gawk -i inc.awk 1 f", "gawk --include=inc.awk 1 f",
    "openssl x509 -engine ./e.so -in c", "openssl req -config o.cnf -new", "openssl list -provider-path . -provider p",
    "openssl list -provider ./p.so", "kubectl get pods --kubeconfig ./kc", "kubectl get pods --kubeconfig=./kc",
]
KEPT = [
    "less -N f", "less -Pkx f", "view -c 5 f", "vim -u NONE f", "nm -A a.o", "man ls",
    "ssh -v host ls", "bat --paging=never f", "less -- -k k", "openssl x509 -checkend 0 -noout -in c",
    "openssl list -provider legacy", "kubectl get pods",
]
H = "x=$(printf '/bin/\\x72m'); cp -- \"$x\" q; "
WRITTEN = [H + c for c in [
    "printf 'x' > k; less -k k f", "printf 'x' > k; less --lesskey-file=k f",
    "printf 'DEFINE pager ./q' > mc; man -C mc ls",
    "printf '#env\\nLESSOPEN=|./q %%s\\n' > k; less --lesskey-src=k f", "printf 'x' > cfg; ssh -F cfg host ls",
]]


async def test_an_allowed_reader_loading_code_from_a_file_is_asked(tmp_path: Path) -> None:
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "default", allow=ALLOW, deny=["Bash(rm:*)"])
    allowed = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (allowed, refused) == ([], [])


async def test_a_written_file_such_an_option_loads_is_counted_beside_a_deny_rule(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, WRITTEN, ["echo x > out.txt; less -N f", "echo x > k; man ls"]) == ([], [])


def test_real_less_and_vim_run_what_the_file_names(tmp_path: Path) -> None:
    """The premise, with the real programs: each runs ``./q`` (which makes ``ran``) from the file alone."""
    less, view = shutil.which("less"), shutil.which("view")
    if less is None or view is None:
        pytest.skip("less or vim not installed")
    (tmp_path / "f").write_text("hello\n")
    (tmp_path / "q").write_text("#!/bin/sh\ntouch ran\ncat \"$1\"\n")
    (tmp_path / "q").chmod(0o755)
    (tmp_path / "k").write_text("#env\nLESSOPEN=|./q %s\n")
    (tmp_path / "x.vim").write_text("!./q\nqa!\n")
    for argv in ([less, "--lesskey-src=k", "f"], [view, "-S", "x.vim", "f"], [view, "-c", "!./q", "-c", "qa!", "f"]):
        (tmp_path / "ran").unlink(missing_ok=True)
        subprocess.run(argv, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, timeout=20,
                       env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TERM": "dumb"})
        assert (tmp_path / "ran").exists(), argv
