"""Red team, round 50 (analysis10): second read of round 49's toolchain loaders.

Round 49 kept a prefix allow rule off ``gcc -fplugin=``, ``gcc @rsp``, ``ld -plugin``, ``nm --plugin``
(the program loads a shared object or a file of options from the workspace). Two spellings of the same
class were not read, each checked here with the real GCC 12 and binutils 2.40:

* the options a compiler driver hands its linker: ``gcc -Wl,-plugin,./p.so``, ``-Xlinker -plugin
  -Xlinker ./p.so``, ``-Wl,@rsp`` (ld loaded ``./p.so``; its constructor ran);
* the same programs under the names Debian installs beside the bare ones: ``g++-12``, ``gcc-nm-12``,
  ``x86_64-linux-gnu-nm``, ``x86_64-linux-gnu-cpp-12`` (a target triplet, a version).

Under ``Bash(<program>:*)`` in the default mode, 11 of 11 ran unasked before.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.tools.bash import Bash
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

PROGRAMS = ["gcc", "cc", "g++", "g++-12", "gcc-12", "gcc-nm-12", "x86_64-linux-gnu-nm", "x86_64-linux-gnu-cpp-12",
            "x86_64-linux-gnu-g++-12", "x86_64-linux-gnu-gcc", "x86_64-linux-gnu-ar", "ld"]  # fmt: skip
ATTACKS = [
    "gcc -Wl,-plugin,./p.so f.o", "gcc -Xlinker -plugin -Xlinker ./p.so f.o", "gcc -Wl,@rsp f.o",
    "cc -Wl,--plugin=./p.so f.o", "g++ -Wl,-plugin -Wl,./p.so f.o", "g++-12 -Wl,-plugin,./p.so f.o",
    "gcc-nm-12 --plugin ./p.so f.o", "x86_64-linux-gnu-nm --plugin ./p.so f.o", "x86_64-linux-gnu-cpp-12 @rsp f.c",
    "x86_64-linux-gnu-g++-12 @rsp f.cc", "x86_64-linux-gnu-ar --plugin ./p.so t x.a",
]  # fmt: skip
KEPT = ["gcc -Wl,-O1,--as-needed f.o -o x", "gcc -Xlinker -O1 f.o -o x", "gcc-nm-12 f.o", "x86_64-linux-gnu-nm f.o",
        "ld -o y f.o"]  # fmt: skip


@pytest.mark.anyio
async def test_linker_options_and_toolchain_names_are_asked(tmp_path: Path) -> None:
    allow = [f"Bash({p}:*)" for p in PROGRAMS]
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "default", allow=allow, deny=["Bash(rm:*)"])
    allowed = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (allowed, refused) == ([], [])


def test_real_gcc_hands_the_linker_a_plugin(tmp_path: Path) -> None:
    """The premise: ``gcc -Wl,-plugin,./p.so`` and ``x86_64-linux-gnu-nm --plugin`` load ``./p.so``."""
    gcc, nm = shutil.which("gcc"), shutil.which("x86_64-linux-gnu-nm")
    if gcc is None or nm is None:
        pytest.skip("gcc or x86_64-linux-gnu-nm not installed")
    (tmp_path / "e.c").write_text(
        "#include <fcntl.h>\n#include <unistd.h>\n"
        '__attribute__((constructor)) static void ran(void) { int fd = open("ran", O_CREAT | O_WRONLY, 0644);'
        " if (fd >= 0) close(fd); }\nint main(void) { return 0; }\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    run = {"cwd": tmp_path, "env": env, "stdin": subprocess.DEVNULL, "capture_output": True, "timeout": 60}
    subprocess.run([gcc, "-shared", "-fPIC", "-o", "p.so", "e.c"], check=True, **run)  # type: ignore[call-overload]
    (tmp_path / "ran").unlink(missing_ok=True)
    subprocess.run([gcc, "-Wl,-plugin,./p.so", "e.c", "-o", "a"], **run)  # type: ignore[call-overload]
    linked = (tmp_path / "ran").exists()
    (tmp_path / "ran").unlink(missing_ok=True)
    subprocess.run([nm, "--plugin", "./p.so", "p.so"], **run)  # type: ignore[call-overload]
    assert (linked, (tmp_path / "ran").exists()) == (True, True)
