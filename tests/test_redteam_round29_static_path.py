"""Red team, round 29 (static): the host's compiler ran an assembler a sandboxed command planted.

`sandbox._static_build` finds the compiler itself on `host_path` (never one a command wrote), but ran
it with the caller's whole ``PATH``, and the compiler driver looks its own helpers up there (gcc:
``as``, collect2: ``ld``). A ``PATH`` entry inside a session's writable root (an activated
``.venv/bin``, ``node_modules/.bin``) let a command plant ``as``, which the next cold build ran on the
host, unsandboxed, as the caller (root for a root caller). The compiler now gets `host_env`: ``PATH``
without the entries commands can write.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from sandbox import _hostpath, _keyring, _static_build
from tests._bwrap_session import probe_lines, require_bwrap
from tests.conftest import require

pytestmark = pytest.mark.bwrap

#: The command: an ``as`` in its workspace's bin/ that leaves a mark where it runs, then assembles.
_PLANT = """
import os
os.makedirs("bin", exist_ok=True)
with open("bin/as", "w") as fh:
    fh.write('#!/bin/sh\\necho "ran as uid $(id -u)" > "$(dirname "$0")/../RAN"\\nexec /usr/bin/as "$@"\\n')
os.chmod("bin/as", 0o755)
os.makedirs("inc", exist_ok=True)
with open("inc/stdlib.h", "w") as fh:
    fh.write('__attribute__((used)) static const char planted[] = "PLANTED-HEADER";\\n#define EXIT_SUCCESS 0\\n')
print("PLANTED", os.path.exists("bin/as"))
"""


def test_the_compiler_does_not_run_a_helper_a_command_planted_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (root 1 of 1, uid 65534 1 of 1): the planted ``as`` ran on the host (``RAN``
    written outside the sandbox, by the build); with that fixed, the command's ``stdlib.h`` (on the
    caller's ``CPATH``) went into the program (root 1 of 1, uid 65534 1 of 1). Now the compiler's
    environment is the root-free ``PATH`` and its temp dir, none of the caller's search variables."""
    require_bwrap()
    require(os.path.exists("/usr/bin/as"), "binutils (apt-get install binutils)")
    ws = tmp_path / "ws"
    ws.mkdir(mode=0o755)
    fields, out = probe_lines(ws, tmp_path / "s", _PLANT, persistent=False)
    assert fields.get("PLANTED") == "True", out
    (ws / "RAN").unlink(missing_ok=True)  # only the host's build may write it from here on
    token = _hostpath.register_writable([ws])  # a live session over ws, as the runtime registers it
    try:
        monkeypatch.setenv("PATH", f"{ws / 'bin'}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
        monkeypatch.setenv("CPATH", str(ws / "inc"))  # as an environment activated in the workspace sets
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
        monkeypatch.delenv("CC", raising=False)
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
        monkeypatch.setattr(_static_build, "_built", {})
        monkeypatch.setattr(_keyring, "_found", "no key (this test builds every time)")
        nonce = os.urandom(8).hex()
        program = _static_build.static_program(
            "probe",
            f"#include <stdlib.h>\nint main(void) {{ return EXIT_SUCCESS + {len(nonce)}; }}\n".encode(),
        )
    finally:
        _hostpath.unregister_writable(token)
    assert not (ws / "RAN").exists(), (ws / "RAN").read_text()
    assert program[:4] == b"\x7fELF" and b"PLANTED-HEADER" not in program


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
