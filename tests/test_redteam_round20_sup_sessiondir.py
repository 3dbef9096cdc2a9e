"""A non-root caller's bwrap session must not keep its state where its other sessions can read it.

bwrap shows the host read-only and a non-root caller's sessions share its uid, so a session
directory's 0700 mode keeps no other session's commands out: each session masks the state places
it knows (``~/.local/state/shellrt``, ``SHELLRT_HOME``, ...) and every bwrap replaces /tmp and the
temp dir, but a ``Runtime(session_dir=...)`` elsewhere was known to its own process only. Another
session's command printed this one's command output from its spools (red team round 20). Such a
session directory is now refused for a non-root bwrap session, with what to do instead.

Non-root only (a root caller's commands run as leased uids, which cannot enter root's 0700
directories): runs as uid 65534 in the prepared tree of `tests._nonroot`.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from tests import _nonroot
from tests.conftest import require

_SECRET = "OUTPUT-OF-SESSION-A-8164"

#: As uid 65534: session A (its state at BASE/state-a) prints a secret; session B looks for it.
_PROBE = r"""
import json
from pathlib import Path
import anyio
from sandbox import BwrapConfig
from shellrt.runtime import Runtime
from shellrt.runtime.session_dir import SessionDirError

BASE, SECRET = Path(BASE_DIR), SECRET_TEXT

async def main():
    wa, wb = BASE / "wa", BASE / "wb"
    wa.mkdir()
    wb.mkdir()
    a = Runtime(wa, sandbox=BwrapConfig(), session_dir=BASE / "state-a")
    try:
        await a.start()
    except SessionDirError as exc:
        return {"refused": str(exc), "seen": ""}
    b = Runtime(wb, sandbox=BwrapConfig(), session_dir=Path("/tmp") / BASE.name / "state-b")
    await b.start()
    try:
        await a.supervisor.run(f"echo {SECRET}", timeout_s=60)
        seen = await b.supervisor.run(f"cat {BASE}/state-a/shell/* 2>/dev/null; true", timeout_s=60)
    finally:
        await b.close()
        await a.close()
    return {"refused": None, "seen": seen.preview}

print(json.dumps(anyio.run(main)))
"""


def test_a_session_dir_other_sessions_can_read_is_refused_as_nonroot() -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(shutil.which("setpriv") is not None, "setpriv is not installed (util-linux)")
    base = Path(tempfile.mkdtemp(prefix="shellrt-r20-sessdir-", dir="/var/tmp"))
    base.chmod(0o1777)
    code = _PROBE.replace("BASE_DIR", repr(str(base))).replace("SECRET_TEXT", repr(_SECRET))
    dists = _nonroot.with_requirements(_nonroot.loaded_distributions() + ["anyio", "pydantic"])
    try:
        with _nonroot.shared_run(dists) as run:
            proc = run.python(code)
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(Path("/tmp") / base.name, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    # Before: B's command printed A's output from A's spool (and A started).
    assert _SECRET not in seen["seen"], seen
    assert seen["refused"] is not None and "SHELLRT_HOME" in seen["refused"], seen
