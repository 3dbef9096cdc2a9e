"""Red team, round 49 (analysis9): loaders round 47's and 48's table did not name.

Round 47 kept a prefix allow rule off a reader's option that loads code from a file (``less
--lesskey-src``, ``nm --plugin``, ``openssl -engine``), round 48 off more spellings of the same options.
Round 48's Left named ``curl -K``, ``psql -f`` and others as not probed. Checked with the real programs
installed here (curl 7.88, psql 15, GCC 12, binutils 2.40, OpenSSH 9.2's ssh-keygen, strace 6.1), each ran
code from the workspace unasked under ``Bash(<program>:*)``:

* a file of options: ``curl -K cfg`` (a config file's ``engine = /abs/e.so`` loaded that shared object),
  ``gcc @rsp`` (a response file's ``-wrapper ./q`` ran ``./q``), and ``nm @rsp``/``ld @rsp`` the same
  way (binutils read response files: ``--plugin`` hides in one);
* a file of commands: ``psql -f s.sql`` (``\\!`` runs a shell command);
* a shared object or program directory: ``curl --engine /abs/e.so``, ``gcc -fplugin=./p.so``, ``gcc -B
  ./bdir/`` (gcc ran ``./bdir/as``), ``ld -plugin ./p.so``, ``ssh-keygen -D ./p.so`` (a PKCS#11 library);
* an output "file" that is a command: ``psql -o '|cmd'``, ``strace -o '|cmd'``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

PROGRAMS = ["curl", "psql", "gcc", "cc", "g++", "clang", "nm", "ld", "ssh-keygen", "strace"]
ALLOW = [f"Bash({p}:*)" for p in PROGRAMS] + ["Bash(ls:*)"]
ATTACKS = [
    "curl -K cfg https://h/", "curl -Kcfg https://h/", "curl -sK cfg https://h/", "curl -sSKcfg https://h/",
    "curl --config cfg https://h/", "curl --conf cfg https://h/", "curl -H 'a: b' -K cfg https://h/",
    "curl --engine {ws}/e.so https://h/", "curl --engine ../../../../../../../..{ws}/e.so https://h/",
    "psql -f s.sql db", "psql -fs.sql db", "psql -qAtf s.sql db", "psql -qAtfs.sql db", "psql --file=s.sql db",
    "psql --file s.sql db", "psql --fil=s.sql db", "psql -X -d db -f s.sql",
    "psql -o'|touch ran' db", "psql --output='|touch ran' db", "psql -o '|touch ran' -l", "psql -qo'|x' db",
    "gcc @rsp -c f.c", "cc @rsp f.c", "g++ -O2 @rsp f.cc", "gcc -B ./bdir/ -c f.c", "gcc -Bbdir -c f.c",
    "gcc -fplugin=./p.so -c f.c", "gcc -specs=sp -c f.c", "gcc --specs=sp -c f.c", "gcc --specs sp -c f.c",
    "clang --config=c.cfg -c f.c", "clang -fplugin=./p.so -c f.c", "clang -fpass-plugin=./p.so -c f.c",
    "clang -Xclang -load -Xclang ./p.so -c f.c", "nm @rsp f.o", "ld @rsp f.o", "ld -plugin ./p.so f.o",
    "ld --plugin=./p.so f.o", "ssh-keygen -D ./p.so", "ssh-keygen -w ./p.so -t ed25519-sk -f k",
    "ssh-keygen -lD ./p.so", "strace -o'|touch ran' ls", "strace -o '!touch ran' ls",
    "strace --output='|touch ran' ls", "strace -fo'|touch ran' ls",
]
KEPT = [
    "curl -s https://h/", "curl -o out https://h/", "curl -H 'a: b' https://h/", "curl -d @data https://h/",
    "curl --engine list", "curl -sSL -o out https://h/", "psql -l", "psql -d db -o out.txt",
    "psql -v x=1 db", "gcc -c f.c -o f.o", "gcc -O2 -Wall -I inc -o x f.c", "gcc -fPIC -shared -o e.so e.c",
    "ssh-keygen -l -f key", "ssh-keygen -t ed25519 -f k -N ''", "strace -o log ls",
    "nm f.o", "ld -o y f.o",
]


async def test_option_files_and_loaders_round_48_left_are_asked(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    calls = [c.replace("{ws}", str(ws)) for c in ATTACKS + KEPT]
    got = await decide(tmp_path, Bash(), calls, "default", ws=ws, allow=ALLOW, deny=["Bash(rm:*)"])
    allowed = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (allowed, refused) == ([], [])


def test_real_curl_and_gcc_run_code_from_a_file_of_options(tmp_path: Path) -> None:
    """The premise: real curl loads the shared object a ``-K`` file names (its constructor makes
    ``ran``), and real gcc runs the ``-wrapper`` a response file names."""
    curl, gcc = shutil.which("curl"), shutil.which("gcc")
    if curl is None or gcc is None:
        pytest.skip("curl or gcc not installed")
    (tmp_path / "e.c").write_text(
        "#include <fcntl.h>\n#include <unistd.h>\n"
        '__attribute__((constructor)) static void ran(void) { int fd = open("ran", O_CREAT | O_WRONLY, 0644);'
        " if (fd >= 0) close(fd); }\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    run = {"cwd": tmp_path, "env": env, "stdin": subprocess.DEVNULL, "capture_output": True, "timeout": 60}
    subprocess.run([gcc, "-shared", "-fPIC", "-o", "e.so", "e.c"], check=True, **run)  # type: ignore[call-overload]
    (tmp_path / "cfg").write_text(f'engine = "{tmp_path}/e.so"\nurl = "http://127.0.0.1:1/"\n')
    subprocess.run([curl, "-s", "-K", "cfg"], **run)  # type: ignore[call-overload]
    assert (tmp_path / "ran").exists()
    (tmp_path / "ran").unlink()
    (tmp_path / "q").write_text('#!/bin/sh\ntouch ran\nexec "$@"\n')
    (tmp_path / "q").chmod(0o755)
    (tmp_path / "rsp").write_text("-wrapper ./q\n")
    (tmp_path / "f.c").write_text("int main(void) { return 0; }\n")
    subprocess.run([gcc, "@rsp", "-c", "f.c", "-o", "f.o"], **run)  # type: ignore[call-overload]
    assert (tmp_path / "ran").exists()
