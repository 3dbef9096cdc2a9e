"""Red team, round 29 (static): a sandboxed command swapped the compiler's files before the MAC.

`sandbox._static_build` built its programs in a fresh temp directory below ``TMPDIR``: the source
written there, the compiler's output read back from there, then MACed and cached. A bwrap session
whose writable root covers that ``TMPDIR`` (a later shellrt process's ``TMPDIR`` in a workspace)
lets its command watch for the directory and replace the source (or the output) in between: shellrt
then MACs, caches and runs the command's program (as the zygote's init, or as docker's ``priv``,
container root). The compiler now reads the source from a pipe and writes the object and the
program into memfds (``/proc/self/fd/N``): no path anyone else can open holds them.
"""

from __future__ import annotations

import base64
import os
import shutil
import sys
import tempfile
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, _keyring, _static_build
from sandbox.bwrap import BwrapBackend
from tests._bwrap_session import require_bwrap, supervised
from tests.conftest import require

pytestmark = pytest.mark.bwrap

GENUINE = "genuine-program-of-shellrt"
HOSTILE = "hostile-program-of-a-command"
#: The command: watches the shared temp dir and rewrites every file a build leaves there.
_ATTACKER = f"""
import os, time
ws = os.getcwd()
tmp = os.path.join(ws, "tmp")
open(os.path.join(ws, "READY"), "w").close()
hostile = b'__attribute__((used)) static const char tag[] = "{HOSTILE}"; int main(void) {{ return 0; }}\\n'
done, end = set(), time.time() + 40
while time.time() < end and not os.path.exists(os.path.join(ws, "DONE")):
    for d in os.listdir(tmp):
        full = os.path.join(tmp, d)
        if not os.path.isdir(full):
            continue
        for f in os.listdir(full):
            p = os.path.join(full, f)
            if p in done or not os.path.isfile(p):
                continue
            data = hostile if f.endswith(".c") else b"#!/bin/sh\\necho {HOSTILE}\\n"
            try:
                with open(p, "wb") as fh:
                    fh.write(data)
                done.add(p)
            except OSError:
                pass
    time.sleep(0.002)
print("SWAPPED", len(done))
"""


def _slow_cc(where: Path) -> Path:
    """The host's compiler, started 0.3 s late: a loaded machine's window, made certain."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    require(gcc is not None, "a C compiler (apt-get install gcc libc6-dev)")
    cc = where / "slowcc"
    cc.write_text(f'#!/bin/sh\nsleep 0.3\nexec {gcc} "$@"\n')
    cc.chmod(0o755)
    return cc


def test_a_command_cannot_swap_what_the_compiler_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (root 1 of 1, uid 65534 1 of 1): the cached program was the command's. Now
    the command finds nothing of the build to change; the bytes returned and cached are genuine."""
    require_bwrap()
    assert isinstance(_keyring.secret(), bytes), _keyring.secret()
    ws, home, bin_dir = tmp_path / "ws", tmp_path / "home", tmp_path / "bin"
    for d in (ws, ws / "tmp", home, bin_dir):
        d.mkdir(mode=0o755)
    monkeypatch.setenv("CC", str(_slow_cc(bin_dir)))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(_static_build, "_built", {})
    nonce = os.urandom(8).hex()  # a fresh cache name per run
    src = f'__attribute__((used)) static const char tag[] = "{GENUINE}-{nonce}"; int main(void) {{ return 0; }}\n'.encode()
    command = f"echo {base64.b64encode(_ATTACKER.encode()).decode()} | base64 -d | python3 -"

    async def main() -> tuple[bytes, str]:
        backend = BwrapBackend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "session") as sup:
            out: list[str] = []

            async def attack() -> None:
                out.append((await sup.run(command, timeout_s=60)).preview)

            async with anyio.create_task_group() as tg:
                tg.start_soon(attack)
                with anyio.fail_after(30):
                    while not (ws / "READY").exists():
                        await anyio.sleep(0.02)
                # The build as a later shellrt process makes it, its TMPDIR in the workspace.
                monkeypatch.setattr(tempfile, "tempdir", str(ws / "tmp"))
                try:
                    program = await anyio.to_thread.run_sync(_static_build.static_program, "probe", src)
                finally:
                    monkeypatch.setattr(tempfile, "tempdir", None)
                    (ws / "DONE").touch()
            return program, out[0]

    program, said = anyio.run(main)
    assert "SWAPPED" in said, said
    assert HOSTILE.encode() not in program and f"{GENUINE}-{nonce}".encode() in program, said
    cached = home / ".cache" / "shellrt" / _static_build.cache_name("probe", src)
    assert cached.read_bytes() == program
    assert not list((ws / "tmp").iterdir()), "a build directory was left"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
